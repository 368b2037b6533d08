"""`recommend`: a jobs table in, the same table with sets, priorities and enforcement parameters out."""

import re

import numpy as np
import polars as pl

from .._validation import check_positive
from ..errors import InputError
from ._enforcement import rbfq_reservations, wfq_weights
from ._mappings import cluster_sets, map_sets, set_priorities

MAPPINGS = ("set-10", "set-b", "gmm")
"""Set mappings: SET-10, SET-b (``base=`` or ``set-<b>``, e.g. ``set-2``), Gaussian mixture over log w_iter."""

RECOMMENDATION_COLUMNS = {
    "set": pl.Int64,
    "priority": pl.Float64,
    "conservative": pl.Boolean,
    "wfq_weight": pl.Int64,
    "rbfq_reservation": pl.Float64,
    "rbfq_weight": pl.Float64,
    "rbfq_limit": pl.Float64,
}
"""Columns that :func:`recommend` adds to (or replaces in) the jobs table."""

_SET_B = re.compile(r"set-(\d+(?:\.\d+)?)")


def mapping_base(policy: str, base: float) -> float | None:
    """The base of a SET-b mapping name (``set-10``, ``set-b`` with ``base``, ``set-2``...), None for ``gmm``."""
    if policy == "gmm":
        return None
    if policy == "set-b":
        return float(base)
    match = _SET_B.fullmatch(policy)
    if match is None:
        raise InputError(f"unknown policy {policy!r}; expected one of {', '.join(MAPPINGS)} or set-<base>")
    return float(match.group(1))


def _column(jobs: pl.DataFrame, name: str) -> np.ndarray | None:
    """A numeric column as float64 with NaN for nulls, None when absent."""
    return jobs[name].cast(pl.Float64).fill_null(np.nan).to_numpy() if name in jobs.columns else None


def _confident(jobs: pl.DataFrame, min_confidence: float) -> np.ndarray:
    """Rows whose w_iter is usable: present, > 0 and with a confidence >= ``min_confidence``."""
    ok = _column(jobs, "w_iter") > 0
    if "w_iter_confidence" in jobs.columns:
        conf = jobs["w_iter_confidence"].cast(pl.Float64).fill_null(0.0).to_numpy()
        ok &= conf >= min_confidence
    return ok


def assign_sets(
    jobs: pl.DataFrame,
    policy: str = "set-10",
    *,
    base: float = 10.0,
    min_confidence: float = 0.5,
    conservative_set: int | None = None,
    max_sets: int = 8,
    random_state: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sets, priorities and the conservative flag of each job (see :func:`recommend`)."""
    if "w_iter" not in jobs.columns:
        raise InputError("jobs table has no 'w_iter' column (run `iosets analyze` first)")
    set_base = mapping_base(policy, base)
    ok = _confident(jobs, min_confidence)
    w = jobs["w_iter"].cast(pl.Float64).to_numpy()[ok]
    sets = np.zeros(jobs.height, np.int64)
    if set_base is None:
        known, priority_of = cluster_sets(w, max_sets=max_sets, random_state=random_state)
    else:
        known = map_sets(w, base=set_base)
    sets[ok] = known
    if set_base is None:
        # one more set below the clusters, a decade below the lowest one
        priority_of = np.append(priority_of, priority_of[-1] / 10 if priority_of.size else 1.0)
    if conservative_set is None:
        conservative_set = int(known.max()) + 1 if known.size else 0
    elif set_base is None and not 0 <= conservative_set < priority_of.size:
        raise InputError(f"conservative_set {conservative_set} must lie in 0..{priority_of.size - 1} (gmm sets)")
    sets[~ok] = conservative_set
    priority = priority_of[sets] if set_base is None else set_priorities(sets, base=set_base)
    return sets, priority, ~ok


def recommend(
    jobs: pl.DataFrame,
    policy: str = "set-10",
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
) -> pl.DataFrame:
    """Fill in a jobs table's sets, priorities and enforcement parameters.

    Parameters
    ----------
    jobs : polars.DataFrame
        Jobs table (DESIGN.md) with at least ``w_iter``; ``w_iter_confidence`` and
        ``alpha_io`` are used when present.
    policy : str, default="set-10"
        ``set-10`` (set round(log10 w_iter), priority 10^-set, seed 004 section IV-C),
        ``set-b`` with ``base`` (or ``set-<b>``, e.g. ``set-2``), or ``gmm`` (a Gaussian
        mixture over log10 w_iter whose number of sets minimises BIC).
    min_confidence : float, default=0.5
        Jobs with no ``w_iter`` or a confidence below this go to the conservative set.
    conservative_set : int, default=None
        Set for those jobs (seed 004 section VII-B: "temporarily map the application to a
        low-priority set"); by default one set below the lowest-priority set of the
        confidently mapped jobs, so that unknown jobs never slow down known ones.
    max_sets : int, default=8
        Largest number of sets the ``gmm`` mapping may choose.
    bandwidth : float, default=None
        File system bandwidth (bytes/s); needed for RBFQ reservations and limits.
    max_request : int, default=1 MiB
        Largest request size: the WFQ weight (bytes per round) of the lowest-priority set.
    safety : float, default=1.5
        RBFQ reservation = safety x alpha_io x bandwidth per job, scaled down when the
        jobs running at the same time (``start``/``end`` columns when present, else all
        jobs) would reserve more than ``bandwidth``.
    limit : float, default=None
        RBFQ upper bound per job as a fraction of ``bandwidth`` (None: no limit).

    Returns
    -------
    polars.DataFrame
        ``jobs`` with the columns of :data:`RECOMMENDATION_COLUMNS`; ``rbfq_weight`` is the
        priority relative to the lowest one, ``rbfq_reservation`` and ``rbfq_limit`` are
        bytes/s (null without ``bandwidth``, or without a limit).

    Examples
    --------
    >>> jobs = pl.DataFrame({"job_id": ["a", "b", "c"], "w_iter": [8.0, 95.0, None], "alpha_io": [0.25, 0.125, None]})
    >>> recommend(jobs, bandwidth=1e9).select("set", "priority", "wfq_weight", "rbfq_reservation").rows()
    [(1, 0.1, 104857600, 375000000.0), (2, 0.01, 10485760, 187500000.0), (3, 0.001, 1048576, 0.0)]
    """
    sets, priority, conservative = assign_sets(
        jobs,
        policy,
        base=base,
        min_confidence=min_confidence,
        conservative_set=conservative_set,
        max_sets=max_sets,
        random_state=random_state,
    )
    relative = priority / priority.min() if priority.size else priority
    reservation = limit_rate = np.full(jobs.height, np.nan)
    if bandwidth is not None:
        alpha = _column(jobs, "alpha_io")
        if alpha is None:
            raise InputError("RBFQ reservations need an 'alpha_io' column in the jobs table")
        dates = [_column(jobs, name) for name in ("start", "end")]
        reservation = rbfq_reservations(alpha, bandwidth=bandwidth, safety=safety, start=dates[0], end=dates[1])
        if limit is not None:
            limit_rate = np.full(jobs.height, check_positive(limit, "limit") * bandwidth)
    columns = {
        "set": sets,
        "priority": priority,
        "conservative": conservative,
        "wfq_weight": wfq_weights(priority, max_request=max_request),
        "rbfq_reservation": reservation,
        "rbfq_weight": relative,
        "rbfq_limit": limit_rate,
    }
    series = (
        pl.Series(name, value, dtype=RECOMMENDATION_COLUMNS[name], nan_to_null=True) for name, value in columns.items()
    )
    return jobs.with_columns(series)


def set_summary(recommended: pl.DataFrame) -> pl.DataFrame:
    """One row per set: priority, job count, w_iter range, WFQ weight and the set's RBFQ parameters.

    A set's reservation is the sum of its jobs' reservations (their average demands add
    up: the set's jobs take turns doing I/O); its limit is the per-job limit.
    """
    missing = [name for name in RECOMMENDATION_COLUMNS if name not in recommended.columns]
    if missing:
        raise InputError(f"not a recommendation: missing column(s) {', '.join(missing)} (run recommend first)")
    return (
        recommended.group_by("set")
        .agg(
            pl.col("priority").first(),
            pl.len().alias("n_jobs"),
            pl.col("w_iter").min().alias("w_iter_min"),
            pl.col("w_iter").max().alias("w_iter_max"),
            pl.col("wfq_weight").first(),
            pl.col("rbfq_weight").first(),
            pl.when(pl.col("rbfq_reservation").is_null().all())
            .then(None)
            .otherwise(pl.col("rbfq_reservation").sum())
            .alias("rbfq_reservation"),
            pl.col("rbfq_limit").first(),
        )
        .sort("set")
    )
