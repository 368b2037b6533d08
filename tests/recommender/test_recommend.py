"""`recommend`: mappings, the conservative set, WFQ weights and RBFQ parameters checked by replay."""

import warnings

import numpy as np
import polars as pl
import pytest

from iosets.datasets import make_backlogged_requests
from iosets.errors import InputError
from iosets.recommender import cluster_sets, recommend, set_summary, wfq_weights
from iosets.replay import Device, replay_requests
from iosets.replay._request_metrics import interval_bytes

# Seed 004 section VIII: PlaFRIM jobs per SET-10 set S0..S5 (4088 jobs).
PLAFRIM_COUNTS = [321, 1866, 1369, 435, 88, 9]


def jobs_frame(w_iter, alpha_io=None, confidence=None) -> pl.DataFrame:
    n = len(w_iter)
    return pl.DataFrame(
        {
            "job_id": [f"j{k}" for k in range(n)],
            "w_iter": w_iter,
            "w_iter_confidence": confidence if confidence is not None else [1.0] * n,
            "alpha_io": alpha_io if alpha_io is not None else [0.1] * n,
        },
        schema={"job_id": pl.String, "w_iter": pl.Float64, "w_iter_confidence": pl.Float64, "alpha_io": pl.Float64},
        nan_to_null=True,  # a jobs table holds null, never NaN, for a w_iter not found
    )


@pytest.mark.filterwarnings("ignore:WFQ weights above")
def test_set10_boundaries_and_priorities():
    rec = recommend(jobs_frame([3.16, 4, 31, 32, 316, 317, 3162, 3163]))
    assert rec["set"].to_list() == [0, 1, 1, 2, 2, 3, 3, 4]
    assert rec["priority"].to_list() == pytest.approx([1, 0.1, 0.1, 0.01, 0.01, 1e-3, 1e-3, 1e-4])
    assert not rec["conservative"].any()


def test_set_b_by_name_and_by_base():
    w = [1.0, 1.5, 3.0, 6.0, 100.0]
    by_name = recommend(jobs_frame(w), "set-2")
    by_base = recommend(jobs_frame(w), "set-b", base=2)
    # log2: 0, 0.58, 1.58, 2.58, 6.64 -> round half up
    assert by_name["set"].to_list() == by_base["set"].to_list() == [0, 1, 2, 3, 7]
    assert by_name["priority"].to_list() == pytest.approx([1, 0.5, 0.25, 0.125, 2.0**-7])


@pytest.mark.filterwarnings("ignore:WFQ weights above")
def test_plafrim_population_maps_back_to_its_proportions():
    rng = np.random.default_rng(4)
    # w_iter log-uniform inside each set's interval [10^(s-1/2), 10^(s+1/2))
    w = np.concatenate([10 ** rng.uniform(s - 0.5, s + 0.5, count) for s, count in enumerate(PLAFRIM_COUNTS)])
    rec = recommend(jobs_frame(rng.permutation(w)))
    counts = np.bincount(rec["set"].to_numpy(), minlength=6)
    assert counts.tolist() == PLAFRIM_COUNTS
    assert (100 * counts / counts.sum()).round(2).tolist() == [7.85, 45.65, 33.49, 10.64, 2.15, 0.22]


def test_unknown_or_unsure_jobs_go_to_the_conservative_set():
    rec = recommend(jobs_frame([5.0, 50.0, None, 500.0], confidence=[0.9, 0.9, 0.9, 0.2]))
    assert rec["set"].to_list() == [1, 2, 3, 3]  # one set below the lowest-priority confident one
    assert rec["priority"].to_list() == pytest.approx([0.1, 0.01, 1e-3, 1e-3])
    assert rec["conservative"].to_list() == [False, False, True, True]
    explicit = recommend(jobs_frame([5.0, None]), conservative_set=4)
    assert explicit["set"].to_list() == [1, 4]
    assert explicit["priority"][1] == pytest.approx(1e-4)


def test_gmm_finds_the_generated_clusters():
    rng = np.random.default_rng(0)
    centres = [0.3, 1.6, 3.1]  # log10 w_iter of three application families
    logs = np.concatenate([rng.normal(c, 0.08, 200) for c in centres])
    sets, priority_of = cluster_sets(10**logs)
    assert np.bincount(sets).tolist() == [200, 200, 200]
    assert np.log10(1 / priority_of) == pytest.approx(centres, abs=0.02)
    rec = recommend(jobs_frame(np.append(10**logs, np.nan)), "gmm")
    assert rec["set"].to_list() == sets.tolist() + [3]  # the unknown job: a set below the clusters
    assert rec["priority"][-1] == pytest.approx(priority_of[-1] / 10)


def test_gmm_prefers_one_set_for_one_family():
    rng = np.random.default_rng(1)
    sets, priority_of = cluster_sets(10 ** rng.normal(2.0, 0.1, 300))
    assert priority_of.size == 1 and set(sets.tolist()) == {0}


def test_gmm_of_one_job_is_one_set_centred_on_it():
    sets, priority_of = cluster_sets([40.0])
    assert sets.tolist() == [0] and priority_of.tolist() == [pytest.approx(1 / 40)]
    assert recommend(jobs_frame([40.0]), mapping="gmm")["set"].to_list() == [0]


def test_wfq_weights_keep_the_priority_ratios():
    rec = recommend(jobs_frame([1.0, 10.0, 100.0, 1000.0, 20.0]), max_request=65536)
    weights = dict(zip(rec["set"].to_list(), rec["wfq_weight"].to_list(), strict=True))
    assert weights == {0: 65536000, 1: 6553600, 2: 655360, 3: 65536}
    summary = set_summary(rec)
    ratio = summary["wfq_weight"].to_numpy() / summary["wfq_weight"].to_numpy()[-1]
    assert ratio == pytest.approx(summary["priority"].to_numpy() / summary["priority"].to_numpy()[-1], rel=0)
    assert summary["n_jobs"].to_list() == [1, 2, 1, 1]


def test_wfq_weights_capped_at_agios_int_with_a_warning():
    with pytest.warns(UserWarning, match="capped"):
        weights = wfq_weights([1.0, 1e-5], max_request=1 << 20)
    assert weights.tolist() == [2**31 - 1, 1 << 20]
    with pytest.raises(InputError, match="priorities"):
        wfq_weights([1.0, 0.0])


def test_rbfq_reservations_scale_with_demand_and_fit_the_bandwidth():
    rec = recommend(jobs_frame([2.0, 20.0, 200.0], alpha_io=[0.1, 0.2, None]), bandwidth=1e9, safety=2.0, limit=0.5)
    assert rec["rbfq_reservation"].to_list() == pytest.approx([2e8, 4e8, 0.0])
    assert rec["rbfq_weight"].to_list() == pytest.approx([100.0, 10.0, 1.0])
    assert rec["rbfq_limit"].to_list() == pytest.approx([5e8] * 3)
    with pytest.warns(UserWarning, match="scaled down"):
        over = recommend(jobs_frame([2.0, 20.0], alpha_io=[0.5, 0.5]), bandwidth=1e9)
    assert over["rbfq_reservation"].sum() == pytest.approx(1e9)
    assert over["rbfq_reservation"].to_list() == pytest.approx([5e8, 5e8])


def test_without_bandwidth_there_are_no_rbfq_rates():
    rec = recommend(jobs_frame([2.0, 20.0]))
    assert rec["rbfq_reservation"].null_count() == 2 and rec["rbfq_limit"].null_count() == 2
    assert set_summary(rec)["rbfq_reservation"].null_count() == 2


def test_rbfq_parameters_replayed_meet_the_reservations():
    bandwidth = 100e6
    jobs = jobs_frame([1.0, 10.0, 100.0], alpha_io=[0.1, 0.2, 0.3])
    jobs = jobs.with_columns(pl.Series("job_id", ["c0", "c1", "c2"]))
    rec = recommend(jobs, bandwidth=bandwidth, safety=1.5)  # reservations 15, 30, 45 MB/s
    ops = make_backlogged_requests(9000, 3, size_range=(65536, 65536), random_state=3)
    device = Device(bandwidth=bandwidth, overhead=0.0, seek=0.0)
    reservations = dict(zip(rec["job_id"], rec["rbfq_reservation"], strict=True))
    weights = dict(zip(rec["job_id"], rec["rbfq_weight"], strict=True))
    window = (0.2, 2.0)  # every class is still backlogged: each holds ~197 MB

    def throughput(result):
        got = interval_bytes(result.trace, result.complete, *window) / (window[1] - window[0])
        return dict(zip(result.trace.classes.tolist(), got, strict=True))

    with_reservations = throughput(
        replay_requests(ops, "rbfq", device=device, weights=weights, reservations=reservations, cost_bytes=1)
    )
    for job, reserved in reservations.items():
        assert with_reservations[job] >= 0.99 * reserved
    # the same weights without reservations starve the low-priority set (weights 100:10:1)
    weights_only = throughput(replay_requests(ops, "rbfq", device=device, weights=weights, cost_bytes=1))
    assert weights_only["c2"] < 0.1 * reservations["c2"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mapping": "set-x"}, "unknown mapping 'set-x'"),
        ({"mapping": "set-1"}, "base must be a finite number > 1, got 1.0"),
        ({"mapping": "gmm", "conservative_set": 5}, r"conservative_set 5 must lie in 0\.\.2"),
        ({"bandwidth": -1.0}, "bandwidth must be"),
        ({"max_request": 0}, "max_request"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(InputError, match=message):
        recommend(jobs_frame([5.0, 50.0]), **kwargs)


def test_missing_columns_are_named():
    with pytest.raises(InputError, match=r"jobs table: missing column\(s\) w_iter"):
        recommend(pl.DataFrame({"job_id": ["a"]}))
    with pytest.raises(InputError, match="alpha_io"):
        recommend(pl.DataFrame({"job_id": ["a"], "w_iter": [3.0]}), bandwidth=1e9)
    with pytest.raises(InputError, match="missing column"):
        set_summary(pl.DataFrame({"set": [1]}))


def test_no_warning_in_the_common_case():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        recommend(jobs_frame([3.0, 30.0, 300.0]), bandwidth=1e9)
