"""Concurrency over time and busy periods in the report: when the site's jobs actually overlap.

The rule (:mod:`iosets.replay._periods`): a job runs over ``[start, end)``; a **busy period** is a maximal interval
during which at least :data:`BUSY_JOBS` jobs run; a site whose jobs never overlap has none. The **overlapped share**
is the fraction of the summed job time spent while another job runs: the weight of the busy periods in the jobs'
own time, which a window's Utilization hides when the window is mostly idle.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..replay import BUSY_JOBS, busy_periods, concurrency

__all__ = [
    "BUSY_JOBS",
    "active_periods",
    "bounded_steps",
    "busy_periods",
    "concurrency",
    "job_intervals",
    "overlapped_share",
]


def job_intervals(jobs: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The ``start`` and ``end`` of the jobs that have both (float arrays)."""
    timed = jobs.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
    return (
        timed["start"].cast(pl.Float64).to_numpy(),
        timed["end"].cast(pl.Float64).to_numpy(),
    )


def overlapped_share(jobs: pl.DataFrame) -> float:
    """The fraction (0 to 1) of the jobs' summed time during which at least two jobs run.

    Parameters
    ----------
    jobs : polars.DataFrame
        ``start`` and ``end`` (s) per job; jobs without both dates are left out.

    Returns
    -------
    float
        Summed job time inside busy periods over summed job time; 0.0 when no job has time (no job dated, or
        only jobs of no length): nothing overlaps.

    Examples
    --------
    >>> jobs = pl.DataFrame({"start": [0.0, 1.0, 5.0, None], "end": [2.0, 3.0, 6.0, None]})
    >>> overlapped_share(jobs)  # jobs 1 and 2 overlap over [1, 2): 2 of their 5 job-seconds
    0.4
    >>> overlapped_share(jobs.head(1))
    0.0
    """
    starts, ends = job_intervals(jobs)
    total = float(np.clip(ends - starts, 0.0, None).sum())
    if total <= 0:
        return 0.0
    return float(busy_periods(starts, ends)["job_seconds"].sum()) / total


def active_periods(starts: np.ndarray, ends: np.ndarray) -> tuple[pl.DataFrame, int]:
    """The busy periods, or, when no two jobs ever overlap, the periods during which any job runs.

    Returns
    -------
    periods : polars.DataFrame
        As :func:`busy_periods`.
    min_jobs : int
        2 (busy periods) or 1 (the jobs never overlap: each period is a run of one job or of jobs end to end).

    Examples
    --------
    >>> periods, min_jobs = active_periods(np.array([0.0, 5.0]), np.array([2.0, 6.0]))
    >>> periods["start"].to_list(), min_jobs
    ([0.0, 5.0], 1)
    """
    periods = busy_periods(starts, ends)
    if periods.height:
        return periods, BUSY_JOBS
    return busy_periods(starts, ends, min_jobs=1), 1


def bounded_steps(dates: np.ndarray, running: np.ndarray, *, points: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """A step function with at most ``points`` steps: the most of each of ``points`` equal bins when it has more.

    Returns
    -------
    dates, running : numpy.ndarray
        The steps (unchanged when there are at most ``points``).
    binned : bool
        Whether the steps were binned (each step then holds its bin's peak).

    Examples
    --------
    >>> dates, running, binned = bounded_steps(np.arange(6.0), np.array([1, 3, 2, 1, 2, 0]), points=2)
    >>> dates.tolist(), running.tolist(), binned
    ([0.0, 2.5, 5.0], [3, 2, 0], True)
    """
    if dates.size <= points:
        return dates, running, False
    edges = np.linspace(dates[0], dates[-1], points + 1)
    # A bin's peak: the steps starting inside it, and the step already running at its left edge.
    first = np.clip(np.searchsorted(dates, edges[:-1], side="right") - 1, 0, dates.size - 1)
    last = np.searchsorted(dates, edges[1:], side="left")
    last[-1] = dates.size - 1
    peaks = np.array([running[i : max(j, i + 1)].max() for i, j in zip(first, last, strict=True)])
    return edges, np.append(peaks, running[-1]), True
