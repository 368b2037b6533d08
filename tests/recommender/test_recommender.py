"""`Recommender`: fit once, then predict tables and single jobs with the answers of the table path."""

import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from iosets.datasets import make_job_history
from iosets.errors import InputError
from iosets.recommender import Recommender, WIterEstimator, recommend, recommend_new_job, set_summary
from iosets.schemas import RECOMMENDED_JOBS, SET_SUMMARY

_ANCHOR = importlib.util.spec_from_file_location("predict_one", Path(__file__).parents[2] / "benchmarks/predict_one.py")
benchmark = importlib.util.module_from_spec(_ANCHOR)
_ANCHOR.loader.exec_module(benchmark)
ANSWER = benchmark.ANSWER  # the fields both paths compute the same way (the reservation is defined apart)
ENFORCEMENT = benchmark.ENFORCEMENT  # B = 10 GB/s, max_request 64 KiB, limit B / 2


@pytest.fixture(scope="module")
def history():
    return make_job_history(1500, n_apps=30, n_users=8, random_state=5)


@pytest.fixture(scope="module")
def fitted(history):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # capped WFQ weights: six SET-10 sets span 10^5
        return {mapping: Recommender(mapping=mapping, **ENFORCEMENT).fit(history) for mapping in ("set-10", "gmm")}


def queries(history, n=250, seed=0):
    """Seen pairs, seen apps with a new user, new apps (some sharing a code name), with and without nprocs."""
    rng = np.random.default_rng(seed)
    apps = history["app"].unique().sort().to_list() + ["lammps_new", "zzz_tool", "123"]
    users = history["user"].unique().sort().to_list() + ["u99"]
    out = []
    for _ in range(n):
        query = {"app": apps[rng.integers(len(apps))], "user": users[rng.integers(len(users))]}
        if rng.random() < 0.6:
            query["nprocs"] = float(2 ** rng.integers(0, 10))
        if rng.random() < 0.4:
            query["requested_time"] = float(rng.integers(600, 90000))
        out.append(query)
    return out


def test_predict_is_recommend_on_the_history(history, fitted):
    for mapping, recommender in fitted.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            expected = recommend(history, mapping, **ENFORCEMENT)
            assert recommender.predict(history).equals(expected)
        assert recommender.sets_.equals(set_summary(expected))


def test_predict_keeps_what_the_history_taught(fitted):
    recommender = fitted["set-10"]
    jobs = pl.DataFrame({"job_id": ["a", "b"], "w_iter": [20.0, None], "alpha_io": [0.1, None]})
    got = recommender.predict(jobs)
    # the conservative set and the weights' reference come from the history (sets 0..4), not from these two jobs
    assert recommender.mapping_.conservative_set == 5 and recommender.mapping_.lowest_priority == pytest.approx(1e-5)
    assert got["set"].to_list() == [1, 5] and got["conservative"].to_list() == [False, True]
    assert got["wfq_weight"].to_list() == [65536 * 10**4, 65536]
    assert recommend(jobs)["set"].to_list() == [1, 2]


def _users_median_alpha(history, app):
    """The median over the app's users of each user's median alpha_io (one vote per user), None without one."""
    jobs = history.filter(pl.col("app") == app).drop_nulls("alpha_io")
    return jobs.group_by("user").agg(pl.col("alpha_io").median())["alpha_io"].median()


def test_predict_one_is_the_former_recommend_new_job(history, fitted):
    """The anchor of benchmarks/predict_one.py: an estimate recommended together with the history's jobs."""
    recommender = fitted["set-10"]
    sources = set()
    for query in queries(history, n=150):
        got = recommender.predict_one(**query)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            expected = benchmark.former_recommend_new_job(history, recommender.estimator_, query, **ENFORCEMENT)
        assert {key: got[key] for key in expected} == expected, query
        alpha = _users_median_alpha(history, query["app"]) or 0.0
        assert got["rbfq_reservation"] == pytest.approx(1.5 * alpha * 1e10 * recommender.reservation_scale_, rel=1e-12)
        sources.add(got["estimate_source"])
    assert sources == {"history", "model"}
    assert recommender.reservation_scale_ < 1  # the history's concurrent reservations were scaled to fit


@pytest.mark.parametrize("mapping", ["set-10", "gmm"])
def test_predict_one_is_predict_of_the_job_with_its_estimate(history, fitted, mapping):
    recommender = fitted[mapping]
    for query in queries(history, n=120, seed=1):
        got = recommender.predict_one(**query)
        alpha = _users_median_alpha(history, query["app"])
        job = pl.DataFrame(
            {"job_id": ["new"], "w_iter": [got["w_iter"]], "w_iter_confidence": [got["w_iter_confidence"]]},
            schema={"job_id": pl.String, "w_iter": pl.Float64, "w_iter_confidence": pl.Float64},
        ).with_columns(alpha_io=pl.lit(alpha, pl.Float64))
        row = recommender.predict(job).row(0, named=True)
        assert {name: got[name] for name in ANSWER} == {name: row[name] for name in ANSWER}, query
        assert got["rbfq_reservation"] == pytest.approx(row["rbfq_reservation"] * recommender.reservation_scale_)


def test_lookups_hold_the_final_answers(history, fitted):
    recommender = fitted["set-10"]
    (app, user), answer = next((key, a) for key, a in recommender.pairs_.items() if a is not None)
    expected = {"app": app, "user": user, "nprocs": "64", **answer}
    assert recommender.predict_one(app=app, user=user, nprocs="64") == expected
    new_user = {"app": app, "user": "someone new", **recommender.apps_[app]}
    assert recommender.predict_one(app=app, user="someone new") == new_user
    own = history.filter((pl.col("app") == app) & (pl.col("user") == user) & pl.col("w_iter").is_not_null())
    assert own.height >= recommender.estimator_.min_jobs and answer["estimate_source"] == "history"
    unseen = recommender.predict_one(app="lammps_new", user=user, nprocs=64)
    assert unseen["estimate_source"] == "model" and "lammps_new" not in recommender.apps_


def test_recommend_new_job_is_fit_then_predict_one(history, fitted):
    app, user = history["app"][-1], history["user"][-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        got = recommend_new_job(history, app=app, user=user, nprocs="64", **ENFORCEMENT)
        with pytest.warns(DeprecationWarning, match="mapping="):
            old_keyword = recommend_new_job(history, policy="gmm", app=app, user=user, **ENFORCEMENT)
    assert got == fitted["set-10"].predict_one(app=app, user=user, nprocs="64")
    assert old_keyword == fitted["gmm"].predict_one(app=app, user=user)


def test_the_estimator_parameters_are_used(history):
    strict = Recommender(estimator=WIterEstimator(min_jobs=1, use_model=False)).fit(history)
    assert strict.estimator_ is not strict.estimator and strict.estimator_.model_ is None
    assert set(strict.pairs_) == set(strict.estimator_.pair_stats_.select("app", "user").iter_rows())
    assert strict.predict_one(app="lammps_new", user="u01")["estimate_source"] == "none"


def test_outputs_pass_their_schemas(history, fitted):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        recommended = fitted["gmm"].predict(history)
    assert RECOMMENDED_JOBS.validate(recommended, fill_optional=False).equals(recommended)
    for summary in (set_summary(recommended), fitted["set-10"].sets_):
        assert summary.schema == pl.Schema(SET_SUMMARY.polars)
        assert SET_SUMMARY.validate(summary).equals(summary)


def test_params_and_errors(history):
    recommender = Recommender(mapping="set-2", bandwidth=1e9)
    assert recommender.get_params()["mapping"] == "set-2" and recommender.get_params()["estimator"] is None
    assert repr(recommender) == "Recommender(mapping='set-2', bandwidth=1000000000.0)"
    with pytest.raises(InputError, match="Recommender is not fitted"):
        recommender.predict_one(app="a", user="u")
    with pytest.raises(InputError, match=r"history: missing column\(s\) start"):
        recommender.fit(history.drop("start"))
    with pytest.raises(InputError, match="unknown mapping 'set-x'"):
        Recommender(mapping="set-x").fit(history)
    fitted = Recommender().fit(history)
    with pytest.raises(InputError, match=r"missing field\(s\) user"):
        fitted.predict_one(app="a")
    with pytest.raises(InputError, match="nprocs: expected a number > 0, got 0"):
        fitted.predict_one(app="a", user="u", nprocs=0)
    with pytest.raises(InputError, match=r"jobs table: missing column\(s\) w_iter"):
        fitted.predict(history.drop("w_iter"))


def test_importing_the_recommender_loads_neither_scipy_nor_sklearn():
    code = "import sys, iosets.recommender as r; r.Recommender; print(sorted({m.split('.')[0] for m in sys.modules}))"
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert "'polars'" in loaded and "'scipy'" not in loaded and "'sklearn'" not in loaded
