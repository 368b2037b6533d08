"""make_large_site: the report's inputs for a large site, consistent with one another."""

import numpy as np
import polars as pl
import pytest

from iosets.datasets import make_large_site
from iosets.errors import InputError
from iosets.schemas import (
    JOBS,
    RECOMMENDED_JOBS,
    TRACE_REPLAY_JOBS,
    TRACE_REPLAY_PHASES,
    TRACE_REPLAY_SCHEDULERS,
    TRACE_REPLAY_SHARES,
    TUNE_RANKING,
)

SCHEDULERS = ("fcfs", "wfq", "iosets-wfq")


@pytest.fixture(scope="module")
def site():
    return make_large_site(500, schedulers=SCHEDULERS, phases_per_job=6, random_state=3)


def test_each_table_has_its_schema_and_size(site):
    expected = {
        "jobs": (JOBS, 500),
        "recommendation": (RECOMMENDED_JOBS, 500),
        "replay_jobs": (TRACE_REPLAY_JOBS, 500 * 3),
        "replay_phases": (TRACE_REPLAY_PHASES, 500 * 6 * 3),
        "replay_schedulers": (TRACE_REPLAY_SCHEDULERS, 3),
        "tune": (TUNE_RANKING, 9),
    }
    for name, (schema, height) in expected.items():
        frame = getattr(site, name)
        assert frame.height == height, name
        assert schema.validate(frame).equals(frame), name
        assert set(schema.required) <= set(frame.columns), name
    assert site.replay_schedulers["scheduler"].to_list() == list(SCHEDULERS)
    assert TRACE_REPLAY_SHARES.validate(site.replay_shares).equals(site.replay_shares)


def test_the_same_seed_gives_the_same_site():
    first = make_large_site(50, phases_per_job=3, random_state=7)
    again = make_large_site(50, phases_per_job=3, random_state=7)
    assert first.replay_phases.equals(again.replay_phases)
    assert first.jobs.equals(again.jobs)


def test_phases_carry_each_job_s_bytes_exactly(site):
    moved = site.replay_phases.filter(pl.col("scheduler") == "wfq").group_by("job_id").agg(pl.col("bytes").sum())
    total = site.jobs.select("job_id", (pl.col("bytes_read") + pl.col("bytes_written")).cast(pl.Int64).alias("total"))
    both = moved.join(total, on="job_id")
    assert both.height == 500
    assert (both["bytes"] == both["total"]).all()


def test_a_phase_is_ready_one_recorded_gap_after_the_previous_one_ends(site):
    phases = site.replay_phases.sort("scheduler", "job_id", "phase")
    previous = pl.col("end").shift(1).over("scheduler", "job_id")
    gap = pl.col("recorded_start") - pl.col("recorded_end").shift(1).over("scheduler", "job_id")
    checked = phases.with_columns((previous + gap).alias("expected"))
    first = checked.filter(pl.col("phase") == 0)
    later = checked.filter(pl.col("phase") > 0)
    assert np.allclose(first["ready"], first["recorded_start"], rtol=0, atol=1e-6)
    assert np.allclose(later["ready"], later["expected"], rtol=1e-12, atol=1e-3)


def test_per_job_runtime_and_stretch_follow_from_the_phases(site):
    lives = site.replay_phases.group_by("scheduler", "job_id").agg(
        (pl.col("end").max() - pl.col("ready").min()).alias("life"),
        (pl.col("recorded_end").max() - pl.col("recorded_start").min()).alias("recorded"),
    )
    both = site.replay_jobs.join(lives, on=["scheduler", "job_id"])
    assert both.height == 1500
    assert np.allclose(both["runtime"], both["life"], rtol=1e-12)
    assert np.allclose(both["alone_runtime"], both["recorded"], rtol=1e-12)
    assert np.allclose(both["stretch"], both["life"] / both["recorded"], rtol=1e-12)
    assert np.allclose(both["wait"], both["life"] - both["recorded"], rtol=1e-9, atol=1e-6)
    assert (both["stretch"] >= 1).all()


def test_policy_metrics_summarise_the_per_job_table(site):
    stretch = site.replay_jobs.group_by("scheduler").agg(
        pl.col("stretch").max().alias("max"), pl.col("stretch").mean().alias("mean")
    )
    both = site.replay_schedulers.join(stretch, on="scheduler")
    assert np.allclose(both["max_stretch"], both["max"])
    assert np.allclose(both["mean_stretch"], both["mean"])
    assert (both["utilization"] < both["utilization_bound"]).all()
    shares = site.replay_shares.group_by("scheduler").agg(pl.col("share").sum())
    assert np.allclose(shares["share"], 1.0)


def test_iosets_wfq_favours_the_high_priority_sets(site):
    waits = (
        site.replay_phases.with_columns((pl.col("start") - pl.col("ready")).alias("wait"))
        .group_by("scheduler", "set")
        .agg(pl.col("wait").sum() / (pl.col("recorded_end") - pl.col("recorded_start")).sum())
    )
    first, last = site.recommendation["set"].min(), site.recommendation["set"].max()

    def wait(scheduler, set_):
        return waits.filter((pl.col("scheduler") == scheduler) & (pl.col("set") == set_))["wait"].item()

    assert wait("iosets-wfq", first) < wait("fcfs", first) / 5
    assert wait("iosets-wfq", last) > wait("fcfs", last)
    classes = site.replay_phases.filter(pl.col("scheduler") == "iosets-wfq")
    assert (classes["class"] == classes["set"].cast(pl.String)).all()


def test_the_tuning_ranking_is_ordered_by_utilization(site):
    tune = site.tune
    assert tune["rank"].to_list() == list(range(1, 10))
    assert tune["utilization"].is_sorted(descending=True)
    assert tune.filter(pl.col("mapping") == "fair-share")["n_sets"].item() == site.jobs["w_iter"].count()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_jobs": 0}, "n_jobs must be an integer >= 1, got 0"),
        ({"phases_per_job": 0}, "phases_per_job must be an integer >= 1, got 0"),
        ({"schedulers": ("fcfs", "sjf")}, "unknown scheduler 'sjf'; expected one of fcfs, wfq, iosets-wfq"),
        ({"schedulers": ("wfq", "wfq")}, "schedulers must be distinct, got wfq, wfq"),
        ({"schedulers": ()}, "number of schedulers must be an integer >= 1, got 0"),
    ],
)
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(InputError) as error:
        make_large_site(**{"n_jobs": 10, **kwargs})
    assert str(error.value) == message
