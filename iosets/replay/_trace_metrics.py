"""The phase model's window metrics for a closed-loop trace replay, plus stretch, throughput and shares.

Per job, over the window [Tb, Te]: its life runs from its start (the ``jobs`` table's ``start``
when given, else its first request; compute before the first request is in no trace) to the end of
its last I/O phase; ``present`` is the part of its life inside the window, ``e_cpu`` the part of
that outside its I/O phases (compute, never slowed), ``e_iter`` the I/O phases ending inside the
window, ``T_io`` the mean I/O phase time of its alone replay, and ``e_io`` the alone I/O time of the
bytes it moved inside the window (each request moves its bytes evenly over its service on the
device, which serves one unit at a time; a job's alone seconds per byte are its alone I/O time over
its bytes). Then, as in :mod:`._metrics` with ``present`` in place of the window's width (equal for
jobs that live through the window, as a phase workload's jobs do): Utilization = sum e_cpu / sum
present, IO-slowdown = geometric mean of (present - e_cpu) / (T_io e_iter), Max Stretch = max
present / (e_cpu + e_io). Utilization bound = sum e_cpu / sum (e_cpu + e_io): the utilization had no
job ever waited (each job present only for its work); its phase-model analogue is the same sum over
the phase timeline, which for jobs alternating t_cpu and t_io through the window is the
1 - omega / N of :class:`~._metrics.PhaseMetrics` (omega = sum of the jobs' alpha_io).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ..errors import InputError

if TYPE_CHECKING:
    from ._closed import TraceReplay

TRACE_METRICS = (
    "utilization",
    "utilization_bound",
    "io_slowdown",
    "max_stretch",
    "mean_stretch",
    "p99_stretch",
    "throughput",
)
"""The scalar metrics' names, in :class:`TraceMetrics` order."""


@dataclass(frozen=True)
class TraceMetrics:
    """Window metrics of one closed-loop trace replay; None (never NaN) where undefined, with a note.

    Attributes
    ----------
    utilization, utilization_bound, io_slowdown, max_stretch : float or None
        The phase model's metrics and the utilization had no job waited (module docstring).
    mean_stretch, p99_stretch : float or None
        Mean and 99th percentile (linear) of the stretch (runtime / alone runtime, both from the
        job's start) over the jobs whose life meets the window.
    throughput : float or None
        Bytes moved inside the window / its width (B/s).
    window : tuple of float
        (Tb, Te).
    class_shares : dict
        Class -> share of the bytes moved inside the window.
    notes : dict of str to str
        Why each None metric is None.
    """

    utilization: float | None
    utilization_bound: float | None
    io_slowdown: float | None
    max_stretch: float | None
    mean_stretch: float | None
    p99_stretch: float | None
    throughput: float | None
    window: tuple[float, float]
    class_shares: dict[Any, float] = field(default_factory=dict, hash=False)
    notes: dict[str, str] = field(default_factory=dict, hash=False)

    def values(self) -> dict[str, float | None]:
        """The scalar metrics by name (:data:`TRACE_METRICS`)."""
        return {name: getattr(self, name) for name in TRACE_METRICS}

    def to_dict(self) -> dict:
        """The metrics, window, class shares (string keys) and notes as a plain dict (``--json``)."""
        shares = {str(label): share for label, share in self.class_shares.items()}
        return {**self.values(), "window": list(self.window), "class_shares": shares, "notes": dict(self.notes)}


def _window(replay: TraceReplay, window, starts: pl.DataFrame) -> tuple[float, float]:
    """The window asked for, checked, or the whole replay's span (from the earliest job start)."""
    if window is None:
        known = starts.join(replay.jobs.select("job_id"), on="job_id")["start"].drop_nulls().to_numpy()
        first = np.concatenate([replay.phases["start"].to_numpy(), known])
        ends = replay.phases["end"].to_numpy()
        return (float(first.min()), float(ends.max())) if ends.size else (0.0, 0.0)
    try:
        begin, end = (float(value) for value in window)
    except (TypeError, ValueError):
        raise InputError(f"window: expected (T_BEGIN, T_END), got {window!r}") from None
    if not begin < end or not math.isfinite(begin + end):
        raise InputError(f"window: expected finite T_BEGIN < T_END, got ({begin:g}, {end:g})")
    return begin, end


def _job_starts(jobs) -> pl.DataFrame:
    """``job_id`` and ``start`` (Float64, null: unknown) of a jobs table, checked; empty when None."""
    empty = pl.DataFrame(schema={"job_id": pl.String, "start": pl.Float64})
    if jobs is None:
        return empty
    if not isinstance(jobs, pl.DataFrame) or not {"job_id", "start"} <= set(jobs.columns):
        found = jobs.columns if isinstance(jobs, pl.DataFrame) else type(jobs).__name__
        raise InputError(f"jobs: expected a polars DataFrame with job_id and start columns, got {found}")
    try:
        starts = jobs.select(pl.col("job_id").cast(pl.String), pl.col("start").cast(pl.Float64))
    except pl.exceptions.PolarsError:
        raise InputError(f"jobs: start: expected dates in seconds, got {jobs.schema['start']}") from None
    repeated = starts.filter(pl.col("job_id").is_duplicated())
    if repeated.height:
        raise InputError(f"jobs: expected one row per job, got job_id {repeated['job_id'][0]!r} more than once")
    bad = starts.filter(pl.col("start").is_not_null() & ~pl.col("start").is_finite())
    if bad.height:
        raise InputError(f"jobs: job {bad['job_id'][0]!r}: start: expected a finite date, got {bad['start'][0]}")
    return starts


def _moved(replay: TraceReplay, windows: list[tuple[float, float]]) -> pl.DataFrame:
    """Per request: ``job_id``, ``class``, ``size`` and ``moved`` (bytes moved inside the windows), its bytes
    moving at a steady pace from the date a target began serving it to its completion."""
    frame = replay.requests
    start, stop, size = frame["served"].to_numpy(), frame["complete"].to_numpy(), frame["size"].to_numpy()
    length = stop - start

    def before(date: float) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            part = np.clip((date - start) / length, 0.0, 1.0)
        return size * np.where(length > 0, part, stop <= date)

    moved = sum((before(end) - before(begin) for begin, end in windows), np.zeros(size.size))
    return frame.select("job_id", "class", "size").with_columns(moved=moved)


def _per_job(
    replay: TraceReplay, moved: pl.DataFrame, starts: pl.DataFrame, windows: list[tuple[float, float]]
) -> pl.DataFrame:
    """Per job: present, e_cpu, e_io, e_iter, t_io and stretch from the job's start (module docstring), each
    summed over the disjoint ``windows``."""

    def inside(low: pl.Expr, high: pl.Expr) -> pl.Expr:
        """Seconds of [low, high] inside the windows."""
        parts = [
            (pl.min_horizontal(high, end) - pl.max_horizontal(low, begin)).clip(lower_bound=0.0)
            for begin, end in windows
        ]
        return pl.sum_horizontal(parts)

    phases = replay.phases.group_by("job_id").agg(
        pl.col("start").min().alias("first_io"),
        pl.col("recorded_start").min().alias("first_request"),
        pl.col("end").max().alias("life_end"),
        inside(pl.col("start"), pl.col("end")).sum().alias("io_in"),
        pl.sum_horizontal([pl.col("end").is_between(begin, end) for begin, end in windows]).sum().alias("e_iter"),
        (pl.col("end") - pl.col("start")).sum().alias("io"),
        pl.len().alias("n_phases"),
    )
    late = phases.join(starts, on="job_id").filter(pl.col("start") > pl.col("first_request"))
    if late.height:
        job, start, first = late["job_id"][0], late["start"][0], late["first_request"][0]
        raise InputError(f"jobs: job {job!r}: start: expected a date <= its first request ({first:g}), got {start:g}")
    moved_bytes = moved.group_by("job_id").agg(pl.col("size").sum().alias("bytes"), pl.col("moved").sum())
    jobs = replay.jobs.select("job_id", "runtime", "alone_runtime", "io_slowdown").join(phases, on="job_id")
    jobs = jobs.join(moved_bytes, on="job_id").join(starts, on="job_id", how="left")
    alone_io = (
        pl.when(pl.col("io_slowdown").is_finite() & (pl.col("io_slowdown") > 0))
        .then(pl.col("io") / pl.col("io_slowdown"))
        .otherwise(0.0)
    )
    life_start = pl.coalesce("start", "first_io")
    lead = pl.col("first_io") - pl.col("life_start")  # compute before the first request: no trace has it
    present = inside(pl.col("life_start"), pl.col("life_end"))
    meets = pl.any_horizontal([(pl.col("life_start") <= end) & (pl.col("life_end") >= begin) for begin, end in windows])
    return (
        jobs.with_columns(alone_io=alone_io, life_start=life_start)
        .with_columns(present=present, stretch=(pl.col("runtime") + lead) / (pl.col("alone_runtime") + lead))
        .with_columns(
            e_cpu=(pl.col("present") - pl.col("io_in")).clip(lower_bound=0.0),
            e_io=(pl.col("alone_io") * pl.col("moved") / pl.when(pl.col("bytes") > 0).then(pl.col("bytes"))).fill_null(
                0
            ),
            t_io=pl.col("alone_io") / pl.col("n_phases"),
            meets=meets,
        )
        .sort("job_id")
    )


def trace_metrics(replay: TraceReplay, *, window=None, jobs: pl.DataFrame | None = None) -> TraceMetrics:
    """The paper's Utilization, IO-slowdown and Max Stretch of a closed-loop replay, and more, over a window.

    Parameters
    ----------
    replay : TraceReplay
        A result of :func:`replay_trace`.
    window : (float, float), default=None
        (T_begin, T_end); the whole replay (first job start or phase start to last phase end) when None.
    jobs : polars.DataFrame, default=None
        The jobs' ``job_id`` and ``start`` on the trace's clock (a site trace's jobs table, whose
        ``start`` is the Darshan start; a phase workload's release dates), so that the compute
        before a job's first request counts; a job absent or with a null start starts at its first
        request, as all do when None. A start after the job's first request is refused.

    Returns
    -------
    TraceMetrics
        See the module docstring for the definitions.

    Examples
    --------
    >>> import polars as pl
    >>> from iosets.replay import Device, replay_trace
    >>> ops = pl.DataFrame({"job_id": ["a", "a"], "rank": [0, 0], "op": ["write"] * 2, "offset": [0, 10**6],
    ...     "size": [10**6] * 2, "start": [0.0, 6.0], "end": [1.0, 7.0], "file": ["f"] * 2, "phase": [0, 1],
    ...     "synthetic": [False] * 2})
    >>> m = trace_metrics(replay_trace(ops, device=Device(bandwidth=1e6, overhead=0, seek=0)))
    >>> m.utilization, m.io_slowdown, m.max_stretch
    (0.7142857142857143, 1.0, 1.0)
    """
    starts = _job_starts(jobs)
    begin, end = _window(replay, window, starts)
    if not end > begin:
        notes = {name: f"the window [{begin:g}, {end:g}] has no width" for name in TRACE_METRICS}
        return TraceMetrics(None, None, None, None, None, None, None, (begin, end), notes=notes)
    return _metrics(replay, [(begin, end)], starts, f"the window [{begin:g}, {end:g}]")


def busy_metrics(replay: TraceReplay, periods, *, jobs: pl.DataFrame | None = None) -> TraceMetrics:
    """The metrics of :func:`trace_metrics` summed over several disjoint windows (the busy periods).

    Every per-job quantity (present, compute, I/O phases ending, bytes moved) is summed over the periods, then
    the metrics are formed as over one window; the throughput is the bytes moved in them over their summed
    width; the stretches are those of the jobs whose life meets a period.

    Parameters
    ----------
    replay : TraceReplay
        A result of :func:`replay_trace`.
    periods : sequence of (float, float)
        Disjoint windows (begin < end), in date order.
    jobs : polars.DataFrame, default=None
        As for :func:`trace_metrics`.

    Returns
    -------
    TraceMetrics
        ``window``: from the first period's start to the last's end; every metric None when no period is given.

    Examples
    --------
    >>> import polars as pl
    >>> from iosets.replay import Device, replay_trace
    >>> ops = pl.DataFrame({"job_id": ["a", "a"], "rank": [0, 0], "op": ["write"] * 2, "offset": [0, 10**6],
    ...     "size": [10**6] * 2, "start": [0.0, 6.0], "end": [1.0, 7.0], "file": ["f"] * 2, "phase": [0, 1],
    ...     "synthetic": [False] * 2})
    >>> m = busy_metrics(replay_trace(ops, device=Device(bandwidth=1e6, overhead=0, seek=0)), [(0.0, 1.0), (6.0, 7.0)])
    >>> m.utilization, m.throughput
    (0.0, 1000000.0)
    """
    windows = [(float(begin), float(end)) for begin, end in periods]
    if any(not end > begin for begin, end in windows) or any(
        later[0] < earlier[1] for earlier, later in zip(windows, windows[1:], strict=False)
    ):
        raise InputError(f"periods: expected disjoint (begin, end) with begin < end in date order, got {windows}")
    starts = _job_starts(jobs)
    if not windows:
        notes = dict.fromkeys(TRACE_METRICS, "no busy period")
        return TraceMetrics(None, None, None, None, None, None, None, (0.0, 0.0), notes=notes)
    return _metrics(replay, windows, starts, f"the {len(windows)} busy periods")


def _metrics(replay: TraceReplay, windows: list[tuple[float, float]], starts: pl.DataFrame, span: str) -> TraceMetrics:
    """The metrics over ``windows`` (disjoint, each of some width); ``span`` names them in the notes."""
    width = sum(end - begin for begin, end in windows)
    notes: dict[str, str] = {}
    moved = _moved(replay, windows)
    per_job = _per_job(replay, moved, starts, windows)
    work = per_job.filter((pl.col("e_cpu") + pl.col("e_io")) > 0)
    utilization = utilization_bound = max_stretch = None
    if work.height:
        compute = per_job["e_cpu"].to_numpy().sum()
        utilization = float(compute / per_job["present"].to_numpy().sum())
        utilization_bound = float(compute / (work["e_cpu"] + work["e_io"]).to_numpy().sum())
        max_stretch = float((work["present"] / (work["e_cpu"] + work["e_io"])).to_numpy().max())
    else:
        why = f"no job did any work inside {span}"
        notes |= {"utilization": why, "utilization_bound": why, "max_stretch": why}
    counted = per_job.filter((pl.col("e_iter") > 0) & (pl.col("t_io") > 0))
    io_slowdown = None
    if counted.height:
        ratios = ((counted["present"] - counted["e_cpu"]) / (counted["t_io"] * counted["e_iter"])).to_numpy()
        with np.errstate(divide="ignore"):
            io_slowdown = float(np.exp(np.log(ratios).mean()))
    else:
        notes["io_slowdown"] = f"no job completed an I/O phase inside {span}"
    stretches = per_job.filter(pl.col("meets") & pl.col("stretch").is_finite())["stretch"].to_numpy()
    mean_stretch = p99_stretch = None
    if stretches.size:
        mean_stretch, p99_stretch = float(stretches.mean()), float(np.quantile(stretches, 0.99))
    else:
        notes["mean_stretch"] = notes["p99_stretch"] = f"no job with a finite stretch meets {span}"
    total = float(moved["moved"].sum())
    shares: dict[Any, float] = {}
    if total > 0:
        by_class = moved.group_by("class").agg(pl.col("moved").sum()).sort("class")
        shares = {label: value / total for label, value in by_class.iter_rows()}
    else:
        notes["class_shares"] = f"no byte moved inside {span}"
    return TraceMetrics(
        utilization=utilization,
        utilization_bound=utilization_bound,
        io_slowdown=io_slowdown,
        max_stretch=max_stretch,
        mean_stretch=mean_stretch,
        p99_stretch=p99_stretch,
        throughput=total / width,
        window=(windows[0][0], windows[-1][1]),
        class_shares=shares,
        notes=notes,
    )
