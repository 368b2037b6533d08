"""The refit of the service's recommender, run in a worker process on a snapshot of the stored jobs.

Reading a million stored rows and fitting the estimator's regressor take seconds to minutes of Python;
in the worker, they never hold the interpreter lock the service's answers need.
"""

from __future__ import annotations

import gc
import os
import pickle
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any

import polars as pl

from ..errors import InputError
from ..recommender import Evidence, export
from ._cpu import yield_cpu
from ._store import Store

ORPHAN_CHECK = 1.0
"""Seconds between the refit worker's checks that the service that started it still runs."""
_POLICY_FIELDS = ("mapping", "bandwidth", "safety", "limit", "max_request", "min_confidence")

HALFLIFE = 5.0
"""The estimator's EWMA half-life, in jobs (``WIterEstimator``'s default)."""
PIECE_ITEMS = 2000
"""The most items of one of the estimator's look-up tables (dicts) that the service unpickles in one call."""


@dataclass
class Snapshot:
    """What a refit returns: the stored-job count, the recommender (None: no usable job) or the fit's error,
    and on a rebuild the evidence of the snapshot and its job ids."""

    n_stored: int
    known: Any = None
    error: str | None = None
    evidence: Evidence | None = None
    job_ids: pl.Series | None = None


def fit_snapshot(
    store_url: str, policy: dict[str, Any], *, use_model: bool, rebuild: bool, lua_out: str | None = None
) -> Snapshot:
    """Read the stored jobs, fit a recommender under ``policy`` and, if ``rebuild``, their evidence.

    ``lua_out``: also rewrite this Lua document for ``job_submit.lua`` (``iosets export --format lua`` of the
    snapshot with the recommender just fitted), here rather than in the service, whose answers a million
    rows' export would stall; a failed fit leaves the previous document.
    """
    store = Store(store_url)
    try:
        stored = store.history()
    finally:
        store.close()
    history = fit_history(stored)
    snapshot = Snapshot(stored.height)
    if rebuild:
        evidence = Evidence.build(history, halflife=HALFLIFE, min_confidence=float(policy["min_confidence"]))
        evidence.count(stored.height - history.height)
        snapshot.evidence, snapshot.job_ids = evidence, stored["job_id"]
    if usable(history):
        try:
            known = fit_recommender(policy, history, use_model=use_model)
        except InputError as exc:
            snapshot.error = str(exc)
        else:
            if lua_out is not None:
                export(known.predict(history), "lua", lua_out, recommender=known)
            known.pairs_, known.apps_ = {}, {}  # its answer caches, one dict per pair: predict_one does without
            snapshot.known = known
    return snapshot


class Pieces:
    """One of a refit's estimator's attributes pickled on its own, a dict in pieces of at most
    :data:`PIECE_ITEMS` items; read back one piece at a time.

    Unpickling holds the interpreter lock for the whole call: a refit's estimator read in one call held it
    7-8 ms at 1 000 000 stored jobs (20-25 ms with the regressor), most of it its tables of pairs, apps and
    contexts, and the event loop's answers waited. Between two pieces the interpreter hands the lock to a
    thread that asked for it (``sys.setswitchinterval``, see ``Service.start``): the longest piece then takes
    0.6 ms at 1 000 000 stored jobs, 3-3.6 ms with the regressor (scikit-learn's, one piece).
    """

    def __init__(self, value: Any):
        self.table = type(value) is dict
        if self.table:
            items = list(value.items())
            parts = [dict(items[at : at + PIECE_ITEMS]) for at in range(0, len(items), PIECE_ITEMS)]
        else:
            parts = [value]
        self.pieces = [pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL) for part in parts]

    def read(self) -> Any:
        if not self.table:
            return pickle.loads(self.pieces[0])
        table: dict = {}
        for piece in self.pieces:
            table.update(pickle.loads(piece))
        return table


def _split(estimator: Any) -> None:
    """Replace each of ``estimator``'s attributes that is a container (not a number, a string or None) by its
    :class:`Pieces`."""
    for name, value in list(vars(estimator).items()):
        if not isinstance(value, (int, float, str, type(None))):
            setattr(estimator, name, Pieces(value))


def _join(estimator: Any) -> None:
    """Read back what :func:`_split` split, piece by piece."""
    for name, value in list(vars(estimator).items()):
        if isinstance(value, Pieces):
            setattr(estimator, name, value.read())


def fit_snapshot_pickled(
    store_url: str, policy: dict[str, Any], *, use_model: bool, rebuild: bool, lua_out: str | None = None
) -> bytes:
    """:func:`fit_snapshot`, pickled: the service unpickles it with :func:`load_snapshot`, not in the
    executor's thread with the collector on."""
    snapshot = fit_snapshot(store_url, policy, use_model=use_model, rebuild=rebuild, lua_out=lua_out)
    if snapshot.known is not None:
        _split(snapshot.known.estimator_)
    return pickle.dumps(snapshot, protocol=pickle.HIGHEST_PROTOCOL)


def load_snapshot(data: bytes, *, freeze: bool) -> Snapshot:
    """Unpickle a refit's result with the garbage collector paused, its estimator's attributes piece by piece
    (:class:`Pieces`); ``freeze``: then freeze what lives.

    A refit's result is the evidence and models of every stored job, hundreds of thousands of objects. Read
    with the collector on, in the executor's thread, its allocations set off young collections in that thread
    (2-7 ms each, many) and full ones in whichever thread allocated next (15 and 43 ms in the event loop's
    at 200 000 stored jobs), each holding the interpreter while answers waited. Paused, nothing is scanned
    while it is read; frozen (``gc.freeze``, only in a process that is the service
    alone), no later collection scans it. The young garbage is collected first, so that no cycle made
    before is frozen with it.
    """
    if freeze:
        gc.collect(1)
    enabled = gc.isenabled()
    gc.disable()
    try:
        snapshot = pickle.loads(data)
        if snapshot.known is not None:
            _join(snapshot.known.estimator_)
        if freeze:
            gc.freeze()
    finally:
        if enabled:
            gc.enable()
    return snapshot


def start_worker(service_pid: int) -> None:
    """The refit worker's initializer: a refit yields the CPU to the service's posts and answers
    (:func:`yield_cpu`), and the worker exits once the service that started it is gone (a service killed
    with SIGKILL leaves no one to stop it)."""
    yield_cpu(whole_process=True)
    started = process_start(service_pid)
    guard = threading.Thread(target=_exit_after, args=(service_pid, started), name="iosets-orphan-guard", daemon=True)
    guard.start()


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (field 22 of /proc/PID/stat, in clock ticks since boot); None when it is gone.

    A pid the kernel reused for another process has another start: the pair names one process.
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return None
    return fields[19] if len(fields) > 19 else None


def _exit_after(pid: int, started: str | None) -> None:
    """Exit this process once process ``pid`` (started at ``started``) is gone, checking every ORPHAN_CHECK s."""
    while process_start(pid) == started and started is not None:
        time.sleep(ORPHAN_CHECK)
    os._exit(0)


def fit_history(stored: pl.DataFrame) -> pl.DataFrame:
    """The stored jobs a recommender learns from: those with an app and a user; a missing start is the receipt date,
    or the job's end when that is earlier (a start never after the end)."""
    named = pl.col("app").is_not_null() & (pl.col("app") != "") & pl.col("user").is_not_null() & (pl.col("user") != "")
    start = pl.coalesce("start", pl.min_horizontal("received_at", "end"))
    return stored.filter(named).with_columns(start.alias("start"))


def usable(history: pl.DataFrame) -> bool:
    """Whether any job has a w_iter with a confidence > 0 (what a recommender needs to be fitted)."""
    return history.filter(pl.col("w_iter").is_not_null() & (pl.col("w_iter_confidence").fill_null(1.0) > 0)).height > 0


def fit_recommender(policy: dict[str, Any], history: pl.DataFrame, *, use_model: bool) -> Any:
    """``Recommender(**policy).fit(history)``; ``use_model`` False: without the estimator's model."""
    from ..recommender import Recommender, WIterEstimator

    params = {name: policy[name] for name in _POLICY_FIELDS}
    with warnings.catch_warnings():  # scaled reservations, capped weights: the service answers all the same
        warnings.simplefilter("ignore", UserWarning)
        estimator = WIterEstimator(halflife=HALFLIFE, use_model=use_model)
        return Recommender(**params, estimator=estimator).fit(history)
