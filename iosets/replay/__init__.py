"""Replay: predict what a policy does to a workload, in a C event engine.

Names are imported on first use (:mod:`iosets._lazy`), so that ``import iosets.replay``
costs nothing until a replay runs.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers see; F401 is off for __init__ files
    from ._calibrate import FIT_PARAMETERS, Calibration, calibrate
    from ._closed import TraceReplay, replay_trace
    from ._compare import SchedulerComparison, compare_schedulers
    from ._device import DEVICE_UNITS, Device, read_device
    from ._experiments import EXPERIMENT_POLICIES, EXPERIMENT_REFERENCE, run_experiment, summarize_experiment
    from ._model_check import MODEL_CHECK_THRESHOLD, UNTRUSTED, ModelCheck, model_check
    from ._periods import BUSY_JOBS, busy_periods, concurrency
    from ._phase import PhaseReplay, replay_phases
    from ._phase_metrics import PhaseMetrics, workload_metrics
    from ._policies import POLICIES, assign_policy
    from ._rec_sets import RequestSets, request_sets
    from ._request_metrics import (
        RequestMetrics,
        backlogged_shares,
        interval_bytes,
        jain_index,
        share_error,
        sliding_shares,
    )
    from ._requests import SCHEDULER_PARAMS, SCHEDULERS, RequestReplay, RequestResults, replay_requests
    from ._striping import LAYOUT, site_layout
    from ._trace import RequestArrays
    from ._trace_metrics import TRACE_METRICS, TraceMetrics, trace_metrics
    from ._tune import TUNE_BASES, TuneSelection, tune, tune_selection
    from ._tune_site import Tuning, tune_site

_EXPORTS = {
    "FIT_PARAMETERS": "._calibrate",
    "Calibration": "._calibrate",
    "calibrate": "._calibrate",
    "TraceReplay": "._closed",
    "replay_trace": "._closed",
    "compare_schedulers": "._compare",
    "SchedulerComparison": "._compare",
    "DEVICE_UNITS": "._device",
    "Device": "._device",
    "read_device": "._device",
    "EXPERIMENT_POLICIES": "._experiments",
    "EXPERIMENT_REFERENCE": "._experiments",
    "run_experiment": "._experiments",
    "summarize_experiment": "._experiments",
    "MODEL_CHECK_THRESHOLD": "._model_check",
    "UNTRUSTED": "._model_check",
    "BUSY_JOBS": "._periods",
    "busy_periods": "._periods",
    "concurrency": "._periods",
    "ModelCheck": "._model_check",
    "model_check": "._model_check",
    "PhaseMetrics": "._phase_metrics",
    "workload_metrics": "._phase_metrics",
    "PhaseReplay": "._phase",
    "replay_phases": "._phase",
    "POLICIES": "._policies",
    "assign_policy": "._policies",
    "RequestSets": "._rec_sets",
    "request_sets": "._rec_sets",
    "RequestMetrics": "._request_metrics",
    "backlogged_shares": "._request_metrics",
    "interval_bytes": "._request_metrics",
    "jain_index": "._request_metrics",
    "share_error": "._request_metrics",
    "sliding_shares": "._request_metrics",
    "SCHEDULER_PARAMS": "._requests",
    "SCHEDULERS": "._requests",
    "RequestReplay": "._requests",
    "RequestResults": "._requests",
    "replay_requests": "._requests",
    "LAYOUT": "._striping",
    "site_layout": "._striping",
    "RequestArrays": "._trace",
    "TRACE_METRICS": "._trace_metrics",
    "TraceMetrics": "._trace_metrics",
    "trace_metrics": "._trace_metrics",
    "TUNE_BASES": "._tune",
    "tune": "._tune",
    "TuneSelection": "._tune",
    "tune_selection": "._tune",
    "Tuning": "._tune_site",
    "tune_site": "._tune_site",
}
_RENAMED = {
    "compare_policies": "compare_schedulers",
    "PolicyComparison": "SchedulerComparison",
    "RequestTrace": "RequestArrays",
    "SiteTuning": "Tuning",
}
"""Former names (one release, with a DeprecationWarning): the glossary's words (docs/glossary.md)."""
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _RENAMED)
__all__ = sorted(_EXPORTS)
