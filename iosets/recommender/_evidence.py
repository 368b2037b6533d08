"""`Evidence`: what the stored jobs say of each app and (app, user), kept up to date job by job.

The service's answers for known apps come from here, not from a refit: a posted job updates its own
(app, user) pair and its app, whatever the number of stored jobs. The numbers are those
:class:`iosets.recommender.WIterEstimator` fits on the same history (its ``_pairs``, ``_apps``,
``_thin_pairs`` and ``_thin_apps``), and the texts those of :func:`iosets.recommender._thin.thin_reasons`:

- a pair's estimate is the EWMA of log10 w_iter over its usable jobs in start order (each job weighs
  its confidence times 2^(-k / halflife), k the pair's jobs started after it); only the newest
  ``ceil(50 halflife)`` jobs of a pair are kept, the older ones weigh less than 2^-50 of the newest;
- an app's estimate is the median of its users' estimates and confidences, each user one vote;
- a pair or an app is thin when it has an analyzed job and no firm one (see ``_thin``).
"""

from __future__ import annotations

import bisect
import math
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from ._history import LN10, PRIOR_JOBS, PRIOR_SD, _hit_probability
from ._thin import _runs_text, thin_jobs

TAIL_HALFLIVES = 50
"""A pair keeps its newest ``ceil(TAIL_HALFLIVES x halflife)`` usable jobs: an older one weighs < 2^-50."""


def classify_jobs(jobs: pl.DataFrame, *, min_confidence: float) -> pl.DataFrame:
    """Each job of a jobs table as the estimator and the thin-evidence rule read it.

    Columns ``app``, ``user``, ``start``, ``x`` (log10 w_iter, null without one), ``c`` (confidence, null
    read as 1), ``usable`` (counts in the EWMAs), ``firm`` (usable and not thin), ``analyzed`` (a trace was
    analyzed) and ``reason`` (why a thin job is thin, null for the others), as in ``WIterEstimator.fit``
    with ``thin=thin_jobs(jobs, min_confidence)`` and in ``thin_reasons``.
    """
    absent = {"w_iter_confidence": pl.Float64, "not_periodic": pl.String}  # as null columns: read the same
    jobs = jobs.with_columns(
        pl.lit(None, dtype).alias(name) for name, dtype in absent.items() if name not in jobs.columns
    )
    marked = pl.Series(thin_jobs(jobs, min_confidence=min_confidence))
    code = pl.col("not_periodic").cast(pl.String)
    confidence = pl.col("w_iter_confidence").cast(pl.Float64)
    x = pl.col("w_iter").cast(pl.Float64).log10()
    usable = x.is_not_null() & (confidence.fill_null(1.0) > 0) & code.is_null()
    reason = (
        pl.when(code.is_not_null())
        .then(code)
        .when(pl.col("w_iter").is_null())
        .then(pl.lit("no w_iter"))
        .when(confidence.fill_null(1.0) <= 0)
        .then(pl.lit("confidence 0"))
        .otherwise(pl.lit(f"confidence below {min_confidence:g}"))
    )
    return jobs.select(
        pl.col("app").cast(pl.String),
        pl.col("user").cast(pl.String),
        pl.col("start").cast(pl.Float64),
        x.alias("x"),
        confidence.fill_null(1.0).alias("c"),
        usable.alias("usable"),
        (usable & ~pl.lit(marked)).alias("firm"),
        (x.is_not_null() | code.is_not_null() | confidence.is_not_null()).alias("analyzed"),
        pl.when(pl.lit(marked)).then(reason).alias("reason"),
    )


def classify_row(row: dict[str, Any], *, min_confidence: float) -> tuple[Any, ...]:
    """:func:`classify_jobs` of one fit-history row (a dict), in Python: a post's cost stays in microseconds."""
    w_iter, confidence, code = row.get("w_iter"), row.get("w_iter_confidence"), row.get("not_periodic")
    has_w = w_iter is not None
    c = 1.0 if confidence is None else float(confidence)
    marked_firm = has_w and c >= min_confidence and code is None
    analyzed = has_w or confidence is not None or code is not None
    marked = analyzed and not marked_firm
    usable = has_w and c > 0 and code is None
    if not marked:
        reason = None
    elif code is not None:
        reason = str(code)
    elif not has_w:
        reason = "no w_iter"
    elif c <= 0:
        reason = "confidence 0"
    else:
        reason = f"confidence below {min_confidence:g}"
    x = math.log(w_iter) / LN10 if w_iter is not None else None  # polars' log10, to the bit
    return (row["app"], row["user"], float(row["start"]), x, c, usable, usable and not marked, analyzed, reason)


def ewma_stats(x: np.ndarray, c: np.ndarray, halflife: float) -> tuple[float, float]:
    """``(m, conf)`` of jobs in start order: the estimator's EWMA of log10 w_iter and its confidence."""
    d = 0.5 ** (np.arange(len(x) - 1, -1, -1, dtype=np.float64) / halflife)
    w = d * c
    total = w.sum()
    m = float((w * x).sum() / total)
    s2 = float((w * (x - m) ** 2).sum() / total)
    n_eff = total**3 / (w**2).sum() / d.sum()
    var = (n_eff * s2 + PRIOR_JOBS * PRIOR_SD**2) / (n_eff + PRIOR_JOBS) * (1 + 1 / n_eff)
    return m, float(np.clip(_hit_probability(math.sqrt(var)), 0.0, 1.0))


@dataclass
class _Key:
    """What the evidence holds of one pair or app: flags, thin reasons; a pair also its newest usable jobs."""

    firm: bool = False
    analyzed: bool = False
    reasons: Counter[str] = field(default_factory=Counter)
    n: int = 0  # usable jobs
    starts: list[float] = field(default_factory=list)  # the newest usable jobs, in start order
    x: list[float] = field(default_factory=list)
    c: list[float] = field(default_factory=list)


class ThinReasons:
    """``get((app, user))`` / ``get((app, None))``: why a thin pair or app is thin, as ``thin_reasons`` says."""

    def __init__(self, evidence: Evidence):
        # the evidence's tables (updated in place), not the evidence: with no reference cycle, an evidence the
        # service replaces is freed by reference counting alone (the service freezes its heap, see settle_heap)
        self._thin_apps, self._apps_held = evidence.thin_apps, evidence._apps_held
        self._thin_pairs, self._pairs_held = evidence.thin_pairs, evidence._pairs_held

    def get(self, key: tuple[str, str | None]) -> str | None:
        app, user = key
        if user is None:
            thin, found = app in self._thin_apps, self._apps_held.get(app)
        else:
            thin, found = key in self._thin_pairs, self._pairs_held.get((app, user))
        if not thin or found is None or not found.reasons:
            return None
        counts = sorted(found.reasons.items(), key=lambda item: (-item[1], item[0]))
        return _runs_text(app, user, counts)


class Evidence:
    """Per (app, user) and per app estimates of the stored jobs, updated by :meth:`add` one job at a time.

    Parameters
    ----------
    halflife : float
        The estimator's EWMA half-life, in jobs.
    min_confidence : float
        The recommender's: a job less confident than this is thin evidence.

    Attributes
    ----------
    pairs : dict
        ``(app, user) -> (n usable jobs, EWMA of log10 w_iter, confidence)`` (``WIterEstimator._pairs``).
    apps : dict
        ``app -> (median of its users' EWMAs, median of their confidences)`` (``WIterEstimator._apps``).
    thin_pairs, thin_apps : set
        The pairs and apps with an analyzed job and no firm one.
    reasons : ThinReasons
        Why each of them is thin (``Recommender._why_thin``).
    n_jobs : int
        Jobs added, named or not.
    """

    def __init__(self, *, halflife: float, min_confidence: float):
        self.halflife = float(halflife)
        self.min_confidence = float(min_confidence)
        self.keep = math.ceil(TAIL_HALFLIVES * self.halflife)
        self.pairs: dict[tuple[str, str], tuple[int, float, float]] = {}
        self.apps: dict[str, tuple[float, float]] = {}
        self.thin_pairs: set[tuple[str, str]] = set()
        self.thin_apps: set[str] = set()
        self.n_jobs = 0
        self._pairs_held: dict[tuple[str, str], _Key] = {}
        self._apps_held: dict[str, _Key] = {}
        self.reasons = ThinReasons(self)
        self._users: dict[str, set[str]] = {}  # app -> its users with a usable job
        self._lock = threading.Lock()

    def add(self, jobs: list[dict[str, Any]]) -> None:
        """Learn from new jobs (fit history rows: named, with a start), in order; ``n_jobs`` counts them."""
        rows = [classify_row(job, min_confidence=self.min_confidence) for job in jobs]
        with self._lock:
            changed = self._absorb(rows)
            for key in changed:
                self._restate(key)
            for app in {app for app, _ in changed}:
                self._revote(app)

    def count(self, n: int) -> None:
        """Count ``n`` stored jobs that teach nothing (no app or no user)."""
        with self._lock:
            self.n_jobs += n

    def _absorb(self, rows: Iterable[tuple[Any, ...]]) -> set[tuple[str, str]]:
        """Add classified rows to the held keys, without estimating; the pairs they touched."""
        touched: set[tuple[str, str]] = set()
        for app, user, start, x, c, usable, firm, analyzed, reason in rows:
            self.n_jobs += 1
            pair = self._pairs_held.setdefault((app, user), _Key())
            whole = self._apps_held.setdefault(app, _Key())
            for held in (pair, whole):
                held.firm |= firm
                held.analyzed |= analyzed
                if reason is not None:
                    held.reasons[reason] += 1
            if usable:
                at = bisect.bisect_right(pair.starts, start)  # after equal starts: the history's order
                pair.starts.insert(at, start)
                pair.x.insert(at, x)
                pair.c.insert(at, c)
                pair.n += 1
                if len(pair.starts) > self.keep:
                    del pair.starts[0], pair.x[0], pair.c[0]
            touched.add((app, user))
        return touched

    def _restate(self, key: tuple[str, str]) -> None:
        """Re-estimate one pair and the thin flags of it and its app."""
        app = key[0]
        pair, whole = self._pairs_held[key], self._apps_held[app]
        if pair.n:
            m, conf = ewma_stats(np.array(pair.x), np.array(pair.c), self.halflife)
            self.pairs[key] = (pair.n, m, conf)
            self._users.setdefault(app, set()).add(key[1])
        (self.thin_pairs.add if pair.analyzed and not pair.firm else self.thin_pairs.discard)(key)
        (self.thin_apps.add if whole.analyzed and not whole.firm else self.thin_apps.discard)(app)

    def _revote(self, app: str) -> None:
        """The app's estimate: the median of its users' (each one vote)."""
        users = self._users.get(app)
        if users:
            votes = np.array([self.pairs[app, user][1:] for user in users])
            self.apps[app] = (float(np.median(votes[:, 0])), float(np.median(votes[:, 1])))

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its lock (a refit worker sends it back)."""
        return {name: value for name, value in self.__dict__.items() if name != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @classmethod
    def build(cls, history: pl.DataFrame, *, halflife: float, min_confidence: float) -> Evidence:
        """The evidence of a whole fit history (every pair estimated once, not once per job)."""
        evidence = cls(halflife=halflife, min_confidence=min_confidence)
        rows = classify_jobs(history, min_confidence=min_confidence)
        order = rows.with_row_index("_row").sort("start", "_row").drop("_row")  # bisect would be quadratic
        with evidence._lock:
            changed = evidence._absorb(order.iter_rows())
            for key in changed:
                evidence._restate(key)
            for app in {app for app, _ in changed}:
                evidence._revote(app)
        return evidence

    def estimator_view(self, estimator: Any) -> Any:
        """A copy of a fitted ``WIterEstimator`` whose history look-ups are this evidence (its model kept)."""
        import copy

        view = copy.copy(estimator)
        view._pairs, view._apps = self.pairs, self.apps
        view._thin_pairs, view._thin_apps = self.thin_pairs, self.thin_apps
        return view
