"""Request-level workloads (ops tables) for the request schedulers."""

import numpy as np
import polars as pl

from .._validation import check_count, check_positive
from ..errors import InputError
from ..schemas import OPS
from ..workload import Workload


def _ops(job_id, rank, op, offset, size, start, file, **extra) -> pl.DataFrame:
    """An ops table sorted by start (then by generation order)."""
    n = len(start)
    frame = pl.DataFrame(
        {
            "job_id": np.broadcast_to(np.asarray(job_id, dtype=object), n).astype(str),
            "rank": np.broadcast_to(rank, n).astype(np.int64),
            "op": np.broadcast_to(np.asarray(op, dtype=object), n).astype(str),
            "offset": np.asarray(offset, dtype=np.int64),
            "size": np.broadcast_to(size, n).astype(np.int64),
            "start": np.asarray(start, dtype=np.float64),
            "end": np.full(n, None),
            "file": np.broadcast_to(np.asarray(file, dtype=object), n).astype(str),
            **extra,
        },
        schema_overrides=OPS.polars,
    )
    return frame.sort("start", maintain_order=True)


def make_backlogged_requests(
    n_requests: int, n_classes: int = 4, *, size_range: tuple[int, int] = (1, 1000), random_state=None
) -> pl.DataFrame:
    """Backlogged classes: every request arrives at t = 0 (seed 000, section 3).

    Requests of random sizes in ``size_range`` (bytes, inclusive) are attributed
    to classes ``c0 .. c{n_classes-1}`` (column ``job_id``) at random; each class
    writes its own file contiguously.

    Examples
    --------
    >>> ops = make_backlogged_requests(1000, 4, random_state=0)
    >>> ops.height, sorted(ops["job_id"].unique())
    (1000, ['c0', 'c1', 'c2', 'c3'])
    """
    rng = np.random.default_rng(random_state)
    check_count(n_requests, "n_requests", minimum=1)
    check_count(n_classes, "n_classes", minimum=1)
    low, high = size_range
    if not 1 <= low <= high:
        raise InputError(f"size_range must satisfy 1 <= low <= high, got {size_range!r}")
    cls = rng.integers(0, n_classes, n_requests)
    size = rng.integers(low, high + 1, n_requests)
    offset = _contiguous_offsets(cls, size)
    names = np.array([f"c{k}" for k in range(n_classes)], dtype=object)
    return _ops(names[cls], 0, "write", offset, size, np.zeros(n_requests), names[cls])


def _contiguous_offsets(stream: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Offsets that make each stream's requests contiguous, in generation order."""
    offset = np.empty(size.size, dtype=np.int64)
    for s in np.unique(stream):
        mask = stream == s
        offset[mask] = np.concatenate(([0], np.cumsum(size[mask])[:-1]))
    return offset


def make_periodic_requests(
    n_clients: int,
    *,
    rate: float,
    duration: float,
    request_size: int = 1 << 20,
    on_time: float | None = None,
    off_time: float = 0.0,
    random_state=None,
) -> pl.DataFrame:
    """Clients issuing Poisson requests at ``rate`` per second, optionally on-off.

    With ``on_time`` set, each client alternates ``on_time`` seconds of requests and
    ``off_time`` seconds of silence (phase drawn at random); clients are ``c0 ..``.
    """
    rng = np.random.default_rng(random_state)
    check_count(n_clients, "n_clients", minimum=1)
    check_positive(rate, "rate")
    check_positive(duration, "duration")
    frames = []
    for k in range(n_clients):
        count = rng.poisson(rate * duration)
        start = np.sort(rng.uniform(0, duration, count))
        if on_time is not None:
            period = on_time + off_time
            start = start[((start + rng.uniform(0, period)) % period) < on_time]
        frames.append((np.full(start.size, k), start))
    cls = np.concatenate([f[0] for f in frames])
    start = np.concatenate([f[1] for f in frames])
    names = np.array([f"c{k}" for k in range(n_clients)], dtype=object)
    offset = _contiguous_offsets(cls, np.full(cls.size, request_size))
    return _ops(names[cls], 0, "read", offset, request_size, start, names[cls])


def make_bursty_requests(
    *, burst: int = 128, period: float = 0.4, duration: float = 10.0, request_size: int = 4096
) -> pl.DataFrame:
    """A bursty client ``bursty`` issuing ``burst`` requests every ``period`` s (seed 001, Table 6)
    next to a backlogged client ``steady`` (its requests all arrive at t = 0)."""
    check_count(burst, "burst", minimum=1)
    check_positive(period, "period")
    n_bursts = int(duration / period)
    burst_start = np.repeat(np.arange(n_bursts) * period, burst)
    n_steady = burst * n_bursts * 2
    start = np.concatenate((burst_start, np.zeros(n_steady)))
    who = np.array(["bursty"] * burst_start.size + ["steady"] * n_steady, dtype=object)
    offset = np.concatenate((np.arange(burst_start.size), np.arange(n_steady))) * request_size
    return _ops(who, 0, "read", offset, request_size, start, who)


def make_strided_writers(
    n_writers: int = 8, requests_per_writer: int = 256, *, request_size: int = 65536, interval: float = 1e-4
) -> pl.DataFrame:
    """Processes writing contiguous regions of one shared file, their requests interleaved.

    Writer k writes ``[k R s, (k+1) R s)`` in ``request_size`` pieces; every
    ``interval`` seconds each writer issues its next piece (the aIOLi case of seed 002).
    """
    check_count(n_writers, "n_writers", minimum=1)
    check_count(requests_per_writer, "requests_per_writer", minimum=1)
    step = np.repeat(np.arange(requests_per_writer), n_writers)
    writer = np.tile(np.arange(n_writers), requests_per_writer)
    offset = (writer * requests_per_writer + step) * request_size
    return _ops("app", writer, "write", offset, request_size, step * interval, "shared.dat")


def make_hotspot_requests(n_requests: int = 2000, *, request_size: int = 1 << 20) -> pl.DataFrame:
    """Two clients over two servers: ``c1`` spreads over S1 and S2, ``c2`` only hits S2
    (the hot-spot case of seed 001, section 2). Column ``server`` names the server."""
    check_count(n_requests, "n_requests", minimum=2)
    half = n_requests // 2
    who = np.array(["c1"] * half + ["c2"] * half, dtype=object)
    server = np.array([k % 2 for k in range(half)] + [1] * half)
    offset = np.concatenate((np.arange(half), np.arange(half))) * request_size
    server_names = np.array(["S1", "S2"], dtype=object)[server]
    return _ops(who, 0, "read", offset, request_size, np.zeros(n_requests), who, server=server_names)


def make_phase_requests(workload: Workload, io_request: np.ndarray, *, request_size: int = 1 << 20) -> pl.DataFrame:
    """Requests of a phase workload: each I/O phase's bytes cut in ``request_size`` pieces
    issued at its request date ``io_request`` (one per phase, e.g. a phase replay's
    ``cpu_end``). Columns ``set`` (from the workload's jobs) and ``phase`` (per job) are added."""
    check_count(request_size, "request_size", minimum=1)
    io_bytes = workload.phases["io_bytes"].to_numpy()
    if np.asarray(io_request).shape != io_bytes.shape:
        raise InputError(f"io_request: expected {io_bytes.size} dates (one per phase)")
    if workload.jobs["set"].null_count():
        raise InputError("make_phase_requests: every job needs a set (use Workload.with_assignment)")
    pieces = np.ceil(io_bytes / request_size).astype(np.int64)
    phase = np.repeat(np.arange(io_bytes.size), pieces)
    first = np.repeat(np.cumsum(pieces) - pieces, pieces)
    index = np.arange(phase.size) - first
    size = np.minimum(request_size, io_bytes[phase] - index * request_size).astype(np.int64)
    job = workload.phases["job"].to_numpy()[phase]
    offsets = workload.phase_offsets()
    return _ops(
        workload.jobs["id"].to_numpy()[job],
        0,
        "write",
        index * request_size,
        size,
        np.asarray(io_request)[phase],
        np.char.add("phase", phase.astype(str)),
        set=workload.jobs["set"].to_numpy()[job],
        phase=phase - offsets[job],
    )
