"""`tune`: a site's jobs replayed under candidate mappings, ranked by utilization then Max Stretch."""

import numpy as np
import polars as pl
import pytest

from iosets import Workload
from iosets.datasets import make_figure_workload
from iosets.errors import InputError
from iosets.recommender import assign_sets
from iosets.replay import replay_phases, tune
from iosets.schemas import TUNE_RANKING


@pytest.mark.parametrize("mu", [20.0, 200.0, 2000.0])
def test_fig10_tuning_is_at_least_as_good_as_set10(mu):
    workload = make_figure_workload("fig10", mu, random_state=0)
    ranking = tune(workload.to_jobs(), horizon=workload.horizon, window=workload.window)
    print(f"\nfig10 mu={mu}\n{ranking}")
    by_name = {row["mapping"]: row for row in ranking.iter_rows(named=True)}
    assert set(by_name) == {"set-2", "set-3", "set-5", "set-10", "set-20", "set-50", "set-100", "gmm", "fair-share"}
    best = ranking.row(0, named=True)
    assert best["utilization"] >= by_name["set-10"]["utilization"] - 1e-4
    assert by_name["set-10"]["utilization"] > by_name["fair-share"]["utilization"]  # the paper's Fig. 10
    assert by_name["fair-share"]["n_sets"] == workload.n_jobs
    assert ranking["rank"].to_list() == list(range(1, 10))
    assert ranking.schema == pl.Schema(TUNE_RANKING.polars) and TUNE_RANKING.validate(ranking).equals(ranking)
    assert (np.diff(ranking["utilization"].round(4).to_numpy()) <= 1e-4).all()


def test_candidates_replay_the_mapping_they_name():
    workload = make_figure_workload("fig10", 50.0, random_state=1)
    jobs = workload.to_jobs()
    ranking = tune(jobs, bases=[10.0], gmm=False, horizon=workload.horizon, window=workload.window)
    replayed = Workload.from_jobs(jobs, horizon=workload.horizon, window=workload.window, random_state=0)
    sets, priorities, _ = assign_sets(jobs, "set-10")
    expected = replay_phases(replayed.with_assignment(sets, priorities), "explicit").metrics
    row = ranking.filter(pl.col("mapping") == "set-10").row(0, named=True)
    assert row["utilization"] == expected.utilization and row["max_stretch"] == expected.max_stretch
    assert row["n_sets"] == np.unique(sets).size


def test_to_jobs_inverts_from_jobs():
    jobs = pl.DataFrame({"job_id": ["a", "b"], "w_iter": [10.0, 400.0], "alpha_io": [0.125, 0.5]})
    back = Workload.from_jobs(jobs, bandwidth=1e6, horizon=4000.0, window=(0.0, 4000.0)).to_jobs()
    assert back["w_iter"].to_list() == pytest.approx([10.0, 400.0])
    assert back["alpha_io"].to_list() == pytest.approx([0.125, 0.5])
    assert back["n_phases"].to_list() == [400, 10]


def test_staggered_releases_lie_within_one_iteration():
    jobs = pl.DataFrame({"job_id": ["a", "b"], "w_iter": [10.0, 400.0], "alpha_io": [0.1, 0.1]})
    release = Workload.from_jobs(jobs, random_state=3).jobs["release"].to_numpy()
    assert ((release >= 0) & (release < [10.0, 400.0])).all() and release.max() > 0


def test_nothing_periodic_is_an_error():
    jobs = pl.DataFrame({"job_id": ["a"], "w_iter": [None], "alpha_io": [0.1]}, schema_overrides={"w_iter": pl.Float64})
    with pytest.raises(InputError, match="no job with a w_iter"):
        tune(jobs)
    with pytest.raises(InputError, match="missing column"):
        tune(pl.DataFrame({"job_id": ["a"]}))
