"""Phase-level replay: one C call per workload runs the engine and measures the window."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _engine
from ._phase_metrics import PhaseMetrics
from ._policies import assign_policy

if TYPE_CHECKING:
    import polars as pl

    from ..workload import Workload


@dataclass(frozen=True, eq=False)
class PhaseReplay:
    """Result of :func:`replay_phases`.

    Attributes
    ----------
    metrics : PhaseMetrics
        Utilization, IO-slowdown and Max Stretch over the workload's window.
    sets, priorities : numpy.ndarray
        The set (int64) and priority (float64) each job ran with.
    n_events : int
        Compute and I/O completions the engine processed.
    workload : Workload
        The replayed workload.
    times : numpy.ndarray
        (4, n_phases) float64: the rows ``cpu_start``, ``cpu_end``, ``io_start`` and
        ``io_end`` (s), in the workload's phase order, also given under those names.
    timeline : polars.DataFrame
        One row per phase: ``job_id``, ``phase``, ``cpu_start``, ``cpu_end``,
        ``io_start`` (admission), ``io_end``; the I/O request date is ``cpu_end``.
        Built on first access.
    """

    metrics: PhaseMetrics
    sets: np.ndarray
    priorities: np.ndarray
    n_events: int
    workload: Workload = field(repr=False)
    times: np.ndarray = field(repr=False)

    @property
    def cpu_start(self) -> np.ndarray:
        """Start of each phase's compute (s)."""
        return self.times[0]

    @property
    def cpu_end(self) -> np.ndarray:
        """End of each phase's compute, its I/O request (s)."""
        return self.times[1]

    @property
    def io_start(self) -> np.ndarray:
        """Admission of each phase's I/O (s)."""
        return self.times[2]

    @property
    def io_end(self) -> np.ndarray:
        """End of each phase's I/O (s)."""
        return self.times[3]

    @cached_property
    def timeline(self) -> pl.DataFrame:
        """One row per phase: ``job_id``, ``phase``, ``cpu_start``, ``cpu_end``, ``io_start``, ``io_end``."""
        import polars as pl

        job = self.workload.phase_job
        return pl.DataFrame(
            {
                "job_id": self.workload.jobs["id"].gather(job),
                "phase": np.arange(job.size) - self.workload.offsets[job],
                "cpu_start": self.cpu_start,
                "cpu_end": self.cpu_end,
                "io_start": self.io_start,
                "io_end": self.io_end,
            }
        )


def replay_phases(workload: Workload, policy: str = "set-10") -> PhaseReplay:
    """Replay ``workload`` under ``policy`` in the C phase engine.

    Parameters
    ----------
    workload : Workload
        Jobs and phases (see :mod:`iosets.workload`).
    policy : str, default="set-10"
        One of :data:`iosets.replay.POLICIES`.

    Returns
    -------
    PhaseReplay

    Examples
    --------
    >>> from iosets.datasets import make_iosets_workload
    >>> wl = make_iosets_workload([(4, 10, 1), (4, 100, 10)], horizon=2000, window=(500, 1500), random_state=0)
    >>> round(replay_phases(wl, "set-10").metrics.utilization, 4)
    0.8414
    """
    arguments, times = engine_arguments(workload, policy)
    n_events, utilization, io_slowdown, max_stretch = _engine.replay_phases(**arguments)
    sets, priorities = arguments["sets"], arguments["priority"]
    metrics = PhaseMetrics.measured((utilization, io_slowdown, max_stretch), workload)
    return PhaseReplay(metrics, sets, priorities, n_events, workload, times)


def engine_arguments(workload: Workload, policy: str) -> tuple[dict[str, Any], np.ndarray]:
    """The keyword arguments of ``_engine.replay_phases`` for ``workload`` under ``policy``, and the
    (4, n_phases) array whose rows are its outputs cpu_start, cpu_end, io_start and io_end."""
    sets, priorities = assign_policy(workload, policy)
    times = np.empty((4, workload.n_phases))
    arguments = {
        "release": workload.release,
        "sets": np.ascontiguousarray(sets, dtype=np.int64),
        "priority": np.ascontiguousarray(priorities, dtype=np.float64),
        "phase_ptr": workload.offsets,
        "t_cpu": workload.t_cpu,
        "io_bytes": workload.io_bytes,
        "bandwidth": workload.bandwidth,
        "window": workload.window,
        "cpu_start": times[0],
        "cpu_end": times[1],
        "io_start": times[2],
        "io_end": times[3],
    }
    return arguments, times
