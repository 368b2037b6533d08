"""Replay a site trace under several policies, classes and parameters taken from a recommendation table."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import polars as pl

from .._validation import check_choice
from ..errors import InputError
from ..schemas import RECOMMENDATION
from ._closed import TraceReplay, replay_trace
from ._device import Device
from ._requests import SCHEDULERS
from ._trace_metrics import TRACE_METRICS, trace_metrics

SET_POLICIES = ("iosets-wfq", "rbfq")
"""Policies that get one class per set of the recommendation; the others get one class per job, equal weights."""

JOB_COLUMNS = ("job_id", "policy", "recorded_runtime", "runtime", "alone_runtime", "stretch", "io_slowdown", "wait")
"""Columns of the per-job frame (:data:`iosets.schemas.TRACE_REPLAY_JOBS`)."""

_REC_COLUMNS = ("job_id", "set", "priority", "wfq_weight", "rbfq_reservation", "rbfq_weight", "rbfq_limit")


def _job_sets(site_ops: pl.DataFrame, rec: pl.DataFrame) -> tuple[dict[str, int], pl.DataFrame]:
    """Each trace job's set (missing jobs: the recommendation's largest set, with a warning) and the per-set table.

    Per set: ``wfq_weight``, ``rbfq_weight`` and ``rbfq_reservation`` are its largest job's (one job of a
    set does I/O at a time), ``rbfq_limit`` its largest (0: none).
    """
    missing = [name for name in _REC_COLUMNS if name not in rec.columns]
    if missing:
        raise InputError(f"recommendation: missing column(s) {', '.join(missing)}; expected {', '.join(_REC_COLUMNS)}")
    filled = rec if "conservative" in rec.columns else rec.with_columns(conservative=pl.lit(False))
    rec = RECOMMENDATION.validate(filled.select(*_REC_COLUMNS, "conservative"), source="recommendation")
    rec = rec.with_columns(pl.col("job_id").cast(pl.String))
    if rec.height == 0:
        raise InputError("recommendation: no job")
    duplicated = rec.filter(pl.col("job_id").is_duplicated())["job_id"].unique().sort().to_list()
    if duplicated:
        raise InputError(f"recommendation: job_id {duplicated[0]!r} appears more than once")
    sets = dict(zip(rec["job_id"].to_list(), rec["set"].to_list(), strict=True))
    conservative = int(rec["set"].max())  # type: ignore[arg-type]
    absent = sorted(set(site_ops["job_id"].unique().to_list()) - set(sets))
    if absent:
        shown = ", ".join(absent[:5]) + (", ..." if len(absent) > 5 else "")
        warnings.warn(
            f"{len(absent)} job(s) of the site trace not in the recommendation go to its conservative set "
            f"{conservative}: {shown}",
            stacklevel=3,
        )
    per_set = rec.group_by("set").agg(
        pl.col("wfq_weight").max(),
        pl.col("rbfq_weight").max(),
        pl.col("rbfq_reservation").fill_null(0.0).max(),
        pl.col("rbfq_limit").fill_null(0.0).max(),
    )
    return {job: sets.get(job, conservative) for job in site_ops["job_id"].unique().to_list()}, per_set.sort("set")


def _replay(site_ops, policy: str, job_sets: dict[str, int], per_set: pl.DataFrame, device) -> TraceReplay:
    """One policy's closed-loop replay with its classes and per-class parameters."""
    if policy not in SET_POLICIES:
        return replay_trace(site_ops, scheduler=policy, device=device)
    column = dict(zip(per_set["set"].to_list(), per_set.iter_rows(named=True), strict=True))
    used = set(job_sets.values())

    def of(name: str) -> dict[int, float]:
        return {key: float(row[name]) for key, row in column.items() if key in used}

    if policy == "iosets-wfq":
        return replay_trace(site_ops, scheduler=policy, classes=job_sets, weights=of("wfq_weight"), device=device)
    return replay_trace(
        site_ops,
        scheduler=policy,
        classes=job_sets,
        weights=of("rbfq_weight"),
        reservations=of("rbfq_reservation"),
        limits=of("rbfq_limit"),
        device=device,
    )


def _set_shares(shares: dict, policy: str, job_sets: dict[str, int]) -> dict[int, float]:
    """Class byte shares as per-set shares (a per-job class counts for its job's set)."""
    per_set: dict[int, float] = {}
    for label, share in shares.items():
        key = int(label) if policy in SET_POLICIES else job_sets[label]
        per_set[key] = per_set.get(key, 0.0) + share
    return per_set


def compare_policies(
    site_ops: pl.DataFrame,
    rec: pl.DataFrame,
    policies: Sequence[str],
    *,
    device: Device | None = None,
    window: tuple[float, float] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Replay a site trace in a closed loop under each policy and predict each job's and the platform's metrics.

    ``iosets-wfq`` and ``rbfq`` get one class per set of ``rec`` with the set's WFQ weight or RBFQ
    weight, reservation and limit (its largest job's); every other scheduler gets one class per job
    with equal weights. Jobs of the trace missing from ``rec`` go to its largest (conservative) set,
    with a warning; a metric that cannot be computed is null, with a warning saying why.

    Parameters
    ----------
    site_ops : polars.DataFrame
        A site trace (:data:`iosets.schemas.SITE_OPS`) with every request's ``end``.
    rec : polars.DataFrame
        A recommendation (``iosets recommend -o``): ``job_id``, ``set``, ``priority``, ``wfq_weight``,
        ``rbfq_reservation``, ``rbfq_weight``, ``rbfq_limit``.
    policies : sequence of str
        Schedulers of :data:`SCHEDULERS`, each replayed once.
    device : Device, default=None
        Device model; ``Device()`` when None.
    window : (float, float), default=None
        Window of the policy metrics; each replay's whole span when None.

    Returns
    -------
    per_policy : polars.DataFrame
        One row per policy: ``policy``, ``utilization``, ``io_slowdown``, ``max_stretch``,
        ``mean_stretch``, ``p99_stretch``, ``throughput`` (B/s), then ``share_set_<s>`` per set: its
        share of the bytes moved in the window.
    per_job : polars.DataFrame
        :data:`iosets.schemas.TRACE_REPLAY_JOBS`: one row per job and policy.

    Examples
    --------
    >>> ops = pl.DataFrame({"job_id": ["a", "b"], "rank": [0, 0], "op": ["write"] * 2, "offset": [0, 0],
    ...     "size": [10**6] * 2, "start": [0.0, 0.0], "end": [1.0, 1.0], "file": ["f", "g"], "phase": [0, 0],
    ...     "synthetic": [False] * 2})
    >>> rec = pl.DataFrame({"job_id": ["a", "b"], "set": [0, 0], "priority": [1.0] * 2, "wfq_weight": [1] * 2,
    ...     "rbfq_reservation": [None] * 2, "rbfq_weight": [1.0] * 2, "rbfq_limit": [None] * 2})
    >>> per_policy, per_job = compare_policies(ops, rec, ["fcfs"], device=Device(bandwidth=1e6, overhead=0, seek=0))
    >>> per_job["runtime"].to_list()
    [1.0, 2.0]
    """
    if isinstance(policies, str) or not policies:
        raise InputError(f"policies: expected a non-empty list of schedulers, got {policies!r}")
    for policy in policies:
        check_choice(policy, "policy", SCHEDULERS)
    if len(set(policies)) != len(policies):
        raise InputError(f"policies: each policy once, got {', '.join(policies)}")
    if not isinstance(site_ops, pl.DataFrame) or "job_id" not in site_ops.columns:
        raise InputError("site ops: expected a polars DataFrame with a job_id column")
    job_sets, per_set = _job_sets(site_ops, rec)
    rows, frames = [], []
    for policy in policies:
        result = _replay(site_ops, policy, job_sets, per_set, device)
        metrics = trace_metrics(result, window=window)
        for name, why in metrics.notes.items():
            warnings.warn(f"{policy}: {name}: {why}", stacklevel=2)
        shares = _set_shares(metrics.class_shares, policy, job_sets)
        sets = sorted(set(job_sets.values()))
        rows.append({"policy": policy, **metrics.values(), **{f"share_set_{s}": shares.get(s, 0.0) for s in sets}})
        frames.append(result.jobs.with_columns(policy=pl.lit(policy)).select(JOB_COLUMNS))
    return pl.DataFrame(rows, schema_overrides=dict.fromkeys(TRACE_METRICS, pl.Float64)), pl.concat(frames)
