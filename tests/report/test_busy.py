"""Concurrency, busy periods and the overlapped share against hand-computed cases and a brute-force count."""

import numpy as np
import polars as pl
import pytest

from iosets.report._busy import busy_periods, concurrency, overlapped_share


def test_concurrency_merges_simultaneous_end_and_start():
    # One job ends at 2 as another starts: the count stays 1, no step at 2.
    dates, running = concurrency(np.array([0.0, 2.0]), np.array([2.0, 4.0]))
    assert dates.tolist() == [0.0, 4.0]
    assert running.tolist() == [1, 0]


def test_concurrency_matches_a_brute_force_count():
    rng = np.random.default_rng(3)
    starts = rng.integers(0, 50, 40).astype(float)
    ends = starts + rng.integers(0, 10, 40)
    dates, running = concurrency(starts, ends)
    for t in np.arange(0.0, 62.0, 0.5):
        expected = int(((starts <= t) & (t < ends)).sum())
        step = np.searchsorted(dates, t, side="right") - 1
        assert (int(running[step]) if step >= 0 else 0) == expected, t


def test_busy_periods_are_merged_where_concurrency_stays_at_two():
    # [0,4) overlaps [1,2) then [2,3): concurrency 2 over [1,3) without a break: one period.
    periods = busy_periods(np.array([0.0, 1.0, 2.0, 10.0]), np.array([4.0, 2.0, 3.0, 11.0]))
    assert periods.rows() == [(1.0, 3.0, 2, 4.0)]


def test_busy_periods_peak_and_min_jobs():
    starts, ends = np.array([0.0, 1.0, 1.5]), np.array([3.0, 3.0, 2.0])
    assert busy_periods(starts, ends).rows() == [(1.0, 3.0, 3, 4.5)]
    assert busy_periods(starts, ends, min_jobs=3).rows() == [(1.5, 2.0, 3, 1.5)]
    with pytest.raises(ValueError, match="min_jobs must be >= 1, got 0"):
        busy_periods(starts, ends, min_jobs=0)


def test_no_job_or_no_overlap_gives_no_period_and_zero_share():
    assert busy_periods(np.empty(0), np.empty(0)).height == 0
    assert overlapped_share(pl.DataFrame({"start": [0.0, 10.0], "end": [5.0, 12.0]})) == 0.0
    assert (
        overlapped_share(
            pl.DataFrame({"start": [None], "end": [None]}, schema={"start": pl.Float64, "end": pl.Float64})
        )
        == 0.0
    )


def test_overlapped_share_of_identical_jobs_is_one():
    jobs = pl.DataFrame({"start": [100.0, 100.0, 100.0], "end": [200.0, 200.0, 200.0]})
    assert overlapped_share(jobs) == 1.0
