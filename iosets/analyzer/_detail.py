"""Each job's detail: its request sizes, access order, metadata time, rank spread and I/O over time.

What darshan's job summary, Drishti and DXT Explorer show of one job, as three tables beside the jobs table
(:class:`~iosets.analyzer.Analysis`): ``detail`` (:data:`~iosets.schemas.JOB_DETAIL`, one row per job),
``sizes`` (:data:`~iosets.schemas.JOB_SIZES`, one row per job, module, direction and size bucket with requests)
and ``activity`` (:data:`~iosets.schemas.JOB_ACTIVITY`, one row per job and time bin with bytes, at most
:data:`ACTIVITY_BINS` bins per job).

A Darshan log's detail comes from its counters (:mod:`._ingest._darshan_detail`: every request, even those a
partial DXT trace lost) and its I/O over time from its DXT requests or HEATMAP bins; a requests table's (block
traces, ``--requests``) from its requests. A job of several logs sums its logs' counts and puts their times on
the job's clock (each log at its start after the job's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ..schemas import JOB_ACTIVITY, JOB_DETAIL, JOB_SIZES
from ._ingest import DarshanJob
from ._ingest._darshan_detail import SIZE_BUCKETS

ACTIVITY_BINS = 48
"""Time bins of a job's I/O over time (its run cut in this many equal bins; empty bins are not written)."""
FINE_BINS = 256
"""Bins a log's I/O over time is kept in until its job's run is known."""
REQUESTS_MODULE = "requests"
"""The ``module`` of sizes counted from a requests table (DXT-less traces: block traces, ``--requests``)."""
SMALL_BUCKETS = 4
"""The buckets of small requests: the first four, up to ``10K_100K`` (at most 100 KiB). Darshan's next bucket,
``100K_1M``, holds the 1 MiB requests too, so counting it would call a job of 1 MiB requests small."""
_UPPERS = np.array([upper for _, _, upper in SIZE_BUCKETS[:-1]], dtype=np.float64)


@dataclass(frozen=True)
class Detail:
    """The detail of one log or one requests-table job, before its job's rows are made.

    ``sizes`` maps ``(module, op)`` to (requests, bytes or None) per :data:`SIZE_BUCKETS` bucket; ``sequential``
    and ``accesses`` count the requests at a higher offset than the previous one of their file and rank, and all
    requests (None when unknown); ``meta_time`` (None when unknown) and ``io_time`` are summed over ranks (s);
    ``rank_bytes`` / ``rank_time`` hold each process's bytes and I/O time; ``edges`` and ``cum_read`` /
    ``cum_write`` the bytes read and written from the start (s) to each edge (None: no timeline).
    """

    source: str
    sizes: dict[tuple[str, str], tuple[np.ndarray, np.ndarray | None]]
    sequential: int | None
    accesses: int | None
    meta_time: float | None
    io_time: float
    rank_bytes: np.ndarray | None
    rank_time: np.ndarray | None
    edges: np.ndarray | None
    cum_read: np.ndarray | None
    cum_write: np.ndarray | None


def cumulative_bytes(start: np.ndarray, end: np.ndarray, size: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Bytes moved up to each date of ``grid`` by requests moving ``size`` bytes evenly over [start, end].

    A request with no duration moves its bytes at its start. Exact for any grid (no sampling).

    Examples
    --------
    >>> cumulative_bytes(np.array([0.0, 2.0]), np.array([2.0, 2.0]), np.array([10.0, 5.0]), np.array([1.0, 3.0]))
    array([ 5., 15.])
    """
    start, end, size = (np.asarray(a, dtype=np.float64) for a in (start, end, size))
    out = np.zeros(len(grid))
    point = end <= start
    if point.any():
        order = np.argsort(start[point], kind="stable")
        s, w = start[point][order], np.cumsum(size[point][order])
        k = np.searchsorted(s, grid, side="right")
        out += np.where(k > 0, w[np.maximum(k - 1, 0)], 0.0)
    ramp = ~point
    if ramp.any():
        rate = size[ramp] / (end[ramp] - start[ramp])
        for dates, sign in ((start[ramp], 1.0), (end[ramp], -1.0)):
            order = np.argsort(dates, kind="stable")
            d, r = dates[order], rate[order]
            cr, crd = np.cumsum(r), np.cumsum(r * d)
            k = np.searchsorted(d, grid, side="right")
            has = k > 0
            idx = np.maximum(k - 1, 0)
            out += sign * np.where(has, grid * cr[idx] - crd[idx], 0.0)
    return out


def log_detail(job: DarshanJob) -> Detail | None:
    """The detail of a Darshan log: counters for sizes, order, metadata and ranks; DXT or HEATMAP for time."""
    counters = job.detail
    if counters is None:
        return None
    edges = cum_read = cum_write = None
    requests = job.requests
    if job.source == "dxt" and requests is not None:
        span = max(float(job.meta["runtime"]), float(requests.select(pl.col("end").max()).item() or 0.0))
        edges = np.linspace(0.0, span, FINE_BINS + 1)
        cum_read, cum_write = _cumulative_ops(requests, edges)
    elif job.source == "heatmap" and job.heatmap is not None:
        width, read, write = job.heatmap
        edges = np.arange(len(read) + 1, dtype=np.float64) * width
        cum_read = np.concatenate([[0.0], np.cumsum(read, dtype=np.float64)])
        cum_write = np.concatenate([[0.0], np.cumsum(write, dtype=np.float64)])
    return Detail(
        source="counters",
        sizes={key: (counts, None) for key, counts in counters.sizes.items()},
        sequential=counters.sequential,
        accesses=counters.accesses,
        meta_time=counters.meta_time,
        io_time=counters.io_time,
        rank_bytes=counters.rank_bytes,
        rank_time=counters.rank_time,
        edges=edges,
        cum_read=cum_read,
        cum_write=cum_write,
    )


def _cumulative_ops(ops: pl.DataFrame, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bytes read and written up to each edge (requests' dates in the edges' clock)."""
    out = []
    for op in ("read", "write"):
        part = ops.filter(pl.col("op") == op)
        ends = part.select(pl.coalesce("end", "start")).to_series().to_numpy()
        out.append(cumulative_bytes(part["start"].to_numpy(), ends, part["size"].to_numpy(), edges))
    return out[0], out[1]


def requests_detail(ops: pl.DataFrame) -> Detail:
    """The detail of one job's requests (a requests table's rows of one ``job_id``), dates from its first request."""
    t0 = float(ops.select(pl.col("start").min()).item())
    ops = ops.with_columns(
        (pl.col("start") - t0).alias("start"),
        (pl.coalesce("end", "start") - t0).alias("end"),
        pl.col("file").fill_null(""),
    )
    sizes: dict[tuple[str, str], tuple[np.ndarray, np.ndarray | None]] = {}
    for op in ("read", "write"):
        moved = ops.filter(pl.col("op") == op)["size"].to_numpy().astype(np.float64)
        if moved.size:
            bucket = np.searchsorted(_UPPERS, moved, side="left")
            requests = np.bincount(bucket, minlength=len(SIZE_BUCKETS)).astype(np.int64)
            sizes[(REQUESTS_MODULE, op)] = (requests, np.bincount(bucket, weights=moved, minlength=len(SIZE_BUCKETS)))
    ordered = ops.sort("rank", "file", "start", maintain_order=True)
    previous_end = (pl.col("offset") + pl.col("size")).shift(1).over("rank", "file")
    sequential = ordered.select((previous_end.is_null() | (pl.col("offset") >= previous_end)).sum()).item()
    per_rank = ops.group_by("rank").agg(
        pl.col("size").sum().cast(pl.Float64).alias("bytes"), (pl.col("end") - pl.col("start")).sum().alias("time")
    )
    span = float(ops.select(pl.col("end").max()).item())
    edges = np.linspace(0.0, span, ACTIVITY_BINS + 1) if span > 0 else np.array([0.0, 0.0])
    cum_read, cum_write = _cumulative_ops(ops, edges)
    return Detail(
        source="requests",
        sizes=sizes,
        sequential=int(sequential),
        accesses=ops.height,
        meta_time=None,
        io_time=float(per_rank["time"].sum()),
        rank_bytes=per_rank["bytes"].to_numpy(),
        rank_time=per_rank["time"].to_numpy(),
        edges=edges,
        cum_read=cum_read,
        cum_write=cum_write,
    )


def job_detail(job_id: str, parts: list[tuple[float, Detail]], runtime: float | None) -> tuple[dict, list, list]:
    """One job's rows of the three tables, from its logs' details and their starts after the job's (s).

    Returns the :data:`~iosets.schemas.JOB_DETAIL` row, the :data:`~iosets.schemas.JOB_SIZES` rows and the
    :data:`~iosets.schemas.JOB_ACTIVITY` rows.
    """
    details = [d for _, d in parts]
    sizes: dict[tuple[str, str], list] = {}
    for d in details:
        for key, (requests, moved) in d.sizes.items():
            if key not in sizes:
                sizes[key] = [requests.copy(), None if moved is None else moved.copy()]
            else:
                sizes[key][0] += requests
                sizes[key][1] = None if moved is None or sizes[key][1] is None else sizes[key][1] + moved
    size_rows = [
        {
            "job_id": job_id,
            "module": module,
            "op": op,
            "bucket": name,
            "smallest": smallest,
            "largest": largest,
            "requests": int(requests[i]),
            "bytes": None if moved is None else float(moved[i]),
        }
        for (module, op), (requests, moved) in sizes.items()
        for i, (name, smallest, largest) in enumerate(SIZE_BUCKETS)
        if requests[i] > 0
    ]
    counted = _counted_module(sizes)
    histogram = np.zeros(len(SIZE_BUCKETS))
    for op in ("read", "write"):
        if counted is not None and (counted, op) in sizes:
            histogram += sizes[(counted, op)][0]
    ranks_b = [d.rank_bytes for d in details if d.rank_bytes is not None]
    ranks_t = [d.rank_time for d in details if d.rank_time is not None]
    rank_bytes = np.concatenate(ranks_b) if ranks_b else np.zeros(0)
    rank_time = np.concatenate(ranks_t) if ranks_t else np.zeros(0)
    spread = rank_bytes.size >= 2
    activity, width = _activity(job_id, parts, runtime)
    row = {
        "job_id": job_id,
        "detail_from": details[0].source,
        "size_module": counted,
        "requests": int(histogram.sum()) if counted else None,
        "small_requests": int(histogram[:SMALL_BUCKETS].sum()) if counted else None,
        "sequential": _total([d.sequential for d in details]),
        "accesses": _total([d.accesses for d in details]),
        "meta_time": _total([d.meta_time for d in details]),
        "io_time": float(sum(d.io_time for d in details)),
        "ranks": int(rank_bytes.size) if ranks_b else None,
        "slowest_rank_time": float(rank_time.max()) if spread else None,
        "fastest_rank_time": float(rank_time.min()) if spread else None,
        "slowest_rank_bytes": float(rank_bytes.max()) if spread else None,
        "fastest_rank_bytes": float(rank_bytes.min()) if spread else None,
        "activity_bin": width,
    }
    return row, size_rows, activity


def _counted_module(sizes: dict) -> str | None:
    """The module whose sizes the flags read: the storage's view (POSIX), else MPI-IO, else the requests."""
    present = {module for module, _ in sizes}
    return next((m for m in ("POSIX", REQUESTS_MODULE, "MPI-IO") if m in present), None)


def _total(values: list):
    """Sum of the known values; None when none is known."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _activity(job_id: str, parts: list[tuple[float, Detail]], runtime: float | None) -> tuple[list[dict], float | None]:
    """The job's bytes read and written in :data:`ACTIVITY_BINS` equal bins of its run (bins with bytes), and the
    bin width (s; None without a timeline)."""
    timed = [
        (shift, d.edges, d.cum_read, d.cum_write)
        for shift, d in parts
        if d.edges is not None and d.cum_read is not None and d.cum_write is not None
    ]
    if not timed:
        return [], None
    span = max([runtime or 0.0, *(shift + float(edges[-1]) for shift, edges, _, _ in timed)])
    if span <= 0:
        return [], None
    edges = np.linspace(0.0, span, ACTIVITY_BINS + 1)
    read, write = np.zeros(len(edges)), np.zeros(len(edges))
    for shift, log_edges, cum_read, cum_write in timed:
        read += np.interp(edges - shift, log_edges, cum_read)
        write += np.interp(edges - shift, log_edges, cum_write)
    read_bins, write_bins = np.diff(read), np.diff(write)
    rows = [
        {
            "job_id": job_id,
            "start": float(edges[i]),
            "end": float(edges[i + 1]),
            "bytes_read": max(float(read_bins[i]), 0.0),
            "bytes_written": max(float(write_bins[i]), 0.0),
        }
        for i in np.flatnonzero((read_bins > 0) | (write_bins > 0))
    ]
    return rows, span / ACTIVITY_BINS


def detail_frames(rows: list[dict], sizes: list[dict], activity: list[dict]) -> dict[str, pl.DataFrame]:
    """The three tables of the jobs' detail rows, typed by their schemas."""
    return {
        "detail": pl.DataFrame(rows, schema=JOB_DETAIL.polars),
        "sizes": pl.DataFrame(sizes, schema=JOB_SIZES.polars),
        "activity": pl.DataFrame(activity, schema=JOB_ACTIVITY.polars),
    }


def requests_details(ops: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The detail tables of a requests table's jobs (one per ``job_id``), as ``analyze --requests`` writes them."""
    rows, sizes, activity = [], [], []
    for (job_id,), frame in ops.partition_by("job_id", as_dict=True, maintain_order=True).items():
        detail = requests_detail(frame)
        row, size_rows, bins = job_detail(str(job_id), [(0.0, detail)], None)
        rows.append(row)
        sizes += size_rows
        activity += bins
    return detail_frames(rows, sizes, activity)
