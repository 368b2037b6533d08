"""Utilization, IO-slowdown and Max Stretch over a window (seed 004, section V-D), computed in C."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import _engine

if TYPE_CHECKING:
    from ..workload import Workload


@dataclass(frozen=True)
class PhaseMetrics:
    """System and user metrics of one phase-level replay.

    Attributes
    ----------
    utilization : float
        sum_j e_cpu_j / (N (T_end - T_begin)); the upper bound is 1 - omega / N.
    io_slowdown : float
        Geometric mean over jobs with e_iter_j > 0 of
        (T_end - T_begin - e_cpu_j) / (T_io_j e_iter_j).
    max_stretch : float
        Max over jobs with work in the window of (T_end - T_begin) / (e_cpu_j + e_io_j).
    """

    utilization: float
    io_slowdown: float
    max_stretch: float

    def to_dict(self) -> dict[str, float]:
        """The metrics as a plain dict (the CLI's ``--json`` output)."""
        return asdict(self)


def workload_metrics(
    workload: Workload,
    cpu_start: np.ndarray,
    cpu_end: np.ndarray,
    io_start: np.ndarray,
    io_end: np.ndarray,
    remaining: tuple[np.ndarray, np.ndarray],
) -> PhaseMetrics:
    """Metrics of a timeline of ``workload`` replayed by another engine (phase arrays in the workload's order).

    ``remaining`` holds, for the window's T_begin and T_end, the bytes left of each phase
    performing I/O at that date (other entries are not read; NaN counts as 0).
    """
    utilization, io_slowdown, max_stretch = _engine.phase_metrics(
        workload.offsets,
        workload.io_bytes,
        _float64(cpu_start),
        _float64(cpu_end),
        _float64(io_start),
        _float64(io_end),
        _float64(remaining[0]),
        _float64(remaining[1]),
        workload.bandwidth,
        workload.window,
    )
    return PhaseMetrics(utilization, io_slowdown, max_stretch)


def _float64(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64)
