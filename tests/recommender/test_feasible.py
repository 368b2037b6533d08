"""Recommendations an administrator can apply: a set reserves one job's demand, the sets fit the bandwidth,
and jobs on thin evidence never get a set of higher priority than the conservative one."""

import warnings

import numpy as np
import polars as pl
import pytest

from iosets.recommender import Recommender, WIterEstimator, rbfq_reservations, recommend, set_summary
from iosets.recommender._enforcement import reservation_scale, set_reservations

GB = 1e9
# Three SET-10 sets whose largest jobs reserve 12, 10 and 7 GB/s (safety 1) on a 20 GB/s file system:
# 29 GB/s, 1.45x the bandwidth. Summed over jobs, as before, they would reserve 16, 14 and 9 GB/s.
W_ITER = [2.0, 2.5, 20.0, 25.0, 200.0, 250.0]
ALPHA = [0.6, 0.2, 0.5, 0.2, 0.35, 0.1]
OVERBOOKED = (
    "RBFQ reservations of sets 0 (12.0 GB/s), 1 (10.0 GB/s), 2 (7.0 GB/s) sum to 29.0 GB/s, "
    "1.45x the bandwidth (20.0 GB/s); scaled down to fit"
)


def jobs_frame(w_iter, alpha_io, **columns) -> pl.DataFrame:
    return pl.DataFrame(
        {"job_id": [f"j{k}" for k in range(len(w_iter))], "w_iter": w_iter, "alpha_io": alpha_io, **columns},
        schema_overrides={"w_iter": pl.Float64, "alpha_io": pl.Float64},
    )


def quiet_recommend(jobs, **kwargs) -> pl.DataFrame:
    """``recommend`` failing on any warning (1 KiB requests: WFQ weights of sets 10^5 apart stay exact)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return recommend(jobs, **{"max_request": 1024, **kwargs})


# ---- a set's reservation is one job's -------------------------------------------------------------------------------


def test_a_set_reserves_what_its_largest_job_needs():
    # set 0 holds jobs of alpha 0.1 and 0.4: it reserves 1.5 x 0.4 x B, not 1.5 x 0.5 x B
    rec = quiet_recommend(jobs_frame([2.0, 3.0, 20.0], [0.1, 0.4, 0.2]), bandwidth=GB)
    assert rec["set"].to_list() == [0, 0, 1]
    assert rec["rbfq_reservation"].to_list() == pytest.approx([1.5e8, 6e8, 3e8], rel=1e-15)
    summary = set_summary(rec)
    assert summary["rbfq_reservation"].to_list() == pytest.approx([1.5 * 0.4 * GB, 1.5 * 0.2 * GB], rel=1e-15)
    # 0.9 GB/s in all: it fits, where the former sum over jobs (1.05 GB/s) was scaled down


def test_set_reservations_are_the_largest_demand_per_set():
    ids, reservation = set_reservations([1.0, 4.0, 2.0, 3.0], [2, 2, -1, 2])
    assert ids.tolist() == [-1, 2] and reservation.tolist() == [2.0, 4.0]
    assert reservation_scale([1.0, 4.0, 2.0, 3.0], [2, 2, -1, 2], bandwidth=3.0) == 0.5
    assert reservation_scale([1.0, 4.0, 2.0, 3.0], [2, 2, -1, 2], bandwidth=6.0) == 1.0


def test_sets_reserving_more_than_the_bandwidth_are_scaled_by_one_factor():
    with pytest.warns(UserWarning) as caught:
        rec = recommend(jobs_frame(W_ITER, ALPHA), bandwidth=20 * GB, safety=1.0)
    assert [str(w.message) for w in caught] == [OVERBOOKED]
    assert rec["set"].to_list() == [0, 0, 1, 1, 2, 2]
    scale = 1 / 1.45
    expected = [alpha * 20 * GB * scale for alpha in ALPHA]
    assert rec["rbfq_reservation"].to_list() == pytest.approx(expected, rel=1e-12)
    summary = set_summary(rec)
    assert summary["rbfq_reservation"].to_list() == pytest.approx([r * GB * scale for r in (12, 10, 7)], rel=1e-12)
    assert summary["rbfq_reservation"].sum() == pytest.approx(20 * GB, rel=1e-12)  # exactly the bandwidth
    by_set = dict(zip(summary["set"], summary["rbfq_reservation"], strict=True))
    assert all(r <= by_set[s] for s, r in zip(rec["set"], rec["rbfq_reservation"], strict=True))


def test_rbfq_reservations_takes_the_sets():
    with pytest.warns(UserWarning, match="sets 0 \\(1.0 GB/s\\), 1 \\(750.0 MB/s\\) sum to 1.8 GB/s, 1.75x"):
        got = rbfq_reservations([0.5, 0.2, 0.375], [0, 0, 1], bandwidth=GB, safety=2.0)
    assert got.tolist() == pytest.approx([1e9 / 1.75, 4e8 / 1.75, 7.5e8 / 1.75], rel=1e-15)
    # one set: the three jobs take turns, so one job's demand fits
    assert rbfq_reservations([0.5, 0.2, 0.5], [3, 3, 3], bandwidth=GB, safety=2.0).tolist() == [1e9, 4e8, 1e9]


def test_dates_no_longer_matter_only_sets_do():
    dated = jobs_frame(
        W_ITER, ALPHA, start=[0.0, 0.0, 1e9, 1e9, 2e9, 2e9], end=[1.0, 1.0, 1e9 + 1, 1e9 + 1, 2e9 + 1, 2e9]
    )
    with pytest.warns(UserWarning, match="1.45x"):
        got = recommend(dated, bandwidth=20 * GB, safety=1.0)
    with pytest.warns(UserWarning, match="1.45x"):
        assert got.drop("start", "end").equals(recommend(jobs_frame(W_ITER, ALPHA), bandwidth=20 * GB, safety=1.0))


def test_jobs_without_io_reserve_nothing_and_io_bound_jobs_keep_their_demand():
    jobs = jobs_frame(
        [2.0, None, None, None, None],
        [0.2, 0.9, 0.8, 0.3, None],
        not_periodic=[None, "no_io", "few_bytes", "io_bound", "few_phases"],
    )
    rec = quiet_recommend(jobs, bandwidth=GB, safety=1.0)
    assert rec["set"].to_list() == [0, 1, 1, 1, 1]  # the conservative set: one below set 0
    assert rec["rbfq_reservation"].to_list() == pytest.approx([2e8, 0.0, 0.0, 3e8, 0.0], rel=1e-15)
    assert set_summary(rec)["rbfq_reservation"].to_list() == pytest.approx([2e8, 3e8], rel=1e-15)


# ---- thin evidence stays conservative -------------------------------------------------------------------------------


def test_a_small_w_iter_found_not_periodic_lands_in_the_conservative_set():
    # confident jobs: sets 1 and 2, so the conservative set is 3; 0.2 s alone would be set -1 (priority 10)
    jobs = jobs_frame(
        [5.0, 50.0, 0.2, 5e4, 0.3, None],
        [0.1] * 6,
        w_iter_confidence=[1.0, 1.0, 1.0, 1.0, 0.1, None],
        not_periodic=[None, None, "few_phases", "few_phases", None, None],
    )
    rec = quiet_recommend(jobs)
    assert rec["set"].to_list() == [1, 2, 3, 5, 3, 3]  # 5e4 s: set 5, of lower priority than 3, is kept
    assert rec["priority"].to_list() == pytest.approx([0.1, 0.01, 1e-3, 1e-5, 1e-3, 1e-3], rel=1e-15)
    assert rec["conservative"].to_list() == [False, False, True, True, True, True]
    # no min_confidence trusts a job found not periodic
    trusting = quiet_recommend(jobs, min_confidence=0.0)
    assert trusting["set"].to_list() == [1, 2, 3, 5, -1, 3]
    assert trusting["conservative"].to_list() == [False, False, True, True, False, True]


def test_thin_evidence_under_gmm_never_outranks_the_conservative_set():
    logs = np.concatenate([np.random.default_rng(0).normal(centre, 0.08, 100) for centre in (0.0, 3.0)])
    jobs = jobs_frame([*(10**logs), 1.0, 5e5], [0.1] * 202, not_periodic=[None] * 200 + ["few_phases", "irregular"])
    rec = quiet_recommend(jobs, mapping="gmm")
    assert rec["set"].to_list() == [0] * 100 + [1] * 100 + [2, 2]  # set 2: a decade below the clusters
    assert rec["conservative"].to_list() == [False] * 200 + [True, True]
    explicit = quiet_recommend(jobs, mapping="gmm", conservative_set=0)
    assert explicit["set"].to_list()[-2:] == [0, 1]  # 1 s stays in set 0; 5e5 s maps to the slow cluster


def test_the_recommender_maps_thin_evidence_as_recommend_does():
    history = jobs_frame(
        [5.0, 50.0, 0.2, 0.3],
        [0.1] * 4,
        app=["a", "b", "c", "d"],
        user=["u"] * 4,
        start=[0.0, 1.0, 2.0, 3.0],
        not_periodic=[None, None, "few_phases", None],
    )
    fitted = Recommender(max_request=1024).fit(history)
    assert fitted.mapping_.conservative_set == 3  # the confident jobs: 5 s, 50 s, 0.3 s in sets 1, 2, -1
    assert fitted.predict(history)["set"].to_list() == [1, 2, 3, -1]
    assert fitted.predict(history).equals(recommend(history, max_request=1024))


# ---- the Recommender: the same rule for the history and for new jobs ------------------------------------------------


def history_frame(w_iter, alpha_io, apps) -> pl.DataFrame:
    n = len(w_iter)
    return jobs_frame(w_iter, alpha_io, app=apps, user=["u"] * n, start=[float(k) for k in range(n)])


def test_fit_scales_the_history_sets_into_the_bandwidth():
    history = history_frame(W_ITER, ALPHA, ["a", "a", "b", "b", "c", "c"])
    with pytest.warns(UserWarning) as caught:
        fitted = Recommender(bandwidth=20 * GB, safety=1.0).fit(history)
    assert [str(w.message) for w in caught] == [OVERBOOKED]
    assert fitted.reservation_scale_ == pytest.approx(1 / 1.45, rel=1e-15)
    assert fitted.sets_["rbfq_reservation"].to_list() == pytest.approx([r * GB / 1.45 for r in (12, 10, 7)], rel=1e-12)
    # app a: median alpha 0.4 -> 8 GB/s x scale, below set 0's 12 GB/s x scale
    assert fitted.reservation_by_app_["a"] == pytest.approx(0.4 * 20 * GB / 1.45, rel=1e-12)


def test_a_new_job_reserves_at_most_its_set():
    # app m: four jobs of 200 s at alpha 0.8 then four of 2 s at 0.1: median alpha 0.45, estimate ~2.3 s (set 0),
    # and set 0 reserves 0.1 x B in the history: the new job gets that, not 0.45 x B
    history = history_frame([200.0] * 5 + [2.0] * 5, [0.8] * 5 + [0.1] * 5, ["m"] * 10)
    fitted = Recommender(bandwidth=GB, safety=1.0, estimator=WIterEstimator(halflife=1.0)).fit(history)
    assert fitted.reservation_by_app_["m"] == pytest.approx(0.45 * GB, rel=1e-12)
    got = fitted.predict_one(app="m", user="u")
    assert (got["set"], got["conservative"]) == (0, False)
    assert got["rbfq_reservation"] == pytest.approx(0.1 * GB, rel=1e-15)


def test_a_new_job_in_a_set_the_history_lacks_reserves_what_the_sets_leave():
    # app m alternates w_iter 2 s and 150 s at alpha 0.45: sets 0 and 2 reserve 0.45 B each, 0.1 B is left; a new
    # m job is estimated between them (or is conservative): a set the history lacks, so it gets 0.1 B, not 0.45 B
    history = history_frame([2.0, 150.0] * 3, [0.45] * 6, ["m"] * 6)
    fitted = Recommender(bandwidth=GB, safety=1.0).fit(history)
    assert fitted.sets_.select("set", "rbfq_reservation").rows() == [(0, 0.45 * GB), (2, 0.45 * GB)]
    got = fitted.predict_one(app="m", user="u")
    assert got["set"] not in (0, 2)
    assert got["rbfq_reservation"] == pytest.approx(0.1 * GB, rel=1e-9)
