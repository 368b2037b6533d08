"""Validate: run a phase workload for real on the machine's own storage and compare it with the phase engine.

The IO-SETS paper (section VI-A, Fig. 4) checked its simulator against real runs before trusting it;
:func:`validate` does the same on a folder of any file system: a benchmark program per job (``periodic``,
plain C, compiled on first use), ``system`` alone or every other policy through the arbiter, the paper's
metrics from the programs' own timestamps and from the phase replay; :func:`read_validation` reads its
``validation.json`` back (the report's "Simulator against real runs" shows it). Under darshan-runtime, each run's
logs are analyzed against the programs' timestamps and replayed (:func:`check_run`). Names are imported on first use
(:mod:`iosets._lazy`).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers see; F401 is off for __init__ files
    from ._build import build_periodic
    from ._darshan import DarshanRuntime, find_darshan
    from ._log_check import DarshanValidation, JobCheck, check_run
    from ._read import read_validation
    from ._scenario import make_fig4_workload
    from ._timestamps import measured_metrics, read_timestamps, workload_times
    from ._truth import JobTruth, job_truth, read_truth
    from ._validate import CRITERION, CRITERION_SHARE, METRICS, POLICIES, PolicyValidation, Validation, validate

_EXPORTS = {
    "build_periodic": "._build",
    "DarshanRuntime": "._darshan",
    "find_darshan": "._darshan",
    "DarshanValidation": "._log_check",
    "JobCheck": "._log_check",
    "check_run": "._log_check",
    "make_fig4_workload": "._scenario",
    "read_validation": "._read",
    "measured_metrics": "._timestamps",
    "read_timestamps": "._timestamps",
    "workload_times": "._timestamps",
    "CRITERION": "._validate",
    "CRITERION_SHARE": "._validate",
    "METRICS": "._validate",
    "JobTruth": "._truth",
    "job_truth": "._truth",
    "read_truth": "._truth",
    "POLICIES": "._validate",
    "PolicyValidation": "._validate",
    "Validation": "._validate",
    "validate": "._validate",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
