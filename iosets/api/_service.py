"""`Service`: the store, what the service learned from it, and what keeps that up to date.

Answers come from two parts. The evidence (:class:`Evidence`) holds each (app, user) pair's and each app's
w_iter estimate and thin-evidence flags; a posted job updates its pair and its app at once, without reading
the jobs table and without waiting for any refit, so its next recommendation sees it. The model is a
:class:`iosets.recommender.Recommender` fitted with the estimator's model on a snapshot of the stored jobs:
its mapping (sets, conservative set, priorities, weights, reservations) turns an estimate into an answer,
and its regressor estimates apps never seen. It is refitted in a background thread once jobs arrived, no
sooner after the previous refit than that one took, and swapped in whole. At start and on a policy change
a recommender without the regressor (seconds) is fitted at once, the previous regressor answering unseen
apps until the background refit replaces both. A replica learns of another one's jobs and policies by
polling the store's counts every second, and then rebuilds its evidence from the store.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import os
import sys
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

import polars as pl
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool

from .._io import atomic_path
from ..errors import InputError, IosetsError
from ..recommender import Evidence, default_lua_document
from ._groupcommit import GroupCommit
from ._metrics import Metrics
from ._models import PolicyParams
from ._ratelimit import TokenBucket
from ._refit import Snapshot, fit_history, fit_recommender, fit_snapshot_pickled, load_snapshot, start_worker, usable
from ._rowcheck import check_job
from ._settings import Settings
from ._store import Store
from .client import DEFAULT_SET

POLL_SECONDS = 1.0
"""How often the background thread looks for other replicas' jobs and policies."""
MAPPING_GAP_SECONDS = 10.0
"""The least time between two refits of the mapping after posts (the evidence answers meanwhile)."""
SWITCH_SECONDS = 0.0005
"""The interpreter's thread switch interval in the service (Python's default: 5 ms)."""
QUERY_FIELDS = ("app", "user", "nprocs", "requested_time", "job_id")
log = logging.getLogger("iosets.api")


class Conflict(IosetsError):
    """The request cannot be served in the store's present state (409)."""


@dataclass(frozen=True)
class Fitted:
    """What answers recommendations: the policy, the model fitted on a snapshot, and its view of the evidence."""

    policy: dict[str, Any]
    store: Any  # where ``history`` is read from
    n_jobs: int  # stored jobs in the snapshot
    known: Any = None  # the Recommender whose mapping answers; None: no usable job, default answers
    answers: Any = None  # a copy of ``known`` whose history look-ups are the live evidence
    model: Any = None  # the last Recommender fitted with the estimator's model (may be ``known``), for unseen apps
    model_answers: Any = None  # its copy on the live evidence
    fitted_at: float | None = None
    generation: int = 0  # posts absorbed when the snapshot was read

    @property
    def history(self) -> pl.DataFrame:
        """The stored jobs as a recommender learns from them (:func:`fit_history`), read now (not kept in memory)."""
        return fit_history(self.store.history())


def fit_row(stored: dict[str, Any]) -> dict[str, Any] | None:
    """:func:`fit_history` of one stored row (a dict): None without an app or a user, else the row with its start."""
    if not stored.get("app") or not stored.get("user"):
        return None
    start = stored.get("start")
    if start is None:
        dates = [date for date in (stored.get("received_at"), stored.get("end")) if date is not None]
        start = min(dates) if dates else None
    return {**stored, "start": start}


def default_answer(policy: dict[str, Any]) -> dict[str, Any]:
    """The answer while no stored job has a w_iter: the hooks' default answer (``client.DEFAULT_SET``).

    Set 99, priority ``10**-99``, conservative, source ``default``: the same set and priority
    the hooks stamp when the service cannot answer (there with source ``unavailable``) and
    that the Lua document for ``job_submit.lua`` holds meanwhile. The job is the lowest
    priority, so its WFQ weight is ``max_request`` and its RBFQ weight 1.
    """
    bandwidth, limit = policy["bandwidth"], policy["limit"]
    return {
        "set": DEFAULT_SET,
        "priority": 10.0**-DEFAULT_SET,
        "conservative": True,
        "wfq_weight": policy["max_request"],
        "rbfq_reservation": None if bandwidth is None else 0.0,
        "rbfq_weight": 1.0,
        "rbfq_limit": None if bandwidth is None or limit is None else limit * bandwidth,
        "w_iter": None,
        "w_iter_confidence": 0.0,
        "source": "default",
    }


def evidence_view(recommender: Any, evidence: Evidence) -> Any:
    """A copy of a fitted Recommender that answers from ``evidence`` (its mapping and model kept)."""
    import copy

    view = copy.copy(recommender)
    view.estimator_ = evidence.estimator_view(recommender.estimator_)
    view._why_thin = evidence.reasons
    return view


def answer_one(view: Any, app: Any, user: Any, nprocs: Any, requested_time: Any) -> dict[str, Any]:
    """``Recommender.predict_one`` of a view, its pair and app caches left aside (they hold the snapshot's)."""
    from ..recommender import query_fields

    fields = {"app": app, "user": user, "nprocs": nprocs, "requested_time": requested_time}
    query = query_fields({key: value for key, value in fields.items() if value is not None})
    estimate = view.estimator_._estimate_query(
        query["app"], query["user"], query.get("nprocs"), query.get("requested_time")
    )
    return view._answer_one((query["app"], query["user"]), estimate)


def settle_heap() -> None:
    """Collect the young garbage (generations 0 and 1), then freeze what lives (``gc.freeze``).

    The service holds the evidence and models of every stored job; a full collection scans them all (117 ms at
    200 000 stored jobs on a loaded 2-core machine), and the interpreter starts one, in whichever thread
    allocates at the time, once objects made since the last one reach a quarter of those that survived it:
    posts and refits get there within minutes, and the answers wait meanwhile. Frozen objects are never
    scanned, so a later collection costs what was made since. This call is itself a pause of the answers, so
    it collects only the young generations: a full collection here took 152 ms at 1 000 000 stored jobs
    (220 000 objects made since the last refit), the young ones a few. Memory stays bounded: a frozen object
    is freed as usual once unreferenced, and the state a refit replaces holds no reference cycle
    (``tests/api/test_refit_heap.py`` checks that the frozen count does not grow with refits).
    """
    gc.collect(1)
    gc.freeze()


class Service:
    """The service's state and logic; routes call its methods and nothing else.

    Parameters
    ----------
    settings : Settings
        Store, upload limit, write rate, refit interval, Lua output and the initial policy.
    settle_heap : bool, default=False
        After each refit, :func:`settle_heap`: for a process that is the service alone (``iosets serve``),
        since a freeze holds every object of the process, not only the service's.
    """

    def __init__(self, settings: Settings, *, settle_heap: bool = False):
        self.settings = settings
        self.settle_heap = settle_heap
        self.store = Store(settings.store_url)
        self.metrics = Metrics()
        self.write_bucket = TokenBucket(settings.write_rate)
        self.store.add_policy(settings.policy.model_dump(), only_if_none=True)
        self._state: Fitted | None = None
        self._pool: ProcessPoolExecutor | None = None  # the refit worker
        self._fit_lock = threading.Lock()  # one refit at a time; posts never take it
        self._evidence: Evidence | None = None
        self._evidence_lock = threading.Lock()  # a post's update of the evidence, or its swap after a rebuild
        self._recording: list[dict[str, Any]] | None = []  # posts since a rebuild's snapshot began (None: none)
        self._generation = 0  # jobs absorbed into the evidence
        self._writer = GroupCommit(self._store_jobs)  # posted rows, stored by one thread in shared transactions
        self._insert_lock = threading.Lock()  # an insert and its count of posts not absorbed (see _unabsorbed_after)
        self._unabsorbed = 0  # jobs inserted here, not absorbed yet
        self._last_refit = (-float("inf"), 0.0)  # (end, duration) of the last background refit
        self._model_due = False  # a recommender without the regressor answers: refit with it
        self._model_generation = -1  # posts absorbed when the regressor was last fitted
        self._model_next = 0.0  # when it may be fitted again (monotonic)
        self._lua_due = False
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._report: tuple[tuple[Any, ...], str] | None = None  # (job count, policy version, replay files) -> page
        self._report_lock = threading.Lock()
        self.metrics.watch_estimate(lambda: None if self._state is None else self._state.fitted_at)

    # ------------------------------------------------------------------------------- life cycle

    def start(self) -> None:
        """Fit the recommender on the stored jobs, then keep it fresh in a background thread.

        The interpreter's thread switch interval drops to ``SWITCH_SECONDS``: the event loop that answers
        recommendations then waits that long, not 5 ms, for the lock Python threads share while posts and
        refits run in other threads.
        """
        sys.setswitchinterval(SWITCH_SECONDS)
        self.metrics.jobs_stored.set(self.store.count_jobs())
        self._thread = threading.Thread(target=self._run, name="iosets-refit", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the refit worker (a refit under way is abandoned), then the background thread; release the store.

        The worker is terminated, not awaited: a refit of a large store runs for minutes at a low priority, and
        left alone it would outlive the service (``ProcessPoolExecutor.shutdown`` does not stop a running task).
        """
        self._writer.close()
        self._stop.set()
        self._wake.set()
        pool = self._pool
        if pool is not None:
            workers = list(pool._processes.values())  # no public way before Python 3.14's terminate_workers
            pool.shutdown(wait=False, cancel_futures=True)
            for worker in workers:
                worker.terminate()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
        self.store.close()

    def readiness(self) -> dict[str, Any] | None:
        """``{"status": "ready", "jobs", "policy_version"}`` once fitted and the store answers; else None."""
        state = self._state
        if state is None:
            return None
        try:
            n_jobs, _ = self.store.state()
        except SQLAlchemyError:
            return None
        return {"status": "ready", "jobs": n_jobs, "policy_version": state.policy["version"]}

    # --------------------------------------------------------------------------- recommendations

    async def recommend(self, queries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The answer of each query (``app``, ``user``, optional ``nprocs``, ``requested_time``, ``job_id``).

        From the evidence as it stands and the last model; waits for a fit only before the first one, or when
        the last model saw no usable job and the evidence now has one (a first mapping to answer with).
        """
        if self._unfitted():
            await run_in_threadpool(self.refresh)
        state = self._state
        assert state is not None  # refresh fitted it
        return [self._answer(state, query) for query in queries]

    def answer_now(self, query: dict[str, Any]) -> dict[str, Any] | None:
        """:meth:`recommend`'s answer of one query when no fit must come first; else None."""
        state = self._state
        return None if state is None or self._unfitted() else self._answer(state, query)

    def _unfitted(self) -> bool:
        """No model yet, or a model of no usable job while the evidence has one."""
        state, evidence = self._state, self._evidence
        return state is None or (state.known is None and evidence is not None and bool(evidence.pairs))

    def refresh(self) -> None:
        """Refit now on the stored jobs, without the regressor, if a job arrived since the last fit (or none is)."""
        state = self._state
        if state is None or self._generation != state.generation or self._unfitted():
            self._refit(use_model=False)

    def _answer(self, state: Fitted, query: dict[str, Any]) -> dict[str, Any]:
        asked = {name: query.get(name) for name in QUERY_FIELDS}
        if state.known is None:
            return {**asked, **default_answer(state.policy), "policy_version": state.policy["version"]}
        fields = (asked["app"], asked["user"], asked["nprocs"], asked["requested_time"])
        answer = answer_one(state.answers, *fields)
        if answer["estimate_source"] == "none" and state.model_answers not in (None, state.answers):
            modelled = answer_one(state.model_answers, *fields)
            answer = modelled if modelled["estimate_source"] == "model" else answer
        source = answer.pop("estimate_source")
        answer["source"] = "default" if source == "none" else source
        return {**asked, **answer, "policy_version": state.policy["version"]}

    # ------------------------------------------------------------------------------------- jobs

    def submit_job(self, row: dict[str, Any]) -> Future:
        """Check a jobs-table row and queue it to be stored unless its job_id is stored.

        The future's result, ``(stored row, new)``, is set once the row is committed and taught to the
        evidence (:class:`GroupCommit`: posts that wait together share one transaction). InputError
        (422) for a row that breaks a JOBS rule, before anything is queued.
        """
        return self._writer.submit(check_job(row))

    def add_job(self, row: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """:meth:`submit_job` and wait for its commit: ``(stored row, new)``."""
        return self.submit_job(row).result()

    def _store_jobs(self, rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], bool]]:
        """The writer's batch: store the rows in one transaction, then teach the evidence the new ones."""
        with self._insert_lock:
            results = self.store.insert_jobs(rows)
            created = [stored for stored, new in results if new]
            self._unabsorbed += len(created)
        if created:
            self.metrics.jobs_stored.inc(len(created))
            self._absorb(created)
            with self._insert_lock:
                self._unabsorbed -= len(created)
        return results

    def _absorb(self, stored: list[dict[str, Any]]) -> None:
        """Teach the evidence stored jobs, in order (and keep them for a rebuild under way)."""
        learned = [row for row in map(fit_row, stored) if row is not None]
        with self._evidence_lock:
            if self._evidence is not None:
                self._evidence.add(learned)
                self._evidence.count(len(stored) - len(learned))
            if self._recording is not None:
                self._recording.extend(stored)
            self._generation += len(stored)

    def app_summary(self, app: str) -> dict[str, Any] | None:
        """An app's jobs, users, dates, median w_iter and alpha_io, and its top user's answer; None if unknown."""
        jobs = self.store.history(app=app)
        if jobs.height == 0:
            return None
        users = jobs.drop_nulls("user").filter(pl.col("user") != "")["user"].value_counts(sort=True)
        users = users.sort(["count", "user"], descending=[True, False])
        seen = jobs.select(pl.coalesce("start", "received_at"))[:, 0]
        top_user = users["user"][0] if users.height else "unknown"  # the app's answer for a user never seen
        if self._unfitted():
            self.refresh()
        assert self._state is not None
        return {
            "app": app,
            "n_jobs": jobs.height,
            "users": sorted(users["user"].to_list()),
            "first_seen": seen.min(),
            "last_seen": seen.max(),
            "w_iter_median": jobs["w_iter"].median(),
            "alpha_io_median": jobs["alpha_io"].median(),
            "recommendation": self._answer(self._state, {"app": app, "user": top_user}),
        }

    # ----------------------------------------------------------------------------------- policy

    def current_policy(self) -> dict[str, Any]:
        """The newest stored policy, a parameter it lacks (stored by an older version) at its default."""
        stored = self.store.latest_policy()
        assert stored is not None  # the service stored one at start
        return {**PolicyParams().model_dump(), **stored}

    def policies(self) -> list[dict[str, Any]]:
        """Every stored policy, oldest first, with the defaults of the parameters it lacks."""
        return [{**PolicyParams().model_dump(), **stored} for stored in self.store.policies()]

    def put_policy(self, params: dict[str, Any]) -> dict[str, Any]:
        """Store ``params`` as the next policy version once a recommender fits under it; answer with it at once."""
        state = self._state
        if state is not None and usable(state.history):
            fit_recommender(params, state.history, use_model=False)  # InputError (422) before anything is stored
        policy = self.store.add_policy(params)
        self._refit(use_model=False)
        self._model_due = True
        self._wake.set()
        return policy

    def export(self, fmt: str, *, active: list[str] | None = None, rpc_capacity: float | None = None) -> str:
        """The text ``iosets export --format fmt`` writes for the stored jobs under the current policy.

        ``active`` and ``rpc_capacity`` are the options of the ``tbf`` format (ignored by the others).
        """
        from ..recommender import render_export

        self.refresh()
        state = self._state
        if state is None or state.n_jobs == 0:
            raise Conflict("no job is stored yet: nothing to export")
        if state.known is None:
            raise Conflict("no stored job has a w_iter yet: nothing to export")
        options: dict[str, Any] = {}
        if fmt in ("json", "lua"):
            options["recommender"] = state.known
        if fmt == "tbf":
            given = {"active": active, "rpc_capacity": rpc_capacity}
            options |= {name: value for name, value in given.items() if value is not None}
        if fmt == "agios":  # the answer is wfq.conf, the weights; agios.conf, which names its path, is not served
            options["wfq_path"] = "wfq.conf"
        rendered = render_export(state.known.predict(state.history), fmt, **options)
        return list(rendered.values())[-1]  # agios: wfq.conf; the other formats render one file

    def report(self) -> str:
        """The HTML report (``iosets report``) of the stored jobs and their answers under the current policy, with
        the trace replay of the ``replay`` setting when there is one (its scheduler comparison and model check).

        Built on first call and kept until the fitted job count, the policy version or a file of the replay
        changes. A replay that cannot be read is a Conflict naming its file.
        """
        from ..report import build_report

        self.refresh()
        state = self._state
        if state is None or state.n_jobs == 0:
            raise Conflict("no job is stored yet: nothing to report")
        key = (state.n_jobs, state.policy["version"], self._replay_files())
        with self._report_lock:
            if self._report is None or self._report[0] != key:
                self._check_replay()
                recommendation = None if state.known is None else state.known.predict(state.history)
                page = build_report(self.store.history(), recommendation=recommendation, replay=self.settings.replay)
                self._report = (key, page.html)
            return self._report[1]

    def _check_replay(self) -> None:
        """Raise Conflict, naming the file, when the ``replay`` setting's trace replay cannot be read."""
        if self.settings.replay is None:
            return
        from ..replay import SchedulerComparison

        try:
            SchedulerComparison.read_tables(self.settings.replay, partial=True)
        except InputError as exc:
            raise Conflict(f"the report's trace replay ([service] replay): {exc}") from None

    def _replay_files(self) -> tuple[tuple[int, int, int] | None, ...]:
        """Each file of the ``replay`` setting's trace replay as (inode, size, mtime in ns), None when absent."""
        if self.settings.replay is None:
            return ()
        from ..replay import SchedulerComparison

        stamps: list[tuple[int, int, int] | None] = []
        for path in SchedulerComparison.paths(self.settings.replay).values():
            try:
                status = path.stat()
            except OSError:
                stamps.append(None)
                continue
            stamps.append((status.st_ino, status.st_size, status.st_mtime_ns))
        return tuple(stamps)

    # ---------------------------------------------------------------------------------- refits

    def _refit(self, *, use_model: bool) -> None:
        """Fit a recommender on a snapshot of the stored jobs under the newest policy and swap it in.

        ``use_model``: with the estimator's regressor (then it answers unseen apps too); else the last
        regressor fitted under this policy keeps answering them. The snapshot is read and fitted in the
        refit worker process (:func:`fit_snapshot`).

        The evidence is rebuilt from the same snapshot when there is none yet, when it learned under another
        ``min_confidence``, or when the store holds jobs it was not told of (another replica's); posts that
        arrive meanwhile are replayed into the new evidence before it replaces the old one.
        """
        started = time.perf_counter()
        with self._fit_lock:
            policy = self.current_policy()
            evidence = self._evidence
            rebuild = evidence is None or evidence.min_confidence != policy["min_confidence"] or self._foreign() > 0
            with self._evidence_lock:
                generation = self._generation
                if rebuild:
                    self._recording = []
            snapshot = self._snapshot(policy, use_model=use_model, rebuild=rebuild)
            if rebuild:
                evidence = self._adopt(snapshot)
            assert evidence is not None  # rebuilt when there was none
            previous = self._state if self._state is not None and self._state.policy == policy else None
            known = snapshot.known
            if snapshot.error is not None:
                log.warning("iosets serve: refit failed, keeping the previous answers: %s", snapshot.error)
                known = previous and previous.known
            model = known if use_model and snapshot.error is None else previous and previous.model
            views = [None if fitted is None else evidence_view(fitted, evidence) for fitted in (known, model)]
            fitted_at = time.time()
            self._state = Fitted(
                policy, self.store, snapshot.n_stored, known, views[0], model, views[1], fitted_at, generation
            )
            self._lua_due = True
            if self.settle_heap:
                settle_heap()
        self.metrics.refit_seconds.observe(time.perf_counter() - started)
        self.metrics.refits.inc()

    def _snapshot(self, policy: dict[str, Any], *, use_model: bool, rebuild: bool) -> Snapshot:
        """:func:`fit_snapshot` in the refit worker process (started on first use, again if it died), read with
        :func:`load_snapshot`."""
        for attempt in (1, 2):
            if self._stop.is_set():
                raise IosetsError("the service is stopping: no refit")
            if self._pool is None:
                context = multiprocessing.get_context("forkserver")
                self._pool = ProcessPoolExecutor(
                    max_workers=1, mp_context=context, initializer=start_worker, initargs=(os.getpid(),)
                )
            try:
                lua_out = None if self.settings.lua_out is None else str(self.settings.lua_out)
                pickled = self._pool.submit(
                    fit_snapshot_pickled,
                    self.settings.store_url,
                    policy,
                    use_model=use_model,
                    rebuild=rebuild,
                    lua_out=lua_out,
                ).result()
                return load_snapshot(pickled, freeze=self.settle_heap)
            except BrokenProcessPool:
                log.warning("iosets serve: the refit worker died (attempt %d of 2); starting another", attempt)
                self._pool.shutdown(wait=False)
                self._pool = None
        raise IosetsError("the refit worker died twice (out of memory?): the previous answers stay")

    def _adopt(self, snapshot: Snapshot) -> Evidence:
        """A rebuilt snapshot's evidence plus the posts recorded since it began; swapped in for the old one."""
        evidence, ids = snapshot.evidence, snapshot.job_ids
        assert evidence is not None and ids is not None  # a rebuild's
        with self._evidence_lock:
            recorded = self._recording or []
            posted = [row["job_id"] for row in recorded]
            seen = set(ids.filter(ids.is_in(posted)).to_list()) if posted else set()
            missed = [row for row in recorded if row["job_id"] not in seen]
            learned = [row for row in map(fit_row, missed) if row is not None]
            evidence.add(learned)
            evidence.count(len(missed) - len(learned))
            self._evidence, self._recording = evidence, None
        return evidence

    def _foreign(self, counted: tuple[int, int] | None = None) -> int:
        """Stored jobs the evidence was not told of (another replica's); never counts a post under way.

        ``counted``: (stored jobs, posts not absorbed yet), the second read by :meth:`_unabsorbed_after` the first.
        """
        if counted is None:
            n_jobs = self.store.count_jobs()
            counted = (n_jobs, self._unabsorbed_after())
        evidence = self._evidence  # read after: it may have absorbed more, never fewer
        return 0 if evidence is None else counted[0] - evidence.n_jobs - counted[1]

    def _write_lua(self) -> None:
        """Before any stored job has a w_iter, rewrite ``lua_out`` atomically with the default answer alone.

        Once one has, the refit worker rewrites it from each refit's snapshot (:func:`fit_snapshot`).
        """
        self._lua_due = False
        state = self._state
        if self.settings.lua_out is None or state is None or state.known is not None:
            return
        answer = default_answer(state.policy)
        default = {"set": answer["set"], "priority": answer["priority"], "conservative": True}
        with atomic_path(self.settings.lua_out) as tmp:
            tmp.write_text(default_lua_document(default, mapping=state.policy["mapping"]), encoding="utf-8")

    def _run(self) -> None:
        """The background thread: first fit, then refits on new jobs, new policies and other replicas' jobs.

        It first imports what a post's update of the evidence imports on first use (``scipy.special``, a
        quarter of a second of the interpreter's time) and what reading a refit's regressor imports
        (``sklearn.ensemble``: 1335 modules, a second of it), before the first fit and so before the
        service is ready: no post pays them, and no answer waits behind them (at 200 000 stored jobs, the
        first regressor read took 1.3 s when it imported them, answers at 200/s meanwhile a p99 of 23 ms; 20 ms
        with them imported).
        """
        import scipy.special  # noqa: F401
        import sklearn.ensemble  # noqa: F401

        while not self._stop.is_set():
            try:
                self._tick()
            except Exception:  # noqa: BLE001 - a failed refit is logged; the previous answers stay
                log.exception("iosets serve: background refit failed")
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()

    def _unabsorbed_after(self) -> int:
        """The posts not absorbed yet, read after a count of the store, once an insert under way has ended.

        The count runs without the insert lock: it reads every stored row (tens of milliseconds at a million
        jobs, once a second in the poll), and posts would wait for it. Every job it saw was then inserted by a
        block that has ended when the lock is taken here, so each of this service's jobs among them is counted
        here or is in the evidence: another replica's jobs are never over-counted, and posts stored during the
        count only lower the tally of them until a later poll.
        """
        with self._insert_lock:
            return self._unabsorbed

    def _tick(self) -> None:
        """Refit when something changed, rewrite the Lua file.

        No fit yet, a new policy or another replica's jobs: a fit without the regressor at once, the regressor
        next. Jobs posted here: a fit without the regressor (the mapping) once the last one is three times as
        old as it took and at least ``MAPPING_GAP_SECONDS`` (refits use at most a quarter of a core), and
        with it every ``refit_interval``.
        """
        n_jobs, version = self.store.state()
        unabsorbed = self._unabsorbed_after()
        state = self._state
        if state is None or version != state.policy["version"] or self._foreign((n_jobs, unabsorbed)) > 0:
            self._timed_refit(use_model=False)
            self._model_due = True
        else:
            now = time.monotonic()
            ended, took = self._last_refit
            if self._model_due or (self._generation != self._model_generation and now >= self._model_next):
                self._model_due = False
                self._model_generation = self._generation
                self._timed_refit(use_model=True)
                self._model_next = time.monotonic() + self.settings.refit_interval
            elif self._generation != state.generation and now - ended >= max(3 * took, MAPPING_GAP_SECONDS):
                self._timed_refit(use_model=False)
        if self._lua_due:
            self._write_lua()

    def _timed_refit(self, *, use_model: bool) -> None:
        begun = time.monotonic()
        self._refit(use_model=use_model)
        self._last_refit = (time.monotonic(), time.monotonic() - begun)
