"""Concurrency over time and busy periods: when the site's jobs actually overlap.

A job runs over ``[start, end)``. The concurrency is the step function of how many jobs run at each date. A
**busy period** is a maximal interval during which at least :data:`BUSY_JOBS` jobs run (the intervals where the
concurrency is >= 2, merged when they touch); a site whose jobs never overlap has none. The **overlapped share**
is the fraction of the summed job time spent while another job runs: the weight of the busy periods in the
jobs' own time, which a window's Utilization hides when the window is mostly idle.
"""

from __future__ import annotations

import numpy as np
import polars as pl

BUSY_JOBS = 2
"""Least number of jobs running at once for a date to belong to a busy period."""


def concurrency(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The number of intervals ``[start, end)`` covering each date: a step function.

    Parameters
    ----------
    starts, ends : numpy.ndarray
        Each interval's dates (an interval with ``end <= start`` covers nothing).

    Returns
    -------
    dates : numpy.ndarray
        The dates where the count changes, increasing.
    running : numpy.ndarray of int
        ``running[i]`` intervals cover ``[dates[i], dates[i + 1])``; the last is 0 (after every end).

    Examples
    --------
    >>> dates, running = concurrency(np.array([0.0, 1.0, 5.0]), np.array([2.0, 3.0, 6.0]))
    >>> dates.tolist(), running.tolist()
    ([0.0, 1.0, 2.0, 3.0, 5.0, 6.0], [1, 2, 1, 0, 1, 0])
    """
    keep = ends > starts
    dates = np.concatenate((starts[keep], ends[keep]))
    steps = np.concatenate((np.ones(int(keep.sum()), np.int64), -np.ones(int(keep.sum()), np.int64)))
    if dates.size == 0:
        return np.empty(0), np.empty(0, np.int64)
    order = np.argsort(dates, kind="stable")
    dates, steps = dates[order], steps[order]
    unique, first = np.unique(dates, return_index=True)
    running = np.cumsum(steps)[np.append(first[1:], dates.size) - 1]
    changed = np.concatenate(([True], running[1:] != running[:-1]))
    return unique[changed], running[changed]


def job_intervals(jobs: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The ``start`` and ``end`` of the jobs that have both (float arrays)."""
    timed = jobs.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
    return (
        timed["start"].cast(pl.Float64).to_numpy(),
        timed["end"].cast(pl.Float64).to_numpy(),
    )


def busy_periods(starts: np.ndarray, ends: np.ndarray, *, min_jobs: int = BUSY_JOBS) -> pl.DataFrame:
    """The maximal intervals during which at least ``min_jobs`` of the intervals ``[start, end)`` run.

    Parameters
    ----------
    starts, ends : numpy.ndarray
        Each job's dates.
    min_jobs : int, default=2
        Least concurrency inside a period.

    Returns
    -------
    polars.DataFrame
        ``start``, ``end`` (s), ``peak`` (most jobs running at once) and ``job_seconds`` (the jobs' time
        summed inside the period), one row per period in date order; no row when the jobs never overlap.

    Examples
    --------
    >>> busy_periods(np.array([0.0, 1.0, 2.5, 5.0]), np.array([2.0, 3.0, 4.0, 6.0])).rows()
    [(1.0, 2.0, 2, 2.0), (2.5, 3.0, 2, 1.0)]
    >>> busy_periods(np.array([0.0, 5.0]), np.array([2.0, 6.0])).height
    0
    """
    if min_jobs < 1:
        raise ValueError(f"min_jobs must be >= 1, got {min_jobs}")
    dates, running = concurrency(starts, ends)
    busy = running >= min_jobs
    # Runs of consecutive busy steps: a period opens where a busy step follows a calm one, closes at the next calm one.
    edges = np.diff(np.concatenate(([0], busy.astype(np.int8), [0])))
    opens, closes = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    widths = np.diff(dates, append=dates[-1] if dates.size else 0.0)
    weighted = np.concatenate(([0.0], np.cumsum(running * widths)))
    peaks = [int(running[i:j].max()) for i, j in zip(opens, closes, strict=True)]
    return pl.DataFrame(
        {
            "start": dates[opens],
            "end": dates[closes],
            "peak": peaks,
            "job_seconds": weighted[closes] - weighted[opens],
        },
        schema={"start": pl.Float64, "end": pl.Float64, "peak": pl.Int64, "job_seconds": pl.Float64},
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
