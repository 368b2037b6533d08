"""A posted job updates the service's evidence at once; its answers are the batch recommender's on the same history.

The service is driven in process (no background thread: each refit is called), so every check sees one known
state: the evidence after each post, the model after the refit. The batch side is ``Recommender.predict_one``
fitted on the stored jobs, as ``iosets recommend`` would be.
"""

import threading

import numpy as np
import polars as pl
import pytest

from iosets.api import Settings
from iosets.api._service import Service, fit_history, fit_recommender
from iosets.datasets import make_job_history

WAIT = 30.0  # a generous bound on each wait for the writer and the poll's thread
NUMBERS = ("w_iter", "w_iter_confidence", "priority", "rbfq_weight")
EXACT = ("set", "conservative", "wfq_weight", "explanation")


@pytest.fixture
def service(tmp_path):
    service = Service(Settings(data_dir=str(tmp_path), write_rate=1e9))
    yield service
    service.stop()


def _history(seed: int) -> list[dict]:
    """Generated jobs of 8 apps and 6 users, with the thin evidence and disorder a site posts.

    Every 11th job has no w_iter (a failed analysis), every 13th a ``not_periodic`` code, every 7th a
    confidence below the policy's 0.5; one job in 5 arrives with a start earlier than the one before it,
    and some share a start.
    """
    jobs = make_job_history(240, n_apps=8, n_users=6, random_state=seed).drop("source")
    rng = np.random.default_rng(seed)
    rows = jobs.to_dicts()
    for k, row in enumerate(rows):
        row["start"] = float(row["start"]) - (rng.uniform(0, 5e4) if k % 5 == 3 else 0.0)
        if k % 17 == 4:
            row["start"] = rows[k - 1]["start"]
        if k % 11 == 5:
            row["w_iter"], row["w_iter_confidence"] = None, None
        elif k % 13 == 6:
            row["not_periodic"], row["w_iter_confidence"] = "io_bound", 0.0
        elif k % 7 == 2:
            row["w_iter_confidence"] = 0.3
    rows.append({**rows[0], "job_id": "thin-only", "app": "thin_app", "w_iter": None, "w_iter_confidence": 0.0})
    rows[-1]["not_periodic"] = "few_bytes"
    return rows


def _queries(rows: list[dict]) -> list[tuple[str, str]]:
    """Every (app, user) of the history, each app with a user never seen, and an app never seen."""
    pairs = sorted({(row["app"], row["user"]) for row in rows})
    return [*pairs, *sorted({(app, "newcomer") for app, _ in pairs}), ("never_seen_app", "u00")]


def _batch(service: Service) -> object:
    """The batch recommender on the service's stored jobs under its policy (the estimator's model included)."""
    return fit_recommender(service.current_policy(), fit_history(service.store.history()), use_model=True)


def _served(service: Service, app: str, user: str) -> dict:
    state = service._state
    return service._answer(state, {"app": app, "user": user, "nprocs": 64, "requested_time": 3600.0})


def _check_equal(got: dict, expected: dict, where: tuple) -> None:
    source = expected["estimate_source"]
    assert got["source"] == ("default" if source == "none" else source), where
    for name in NUMBERS:
        if expected[name] is None:
            assert got[name] is None, (where, name)
        else:
            assert got[name] == pytest.approx(expected[name], rel=1e-9, abs=1e-12), (where, name)
    assert {name: got[name] for name in EXACT} == {name: expected[name] for name in EXACT}, where


def test_after_every_post_the_estimates_are_the_batch_estimators_on_the_same_history(service):
    rows = _history(seed=3)
    for row in rows[:60]:
        assert service.add_job(row)[1]
    service.refresh()  # the model now knows 60 jobs; the next posts reach only the evidence
    fitted_on = service._state.n_jobs
    for k, row in enumerate(rows[60:], start=60):
        service.add_job(row)
        if k % 45 == 0 or k == len(rows) - 1:
            estimator = _batch(service).estimator_
            for app, user in _queries(rows[: k + 1]):
                expected = estimator.estimate_one(app=app, user=user, nprocs=64, requested_time=3600.0)
                if expected["estimate_source"] == "model":
                    continue  # the model's estimate is the last refit's: compared after it, below
                got = _served(service, app, user)
                _check_equal_estimate(got, expected, (k, app, user))
    assert service._state.n_jobs == fitted_on  # no refit ran meanwhile: the evidence alone answered


def _check_equal_estimate(got: dict, expected: dict, where: tuple) -> None:
    source = expected["estimate_source"]
    assert got["source"] == ("default" if source == "none" else source), where
    if expected["w_iter"] is None:
        assert got["w_iter"] is None, where
    else:
        assert got["w_iter"] == pytest.approx(expected["w_iter"], rel=1e-9), where
    assert got["w_iter_confidence"] == pytest.approx(expected["w_iter_confidence"], rel=1e-9, abs=1e-12), where


def test_once_refitted_every_answer_is_the_batch_recommenders(service):
    rows = _history(seed=5)
    for row in rows[:100]:
        service.add_job(row)
    service.refresh()
    for row in rows[100:]:
        service.add_job(row)
    service._refit(use_model=True)  # the background refit: the lag closed, the model fitted on every stored job
    batch = _batch(service)
    sources = set()
    for app, user in _queries(rows):
        expected = batch.predict_one(app=app, user=user, nprocs=64, requested_time=3600.0)
        _check_equal(_served(service, app, user), expected, (app, user))
        sources.add(expected["estimate_source"])
    assert sources == {"history", "model", "none"}  # known pairs, unseen apps, thin evidence


def test_a_rebuild_from_the_store_is_the_evidence_the_posts_built(service):
    rows = _history(seed=7)
    for row in rows:
        service.add_job(row)
    service.refresh()
    posted = service._evidence
    service._evidence = None  # as at a restart: rebuilt from the store by the next refit
    service._recording = []
    service._refit(use_model=False)
    rebuilt = service._evidence
    assert rebuilt is not posted and rebuilt.n_jobs == posted.n_jobs == len(rows)
    assert rebuilt.pairs.keys() == posted.pairs.keys() and rebuilt.apps.keys() == posted.apps.keys()
    for key, (n, m, conf) in posted.pairs.items():
        assert rebuilt.pairs[key][0] == n
        assert rebuilt.pairs[key][1:] == pytest.approx((m, conf), rel=1e-12), key
    assert (rebuilt.thin_pairs, rebuilt.thin_apps) == (posted.thin_pairs, posted.thin_apps)
    assert "thin_app" in rebuilt.thin_apps


def test_posts_during_a_rebuild_reach_the_new_evidence(service, monkeypatch):
    rows = _history(seed=11)
    for row in rows[:50]:
        service.add_job(row)
    service.refresh()
    late = rows[50:53]
    take = service._snapshot

    def snapshot_then_posts(policy, **kwargs):
        """The snapshot is read and fitted, then three jobs are posted before the new evidence is swapped in."""
        taken = take(policy, **kwargs)
        for row in late:
            service.add_job(row)
        return taken

    service._evidence = None
    service._recording = []
    monkeypatch.setattr(service, "_snapshot", snapshot_then_posts)
    service._refit(use_model=False)
    monkeypatch.undo()
    assert service._evidence.n_jobs == 53 == service.store.count_jobs()
    estimator = _batch(service).estimator_
    for row in late:
        expected = estimator.estimate_one(app=row["app"], user=row["user"])
        got = service._evidence.pairs[row["app"], row["user"]]
        assert got[1] == pytest.approx(np.log10(expected["w_iter"]), rel=1e-9)


def test_a_job_without_app_or_user_is_counted_and_teaches_nothing(service):
    service.add_job({"job_id": "x1", "app": "A", "user": "u1", "start": 10.0, "w_iter": 40.0})
    service.refresh()
    before = dict(service._evidence.pairs)
    service.add_job({"job_id": "x2", "app": "A", "start": 20.0, "w_iter": 4000.0})
    assert service._evidence.n_jobs == 2 == service.store.count_jobs()
    assert service._evidence.pairs == before
    assert service._foreign() == 0  # nothing stored that the evidence was not told of


def test_another_replicas_jobs_are_foreign_until_the_evidence_is_rebuilt(service):
    service.add_job({"job_id": "r1", "app": "A", "user": "u1", "start": 10.0, "w_iter": 40.0})
    service.refresh()
    service.store.insert_job({"job_id": "r2", "app": "A", "user": "u2", "start": 20.0, "w_iter": 4000.0})
    assert service._foreign() == 1
    service._tick()  # the poll: the store counts a job the evidence lacks, so it is rebuilt
    assert service._foreign() == 0
    assert service._evidence.pairs["A", "u2"][1] == pytest.approx(np.log10(4000.0))
    assert service._evidence.apps["A"][0] == pytest.approx((np.log10(40.0) + np.log10(4000.0)) / 2)


def test_a_history_frame_round_trips_through_classification():
    """The evidence reads a stored row as the estimator does: a null confidence counts as 1."""
    from iosets.recommender._evidence import classify_jobs

    jobs = pl.DataFrame(
        {
            "app": ["a", "a", "a", "a"],
            "user": ["u", "u", "v", "v"],
            "start": [1.0, 2.0, 3.0, 4.0],
            "w_iter": [10.0, None, 100.0, 1000.0],
            "w_iter_confidence": [None, 0.0, 0.3, 0.9],
            "not_periodic": [None, "io_bound", None, None],
        }
    )
    got = classify_jobs(jobs, min_confidence=0.5)
    assert got["usable"].to_list() == [True, False, True, True]
    assert got["firm"].to_list() == [True, False, False, True]
    assert got["c"].to_list() == [1.0, 0.0, 0.3, 0.9]
    assert got["reason"].to_list() == [None, "io_bound", "confidence below 0.5", None]


def test_six_forged_rows_move_their_users_answer_and_no_other_users(service):
    """The forged-rows attack of issue 23 against the service, before and after the model's refit."""
    honest = {"u1": 1800.0, "u2": 2000.0, "u3": 2200.0}
    rows = [(user, w) for user, w in honest.items() for _ in range(4)] + [("u4", 2000.0)]
    for k, (user, w_iter) in enumerate(rows):
        row = {"job_id": f"h{k}", "app": "solver", "user": user, "start": 1e9 + k, "w_iter": w_iter}
        service.add_job({**row, "w_iter_confidence": 0.9})
    service.refresh()
    others = ("u1", "u2", "u3", "u4", "a_new_user")
    before = {user: _served(service, "solver", user) for user in others}
    assert before["a_new_user"]["set"] == 3 and before["a_new_user"]["conservative"] is False
    for k in range(6):
        forged = {"job_id": f"f{k}", "app": "solver", "user": "666", "start": 1e9 + 100 + k, "w_iter": 1.5}
        service.add_job({**forged, "w_iter_confidence": 0.95})
    for refitted in (False, True):
        forger = _served(service, "solver", "666")
        assert (forger["set"], forger["priority"], forger["source"]) == (0, 1.0, "history"), refitted
        for user in others:
            got = _served(service, "solver", user)
            assert {k: got[k] for k in EXACT + NUMBERS} == {k: before[user][k] for k in EXACT + NUMBERS}, user
        service.refresh()


def test_a_post_is_classified_as_a_rebuild_classifies_it():
    """``classify_row`` (a post, in Python) gives the rows ``classify_jobs`` (a rebuild, in polars) does."""
    from iosets.recommender._evidence import classify_jobs, classify_row
    from iosets.schemas import JOBS

    rows = [{name: row.get(name) for name in JOBS.names} for row in _history(seed=13)]
    frame = pl.DataFrame(rows, schema=JOBS.polars)
    for min_confidence in (0.0, 0.5):
        expected = classify_jobs(frame, min_confidence=min_confidence).rows()
        assert [classify_row(row, min_confidence=min_confidence) for row in rows] == expected


def test_a_post_is_stored_while_the_poll_counts_the_store_and_never_taken_for_another_replicas(service, monkeypatch):
    """The poll's count reads every stored row (tens of milliseconds at a million jobs, once a second): posts do
    not wait for it, and one stored meanwhile lowers the tally of other replicas' jobs, never raises it."""
    service.add_job({"job_id": "c1", "app": "A", "user": "u1", "start": 10.0, "w_iter": 40.0})
    service.refresh()
    counted, release = threading.Event(), threading.Event()
    count = service.store.count_jobs

    def count_then_hold() -> int:
        n_jobs = count()
        counted.set()
        assert release.wait(WAIT)
        return n_jobs

    monkeypatch.setattr(service.store, "count_jobs", count_then_hold)
    foreign = []
    poll = threading.Thread(target=lambda: foreign.append(service._foreign()))
    poll.start()
    assert counted.wait(WAIT)
    stored, new = service.submit_job({"job_id": "c2", "app": "A", "user": "u2", "start": 20.0}).result(WAIT)
    release.set()
    poll.join(WAIT)
    assert new and stored["job_id"] == "c2"
    assert foreign == [1 - 2 - 0]  # the count saw c1; the evidence holds c1 and c2; no post left to absorb
    monkeypatch.undo()
    assert service._foreign() == 0
