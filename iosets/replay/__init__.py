"""Replay: predict what a policy does to a workload, in a C event engine."""

from ._device import Device
from ._experiments import EXPERIMENT_POLICIES, EXPERIMENT_REFERENCE, run_experiment, summarize_experiment
from ._metrics import PhaseMetrics
from ._phase import PhaseReplay, replay_phases
from ._policies import POLICIES, assign_policy
from ._request_metrics import RequestMetrics, backlogged_shares, interval_bytes, jain_index, share_error, sliding_shares
from ._requests import SCHEDULER_PARAMS, SCHEDULERS, RequestReplay, replay_requests
from ._trace import RequestTrace
from ._tune import TUNE_BASES, tune

__all__ = [
    "Device",
    "RequestMetrics",
    "RequestReplay",
    "RequestTrace",
    "SCHEDULERS",
    "SCHEDULER_PARAMS",
    "jain_index",
    "replay_requests",
    "share_error",
    "sliding_shares",
    "EXPERIMENT_POLICIES",
    "EXPERIMENT_REFERENCE",
    "POLICIES",
    "PhaseMetrics",
    "PhaseReplay",
    "assign_policy",
    "backlogged_shares",
    "interval_bytes",
    "replay_phases",
    "run_experiment",
    "summarize_experiment",
    "TUNE_BASES",
    "tune",
]
