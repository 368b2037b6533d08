"""Phase-level replay: one C call per workload, metrics vectorised in numpy."""

from dataclasses import dataclass

import numpy as np
import polars as pl

from ..workload import Workload
from . import _engine
from ._metrics import PhaseMetrics, workload_metrics
from ._policies import assign_policy


@dataclass(frozen=True)
class PhaseReplay:
    """Result of :func:`replay_phases`.

    Attributes
    ----------
    timeline : polars.DataFrame
        One row per phase: ``job_id``, ``phase``, ``cpu_start``, ``cpu_end``,
        ``io_start`` (admission), ``io_end``; the I/O request date is ``cpu_end``.
    metrics : PhaseMetrics
        Utilization, IO-slowdown and Max Stretch over the workload's window.
    sets, priorities : numpy.ndarray
        The set (int64) and priority (float64) each job ran with.
    n_events : int
        Compute and I/O completions the engine processed.
    """

    timeline: pl.DataFrame
    metrics: PhaseMetrics
    sets: np.ndarray
    priorities: np.ndarray
    n_events: int


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
    sets, priorities = assign_policy(workload, policy)
    _, dense_sets = np.unique(sets, return_inverse=True)
    offsets = workload.phase_offsets()
    t_cpu = np.ascontiguousarray(workload.phases["t_cpu"].to_numpy(), dtype=np.float64)
    io_bytes = np.ascontiguousarray(workload.phases["io_bytes"].to_numpy(), dtype=np.float64)
    n_phases = t_cpu.size
    out = np.full((6, n_phases), np.nan)
    n_events = _engine.replay_phases(
        np.ascontiguousarray(workload.jobs["release"].to_numpy(), dtype=np.float64),
        dense_sets.astype(np.int32),
        np.ascontiguousarray(priorities, dtype=np.float64),
        offsets,
        t_cpu,
        io_bytes,
        int(dense_sets.max(initial=-1) + 1),
        float(workload.bandwidth),
        (float(workload.window[0]), float(workload.window[1])),
        *out,
    )
    cpu_start, cpu_end, io_start, io_end, rem_tb, rem_te = out
    job = workload.phases["job"].to_numpy()
    metrics = workload_metrics(workload, cpu_start, cpu_end, io_start, io_end, (rem_tb, rem_te))
    timeline = pl.DataFrame(
        {
            "job_id": workload.jobs["id"].gather(job),
            "phase": np.arange(n_phases) - offsets[job],
            "cpu_start": cpu_start,
            "cpu_end": cpu_end,
            "io_start": io_start,
            "io_end": io_end,
        }
    )
    return PhaseReplay(timeline=timeline, metrics=metrics, sets=sets, priorities=priorities, n_events=n_events)
