"""w_iter estimates for jobs not seen yet: EWMA, keying, model fallback, errors, acceptance."""

import math

import numpy as np
import polars as pl
import pytest

from iosets.datasets import make_job_history
from iosets.errors import InputError
from iosets.recommender import map_sets
from iosets.recommender._history import WIterEstimator
from iosets.recommender._trees import FlatTrees


def _history(rows):
    """Jobs frame from ``[(app, user, start, w_iter, confidence), ...]``."""
    app, user, start, w, c = zip(*rows, strict=True)
    return pl.DataFrame(
        {"app": app, "user": user, "start": start, "w_iter": w, "w_iter_confidence": c},
        schema={"app": pl.String, "user": pl.String, "start": pl.Float64, "w_iter": pl.Float64,
                "w_iter_confidence": pl.Float64},
    )  # fmt: skip


def _query(*pairs):
    return pl.DataFrame({"app": [a for a, _ in pairs], "user": [u for _, u in pairs]})


def test_ewma_closed_form():
    # by start: w = 1, 10, 100 (log10 0, 1, 2), confidence 1, 0.5, 1; a null w_iter (latest) is skipped
    history = _history(
        [("a", "u", 3.0, 100.0, 1.0), ("a", "u", 1.0, 1.0, 1.0), ("a", "u", 4.0, None, 0.0), ("a", "u", 2.0, 10.0, 0.5)]
    )
    est = WIterEstimator(halflife=1.0, min_jobs=3).fit(history)
    out = est.estimate(_query(("a", "u")))
    # weights: decay 1/4, 1/2, 1 times confidence -> 0.25, 0.25, 1
    w, x = np.array([0.25, 0.25, 1.0]), np.array([0.0, 1.0, 2.0])
    m = (w * x).sum() / w.sum()
    assert m == pytest.approx(1.5)
    assert out["w_iter"][0] == pytest.approx(10**1.5)
    assert out["estimate_source"][0] == "history"
    s2 = (w * (x - m) ** 2).sum() / w.sum()
    n = w.sum() ** 2 / (w**2).sum() * w.sum() / 1.75  # Kish 2 times mean confidence 1.5 / 1.75
    sd = math.sqrt((n * s2 + 0.25) / (n + 1) * (1 + 1 / n))
    assert out["w_iter_confidence"][0] == pytest.approx(math.erf(0.5 / (math.sqrt(2) * sd)))


def test_confidence_ordering():
    rng = np.random.default_rng(0)

    def conf(log_w, c=1.0):
        rows = [("a", "u", float(i), 10.0**v, c) for i, v in enumerate(log_w)]
        return WIterEstimator().fit(_history(rows)).estimate(_query(("a", "u")))["w_iter_confidence"][0]

    tight10, tight3 = 2 + rng.normal(0, 0.02, 10), 2 + rng.normal(0, 0.02, 3)
    scattered10 = 2 + 0.8 * np.tile([-1.0, 1.0], 5)  # EWMA spread about 0.8 decades
    values = [conf(tight10), conf(tight3), conf(scattered10), conf(tight3, 0.5), conf([2.0])]
    assert all(0 <= v <= 1 for v in values)
    assert conf(tight10) > conf(tight3) > conf([2.0])  # grows with consistent history
    assert conf(tight10) > 0.95 > 0.5 > conf(scattered10)  # falls with scattered history
    assert conf(tight3, 0.5) < conf(tight3)  # a job found with confidence c counts as c jobs


def test_pair_then_app_keying():
    rows = [("a", "u1", float(t), 10.0, 1.0) for t in range(3)] + [("a", "u2", 3.0, 1000.0, 1.0)]
    est = WIterEstimator(halflife=1e9, min_jobs=3).fit(_history(rows))
    out = est.estimate(_query(("a", "u1"), ("a", "u2"), ("a", "stranger")))
    assert out["estimate_source"].to_list() == ["history"] * 3
    app_vote = 10 ** ((1 + 3) / 2)  # median of the two users' own estimates, each user one vote
    assert out["w_iter"].to_list() == pytest.approx([10.0, app_vote, app_vote])
    one = WIterEstimator(halflife=1e9, min_jobs=1).fit(_history(rows))
    assert one.estimate(_query(("a", "u2")))["w_iter"][0] == pytest.approx(1000.0)


def test_none_without_history_or_model():
    est = WIterEstimator().fit(_history([("a", "u", 0.0, 10.0, 1.0)]))
    assert est.model_ is None  # fewer than 5 apps
    out = est.estimate(_query(("b", "u"), ("a", "u")))
    assert out["estimate_source"].to_list() == ["none", "history"]
    assert out["w_iter"][0] is None and out["w_iter_confidence"][0] == 0.0
    schema = {"w_iter": pl.Float64, "w_iter_confidence": pl.Float64, "estimate_source": pl.String}
    assert out.schema == pl.Schema(schema)


def test_model_for_new_apps_and_none_with_nothing_to_go_on():
    history = make_job_history(600, n_apps=20, n_users=6, random_state=1)
    est = WIterEstimator().fit(history)
    assert est.model_ is not None and 0 < est.model_error_ < 1
    known_user = history["user"][0]
    out = est.estimate(_query(("brandnew_x", known_user), ("zzz", "nobody")))
    assert out["estimate_source"].to_list() == ["model", "none"]
    assert 1 <= out["w_iter"][0] <= 1e4 and 0 < out["w_iter_confidence"][0] <= 1
    one = est.estimate_one(app="brandnew_x", user="nobody", nprocs="64", requested_time=3600)
    assert one["estimate_source"] == "model"  # nprocs and requested time are something to go on
    strict = WIterEstimator(min_confidence=1.0).fit(history)
    assert set(strict.estimate(_query(("brandnew_x", known_user)))["estimate_source"]) == {"none"}


@pytest.fixture(scope="module")
def site():
    """A history with enough apps for the model, and the estimator fitted on it."""
    history = make_job_history(1200, n_apps=30, n_users=8, random_state=2)
    return history, WIterEstimator().fit(history)


def test_estimate_one_is_the_table_path_to_the_bit(site):
    history, est = site
    rng = np.random.default_rng(2)
    apps = history["app"].unique().sort().to_list() + ["lammps_new", "zzz_tool", "123", "WRF-X"]
    users = history["user"].unique().sort().to_list() + ["nobody"]
    n = 600
    queries = pl.DataFrame(
        {
            "app": rng.choice(apps, n),
            "user": rng.choice(users, n),
            "nprocs": np.where(rng.random(n) < 0.4, np.nan, 2.0 ** rng.integers(0, 12, n)),
            "requested_time": np.where(rng.random(n) < 0.4, np.nan, rng.integers(60, 90000, n).astype(float)),
        },
        nan_to_null=True,
    )
    nothing = {"app": ["zzz_tool"], "user": ["nobody"], "nprocs": [None], "requested_time": [None]}  # no estimate
    queries = pl.concat([queries, pl.DataFrame(nothing, schema=queries.schema)])
    table = est.estimate(queries).to_dicts()
    one = [est.estimate_one(**{k: v for k, v in q.items() if v is not None}) for q in queries.to_dicts()]
    assert one == table
    assert {row["estimate_source"] for row in one} == {"history", "model", "none"}


def test_flat_trees_are_the_models_trees(site):
    model = site[1].model_
    rng = np.random.default_rng(3)
    X = rng.normal(1.5, 1.5, (3000, model.n_features_in_))
    X[rng.random(X.shape) < 0.3] = np.nan
    trees = FlatTrees(model)
    assert np.array_equal([trees.predict_one(x) for x in X], model.predict(X))  # bit for bit


@pytest.mark.parametrize(
    ("history", "match"),
    [
        (pl.DataFrame({"app": ["a"], "user": ["u"], "start": [0.0]}), r"history: missing column\(s\) w_iter"),
        (_history([("a", "u", 0.0, 1.0, 1.0)]).head(0), "history is empty"),
        (_history([("a", "u", 0.0, None, 1.0)]), "no job with a w_iter"),
        (_history([("a", "u", 0.0, -2.0, 1.0)]), r"'w_iter': expected values > 0, got -2.0 at row 0"),
        (_history([("a", "u", 0.0, 2.0, 1.5)]), r"'w_iter_confidence': expected 0..1, got 1.5 at row 0"),
        ({"app": ["a"]}, "history must be a polars DataFrame, got dict"),
    ],
)
def test_fit_errors(history, match):
    with pytest.raises(InputError, match=match):
        WIterEstimator().fit(history)


def test_estimate_errors():
    with pytest.raises(InputError, match="not fitted"):
        WIterEstimator().estimate(_query(("a", "u")))
    with pytest.raises(InputError, match="halflife must be a finite number > 0"):
        WIterEstimator(halflife=0).fit(_history([("a", "u", 0.0, 1.0, 1.0)]))
    est = WIterEstimator().fit(_history([("a", "u", 0.0, 1.0, 1.0)]))
    with pytest.raises(InputError, match=r"jobs: missing column\(s\) user"):
        est.estimate(pl.DataFrame({"app": ["a"]}))
    with pytest.raises(InputError, match=r"jobs column 'nprocs': expected values > 0, got 0.0 at row 1"):
        est.estimate(pl.DataFrame({"app": ["a", "a"], "user": ["u", "u"], "nprocs": [4, 0]}))
    with pytest.raises(InputError, match=r"unknown field\(s\) queue"):
        est.estimate_one(app="a", user="u", queue="big")
    with pytest.raises(InputError, match=r"missing field\(s\) user"):
        est.estimate_one(app="a")
    with pytest.raises(InputError, match="nprocs: expected a number, got 'many'"):
        est.estimate_one(app="a", user="u", nprocs="many")


def test_make_job_history():
    jobs = make_job_history(500, n_apps=12, n_users=5, random_state=3)
    assert jobs.columns == [
        "job_id", "user", "app", "nprocs", "start", "end", "runtime", "bytes_read", "bytes_written", "io_time",
        "w_iter", "w_iter_confidence", "alpha_io", "n_phases", "source", "requested_time",
    ]  # fmt: skip
    assert jobs.height == 500 and jobs["app"].n_unique() <= 12 and jobs["user"].n_unique() <= 5
    assert (jobs["start"].diff().drop_nulls() >= 0).all()
    w = jobs["w_iter"].drop_nulls()
    assert 0 < jobs["w_iter"].null_count() < 100 and w.min() > 0.3 and w.max() < 3e4
    assert ((jobs["w_iter_confidence"] >= 0) & (jobs["w_iter_confidence"] <= 1)).all()
    assert (jobs["requested_time"] >= jobs["runtime"]).all()
    assert jobs.equals(make_job_history(500, n_apps=12, n_users=5, random_state=3))
    with pytest.raises(InputError, match="missing must be in"):
        make_job_history(10, missing=1.0)


# ---- acceptance: held-out jobs of a generated history ---------------------------------------------------------------


def _scores(errors):
    """Median absolute log10 error and SET-10 accuracy, from (estimate, truth) log10 pairs."""
    est, truth = errors
    return float(np.median(np.abs(est - truth))), float(np.mean(map_sets(10**est) == map_sets(10**truth)))


def _evaluate(train, test):
    """(estimator, global median) log10 (estimate, truth); 'none' rows take the global median."""
    truth = np.log10(test["w_iter"].to_numpy())
    median = float(np.median(np.log10(train["w_iter"].drop_nulls().to_numpy())))
    out = WIterEstimator().fit(train).estimate(test)
    est = np.log10(out["w_iter"].fill_null(10**median).to_numpy())
    return (est, truth), (np.full_like(truth, median), truth), out["estimate_source"].to_numpy()


def _report(name, est, base, sources):
    (e_err, e_acc), (b_err, b_acc) = _scores(est), _scores(base)
    mix = ", ".join(f"{s} {np.mean(sources == s):.0%}" for s in ("history", "model", "none"))
    print(f"\n{name}: {len(sources)} jobs ({mix})")
    print(f"  {'':16s} median |log10 err|   SET-10 accuracy")
    print(f"  {'estimator':16s} {e_err:18.3f}   {e_acc:15.1%}")
    print(f"  {'global median':16s} {b_err:18.3f}   {b_acc:15.1%}")
    return e_err, e_acc, b_err, b_acc


def test_acceptance_beats_global_median():
    history = make_job_history(3000, n_apps=60, n_users=20, random_state=1)
    found = pl.col("w_iter").is_not_null()

    cut = history["start"].quantile(0.8)
    train, test = history.filter(pl.col("start") < cut), history.filter((pl.col("start") >= cut) & found)
    est, base, sources = _evaluate(train, test)
    t_err, t_acc, tb_err, tb_acc = _report("time split (last 20 % of jobs)", est, base, sources)
    assert t_err < 0.5 * tb_err and t_acc > tb_acc + 0.2

    # unseen apps: four folds of apps, each held out once, errors pooled
    apps = history["app"].unique().sort().to_numpy()
    fold = np.random.default_rng(1).permutation(len(apps)) % 4
    parts = []
    for f in range(4):
        held = pl.col("app").is_in(apps[fold == f].tolist())
        parts.append(_evaluate(history.filter(~held), history.filter(held & found)))
    est = tuple(np.concatenate([p[0][i] for p in parts]) for i in range(2))
    base = tuple(np.concatenate([p[1][i] for p in parts]) for i in range(2))
    u_err, u_acc, ub_err, ub_acc = _report("unseen apps (4 folds)", est, base, np.concatenate([p[2] for p in parts]))
    assert u_err < 0.75 * ub_err and u_acc > ub_acc + 0.1

    print(
        f"summary: median |log10 err| estimator/global median: seen {t_err:.3f}/{tb_err:.3f}, "
        f"unseen {u_err:.3f}/{ub_err:.3f}; SET-10 accuracy seen {t_acc:.0%}/{tb_acc:.0%}, "
        f"unseen {u_acc:.0%}/{ub_acc:.0%}"
    )
