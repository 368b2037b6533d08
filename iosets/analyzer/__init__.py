"""Analyzer: traces (Darshan, block traces, requests tables) into the jobs table.

:func:`ingest` reads any trace format into the requests table through one registry,
:data:`INGESTERS` (``_ingest/``: one module per format); :func:`periodicity` finds a job's
I/O rhythm; :func:`analyze` turns many traces into the jobs table; :func:`site_trace` puts many
jobs' requests on one clock, each with its I/O phase. Names are imported on
first use (:mod:`iosets._lazy`), so that ``import iosets.analyzer`` costs nothing until a
trace is read.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers see; F401 is off for __init__ files
    from ._detail import ACTIVITY_BINS, requests_details
    from ._ingest import (
        INGESTERS,
        DarshanJob,
        FileLayouts,
        Ingester,
        ModuleTotals,
        SkipReport,
        ingest,
        read_blocktrace,
        read_darshan,
        read_requests,
        sniff_format,
        write_requests,
    )
    from ._jobs import SAME_JOB_GAP, merge_logs
    from ._logreaders import LogReaders
    from ._periodicity import NOT_PERIODIC, Periodicity, bandwidth_signal, periodicity, periodicity_from_signal
    from ._pipeline import Analysis, analyze, expand_paths
    from ._site import SiteTrace, site_trace
    from ._worker import analyze_log, analyze_path, analyze_requests

_EXPORTS = {
    "ACTIVITY_BINS": "._detail",
    "requests_details": "._detail",
    "SAME_JOB_GAP": "._jobs",
    "merge_logs": "._jobs",
    "NOT_PERIODIC": "._periodicity",
    "Periodicity": "._periodicity",
    "bandwidth_signal": "._periodicity",
    "periodicity": "._periodicity",
    "periodicity_from_signal": "._periodicity",
    "Analysis": "._pipeline",
    "analyze": "._pipeline",
    "expand_paths": "._pipeline",
    "SiteTrace": "._site",
    "site_trace": "._site",
    "LogReaders": "._logreaders",
    "analyze_log": "._worker",
    "analyze_requests": "._worker",
    "analyze_path": "._worker",
    "INGESTERS": "._ingest",
    "DarshanJob": "._ingest",
    "FileLayouts": "._ingest",
    "Ingester": "._ingest",
    "ModuleTotals": "._ingest",
    "SkipReport": "._ingest",
    "ingest": "._ingest",
    "read_blocktrace": "._ingest",
    "read_darshan": "._ingest",
    "read_requests": "._ingest",
    "sniff_format": "._ingest",
    "write_requests": "._ingest",
}
_RENAMED = {
    "read_ops": "read_requests",
    "write_ops": "write_requests",
    "analyze_ops": "analyze_requests",
    "SAME_JOB_WITHIN": "SAME_JOB_GAP",
}
"""Former names (one release, with a DeprecationWarning): the glossary's words (docs/glossary.md), and
``SAME_JOB_WITHIN`` (logs of one job were those starting within 30 s of the first; now overlapping logs)."""
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _RENAMED)
__all__ = sorted(_EXPORTS)
