"""Utilization, IO-slowdown and Max Stretch over a window (IO-SETS paper, section V-D), computed in C."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from . import _engine

if TYPE_CHECKING:
    from ..workload import Workload


@dataclass(frozen=True)
class PhaseMetrics:
    """System and user metrics of one phase-level replay.

    A metric the window cannot give is None, never NaN, and ``notes`` says why.

    Attributes
    ----------
    utilization : float or None
        sum_j e_cpu_j / (N (T_end - T_begin)); the upper bound is 1 - omega / N. None when
        no job did any work inside the window.
    io_slowdown : float or None
        Geometric mean over jobs with e_iter_j > 0 of
        (T_end - T_begin - e_cpu_j) / (T_io_j e_iter_j).
    max_stretch : float or None
        Max over jobs with work in the window of (T_end - T_begin) / (e_cpu_j + e_io_j).
    notes : dict of str to str
        Why each None metric is None, e.g. ``{"io_slowdown": "no job completed an I/O
        phase inside the window [6000, 14000]"}``.
    """

    utilization: float | None
    io_slowdown: float | None
    max_stretch: float | None
    notes: dict[str, str] = field(default_factory=dict, hash=False)

    @classmethod
    def measured(cls, values: tuple[float, float, float], workload: Workload) -> PhaseMetrics:
        """The engine's (utilization, io_slowdown, max_stretch), NaN where undefined, as metrics with notes.

        Without any work inside the window (no Max Stretch) the utilization is None too: a
        window that saw nothing measures no platform.
        """
        utilization, io_slowdown, max_stretch = values
        if not math.isnan(utilization + io_slowdown + max_stretch):  # the usual case, kept cheap
            return cls(utilization, io_slowdown, max_stretch)
        if math.isnan(max_stretch):
            utilization = math.nan
        values = (utilization, io_slowdown, max_stretch)
        notes = {name: _why_undefined(name, workload) for name, v in zip(METRICS, values, strict=True) if math.isnan(v)}
        return cls(_defined(utilization), _defined(io_slowdown), _defined(max_stretch), notes=notes)

    def values(self) -> dict[str, float | None]:
        """``{"utilization": ..., "io_slowdown": ..., "max_stretch": ...}``."""
        return {name: getattr(self, name) for name in METRICS}

    def to_dict(self) -> dict:
        """The metrics and their ``notes`` as a plain dict (the CLI's ``--json`` output)."""
        return {**self.values(), "notes": dict(self.notes)}


METRICS = ("utilization", "io_slowdown", "max_stretch")
"""The metrics' names, in :class:`PhaseMetrics` order."""


def _defined(value: float) -> float | None:
    return None if math.isnan(value) else value


def _why_undefined(name: str, workload: Workload) -> str:
    """Why the engine could not give metric ``name`` (NaN) for ``workload``."""
    if workload.n_jobs == 0:
        return "the workload has no job"
    tb, te = workload.window
    if name == "io_slowdown" and not workload.io_bytes.any():
        return "no job moves any byte (T_io = 0 for every job)"
    if name == "io_slowdown":
        return f"no job completed an I/O phase inside the window [{tb:g}, {te:g}]"
    return f"no job did any work inside the window [{tb:g}, {te:g}]"


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
    values = _engine.phase_metrics(
        phase_ptr=workload.offsets,
        io_bytes=workload.io_bytes,
        cpu_start=_float64(cpu_start),
        cpu_end=_float64(cpu_end),
        io_start=_float64(io_start),
        io_end=_float64(io_end),
        remaining_begin=_float64(remaining[0]),
        remaining_end=_float64(remaining[1]),
        bandwidth=workload.bandwidth,
        window=workload.window,
    )
    return PhaseMetrics.measured(values, workload)


def _float64(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64)
