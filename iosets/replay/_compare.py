"""Replay a site trace under several schedulers, classes and parameters taken from a recommendation table."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from .._results import Part, Tables
from .._validation import check_choice
from ..errors import InputError
from ..schemas import (
    RECOMMENDATION,
    TRACE_REPLAY_JOBS,
    TRACE_REPLAY_PHASES,
    TRACE_REPLAY_SCHEDULERS,
    TRACE_REPLAY_SHARES,
)
from ._closed import TraceReplay, replay_trace
from ._device import Device
from ._model_check import ModelCheck, model_check
from ._periods import busy_periods
from ._requests import SCHEDULERS
from ._trace_metrics import TRACE_METRICS, TraceMetrics, busy_metrics, trace_metrics

SET_SCHEDULERS = ("iosets-wfq", "rbfq")
"""Schedulers that get one class per set of the recommendation; the others get one class per job, equal weights."""

_REC_COLUMNS = ("job_id", "set", "priority", "wfq_weight", "rbfq_reservation", "rbfq_weight", "rbfq_limit")


@dataclass(frozen=True)
class SchedulerComparison(Tables):
    """Result of :func:`compare_schedulers`: four tables, each in scheduler order.

    ``write(path)`` writes the per-job table at ``path`` and the others beside it as ``<stem>.phases<suffix>``,
    ``<stem>.schedulers<suffix>`` and ``<stem>.shares<suffix>``; ``read(path)`` reads them back.

    Attributes
    ----------
    schedulers : polars.DataFrame
        :data:`iosets.schemas.TRACE_REPLAY_SCHEDULERS`: one row per scheduler, ``scheduler``, every name of
        :data:`TRACE_METRICS` (null where the window cannot give it), ``window_start``, ``window_end``.
    jobs : polars.DataFrame
        :data:`iosets.schemas.TRACE_REPLAY_JOBS`: one row per job and scheduler.
    phases : polars.DataFrame
        :data:`iosets.schemas.TRACE_REPLAY_PHASES`: one row per I/O phase and scheduler, with the date it
        became ready, the date the device began serving it and its last completion.
    shares : polars.DataFrame
        :data:`iosets.schemas.TRACE_REPLAY_SHARES`: one row per scheduler and set of the trace's jobs, the
        bytes the set moved inside the window and their share.
    """

    PARTS = (
        Part("jobs", TRACE_REPLAY_JOBS, "per-job predictions"),
        Part("phases", TRACE_REPLAY_PHASES, "per-phase replay"),
        Part("schedulers", TRACE_REPLAY_SCHEDULERS, "per-scheduler metrics"),
        Part("shares", TRACE_REPLAY_SHARES, "per-set shares"),
    )

    schedulers: pl.DataFrame
    jobs: pl.DataFrame
    phases: pl.DataFrame
    shares: pl.DataFrame

    @property
    def model_check(self) -> ModelCheck:
        """Each job replayed alone against its recorded runtime (:func:`model_check`).

        The alone replay is the same under every scheduler (fcfs, each job on its own device): the first
        scheduler's rows are checked.
        """
        first = self.jobs["scheduler"].first() if self.jobs.height else None
        return model_check(self.jobs.filter(pl.col("scheduler") == first))


def _job_sets(
    site_requests: pl.DataFrame, rec: pl.DataFrame, *, what: str = "site trace"
) -> tuple[dict[str, int], dict[str, int], pl.DataFrame]:
    """Each trace job's set (missing jobs: the recommendation's largest set, with a warning naming ``what``
    holds them), the sets the recommendation gives (trace jobs it holds only) and the per-set table.

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
    absent = sorted(set(site_requests["job_id"].unique().to_list()) - set(sets))
    if absent:
        shown = ", ".join(absent[:5]) + (", ..." if len(absent) > 5 else "")
        warnings.warn(
            f"{len(absent)} job(s) of the {what} not in the recommendation go to its conservative set "
            f"{conservative}: {shown}",
            stacklevel=3,
        )
    per_set = rec.group_by("set").agg(
        pl.col("wfq_weight").max(),
        pl.col("rbfq_weight").max(),
        pl.col("rbfq_reservation").fill_null(0.0).max(),
        pl.col("rbfq_limit").fill_null(0.0).max(),
    )
    trace_jobs = site_requests["job_id"].unique().to_list()
    rec_sets = {job: sets[job] for job in trace_jobs if job in sets}
    return {job: sets.get(job, conservative) for job in trace_jobs}, rec_sets, per_set.sort("set")


def _replay(
    site_requests, scheduler: str, job_sets: dict[str, int], per_set: pl.DataFrame, device, layout
) -> TraceReplay:
    """One scheduler's closed-loop replay with its classes and per-class parameters."""
    if scheduler not in SET_SCHEDULERS:
        return replay_trace(site_requests, scheduler=scheduler, device=device, layout=layout)
    column = dict(zip(per_set["set"].to_list(), per_set.iter_rows(named=True), strict=True))
    used = set(job_sets.values())

    def of(name: str) -> dict[int, float]:
        return {key: float(row[name]) for key, row in column.items() if key in used}

    if scheduler == "iosets-wfq":
        return replay_trace(
            site_requests,
            scheduler=scheduler,
            classes=job_sets,
            weights=of("wfq_weight"),
            device=device,
            layout=layout,
        )
    return replay_trace(
        site_requests,
        scheduler=scheduler,
        classes=job_sets,
        weights=of("rbfq_weight"),
        reservations=of("rbfq_reservation"),
        limits=of("rbfq_limit"),
        device=device,
        layout=layout,
    )


def _phases(result: TraceReplay, scheduler: str, rec_sets: dict[str, int]) -> pl.DataFrame:
    """Per phase of one replay (:data:`TRACE_REPLAY_PHASES`): its class, set, bytes and dates.

    The engine opens a phase at its ``ready`` date (the replay's phase ``start``); the table's ``start`` is
    the date a target began serving the phase's first request.
    """
    requests = result.requests.group_by("job_id", "phase").agg(
        pl.col("class").first().cast(pl.String),
        pl.col("size").sum().round(0).cast(pl.Int64).alias("bytes"),
        pl.col("served").min(),
    )
    sets = pl.DataFrame(
        {"job_id": list(rec_sets), "set": list(rec_sets.values())}, schema={"job_id": pl.String, "set": pl.Int64}
    )
    return (
        result.phases.join(requests, on=["job_id", "phase"], how="left")
        .join(sets, on="job_id", how="left")
        .sort("job_id", "phase")
        .select(
            "job_id",
            pl.lit(scheduler).alias("scheduler"),
            "phase",
            "class",
            "set",
            "bytes",
            "recorded_start",
            "recorded_end",
            pl.col("start").alias("ready"),
            pl.col("served").alias("start"),
            "end",
        )
    )


def _shares(metrics: TraceMetrics, scheduler: str, job_sets: dict[str, int]) -> pl.DataFrame:
    """Per set of the trace's jobs (:data:`TRACE_REPLAY_SHARES`): bytes moved inside the window and their share.

    A per-job class counts for its job's set; shares are null when no byte moved.
    """
    summed = dict.fromkeys(sorted(set(job_sets.values())), 0.0)
    for label, share in metrics.class_shares.items():
        summed[int(label) if scheduler in SET_SCHEDULERS else job_sets[label]] += share
    total = sum(summed.values())  # 1 up to rounding: dividing by it keeps every share within [0, 1]
    begin, end = metrics.window
    moved = (metrics.throughput or 0.0) * (end - begin)
    return pl.DataFrame(
        {
            "scheduler": scheduler,
            "set": list(summed),
            "bytes": [share * moved for share in summed.values()],
            "share": [share / total if total > 0 else None for share in summed.values()],
        },
        schema=TRACE_REPLAY_SHARES.polars,
    )


def recorded_busy_periods(site_requests: pl.DataFrame, site_jobs: pl.DataFrame | None) -> list[tuple[float, float]]:
    """The busy periods of a site trace as recorded, the same for every scheduler replayed: where at least two
    jobs run, each job from its start (the jobs table's, else its first request's) to its last request's end.

    Examples
    --------
    >>> ops = pl.DataFrame({"job_id": ["a", "b", "c"], "start": [0.0, 0.5, 9.0], "end": [1.0, 1.5, 10.0]})
    >>> recorded_busy_periods(ops, pl.DataFrame({"job_id": ["c"], "start": [0.8]}))
    [(0.5, 1.5)]
    """
    lives = site_requests.group_by("job_id").agg(pl.col("start").min().alias("first"), pl.col("end").max())
    lives = lives.with_columns(pl.col("job_id").cast(pl.String))
    if site_jobs is not None and {"job_id", "start"} <= set(site_jobs.columns):
        known = site_jobs.select(pl.col("job_id").cast(pl.String), pl.col("start").cast(pl.Float64))
        lives = lives.join(known, on="job_id", how="left").with_columns(start=pl.coalesce("start", "first"))
    else:
        lives = lives.with_columns(start=pl.col("first"))
    periods = busy_periods(lives["start"].to_numpy(), lives["end"].to_numpy())
    return [(float(low), float(high)) for low, high in periods.select("start", "end").iter_rows()]


def compare_schedulers(
    site_requests: pl.DataFrame,
    rec: pl.DataFrame,
    schedulers: Sequence[str],
    *,
    device: Device | None = None,
    window: tuple[float, float] | None = None,
    site_jobs: pl.DataFrame | None = None,
    layout: pl.DataFrame | None = None,
) -> SchedulerComparison:
    """Replay a site trace in a closed loop under each scheduler and predict each job's and the platform's metrics.

    ``iosets-wfq`` and ``rbfq`` get one class per set of ``rec`` with the set's WFQ weight or RBFQ
    weight, reservation and limit (its largest job's); every other scheduler gets one class per job
    with equal weights. Jobs of the trace missing from ``rec`` go to its largest (conservative) set,
    with a warning; a metric that cannot be computed is null, with a warning saying why.

    Parameters
    ----------
    site_requests : polars.DataFrame
        A site trace (:data:`iosets.schemas.SITE_REQUESTS`) with every request's ``end``.
    rec : polars.DataFrame
        A recommendation (``iosets recommend -o``): ``job_id``, ``set``, ``priority``, ``wfq_weight``,
        ``rbfq_reservation``, ``rbfq_weight``, ``rbfq_limit``.
    schedulers : sequence of str
        Schedulers of :data:`SCHEDULERS`, each replayed once.
    device : Device, default=None
        Device model; ``Device()`` when None, with a warning: a default device predicts nothing about a
        site's storage (fit one with :func:`calibrate`).
    window : (float, float), default=None
        Window of the scheduler metrics; each replay's whole span when None.
    site_jobs : polars.DataFrame, default=None
        The jobs' ``job_id`` and ``start`` (the site trace's jobs table, written beside it by
        ``iosets ingest --site``), so that a job's compute before its first request counts in the
        metrics (:func:`trace_metrics`); without it a job starts at its first request.
    layout : polars.DataFrame, default=None
        Files' striping over the device's targets (:data:`LAYOUT`), as :func:`replay_trace` takes it.

    Returns
    -------
    SchedulerComparison
        Per scheduler (window metrics), per job and scheduler, per phase and scheduler, and per scheduler and set
        (bytes moved in the window and their share), each validated by its schema; its ``model_check`` says
        how far each job's replayed-alone runtime is from its recorded one.

    Examples
    --------
    >>> ops = pl.DataFrame({"job_id": ["a", "b"], "rank": [0, 0], "op": ["write"] * 2, "offset": [0, 0],
    ...     "size": [10**6] * 2, "start": [0.0, 0.0], "end": [1.0, 1.0], "file": ["f", "g"], "phase": [0, 0],
    ...     "synthetic": [False] * 2})
    >>> rec = pl.DataFrame({"job_id": ["a", "b"], "set": [0, 0], "priority": [1.0] * 2, "wfq_weight": [1] * 2,
    ...     "rbfq_reservation": [None] * 2, "rbfq_weight": [1.0] * 2, "rbfq_limit": [None] * 2})
    >>> got = compare_schedulers(ops, rec, ["fcfs"], device=Device(bandwidth=1e6, overhead=0, seek=0))
    >>> got.jobs["runtime"].to_list(), got.phases["ready"].to_list(), got.phases["start"].to_list()
    ([1.0, 2.0], [0.0, 0.0], [0.0, 1.0])
    >>> got.shares["share"].to_list()
    [1.0]
    """
    if isinstance(schedulers, str) or not schedulers:
        raise InputError(f"schedulers: expected a non-empty list of schedulers, got {schedulers!r}")
    for scheduler in schedulers:
        check_choice(scheduler, "scheduler", SCHEDULERS)
    if len(set(schedulers)) != len(schedulers):
        raise InputError(f"schedulers: each scheduler once, got {', '.join(schedulers)}")
    if not isinstance(site_requests, pl.DataFrame) or "job_id" not in site_requests.columns:
        raise InputError("site ops: expected a polars DataFrame with a job_id column")
    job_sets, rec_sets, per_set = _job_sets(site_requests, rec)
    if device is None:
        warnings.warn(
            "no device given: replaying on the default Device(), which knows nothing of this site's storage; "
            "fit one on the trace with iosets.replay.calibrate(site_requests)",
            UserWarning,
            stacklevel=2,
        )
    scheduler_rows, jobs, phases, shares = [], [], [], []
    periods = recorded_busy_periods(site_requests, site_jobs)
    for scheduler in schedulers:
        result = _replay(site_requests, scheduler, job_sets, per_set, device, layout)
        metrics = trace_metrics(result, window=window, jobs=site_jobs)
        for name, why in metrics.notes.items():
            warnings.warn(f"{scheduler}: {name}: {why}", stacklevel=2)
        begin, end = metrics.window
        busy = busy_metrics(result, periods, jobs=site_jobs).values()
        scheduler_rows.append(
            {
                "scheduler": scheduler,
                **metrics.values(),
                "window_start": begin,
                "window_end": end,
                "busy_periods": len(periods),
                "busy_seconds": sum(high - low for low, high in periods),
                **{f"busy_{name}": value for name, value in busy.items()},
            }
        )
        jobs.append(result.jobs.with_columns(scheduler=pl.lit(scheduler)).select(TRACE_REPLAY_JOBS.names))
        phases.append(_phases(result, scheduler, rec_sets))
        shares.append(_shares(metrics, scheduler, job_sets))
    floats = [*TRACE_METRICS, "busy_seconds", *(f"busy_{name}" for name in TRACE_METRICS)]
    per_scheduler = pl.DataFrame(scheduler_rows, schema_overrides=dict.fromkeys(floats, pl.Float64))
    return SchedulerComparison(
        schedulers=TRACE_REPLAY_SCHEDULERS.validate(per_scheduler, source="per-scheduler metrics"),
        jobs=TRACE_REPLAY_JOBS.validate(pl.concat(jobs), source="per-job predictions"),
        phases=TRACE_REPLAY_PHASES.validate(pl.concat(phases), source="per-phase replay"),
        shares=TRACE_REPLAY_SHARES.validate(pl.concat(shares), source="per-set shares"),
    )
