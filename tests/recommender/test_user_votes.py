"""Each user is one vote on an app's estimate: one user's forged rows move that user's answer, not the others'.

The forged-rows attack of issue 23: user 666 posts six rows claiming set-0 behaviour (w_iter 1.5 s) for an app its
other users run with w_iter near 2000 s (set 3). The app's estimate is the median of its users' own estimates, so a
user with fewer than ``min_jobs`` runs of it, and a user never seen, keep their answer; it moves only when the users
who agree on the new behaviour outnumber the others.
"""

import math

import polars as pl
import pytest

from iosets.recommender import Recommender, WIterEstimator

HONEST = {"u1": 1800.0, "u2": 2000.0, "u3": 2200.0}  # four runs each: their own EWMA answers them
BANDWIDTH = 1e10


def _jobs(rows: list[tuple[str, float, float]], first: int = 0) -> pl.DataFrame:
    """Jobs of app ``solver``: (user, w_iter, alpha_io), one second apart, confidence 0.9."""
    return pl.DataFrame(
        {
            "job_id": [f"j{first + k}" for k in range(len(rows))],
            "app": ["solver"] * len(rows),
            "user": [user for user, _, _ in rows],
            "start": [1e9 + first + k for k in range(len(rows))],
            "w_iter": [w for _, w, _ in rows],
            "w_iter_confidence": [0.9] * len(rows),
            "alpha_io": [alpha for _, _, alpha in rows],
        }
    )


HISTORY = _jobs([(user, w, 0.1) for user, w in HONEST.items() for _ in range(4)] + [("u4", 2000.0, 0.1)])
FORGED = _jobs([("666", 1.5, 0.3)] * 6, first=100)


def _fit(history: pl.DataFrame) -> Recommender:
    return Recommender(bandwidth=BANDWIDTH, estimator=WIterEstimator(halflife=1e9, use_model=False)).fit(history)


@pytest.fixture(scope="module")
def before():
    return _fit(HISTORY)


@pytest.fixture(scope="module")
def after():
    return _fit(pl.concat([HISTORY, FORGED]))


def test_the_apps_estimate_is_the_median_of_its_users_estimates(after):
    votes = sorted([math.log10(1.5), *(math.log10(w) for w in HONEST.values()), math.log10(2000.0)])
    m, _ = after.estimator_._apps["solver"]
    assert m == pytest.approx(votes[2])  # five users, five votes: the third, u2's and u4's 2000 s
    pairs = after.estimator_.pair_stats_.filter(app="solver")
    confidences = sorted(pairs["conf"].to_list())
    assert after.estimator_._apps["solver"][1] == pytest.approx(confidences[2])


def test_six_forged_rows_move_only_their_users_answer(before, after):
    forger = after.predict_one(app="solver", user="666")
    assert (forger["set"], forger["priority"], forger["estimate_source"]) == (0, 1.0, "history")
    assert forger["w_iter"] == pytest.approx(1.5)
    for user in ("u1", "u2", "u3", "u4", "a_new_user"):  # own EWMA (u1-u3), the app's vote (u4, a new user)
        assert after.predict_one(app="solver", user=user) == before.predict_one(app="solver", user=user), user
    newcomer = after.predict_one(app="solver", user="a_new_user")
    assert (newcomer["set"], newcomer["conservative"], newcomer["w_iter"]) == (3, False, pytest.approx(2000.0))
    assert newcomer["rbfq_reservation"] == pytest.approx(1.5 * 0.1 * BANDWIDTH)  # the users' median alpha_io


def test_the_answer_moves_when_the_users_who_agree_outnumber_the_others(before):
    many = _jobs([(f"f{k}", 1.5, 0.1) for k in range(5)], first=200)  # five distinct users, one run each
    moved = _fit(pl.concat([HISTORY, many])).predict_one(app="solver", user="a_new_user")
    assert (moved["set"], moved["w_iter"]) == (0, pytest.approx(1.5))  # five votes of 1.5 s against four
    kept = _fit(pl.concat([HISTORY, many[:3]])).predict_one(app="solver", user="a_new_user")
    assert kept["set"] == 3  # three against four: the median is still an honest user's
    assert kept["w_iter"] == pytest.approx(1800.0)


def test_the_forgers_rows_still_count_in_the_thin_evidence_rule():
    """A forger's thin rows do not make the app thin while other users have firm ones, nor firm when it has none."""
    thin_rows = _jobs([("666", 1.5, 0.1)] * 6, first=100).with_columns(w_iter_confidence=pl.lit(0.2))
    fitted = _fit(pl.concat([HISTORY, thin_rows]))
    assert fitted.predict_one(app="solver", user="666")["conservative"] is True  # its own runs are thin
    assert fitted.predict_one(app="solver", user="a_new_user")["set"] == 3
    alone = _fit(thin_rows.with_columns(app=pl.lit("other")).vstack(HISTORY))
    assert alone.predict_one(app="other", user="someone")["conservative"] is True  # only thin evidence of it
