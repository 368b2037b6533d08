"""`recommend_new_job`: the estimate of a job not seen yet, mapped with the site's own jobs."""

import numpy as np
import polars as pl
import pytest

from iosets.datasets import make_job_history
from iosets.errors import InputError
from iosets.recommender import WIterEstimator, map_sets, recommend, recommend_new_job


@pytest.fixture(scope="module")
def history():
    return make_job_history(600, n_apps=12, n_users=6, random_state=5)


def test_a_known_app_gets_the_set_of_its_estimate(history):
    app, user = history["app"][-1], history["user"][-1]
    got = recommend_new_job(history, app=app, user=user, max_request=65536)
    fitted = WIterEstimator().fit(history)
    expected = fitted.estimate_one(app=app, user=user)
    assert recommend_new_job(history, estimator=fitted, app=app, user=user, max_request=65536) == got
    assert got["estimate_source"] == "history" and got["w_iter"] == expected["w_iter"]
    assert got["set"] == map_sets([expected["w_iter"]])[0]
    assert got["priority"] == pytest.approx(10.0 ** -got["set"])
    # the weights are those of the site's own recommendation for that set
    site = recommend(history.with_columns(pl.lit(1.0).alias("w_iter_confidence")), max_request=65536)
    lowest = site.filter(~pl.col("conservative"))["set"].max() + 1
    assert got["wfq_weight"] == 65536 * 10 ** (lowest - got["set"])


def test_an_unknown_app_and_user_go_to_the_conservative_set(history):
    got = recommend_new_job(history, app="neverseen", user="nobody")
    assert got["estimate_source"] == "none" and got["w_iter"] is None
    assert got["conservative"]
    known = map_sets(history["w_iter"].drop_nulls().to_numpy())
    assert got["set"] == known.max() + 1


def test_the_reservation_uses_the_apps_median_alpha(history):
    app, user = history["app"][0], history["user"][0]
    got = recommend_new_job(history, app=app, user=user, bandwidth=1e12, safety=1.0)
    alpha = history.filter(pl.col("app") == app)["alpha_io"].median()
    assert got["rbfq_reservation"] <= alpha * 1e12 * (1 + 1e-12)
    assert got["rbfq_reservation"] > 0 and np.isfinite(got["rbfq_reservation"])


def test_bad_fields_are_named(history):
    with pytest.raises(InputError, match="missing field"):
        recommend_new_job(history, app="x")
    with pytest.raises(InputError, match="nprocs: expected a number"):
        recommend_new_job(history, app="x", user="y", nprocs="many")
