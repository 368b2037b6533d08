"""Closed-loop trace replay: a site's jobs as chains of phases and requests, in one C call.

A job is a chain of I/O phases: phase k opens at the replayed end of phase k - 1 plus
the compute gap the job showed between them (phase 0 at the job's first recorded
request), and ends when its last request completes. Inside a phase each rank issues its
requests in recorded order with at most d outstanding (d: the rank's largest number of
overlapping requests in that phase, at least 1): request i is released by the completion
of the rank's request i - d (the first d by the phase's opening) plus its recorded think
time. Compute is never slowed. Requests with a null phase are one-request phases.

On a device of several targets, or with striping (a stripe count above 1, a ``layout``),
each request is split at stripe boundaries into one part per target it touches
(:mod:`._striping`): its parts are released together, each goes to its target, and the
request completes when its last part does. With a client bandwidth, a job's parts leave
its nodes no faster than client_bandwidth x its nodes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from .._validation import check_choice
from ..errors import InputError
from ..schemas import SITE_REQUESTS
from . import _engine
from ._device import Device
from ._model_check import alone_ratio
from ._requests import SCHEDULERS, _per_class, _scheduler_params
from ._striping import StreamLayouts, split_requests, stream_layouts
from ._trace import RequestArrays, _dense

_MAX_SERVERS = 2**31 - 1
"""The engine numbers servers in 32 bits."""


@dataclass(frozen=True)
class TraceReplay:
    """Result of :func:`replay_trace`.

    Attributes
    ----------
    scheduler : str
    trace : RequestArrays
        The engine's arrays: the requests' parts in engine order (recorded start order, a
        request's parts consecutive; one part per request on one target without striping),
        ``arrival`` their request's recorded start, ``server`` their target, ``offset`` their
        offset in the target's object, ``phase`` their chain phase, ``order`` their request's row.
    requests : polars.DataFrame
        Per recorded request, in engine order: ``row`` (in the site ops), ``job_id``, ``class``,
        ``phase`` (index in its job), then over its parts: ``release``, ``dispatch`` and ``served``
        the earliest (when it was released, handed to a target, and a target began serving it),
        ``complete`` the last, ``unit`` the first part's, ``size`` the sum (its bytes).
    phases : polars.DataFrame
        Per phase: ``job_id``, ``phase``, ``recorded_start``, ``recorded_end``, ``start``, ``end``.
    jobs : polars.DataFrame
        Per job: ``job_id``, ``recorded_runtime``, ``runtime``, ``alone_runtime``, ``alone_ratio``
        (alone_runtime / recorded_runtime: the model check, :mod:`._model_check`), ``stretch``
        (runtime / alone_runtime), ``io_slowdown`` (time in I/O phases over the same alone),
        ``wait`` (runtime - alone_runtime).
    n_units : int
        Units dispatched (single or aggregated requests).
    engine_seconds : float
        Wall time of the C call (the alone replay aside).
    """

    scheduler: str
    trace: RequestArrays
    requests: pl.DataFrame
    phases: pl.DataFrame
    jobs: pl.DataFrame
    n_units: int
    engine_seconds: float


@dataclass(frozen=True)
class _Chains:
    """What releases each request: arrays ``_engine.replay_trace`` takes under these names."""

    gate: np.ndarray  # int64 [n]
    think: np.ndarray  # float64 [n]
    prev: np.ndarray  # int32 [n_phases]
    gap: np.ndarray  # float64 [n_phases]
    job: np.ndarray  # int32 [n_phases]
    first: np.ndarray | None = None  # int64 [n]: parts (None: each request one part)
    client_rate: np.ndarray | None = None  # float64 [n_jobs]: bytes/s of each job's client link


def _class_labels(frame: pl.DataFrame, classes) -> pl.Series:
    """Each request's class label: its job, a column's value, or a mapping job_id -> class."""
    if classes is None:
        return frame["job_id"]
    if isinstance(classes, str):
        if classes not in frame.columns:
            raise InputError(f"classes: site ops have no column {classes!r}; has {frame.columns}")
        if frame[classes].null_count():
            row = int(frame["_row"].filter(frame[classes].is_null())[0])
            raise InputError(f"site ops row {row}: {classes}: expected a class, got null")
        return frame[classes]
    if isinstance(classes, Mapping):
        missing = sorted(set(frame["job_id"].unique().to_list()) - set(classes))
        if missing:
            raise InputError(f"classes: no class for jobs {missing[:5]}")
        try:
            labels = pl.Series("class", list(classes.values()), strict=True)
            table = pl.DataFrame({"job_id": pl.Series(list(classes), dtype=pl.String, strict=True), "class": labels})
        except (TypeError, ValueError, pl.exceptions.PolarsError):
            raise InputError("classes: expected string job ids mapped to classes of one type") from None
        return frame.select("job_id").join(table, on="job_id", how="left", maintain_order="left")["class"]
    raise InputError(f"classes: expected None, a column name or a mapping job_id -> class, got {classes!r}")


def _dense_pairs(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """Dense int32 ids of (major, minor) pairs of ids >= 0 (below 2**31), in lexicographic order."""
    key = major.astype(np.int64) * (int(minor.max(initial=-1)) + 1) + minor
    top = int(key.max(initial=-1))
    if top < 4 * key.size + 1024:  # a table of the keys beats a sort of the rows
        present = np.zeros(top + 1, dtype=bool)
        present[key] = True
        return (np.cumsum(present, dtype=np.int32) - 1)[key]
    return np.unique(key, return_inverse=True)[1].astype(np.int32)


def _phase_ids(frame: pl.DataFrame, job: np.ndarray) -> tuple[np.ndarray, pl.DataFrame]:
    """Each request's chain phase (a job's phase, or a null-phase request alone) and the phase table,
    in job then recorded start then first row order (``job``: dense job ids in job_id order)."""
    phase = frame["phase"]
    code = np.empty(frame.height, dtype=np.int32)
    has = phase.is_not_null().to_numpy()
    code[has] = _dense(frame.filter(has), ["phase"]) if phase.null_count() else _dense(frame, ["phase"])
    code[~has] = int(code[has].max(initial=-1)) + 1 + np.arange(int((~has).sum()), dtype=np.int32)
    key = _dense_pairs(job, code)
    table = (
        pl.DataFrame({"_key": key, "_job": job, "start": frame["start"], "end": frame["end"], "_row": frame["_row"]})
        .group_by("_key")
        .agg(
            pl.col("_job").first(),
            pl.col("start").min().alias("recorded_start"),
            pl.col("end").max().alias("recorded_end"),
            pl.col("_row").min(),
        )
        .sort("_job", "recorded_start", "_row")
        .with_columns(pl.int_range(pl.len()).over("_job").alias("phase"))
    )
    phase_of_key = np.empty(table.height, dtype=np.int32)
    phase_of_key[table["_key"].to_numpy()] = np.arange(table.height, dtype=np.int32)
    return phase_of_key[key], table


def _gates(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per request (in start order), the request d earlier in its rank-phase group, or -1.

    d is the group's largest number of requests in flight at once, at least 1: a request
    occupies [start, end), one ending as another starts does not overlap it, one of zero
    length counts at its date.
    """
    gate = np.empty(group.size, dtype=np.int64)
    _engine.chain_gates(group=group, n_groups=int(group.max(initial=-1)) + 1, start=start, end=end, gate=gate)
    return gate


def _streams(frame: pl.DataFrame) -> np.ndarray:
    """Each request's stream: dense ids of ``file:<file>`` where the file is known, else ``rank:<job_id>:<rank>``."""
    if not frame["file"].null_count():
        return _dense(frame, ["file"])
    has = frame["file"].is_not_null().to_numpy()
    stream = np.empty(frame.height, dtype=np.int32)
    stream[has] = _dense(frame.filter(has), ["file"])
    ranks = frame.filter(~has).select(pl.lit("rank:") + pl.col("job_id") + ":" + pl.col("rank").cast(pl.String))
    stream[~has] = int(stream[has].max(initial=-1)) + 1 + _dense(ranks, ranks.columns)  # "file:" < "rank:"
    return stream


def _client_rates(frame: pl.DataFrame, device: Device) -> np.ndarray | None:
    """Per job (job_id order): client_bandwidth x its nodes, ceil(distinct ranks / ranks_per_node); None: no limit."""
    if device.client_bandwidth == 0:
        return None
    ranks = frame.group_by("job_id").agg(pl.col("rank").n_unique().cast(pl.Int64)).sort("job_id")["rank"].to_numpy()
    return device.client_bandwidth * -(-ranks // device.ranks_per_node)


def _build(
    site_requests: pl.DataFrame, classes, *, device: Device | None = None, layout: pl.DataFrame | None = None
) -> tuple[RequestArrays, _Chains, pl.DataFrame, pl.DataFrame]:
    """The trace (engine order: recorded start, then row; parts on ``device``'s targets), its chains,
    the phase table and the request keys (one row per request)."""
    frame = SITE_REQUESTS.validate(site_requests, source="site ops", require=("end",)).with_row_index("_row")
    if frame["end"].null_count():
        row = int(frame["_row"].filter(frame["end"].is_null())[0])
        raise InputError(f"site ops row {row}: end: expected a date (the closed loop needs it), got null")
    frame = frame.with_columns(_class_labels(frame, classes).alias("_class"))
    if not frame["start"].is_sorted():  # site ops are sorted by start: no copy then
        frame = frame.sort("start", "_row")
    job_names = frame["job_id"].unique().sort()
    job = _dense(frame, ["job_id"])
    phase, phases = _phase_ids(frame, job)
    start, end = frame["start"].to_numpy(), frame["end"].to_numpy()
    group = _dense_pairs(phase, _dense(frame, ["rank"]))
    gate = _gates(group, start, end)
    opening = phases["recorded_start"].to_numpy()
    released_after = np.where(gate >= 0, end[np.maximum(gate, 0)], opening[phase])
    index = phases["phase"].to_numpy()
    prev = np.where(index > 0, np.arange(phases.height) - 1, -1).astype(np.int32)
    previous_end = phases["recorded_end"].to_numpy()[np.maximum(prev, 0)]
    device = device or Device()
    chains = _Chains(
        gate=gate,
        think=np.maximum(start - released_after, 0.0),
        prev=prev,
        gap=np.where(prev >= 0, np.maximum(opening - previous_end, 0.0), opening),
        job=phases["_job"].to_numpy(),
        client_rate=_client_rates(frame, device),
    )
    stream = _streams(frame)
    trace = RequestArrays(
        arrival=start,
        size=frame["size"].cast(pl.Float64).to_numpy(),
        offset=frame["offset"].fill_null(-1).to_numpy(),  # synthesised: continues nothing
        cls=_dense(frame, ["_class"]),
        stream=stream,
        server=np.zeros(frame.height, np.int32),
        phase=phase,
        op=(frame["op"] == "write").cast(pl.Int8).to_numpy(),
        classes=frame["_class"].unique().sort().to_numpy(),
        n_streams=int(stream.max(initial=-1)) + 1,
        n_servers=1,
        n_phases=phases.height,
        order=frame["_row"].cast(pl.Int64).to_numpy(),
    )
    if device.targets > 1 or device.stripe_count > 1 or layout is not None:
        files = frame["file"].drop_nulls().unique().sort()  # the file streams, in stream order
        trace, chains = _split(trace, chains, stream_layouts(files, trace.n_streams, device, layout), device.targets)
    phases = phases.with_columns(job_id=job_names.gather(phases["_job"]).set_sorted())  # in job order
    keys = frame.select("job_id", "_class", pl.Series("_index", index[phase]), "start", "end")
    return trace, chains, phases, keys


def _split(
    trace: RequestArrays, chains: _Chains, layouts: StreamLayouts, targets: int
) -> tuple[RequestArrays, _Chains]:
    """The trace and chains of the requests' parts on ``targets`` targets (``trace`` itself when none is split)."""
    parts = split_requests(trace.offset, trace.size, trace.stream, layouts, targets)
    if parts.n == trace.n:  # one part per request: the requests themselves, on their targets
        arrays = replace(trace, server=parts.target, offset=parts.offset, n_servers=targets)
        return arrays, chains
    arrays = replace(
        trace,
        arrival=parts.spread(trace.arrival),
        size=parts.size,
        offset=parts.offset,
        cls=parts.spread(trace.cls),
        stream=parts.spread(trace.stream),
        server=parts.target,
        phase=parts.spread(trace.phase),
        op=parts.spread(trace.op),
        n_servers=targets,
        order=parts.spread(trace.order),
    )
    gate = np.where(chains.gate >= 0, parts.starts[np.maximum(chains.gate, 0)], -1)  # a gate is a first part
    return arrays, replace(chains, gate=parts.spread(gate), think=parts.spread(chains.think), first=parts.first)


def _run(
    scheduler: str,
    trace: RequestArrays,
    chains: _Chains,
    server: np.ndarray,
    n_servers: int,
    device: Device,
    weight: np.ndarray,
    reservation: np.ndarray,
    limit: np.ndarray,
    vector: np.ndarray,
    *,
    served: np.ndarray | None = None,
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One closed-loop C call: (n_units, release, dispatch, complete, unit, phase_start, phase_end), per
    request of the engine (part) or phase; ``served``, when given, is filled with the service-slot dates."""
    release, dispatch, complete = np.empty((3, trace.n))  # the engine writes every entry, or raises
    unit = np.empty(trace.n, dtype=np.int64)
    phase_start, phase_end = np.empty((2, trace.n_phases))
    n_units = _engine.replay_trace(
        scheduler=scheduler,
        **(trace.engine_arrays() | {"server": server, "n_servers": n_servers}),
        gate=chains.gate,
        think=chains.think,
        prev=chains.prev,
        gap=chains.gap,
        job=chains.job,
        first=chains.first,
        client_rate=chains.client_rate,
        device=device,
        weight=weight,
        reservation=reservation,
        limit=limit,
        params=vector,
        release=release,
        dispatch=dispatch,
        complete=complete,
        unit=unit,
        phase_start=phase_start,
        phase_end=phase_end,
        served=served,
    )
    return n_units, release, dispatch, complete, unit, phase_start, phase_end


def replay_trace(
    site_requests: pl.DataFrame,
    *,
    scheduler: str = "fcfs",
    classes=None,
    weights=None,
    reservations=None,
    limits=None,
    device: Device | None = None,
    params: Mapping[str, float] | None = None,
    layout: pl.DataFrame | None = None,
) -> TraceReplay:
    """Replay a site trace in a closed loop through ``scheduler`` and predict each job's runtime.

    Each job replays as a chain of its I/O phases (see the module docstring): a slowed
    request delays the rank's next ones, a slowed phase delays the job's next phases,
    compute gaps and think times are kept. Each job is also replayed alone on the device
    (fcfs, one call for all jobs: each on its own copy of the device's targets) for its stretch.

    Parameters
    ----------
    site_requests : polars.DataFrame
        A site trace (:data:`iosets.schemas.SITE_REQUESTS`), with every request's ``end``.
    scheduler : str, default="fcfs"
        One of :data:`SCHEDULERS`.
    classes : str or mapping, default=None
        The scheduler's classes: a column of ``site_requests``, or a mapping job_id -> class;
        one class per job when None.
    weights, reservations, limits : scalar, mapping class -> value, or array, default=None
        Per-class parameters, as :func:`replay_requests` takes them.
    device : Device, default=None
        Device model; ``Device()`` when None.
    params : mapping, default=None
        The scheduler's scalar parameters (see :data:`SCHEDULER_PARAMS`).
    layout : polars.DataFrame, default=None
        Files' striping (:data:`LAYOUT`: ``file``, ``stripe_size``, ``stripe_count``,
        ``first_target``); files without a row take the device's ``stripe_size`` and
        ``stripe_count``, and a round-robin first target.

    Returns
    -------
    TraceReplay
        Per request, per phase and per job dates and predictions. Policy-level window
        metrics (Utilization, IO-slowdown, Max Stretch) are not computed here.

    Examples
    --------
    >>> import polars as pl
    >>> ops = pl.DataFrame({"job_id": ["a", "a"], "rank": [0, 0], "op": ["write"] * 2, "offset": [0, 10**6],
    ...     "size": [10**6] * 2, "start": [0.0, 6.0], "end": [1.0, 7.0], "file": ["f"] * 2, "phase": [0, 1],
    ...     "synthetic": [False] * 2})
    >>> replay_trace(ops, device=Device(bandwidth=1e6, overhead=0, seek=0)).jobs["runtime"].to_list()
    [7.0]
    """
    check_choice(scheduler, "scheduler", SCHEDULERS)
    vector = _scheduler_params(scheduler, dict(params or {}))
    device = device or Device()
    trace, chains, phases, keys = _build(site_requests, classes, device=device, layout=layout)
    weight = _per_class(weights, trace, "weights", 1.0)
    reservation = _per_class(reservations, trace, "reservations", 0.0)
    limit = _per_class(limits, trace, "limits", 0.0)
    n_jobs = int(chains.job.max(initial=-1)) + 1
    if n_jobs * trace.n_servers > _MAX_SERVERS:
        raise InputError(
            f"device targets: the alone replay gives each of the {n_jobs} jobs its own {trace.n_servers} targets, "
            f"more than {_MAX_SERVERS} servers in all"
        )
    served = np.empty(trace.n)
    begin = time.perf_counter()
    n_units, release, dispatch, complete, unit, start, end = _run(
        scheduler,
        trace,
        chains,
        trace.server,
        trace.n_servers,
        device,
        weight,
        reservation,
        limit,
        vector,
        served=served,
    )
    seconds = time.perf_counter() - begin
    none = np.zeros(trace.classes.size)
    alone = _run(  # every job on its own copy of the targets
        "fcfs",
        trace,
        chains,
        chains.job[trace.phase] * trace.n_servers + trace.server,
        n_jobs * trace.n_servers,
        device,
        none + 1,
        none,
        none,
        _scheduler_params("fcfs", {}),
    )
    per_request = _PerRequest.of(chains.first)
    release = per_request.min(release)
    complete = per_request.max(complete)
    requests = pl.DataFrame(
        {
            "row": per_request.first(trace.order),
            "job_id": keys["job_id"],
            "class": keys["_class"],
            "phase": keys["_index"],
            "release": release,
            "dispatch": per_request.min(dispatch),
            "served": per_request.min(served),
            "complete": complete,
            "unit": per_request.first(unit),
            "size": per_request.sum(trace.size),
        }
    )
    phase_frame = phases.select("job_id", "phase", "recorded_start", "recorded_end").with_columns(start=start, end=end)
    runs = keys.select("job_id", "start", "end").with_columns(
        release=release,
        complete=complete,
        alone_release=per_request.min(alone[1]),
        alone_complete=per_request.max(alone[3]),
    )
    io_time = phase_frame.with_columns(alone_start=alone[5], alone_end=alone[6])
    jobs = _jobs(runs, io_time)
    return TraceReplay(scheduler, trace, requests, phase_frame, jobs, n_units, seconds)


@dataclass(frozen=True)
class _PerRequest:
    """The parts' values reduced to their requests; ``starts``: each request's first part (None: every
    request is one part, values pass through)."""

    starts: np.ndarray | None

    @classmethod
    def of(cls, first: np.ndarray | None) -> _PerRequest:
        return cls(None if first is None else np.flatnonzero(first == np.arange(first.size)))

    def first(self, values: np.ndarray) -> np.ndarray:
        return values if self.starts is None else values[self.starts]

    def min(self, values: np.ndarray) -> np.ndarray:
        return values if self.starts is None else np.minimum.reduceat(values, self.starts)

    def max(self, values: np.ndarray) -> np.ndarray:
        return values if self.starts is None else np.maximum.reduceat(values, self.starts)

    def sum(self, values: np.ndarray) -> np.ndarray:
        return values if self.starts is None else np.add.reduceat(values, self.starts)


def _jobs(runs: pl.DataFrame, phases: pl.DataFrame) -> pl.DataFrame:
    """Per job, from its requests' recorded, replayed and alone dates and its phases' replayed and alone dates."""
    runtimes = runs.group_by("job_id").agg(
        (pl.col("end").max() - pl.col("start").min()).alias("recorded_runtime"),
        (pl.col("complete").max() - pl.col("release").min()).alias("runtime"),
        (pl.col("alone_complete").max() - pl.col("alone_release").min()).alias("alone_runtime"),
    )
    io_time = phases.group_by("job_id").agg(
        (pl.col("end") - pl.col("start")).sum().alias("_io"),
        (pl.col("alone_end") - pl.col("alone_start")).sum().alias("_alone_io"),
    )
    return (
        runtimes.join(io_time, on="job_id")
        .sort("job_id")
        .select(
            "job_id",
            "recorded_runtime",
            "runtime",
            "alone_runtime",
            alone_ratio(),
            (pl.col("runtime") / pl.col("alone_runtime")).alias("stretch"),
            (pl.col("_io") / pl.col("_alone_io")).alias("io_slowdown"),
            (pl.col("runtime") - pl.col("alone_runtime")).alias("wait"),
        )
    )
