"""Analyzer: traces (Darshan, block traces, ops tables) into the jobs table."""

from ._blocktrace import SkipReport, read_blocktrace
from ._darshan import DarshanJob, read_darshan
from ._ops import OPS_SCHEMA, read_ops, write_ops
from ._periodicity import Periodicity, periodicity, periodicity_from_signal
from ._pipeline import Analysis, analyze, analyze_log, analyze_ops, expand_paths

__all__ = [
    "OPS_SCHEMA",
    "Analysis",
    "DarshanJob",
    "Periodicity",
    "SkipReport",
    "analyze",
    "analyze_log",
    "analyze_ops",
    "expand_paths",
    "periodicity",
    "periodicity_from_signal",
    "read_blocktrace",
    "read_darshan",
    "read_ops",
    "write_ops",
]
