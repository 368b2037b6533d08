"""`tune` says what it used: the jobs it replays, why it leaves the others out, and what their dates were."""

from datetime import UTC, datetime

import polars as pl
import pytest

from iosets.errors import InputError
from iosets.replay import tune
from iosets.replay._tune import busiest_instant, tune_selection


def epoch(*fields) -> float:
    return datetime(*fields, tzinfo=UTC).timestamp()


def jobs_frame(w_iter, alpha_io, **columns) -> pl.DataFrame:
    return pl.DataFrame(
        {"job_id": [f"j{k}" for k in range(len(w_iter))], "w_iter": w_iter, "alpha_io": alpha_io, **columns},
        schema_overrides={"w_iter": pl.Float64, "alpha_io": pl.Float64, "start": pl.Float64, "end": pl.Float64},
    )


# 10 jobs: 3 io_bound and 2 few_phases (codes), 1 null w_iter without a code, 1 code despite a w_iter,
# 2 periodic without alpha_io, and 2 periodic with one (j7, j8) -> 2 used
MIXED = jobs_frame(
    [None, None, None, None, None, None, 8.0, 20.0, 30.0, 40.0],
    [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.2, 0.3, None],
    not_periodic=["io_bound", "io_bound", "few_phases", "io_bound", "few_phases", None, "irregular", None, None, None],
).with_columns(pl.when(pl.col("job_id") == "j7").then(None).otherwise(pl.col("alpha_io")).alias("alpha_io"))


def test_the_selection_counts_each_reason():
    selection = tune_selection(MIXED)
    assert selection.jobs["job_id"].to_list() == ["j8"]
    assert selection.not_periodic == {"io_bound": 3, "few_phases": 2, "irregular": 1, "no w_iter": 1}
    assert (selection.n_given, selection.without_alpha, selection.not_running) == (10, 2, 0)
    assert selection.summary == (
        "used 1 of 10 jobs; left out: 7 not periodic (io_bound 3, few_phases 2, irregular 1, no w_iter 1), "
        "2 without alpha_io"
    )


def test_without_the_not_periodic_column_a_null_w_iter_is_the_reason():
    selection = tune_selection(MIXED.drop("not_periodic"))
    assert selection.jobs["job_id"].to_list() == ["j6", "j8"]
    assert selection.summary == "used 2 of 10 jobs; left out: 6 not periodic (no w_iter 6), 2 without alpha_io"


def test_tune_replays_the_selection_and_names_it_when_there_is_none():
    ranking = tune(MIXED, bases=[10.0], gmm=False)
    assert ranking.equals(tune(MIXED.filter(pl.col("job_id") == "j8"), bases=[10.0], gmm=False))
    assert ranking.filter(pl.col("mapping") == "fair-share")["n_sets"].to_list() == [1]
    with pytest.raises(InputError) as error:
        tune(MIXED.head(6))
    assert str(error.value) == (
        "no job with a w_iter and an alpha_io to replay: used 0 of 6 jobs; "
        "left out: 6 not periodic (io_bound 3, few_phases 2, no w_iter 1)"
    )


# A and B overlap in March 2019, C runs alone in May 2024, D has no dates (always running)
DATED = jobs_frame(
    [10.0, 20.0, 30.0, 40.0],
    [0.1, 0.1, 0.1, 0.1],
    start=[epoch(2019, 3, 2), epoch(2019, 3, 2, 12), epoch(2024, 5, 10), None],
    end=[epoch(2019, 3, 3), epoch(2019, 3, 4), epoch(2024, 5, 11, 6), None],
)


def test_jobs_of_different_years_are_replayed_together_and_the_summary_says_so():
    selection = tune_selection(DATED)
    assert selection.jobs.height == 4 and selection.max_running == 3 and selection.instant is None
    assert selection.span == (epoch(2019, 3, 2), epoch(2024, 5, 11, 6))
    assert selection.summary.splitlines() == [
        "used 4 of 4 jobs",
        "replayed together as one concurrent workload; their recorded runs span 2019-03-02 .. 2024-05-11 "
        "and at most 3 ran at the same time",
    ]


def test_overlap_keeps_the_jobs_running_at_the_busiest_instant():
    selection = tune_selection(DATED, overlap=True)
    assert selection.jobs["job_id"].to_list() == ["j0", "j1", "j3"]
    assert selection.instant == epoch(2019, 3, 2, 12) and selection.not_running == 1
    assert selection.summary.splitlines() == [
        "used 3 of 4 jobs; left out: 1 not running at the busiest instant",
        "replayed the 3 jobs running at the busiest instant, 2019-03-02 12:00:00 UTC "
        "(1 without dates, counted as always running)",
    ]
    ranking = tune(DATED, bases=[10.0], gmm=False, overlap=True)
    assert ranking.equals(tune(selection.jobs, bases=[10.0], gmm=False))


def test_jobs_that_all_overlap_need_no_date_line():
    together = DATED.with_columns(pl.lit(epoch(2020, 1, 1)).alias("start"), pl.lit(epoch(2020, 1, 2)).alias("end"))
    assert tune_selection(together).summary == "used 4 of 4 jobs"
    undated = DATED.drop("start", "end")
    assert tune_selection(undated).summary == "used 4 of 4 jobs"
    assert tune_selection(undated, overlap=True).summary.splitlines() == [
        "used 4 of 4 jobs",
        "no job has dates: all replayed together",
    ]


@pytest.mark.parametrize(
    "start, end, expected",
    [
        ([0.0, 5.0, 100.0, 105.0], [10.0, 15.0, 110.0, 120.0], (5.0, 2)),  # a tie: the earliest instant
        ([0.0, 10.0], [10.0, 20.0], (10.0, 2)),  # closed ranges: an end meets a start
        ([0.0, 5.0, 10.0, 20.0], [10.0, 30.0, 12.0, 25.0], (10.0, 3)),
        ([3.0], [3.0], (3.0, 1)),
        ([], [], (None, 0)),
    ],
)
def test_busiest_instant(start, end, expected):
    assert busiest_instant(start, end) == expected


def test_the_busiest_instant_counts_undated_jobs_as_always_running():
    jobs = jobs_frame([1.0] * 5, [0.1] * 5, start=[0.0, 5.0, 100.0, 105.0, None], end=[10.0, 15.0, 110.0, 120.0, 50.0])
    selection = tune_selection(jobs, overlap=True)
    assert selection.jobs["job_id"].to_list() == ["j0", "j1", "j4"]  # j4 has an end but no start
    assert (selection.instant, selection.max_running, selection.n_undated) == (5.0, 3, 1)
    assert selection.summary.splitlines()[1] == (
        "replayed the 3 jobs running at the busiest instant, 1970-01-01 00:00:05 UTC "
        "(1 without dates, counted as always running)"
    )
