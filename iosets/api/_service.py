"""`Service`: the store, the fitted recommender held in memory, and what keeps it up to date.

Two recommenders answer, both fitted on the stored jobs under the newest policy: ``known``, fitted
without the estimator's model (milliseconds), answers every app and (app, user) pair the history
knows; ``model``, fitted with it (seconds) at start, on a policy change and every ``refit_interval``,
answers the apps never seen. A new job marks its app stale: a background thread refits ``known`` at
once, and a recommendation asked for a stale app waits for that refit, so it sees the job. A replica
learns of another one's jobs and policies by polling the store's counts every second.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from dataclasses import dataclass, replace
from typing import Any

import polars as pl
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool

from ..errors import InputError, IosetsError
from ..schemas import JOBS
from ._metrics import Metrics
from ._models import PolicyParams
from ._ratelimit import TokenBucket
from ._settings import Settings
from ._store import Store

POLL_SECONDS = 1.0
"""How often the background thread looks for other replicas' jobs and policies."""
QUERY_FIELDS = ("app", "user", "nprocs", "requested_time", "job_id")
_POLICY_FIELDS = ("mapping", "bandwidth", "safety", "limit", "max_request", "min_confidence")
log = logging.getLogger("iosets.api")


class Conflict(IosetsError):
    """The request cannot be served in the store's present state (409)."""


@dataclass(frozen=True)
class Fitted:
    """What answers recommendations: the policy, the recommenders and the history they were fitted on."""

    policy: dict[str, Any]
    history: pl.DataFrame
    n_jobs: int
    known: Any = None  # Recommender fitted without the model; None: no usable job, default answers
    model: Any = None  # Recommender fitted with the model, for apps never seen
    fitted_at: float | None = None


def fit_history(stored: pl.DataFrame) -> pl.DataFrame:
    """The stored jobs a recommender learns from: those with an app and a user; a missing start is the receipt date,
    or the job's end when that is earlier (a start never after the end)."""
    named = pl.col("app").is_not_null() & (pl.col("app") != "") & pl.col("user").is_not_null() & (pl.col("user") != "")
    start = pl.coalesce("start", pl.min_horizontal("received_at", "end"))
    return stored.filter(named).with_columns(start.alias("start"))


def default_answer(policy: dict[str, Any]) -> dict[str, Any]:
    """The answer when nothing is known: a recommender fitted on no evidence puts every job in set 0, priority 1.

    Its conservative set is one below no set (``fit_mapping``: 0), whose priority is 1 under every mapping; the
    job is the lowest priority, so its WFQ weight is ``max_request`` and its RBFQ weight 1.
    """
    bandwidth, limit = policy["bandwidth"], policy["limit"]
    return {
        "set": 0,
        "priority": 1.0,
        "conservative": True,
        "wfq_weight": policy["max_request"],
        "rbfq_reservation": None if bandwidth is None else 0.0,
        "rbfq_weight": 1.0,
        "rbfq_limit": None if bandwidth is None or limit is None else limit * bandwidth,
        "w_iter": None,
        "w_iter_confidence": 0.0,
        "source": "default",
    }


def _usable(history: pl.DataFrame) -> bool:
    """Whether any job has a w_iter with a confidence > 0 (what a recommender needs to be fitted)."""
    return history.filter(pl.col("w_iter").is_not_null() & (pl.col("w_iter_confidence").fill_null(1.0) > 0)).height > 0


def fit_recommender(policy: dict[str, Any], history: pl.DataFrame, *, use_model: bool) -> Any:
    """``Recommender(**policy).fit(history)``; ``use_model`` False: without the estimator's model."""
    from ..recommender import Recommender, WIterEstimator

    params = {name: policy[name] for name in _POLICY_FIELDS}
    with warnings.catch_warnings():  # scaled reservations, capped weights: the service answers all the same
        warnings.simplefilter("ignore", UserWarning)
        return Recommender(**params, estimator=WIterEstimator(use_model=use_model)).fit(history)


class Service:
    """The service's state and logic; routes call its methods and nothing else.

    Parameters
    ----------
    settings : Settings
        Store, upload limit, write rate, refit interval, Lua output and the initial policy.
    """

    def __init__(self, settings: Settings):
        self.settings = settings
        self.store = Store(settings.store_url)
        self.metrics = Metrics()
        self.write_bucket = TokenBucket(settings.write_rate)
        self.store.add_policy(settings.policy.model_dump(), only_if_none=True)
        self._state: Fitted | None = None
        self._fit_lock = threading.Lock()
        self._pending: dict[str | None, int] = {}  # stale app -> the post generation that made it stale
        self._generation = 0
        self._model_due = False
        self._lua_due = False
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._report: tuple[tuple[Any, ...], str] | None = None  # (job count, policy version, replay files) -> page
        self._report_lock = threading.Lock()
        self.metrics.watch_estimate(lambda: None if self._state is None else self._state.fitted_at)

    # ------------------------------------------------------------------------------- life cycle

    def start(self) -> None:
        """Fit the recommender on the stored jobs, then keep it fresh in a background thread."""
        self.metrics.jobs_stored.set(self.store.count_jobs())
        self._thread = threading.Thread(target=self._run, name="iosets-refit", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the background thread and release the store."""
        self._stop.set()
        self._wake.set()
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
        """The answer of each query (``app``, ``user``, optional ``nprocs``, ``requested_time``, ``job_id``)."""
        if any(query["app"] in self._pending for query in queries) or self._state is None:
            await run_in_threadpool(self.refresh)
        state = self._state
        assert state is not None  # refresh fitted it
        return [self._answer(state, query) for query in queries]

    def refresh(self) -> None:
        """Refit the recommender of the known apps now if a job arrived since (or nothing is fitted yet)."""
        if self._pending or self._state is None:
            self._refit(with_model=False)

    def _answer(self, state: Fitted, query: dict[str, Any]) -> dict[str, Any]:
        asked = {name: query.get(name) for name in QUERY_FIELDS}
        if state.known is None:
            return {**asked, **default_answer(state.policy), "policy_version": state.policy["version"]}
        fields = {name: asked[name] for name in ("app", "user", "nprocs", "requested_time")}
        answer = state.known.predict_one(**fields)
        if answer["estimate_source"] == "none" and state.model is not None:
            modelled = state.model.predict_one(**fields)
            answer = modelled if modelled["estimate_source"] == "model" else answer
        source = answer.pop("estimate_source")
        answer = {key: value for key, value in answer.items() if key not in fields}
        answer["source"] = "default" if source == "none" else source
        return {**asked, **answer, "policy_version": state.policy["version"]}

    # ------------------------------------------------------------------------------------- jobs

    def add_job(self, row: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Check a jobs-table row and store it unless its job_id is stored: ``(stored row, new)``."""
        row = {name: row.get(name) for name in JOBS.names}
        frame = JOBS.validate(pl.DataFrame([row], schema=JOBS.polars), source=f"job {row['job_id']!r}")
        stored, created = self.store.insert_job(frame.row(0, named=True))
        if created:
            self.metrics.jobs_stored.inc()
            with self._fit_lock:
                self._generation += 1
                self._pending[stored["app"]] = self._generation
            self._wake.set()
        return stored, created

    def app_summary(self, app: str) -> dict[str, Any] | None:
        """An app's jobs, users, dates, median w_iter and alpha_io, and its top user's answer; None if unknown."""
        jobs = self.store.history(app=app)
        if jobs.height == 0:
            return None
        users = jobs.drop_nulls("user").filter(pl.col("user") != "")["user"].value_counts(sort=True)
        users = users.sort(["count", "user"], descending=[True, False])
        seen = jobs.select(pl.coalesce("start", "received_at"))[:, 0]
        top_user = users["user"][0] if users.height else "unknown"  # the app's answer for a user never seen
        if app in self._pending or self._state is None:
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
        if state is not None and _usable(state.history):
            fit_recommender(params, state.history, use_model=False)  # InputError (422) before anything is stored
        policy = self.store.add_policy(params)
        self._model_due = True
        self._refit(with_model=False)
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

    def _refit(self, *, with_model: bool) -> None:
        """Refit on the stored jobs under the newest policy (``with_model``: the model too, outside the lock)."""
        started = time.perf_counter()
        with self._fit_lock:
            seen = self._generation
            policy = self.current_policy()
            stored = self.store.history()
            history = fit_history(stored)
            previous = self._state if self._state is not None and self._state.policy == policy else None
            known = self._fit(policy, history, use_model=False, fallback=previous and previous.known)
            model = previous and previous.model
            self._state = Fitted(policy, history, stored.height, known, model, time.time())
            self._pending = {app: made for app, made in self._pending.items() if made > seen}
            self._lua_due = True
        if with_model and known is not None:
            model = self._fit(policy, history, use_model=True, fallback=None)
            with self._fit_lock:
                if self._state.policy["version"] == policy["version"]:
                    self._state = replace(self._state, model=model)
        self.metrics.refit_seconds.observe(time.perf_counter() - started)
        self.metrics.refits.inc()

    @staticmethod
    def _fit(policy: dict[str, Any], history: pl.DataFrame, *, use_model: bool, fallback: Any) -> Any:
        """A recommender fitted on ``history``, None if it has no usable job, ``fallback`` if the fit failed."""
        if not _usable(history):
            return None
        try:
            return fit_recommender(policy, history, use_model=use_model)
        except InputError as exc:
            log.warning("iosets serve: refit failed, keeping the previous answers: %s", exc)
            return fallback

    def _write_lua(self) -> None:
        """Rewrite ``lua_out`` atomically with the current answers (the document job_submit.lua reads)."""
        from ..recommender import export

        self._lua_due = False
        state = self._state
        if self.settings.lua_out is None or state is None or state.known is None:
            return
        export(state.known.predict(state.history), "lua", self.settings.lua_out, recommender=state.known)

    def _run(self) -> None:
        """The background thread: first fit, then refits on new jobs, new policies and every refit_interval."""
        last_full = -float("inf")
        while not self._stop.is_set():
            try:
                if self._tick(full_due=time.monotonic() - last_full >= self.settings.refit_interval):
                    last_full = time.monotonic()
            except Exception:  # noqa: BLE001 - a failed refit is logged; the previous answers stay
                log.exception("iosets serve: background refit failed")
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()

    def _tick(self, *, full_due: bool) -> bool:
        """Refit what changed (everything when ``full_due``), rewrite the Lua file; True after a full refit."""
        n_jobs, version = self.store.state()
        state = self._state
        full = full_due or self._model_due or state is None or version != state.policy["version"]
        if full:
            self._model_due = False
            self._refit(with_model=True)
        elif self._pending or n_jobs != state.n_jobs:  # type: ignore[union-attr]  # full when state is None
            self._refit(with_model=False)
        if self._lua_due:
            self._write_lua()
        return full
