"""`recommend`: a jobs table in, the same table with sets, priorities and enforcement parameters out."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from .._results import Part, Tables
from .._validation import check_count, check_positive
from ..errors import InputError
from ..schemas import JOBS, RECOMMENDATION, RECOMMENDED_JOBS, SET_SUMMARY
from ._enforcement import rbfq_reservations, wfq_weights
from ._mappings import SetMapping, fit_mapping, renamed_policy


def numbers(values: pl.Series) -> np.ndarray:
    """Numbers as float64, NaN for nulls."""
    return values.cast(pl.Float64).fill_null(np.nan).to_numpy()


NO_DEMAND = ("no_io", "few_bytes")
"""``not_periodic`` codes of jobs that do (almost) no I/O: they reserve nothing."""


def not_periodic(jobs: pl.DataFrame) -> pl.Series | None:
    """The ``not_periodic`` codes as text (null: periodic), None when the table has no such column."""
    return jobs["not_periodic"].cast(pl.String) if "not_periodic" in jobs.columns else None


def evidence(jobs: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``(w_iter, confidence)`` of a jobs table: NaN for a null w_iter.

    The confidence is 1 without a ``w_iter_confidence`` column, 0 where it is null, and
    NaN, which no ``min_confidence`` accepts, where ``not_periodic`` holds a code.
    """
    if "w_iter_confidence" in jobs.columns:
        confidence = jobs["w_iter_confidence"].cast(pl.Float64).fill_null(0.0).to_numpy()
    else:
        confidence = np.ones(jobs.height)
    codes = not_periodic(jobs)
    if codes is not None:
        confidence = np.where(codes.is_not_null().to_numpy(), np.nan, confidence)
    return numbers(jobs["w_iter"]), confidence


def io_fractions(jobs: pl.DataFrame) -> np.ndarray:
    """``alpha_io`` as the RBFQ demand reads it: NaN where null, 0 for a ``not_periodic`` code of :data:`NO_DEMAND`."""
    if "alpha_io" not in jobs.columns:
        raise InputError("RBFQ reservations need an 'alpha_io' column in the jobs table")
    alpha = numbers(jobs["alpha_io"])
    codes = not_periodic(jobs)
    if codes is None:
        return alpha
    return np.where(codes.is_in(list(NO_DEMAND)).fill_null(False).to_numpy(), 0.0, alpha)


def check_jobs(jobs: pl.DataFrame, source: str = "jobs table", require: tuple[str, ...] = ()) -> pl.DataFrame:
    """A jobs table with a ``w_iter`` column, typed by :data:`iosets.schemas.JOBS` (its columns kept as they are)."""
    return JOBS.validate(jobs, source=source, require=list(dict.fromkeys(["w_iter", *require])), fill_optional=False)


def check_enforcement(bandwidth: float | None, max_request: int, safety: float, limit: float | None) -> None:
    """InputError for an enforcement parameter out of range, used by this call or not.

    ``bandwidth``, ``safety``: finite numbers > 0; ``max_request``: an integer >= 1;
    ``limit``: a fraction of ``bandwidth`` in (0, 1], so it needs one.
    """
    if bandwidth is not None:
        check_positive(bandwidth, "bandwidth")
    check_count(max_request, "max_request", minimum=1)
    check_positive(safety, "safety")
    if limit is None:
        return
    if not 0 < check_positive(limit, "limit") <= 1:
        raise InputError(f"limit must be a fraction of the bandwidth in (0, 1], got {limit!r}")
    if bandwidth is None:
        raise InputError("limit is a fraction of the bandwidth: give a bandwidth too")


def with_recommendation(
    jobs: pl.DataFrame,
    rule: SetMapping,
    *,
    bandwidth: float | None = None,
    max_request: int = 1 << 20,
    safety: float = 1.5,
    limit: float | None = None,
) -> pl.DataFrame:
    """``jobs`` (checked) with the columns of :data:`iosets.schemas.RECOMMENDATION` under ``rule``.

    WFQ and RBFQ weights are relative to the lowest priority of these jobs and of the
    jobs ``rule`` was fitted on; reservations fit the sets of these jobs into
    ``bandwidth`` (see :func:`recommend`).
    """
    check_enforcement(bandwidth, max_request, safety, limit)
    sets, priority, conservative = rule.assign(*evidence(jobs))
    lowest = min(priority.min(initial=np.inf), np.inf if rule.lowest_priority is None else rule.lowest_priority)
    reservation = limit_rate = np.full(jobs.height, np.nan)
    if bandwidth is not None:
        reservation = rbfq_reservations(io_fractions(jobs), sets, bandwidth=bandwidth, safety=safety)
        if limit is not None:
            limit_rate = np.full(jobs.height, limit * bandwidth)
    columns = {
        "set": sets,
        "priority": priority,
        "conservative": conservative,
        "wfq_weight": wfq_weights(priority, max_request=max_request, reference=lowest),
        "rbfq_reservation": reservation,
        "rbfq_weight": priority / lowest,
        "rbfq_limit": limit_rate,
    }
    dtypes = RECOMMENDATION.polars
    series = (pl.Series(name, value, dtype=dtypes[name], nan_to_null=True) for name, value in columns.items())
    return jobs.with_columns(series)


def assign_sets(
    jobs: pl.DataFrame,
    mapping: str = "set-10",
    *,
    base: float = 10.0,
    min_confidence: float = 0.5,
    conservative_set: int | None = None,
    max_sets: int = 8,
    random_state: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sets, priorities and the conservative flag of each job (see :func:`recommend`)."""
    found = evidence(check_jobs(jobs))
    rule = fit_mapping(
        *found,
        mapping=mapping,
        base=base,
        min_confidence=min_confidence,
        conservative_set=conservative_set,
        max_sets=max_sets,
        random_state=random_state,
    )
    return rule.assign(*found)


def recommend(
    jobs: pl.DataFrame,
    mapping: str = "set-10",
    *,
    base: float = 10.0,
    min_confidence: float = 0.5,
    conservative_set: int | None = None,
    max_sets: int = 8,
    bandwidth: float | None = None,
    max_request: int = 1 << 20,
    safety: float = 1.5,
    limit: float | None = None,
    random_state: int = 0,
    policy: str | None = None,
) -> pl.DataFrame:
    """Fill in a jobs table's sets, priorities and enforcement parameters.

    The mapping is learned from the table itself; :class:`Recommender` learns it from
    a history once and then maps other tables or single jobs.

    Parameters
    ----------
    jobs : polars.DataFrame
        Jobs table (:data:`iosets.schemas.JOBS`) with at least ``w_iter``;
        ``w_iter_confidence``, ``not_periodic`` and ``alpha_io`` are used when present.
    mapping : str, default="set-10"
        ``set-10`` (set round(log10 w_iter), priority 10^-set, IO-SETS paper section IV-C),
        ``set-b`` with ``base`` (or ``set-<b>``, e.g. ``set-2``), or ``gmm`` (a Gaussian
        mixture over log10 w_iter whose number of sets minimises BIC).
    min_confidence : float, default=0.5
        Thin evidence: a job with no ``w_iter``, a confidence below this, or a
        ``not_periodic`` code goes to the conservative set, or to the lower-priority set
        its ``w_iter`` gives, never to a set of higher priority (flag ``conservative``).
    conservative_set : int, default=None
        Set for those jobs (IO-SETS paper, section VII-B: "temporarily map the application to a
        low-priority set"); by default one set below the lowest-priority set of the
        confidently mapped jobs, so that unknown jobs never slow down known ones.
    max_sets : int, default=8
        Largest number of sets the ``gmm`` mapping may choose.
    bandwidth : float, default=None
        File system bandwidth (bytes/s); needed for RBFQ reservations and limits.
    max_request : int, default=1 MiB
        Largest request size: the WFQ weight (bytes per round) of the lowest-priority set.
    safety : float, default=1.5
        RBFQ reservation = safety x alpha_io x bandwidth per job (0 without an
        ``alpha_io`` or for ``not_periodic`` 'no_io' and 'few_bytes'). A set reserves
        what its largest job does (one job of a set does I/O at a time); when the sets
        reserve more than ``bandwidth`` in all, every reservation is scaled down by the
        same factor, with a warning naming the sets.
    limit : float, default=None
        RBFQ upper bound per job as a fraction of ``bandwidth``, in (0, 1] (None: no limit).
    random_state : int, default=0
        Seed of the ``gmm`` mapping.
    policy : str, default=None
        Deprecated name of ``mapping``.

    Returns
    -------
    polars.DataFrame
        ``jobs`` with the columns of :data:`iosets.schemas.RECOMMENDATION`; ``rbfq_weight`` is
        the priority relative to the lowest one, ``rbfq_reservation`` and ``rbfq_limit``
        are bytes/s (null without ``bandwidth``, or without a limit).

    Examples
    --------
    >>> jobs = pl.DataFrame({"job_id": ["a", "b", "c"], "w_iter": [8.0, 95.0, None], "alpha_io": [0.25, 0.125, None]})
    >>> recommend(jobs, bandwidth=1e9).select("set", "priority", "wfq_weight", "rbfq_reservation").rows()
    [(1, 0.1, 104857600, 375000000.0), (2, 0.01, 10485760, 187500000.0), (3, 0.001, 1048576, 0.0)]
    """
    jobs = check_jobs(jobs)
    rule = fit_mapping(
        *evidence(jobs),
        mapping=renamed_policy(mapping, policy),
        base=base,
        min_confidence=min_confidence,
        conservative_set=conservative_set,
        max_sets=max_sets,
        random_state=random_state,
    )
    return with_recommendation(jobs, rule, bandwidth=bandwidth, max_request=max_request, safety=safety, limit=limit)


def set_summary(recommended: pl.DataFrame) -> pl.DataFrame:
    """One row per set (:data:`iosets.schemas.SET_SUMMARY`): priority, job count, w_iter range, WFQ weight, RBFQ.

    A set's reservation is the largest of its jobs' reservations (one job of a set does
    I/O at a time, IO-SETS paper section IV); its limit is the per-job limit.
    """
    missing = [name for name in RECOMMENDATION.names if name not in recommended.columns]
    if missing:
        raise InputError(f"not a recommendation: missing column(s) {', '.join(missing)} (run recommend first)")
    w_iter = pl.col("w_iter") if "w_iter" in recommended.columns else pl.lit(None, pl.Float64)
    summary = (
        recommended.group_by("set")
        .agg(
            pl.col("priority").first(),
            pl.len().alias("n_jobs"),
            w_iter.min().alias("w_iter_min"),
            w_iter.max().alias("w_iter_max"),
            pl.col("wfq_weight").first(),
            pl.col("rbfq_weight").first(),
            pl.when(pl.col("rbfq_reservation").is_null().all())
            .then(None)
            .otherwise(pl.col("rbfq_reservation").max())
            .alias("rbfq_reservation"),
            pl.col("rbfq_limit").first(),
        )
        .sort("set")
    )
    return summary.cast(SET_SUMMARY.polars)


@dataclass(frozen=True)
class Recommendation(Tables):
    """A recommendation: every job with its set, priority and enforcement parameters, and one row per set.

    ``write(path)`` writes the recommended jobs table at ``path`` and the per-set table beside it as
    ``<stem>.sets<suffix>``; ``read(path)`` reads them (``sets`` recomputed when its file is missing).
    """

    PARTS = (
        Part("jobs", RECOMMENDED_JOBS, "recommendation"),
        Part("sets", SET_SUMMARY, "per-set recommendation", when_empty="remove", optional=True),
    )

    jobs: pl.DataFrame
    """:data:`iosets.schemas.RECOMMENDED_JOBS`: the jobs table with the recommendation's columns."""
    sets: pl.DataFrame
    """:data:`iosets.schemas.SET_SUMMARY`: one row per set (:func:`set_summary`)."""

    @classmethod
    def of(cls, recommended: pl.DataFrame) -> Recommendation:
        """The recommendation of a recommended jobs table (:func:`recommend`'s), with its per-set table."""
        return cls(jobs=recommended, sets=set_summary(recommended))

    @classmethod
    def from_tables(cls, tables: dict) -> Recommendation:
        """A recommendation read back; a missing per-set table is recomputed from the jobs."""
        return cls.of(tables["jobs"]) if tables.get("sets") is None else cls(**tables)
