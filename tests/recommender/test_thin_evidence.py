"""Thin evidence (no w_iter, a confidence below min_confidence, a not_periodic code) never buys a priority above the
conservative set's, for a pair, an app or a user; the JSON and Lua exports answer every (app, user) as predict_one does.

The history is real: the darshan-runtime corpus and MPI logs analyzed by :func:`iosets.analyzer.analyze` (user 0; its
only run of ``iobound_writer`` is io_bound, as in issue 22), plus hand-made rows of other users mixing periodic and
thin-evidence runs of the same apps.
"""

import json
import warnings
from importlib.resources import files
from pathlib import Path

import polars as pl
import pytest
from lupa import LuaRuntime

from iosets.analyzer import analyze
from iosets.errors import InputError
from iosets.recommender import Recommender, WIterEstimator, map_sets, render_export

_HERE = Path(__file__).parents[1] / "data" / "darshan-runtime"
_SHARED = Path("/work/shared/data/darshan-runtime")  # where the project's machines keep them before tests/data has them
MIN_CONFIDENCE = 0.5


def _logs(case: str) -> list[Path]:
    """The ``.darshan`` logs of a darshan-runtime case, from tests/data or the shared folder."""
    for folder in (_HERE / case, _SHARED / case):
        if folder.is_dir():
            return sorted(folder.glob("*.darshan"))
    pytest.skip(f"no darshan-runtime {case} logs in {_HERE} or {_SHARED}")


def _made(rows: list[tuple]) -> pl.DataFrame:
    """Hand-made jobs: (app, user, w_iter, w_iter_confidence, not_periodic), one second apart after the real ones."""
    return pl.DataFrame(
        [
            {
                "job_id": f"made{k}",
                "app": app,
                "user": user,
                "start": 2.0e9 + k,
                "w_iter": w_iter,
                "w_iter_confidence": confidence,
                "not_periodic": code,
                "alpha_io": None if w_iter is None else 0.1,
            }
            for k, (app, user, w_iter, confidence, code) in enumerate(rows)
        ],
        schema_overrides={"w_iter": pl.Float64, "alpha_io": pl.Float64, "not_periodic": pl.String},
    )


MADE = [
    # mixed_a: user 1's only run is io_bound; users 2 (three runs, its own EWMA) and 3 (one run) are periodic at 2 s
    ("mixed_a", "1", None, 0.0, "io_bound"),
    *[("mixed_a", "2", 2.0, 0.95, None)] * 3,
    ("mixed_a", "3", 2.1, 0.9, None),
    # mixed_b, the reverse: user 1 is periodic at 20 s, users 2 and 3 are not
    *[("mixed_b", "1", 20.0, 0.9, None)] * 3,
    ("mixed_b", "2", None, 0.2, "irregular"),
    ("mixed_b", "2", None, 0.0, "few_phases"),
    ("mixed_b", "3", None, 0.0, "io_bound"),
    # doubtful: every run below min_confidence, for user 4 its only app (the user level: no context for a new app)
    *[("doubtful", "4", 1.0, 0.3, None)] * 3,
    # user 0, the one of the real runs, also ran mixed_b: no w_iter at all (counters only)
    ("mixed_b", "0", None, 0.0, None),
    # a periodic app of users 2 and 5, so that the user of doubtful is not the only other one
    *[("steady", "5", 300.0, 0.99, None)] * 2,
    ("steady", "2", 250.0, 0.97, None),
    # user 6's run of steady was posted by a scheduler, never analyzed (no w_iter, confidence or code): no evidence
    ("steady", "6", None, None, None),
]


@pytest.fixture(scope="module")
def history():
    """The analyzed corpus and MPI runs (user 0), then :data:`MADE`."""
    real = analyze([*_logs("corpus"), *_logs("mpi")], workers=1).jobs
    return pl.concat([real, _made(MADE)], how="diagonal_relaxed").sort("start", maintain_order=True)


@pytest.fixture(scope="module")
def fitted(history):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # capped WFQ weights
        return Recommender(min_confidence=MIN_CONFIDENCE).fit(history)


def _analyzed(history: pl.DataFrame) -> pl.Series:
    """The jobs with a w_iter, a confidence or a not_periodic code (user 6's steady run has none)."""
    return (
        history["w_iter"].is_not_null()
        | history["w_iter_confidence"].is_not_null()
        | history["not_periodic"].is_not_null()
    )


def _thin_rows(history: pl.DataFrame) -> pl.Series:
    """Each job's thin evidence, computed here: analyzed, and no w_iter, a confidence below MIN_CONFIDENCE or a code."""
    confidence = history["w_iter_confidence"].fill_null(1.0)
    thin = history["w_iter"].is_null() | (confidence < MIN_CONFIDENCE) | history["not_periodic"].is_not_null()
    return thin & _analyzed(history)


def _thin_keys(history: pl.DataFrame, keys: list[str]) -> set:
    frame = history.filter(_analyzed(history)).with_columns(thin=_thin_rows(history.filter(_analyzed(history))))
    thin = frame.group_by(keys).agg(pl.col("thin").all()).filter("thin")
    return set(thin.select(keys).iter_rows())


def test_the_real_history_has_the_issues_case(history, fitted):
    """The analyzer calls iobound_writer io_bound, and the estimator's model is fitted: the path of the issue."""
    row = history.filter(pl.col("app") == "iobound_writer").row(0, named=True)
    assert (row["user"], row["w_iter"], row["not_periodic"]) == ("0", None, "io_bound")
    assert fitted.estimator_.model_ is not None
    # without its io_bound run, the model answers for iobound_writer from user 0's other apps: a priority is bought
    model_only = WIterEstimator().fit(history.filter(pl.col("app") != "iobound_writer"))
    assert model_only.estimate_one(app="iobound_writer", user="0")["estimate_source"] == "model"


def test_a_user_whose_only_run_is_io_bound_gets_the_conservative_set(fitted):
    conservative = fitted.mapping_.conservative_set
    got = fitted.predict_one(app="iobound_writer", user="0")
    assert (got["set"], got["conservative"], got["estimate_source"]) == (conservative, True, "none")
    assert got["w_iter"] is None
    assert got["priority"] == pytest.approx(10.0**-conservative)
    assert got["explanation"] == (
        f"conservative set {conservative}: no w_iter estimate (user 0's only run of iobound_writer: io_bound)"
    )
    other = fitted.predict_one(app="iobound_writer", user="7")
    assert (other["set"], other["conservative"]) == (conservative, True)
    assert other["explanation"].endswith("(the only run of iobound_writer: io_bound)")


def test_mixed_apps_answer_each_user_from_its_own_evidence(fitted):
    conservative = fitted.mapping_.conservative_set
    assert conservative == 3  # the real runs and steady reach set 2 (300 s): one below

    def answer(app, user):
        got = fitted.predict_one(app=app, user=user)
        return got["set"], got["conservative"], got["estimate_source"]

    # mixed_a: user 1's io_bound run is its evidence; users 2 and 3 (and a new user) have the periodic runs at ~2 s
    assert answer("mixed_a", "1") == (conservative, True, "none")
    assert answer("mixed_a", "2") == (0, False, "history") == answer("mixed_a", "3") == answer("mixed_a", "8")
    assert fitted.predict_one(app="mixed_a", user="2")["w_iter"] == pytest.approx(2.0)
    # mixed_b: user 1 periodic at 20 s (set 1), users 2, 3 and 0 only thin runs; a new user gets the periodic runs
    assert answer("mixed_b", "1") == (1, False, "history") == answer("mixed_b", "8")
    for user in ("2", "3", "0"):
        assert answer("mixed_b", user) == (conservative, True, "none")
    assert fitted.predict_one(app="mixed_b", user="2")["explanation"] == (
        f"conservative set {conservative}: no w_iter estimate (user 2's 2 runs of mixed_b: 1 few_phases, 1 irregular)"
    )
    assert fitted.predict_one(app="mixed_b", user="0")["explanation"].endswith(
        "(user 0's only run of mixed_b: no w_iter)"
    )
    # doubtful: w_iter 1 s (set 0) three times, but never confident enough
    assert answer("doubtful", "4") == answer("doubtful", "8") == (conservative, True, "none")
    assert fitted.predict_one(app="doubtful", user="8")["explanation"].endswith(
        "(the 3 runs of doubtful: 3 confidence below 0.5)"
    )


def test_a_run_never_analyzed_is_no_evidence(fitted):
    """User 6's only run of steady has nothing analyzed: the user is answered from the app's runs, as a new user."""
    got, new = fitted.predict_one(app="steady", user="6"), fitted.predict_one(app="steady", user="8")
    assert (got["set"], got["conservative"], got["estimate_source"]) == (2, False, "history")
    assert {k: v for k, v in got.items() if k != "user"} == {k: v for k, v in new.items() if k != "user"}
    assert got["explanation"] == "EWMA of the past jobs of steady"


def test_a_user_known_only_on_thin_evidence_gives_the_model_no_context(history, fitted):
    """User 4 ran only doubtful: a new app of user 4 is not estimated from it (the user level)."""
    unseen = fitted.predict_one(app="zz_new", user="4")
    assert (unseen["estimate_source"], unseen["set"], unseen["conservative"]) == ("none", 3, True)
    assert unseen["explanation"].startswith("conservative set 3: no w_iter estimate (zz_new is not in the history")
    # an estimator not told that user 4's runs are thin uses them as the user's context
    told_nothing = WIterEstimator().fit(history)
    assert told_nothing.estimate_one(app="zz_new", user="4")["estimate_source"] == "model"


def test_thin_evidence_never_buys_a_priority_above_the_conservative_set(history, fitted):
    """Every pair and app whose jobs are all thin (computed here) is answered the conservative set or a lower one."""
    conservative = fitted.mapping_.conservative_set
    lowest = 10.0**-conservative
    thin_pairs = _thin_keys(history, ["app", "user"])
    thin_apps = {app for (app,) in _thin_keys(history, ["app"])}
    assert {("iobound_writer", "0"), ("mixed_a", "1"), ("mixed_b", "2"), ("doubtful", "4")} <= thin_pairs
    assert thin_apps == {"iobound_writer", "doubtful"}
    queries = [*thin_pairs, *((app, "a user never seen") for app in thin_apps)]
    for app, user in queries:
        got = fitted.predict_one(app=app, user=user)
        assert got["conservative"] and got["set"] >= conservative and got["priority"] <= lowest, (app, user)
    # and the firm ones keep their sets: the pair's own runs, or the app's, as SET-10 maps their w_iter
    for app, user in set(history.select("app", "user").iter_rows()) - thin_pairs:
        got = fitted.predict_one(app=app, user=user)
        if got["estimate_source"] == "history" and not got["conservative"]:
            assert got["set"] == map_sets([got["w_iter"]])[0] < conservative, (app, user)


def test_the_history_keeps_its_own_sets(history, fitted):
    """predict on the history itself: thin jobs in the conservative set, the mapping unchanged by the gate."""
    recommended = fitted.predict(history)
    thin = _thin_rows(history)
    assert (recommended["conservative"] == (thin | ~_analyzed(history))).all()  # a job without w_iter: conservative
    assert (recommended.filter(thin)["set"] == fitted.mapping_.conservative_set).all()
    assert thin.sum() == 1 + 1 + 1 + 4 + 3  # iobound_writer, ior's few_bytes, mixed_a's, mixed_b's, doubtful's


def _job_submit(lua_path: Path):
    """slurm_job_submit of the shipped job_submit.lua, reading ``lua_path``: (uid, app) -> admin_comment."""
    hook = (files("iosets.api") / "hooks" / "slurm" / "job_submit.lua").read_text()
    lua = LuaRuntime()
    lua.execute("slurm = {SUCCESS = 0, log_error = function(...) error(string.format(...)) end}")
    literal = '"' + str(lua_path).replace("\\", "\\\\").replace('"', '\\"') + '"'
    lua.execute(hook.replace('"/etc/slurm/iosets.lua"', literal))

    def submit(uid: int, app: str) -> str:
        job_desc = lua.table_from({"user_id": uid, "name": app, "admin_comment": None})
        assert lua.globals().slurm_job_submit(job_desc, None, uid) == 0
        return job_desc["admin_comment"]

    return submit


def test_exports_answer_every_pair_as_predict_one(history, fitted, tmp_path):
    """JSON users[u][app] and apps[app], the Lua table and job_submit.lua reading it: predict_one's, for ALL pairs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        recommended = fitted.predict(history)
        texts = {fmt: render_export(recommended, fmt, recommender=fitted) for fmt in ("json", "lua")}
    doc = json.loads(texts["json"]["iosets.json"])
    lua_doc = LuaRuntime().execute(texts["lua"]["iosets.lua"])
    lua_path = tmp_path / "iosets.lua"
    lua_path.write_text(texts["lua"]["iosets.lua"], encoding="utf-8")
    submit = _job_submit(lua_path)

    pairs = sorted(set(history.select("app", "user").iter_rows()))
    assert len(pairs) == sum(len(apps) for apps in doc["users"].values()) == 17
    for app, user in pairs:
        answer = fitted.predict_one(app=app, user=user)
        want = (answer["set"], answer["priority"], answer["conservative"])
        entry = doc["users"][user][app]
        assert (entry["set"], entry["priority"], entry["conservative"]) == want, (app, user)
        lua_entry = lua_doc["users"][user][app]
        assert (lua_entry["set"], lua_entry["priority"], lua_entry["conservative"]) == want, (app, user)
        tag = f"iosets set={answer['set']} priority={answer['priority']:g} source=lua:user"
        assert submit(int(user), app) == tag + (" conservative" if answer["conservative"] else ""), (app, user)
    for app in sorted(history["app"].unique()):
        answer = fitted.predict_one(app=app, user="4242")
        want = (answer["set"], answer["priority"], answer["conservative"])
        assert (doc["apps"][app]["set"], doc["apps"][app]["priority"], doc["apps"][app]["conservative"]) == want, app
        lua_entry = lua_doc["apps"][app]
        assert (lua_entry["set"], lua_entry["priority"], lua_entry["conservative"]) == want, app
        tag = f"iosets set={answer['set']} priority={answer['priority']:g} source=lua:app"
        assert submit(4242, app) == tag + (" conservative" if answer["conservative"] else ""), app
    # the issue's document: both entries of iobound_writer conservative
    conservative = fitted.mapping_.conservative_set
    assert doc["apps"]["iobound_writer"]["set"] == doc["users"]["0"]["iobound_writer"]["set"] == conservative


def test_the_estimator_takes_one_thin_flag_per_job(history):
    n = history.height
    message = rf"thin: expected {n} booleans \(one per job of the history\), got int64 \(2,\)"
    with pytest.raises(InputError, match=message):
        WIterEstimator().fit(history, thin=[1, 0])
    # told that steady's runs are thin, the estimator has no estimate of it, for its users or a new one
    told = WIterEstimator().fit(history, thin=(history["app"] == "steady").to_numpy())
    # (doubtful's runs, confidence 0.3 > 0, are usable to an estimator that knows no min_confidence of jobs)
    assert told.thin_apps_["app"].to_list() == ["iobound_writer", "steady"]
    for user in ("5", "2", "9"):
        assert told.estimate_one(app="steady", user=user)["estimate_source"] == "none"
    assert WIterEstimator().fit(history).estimate_one(app="steady", user="9")["w_iter"] == pytest.approx(
        10 ** told.app_stats_.filter(pl.col("app") == "steady")["m"][0]
    )
