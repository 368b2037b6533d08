"""Request-level workloads (requests tables) for the request schedulers."""

import numpy as np
import polars as pl

from .._validation import check_count
from ..errors import InputError
from ..schemas import REQUESTS
from ..workload import Workload


def _ops(job_id, rank, op, offset, size, start, file, **extra) -> pl.DataFrame:
    """A requests table sorted by start (then by generation order)."""
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
        schema_overrides=REQUESTS.polars,
    )
    return frame.sort("start", maintain_order=True)


def make_backlogged_requests(
    n_requests: int, n_classes: int = 4, *, size_range: tuple[int, int] = (1, 1000), random_state=None
) -> pl.DataFrame:
    """Backlogged classes: every request arrives at t = 0 (AGIOS WFQ report, section 3).

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
