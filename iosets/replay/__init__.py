"""Replay: predict what a policy does to a workload, in a C event engine."""

from ._experiments import EXPERIMENT_POLICIES, EXPERIMENT_REFERENCE, run_experiment, summarize_experiment
from ._metrics import PhaseMetrics
from ._phase import PhaseReplay, replay_phases
from ._policies import POLICIES, assign_policy

__all__ = [
    "EXPERIMENT_POLICIES",
    "EXPERIMENT_REFERENCE",
    "POLICIES",
    "PhaseMetrics",
    "PhaseReplay",
    "assign_policy",
    "replay_phases",
    "run_experiment",
    "summarize_experiment",
]
