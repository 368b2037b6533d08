"""Concurrency over time and busy periods: when jobs actually overlap.

A job runs over ``[start, end)``. The concurrency is the step function of how many jobs run at each date. A
**busy period** is a maximal interval during which at least :data:`BUSY_JOBS` jobs run (the intervals where the
concurrency is >= 2, merged when they touch); jobs that never overlap have none. The trace replay reports its
metrics over them too (``busy_*``), the report draws them (:mod:`iosets.report._busy`).
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
    first, last = np.sort(starts[keep]), np.sort(ends[keep])
    if first.size == 0:
        return np.empty(0), np.empty(0, np.int64)
    dates = np.sort(np.concatenate((first, last)))
    unique = dates[np.append(True, dates[1:] != dates[:-1])]
    # After all events of a date: the intervals started by then and not yet ended.
    running = np.searchsorted(first, unique, side="right") - np.searchsorted(last, unique, side="right")
    changed = np.concatenate(([True], running[1:] != running[:-1]))
    return unique[changed], running[changed]


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
    # Between a period's close and the next one's opening the count is below min_jobs: below any peak.
    peaks = np.maximum.reduceat(running, opens) if opens.size else np.empty(0, np.int64)
    return pl.DataFrame(
        {
            "start": dates[opens],
            "end": dates[closes],
            "peak": peaks,
            "job_seconds": weighted[closes] - weighted[opens],
        },
        schema={"start": pl.Float64, "end": pl.Float64, "peak": pl.Int64, "job_seconds": pl.Float64},
    )
