"""A phase workload as a site trace: each job one rank issuing its phases' bytes as back-to-back requests."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._validation import check_count

if TYPE_CHECKING:
    import polars as pl

    from ..workload import Workload


def workload_site_requests(workload: Workload, *, request_size: int) -> pl.DataFrame:
    """The requests a phase workload's jobs would issue, each alone on a device of bandwidth B.

    Each job is one rank (0) writing one file (its id). Job j starts computing at its
    release; phase k computes t_cpu_k, then moves its bytes (rounded to whole bytes) as
    back-to-back requests of ``request_size`` bytes, the last one shorter, at full
    bandwidth B: request i of a phase starts i request_size / B after the phase's I/O
    start and ends where the next one starts. A phase moving no byte is one request of
    0 bytes, so that every phase keeps its place in the chain. Replayed closed-loop
    (:func:`iosets.replay.replay_trace`) on a device of bandwidth B without overhead or
    seek, the trace reproduces the workload's phases; phase 0's compute is the gap
    before the job's first request, in no request: give :func:`iosets.replay.trace_metrics`
    the jobs' starts, ``jobs=pl.DataFrame({"job_id": workload.ids, "start": workload.release})``,
    for window metrics that count it.

    Parameters
    ----------
    workload : Workload
        Jobs and their (t_cpu, io_bytes) phases.
    request_size : int
        Bytes per request, >= 1.

    Returns
    -------
    polars.DataFrame
        A site trace (:data:`iosets.schemas.SITE_REQUESTS`): ``job_id``, ``rank``, ``op``
        ("write"), ``offset`` (running, per job), ``size``, ``start``, ``end``, ``file``,
        ``phase`` (the phase's index in its job) and ``synthetic`` (False), sorted by
        start then job.

    Examples
    --------
    >>> from iosets.workload import Workload
    >>> wl = Workload.from_arrays(["a"], [1.0], [0, 0], [2.0, 1.0], [3e9, 1e9])
    >>> ops = workload_site_requests(wl, request_size=2 * 10**9)
    >>> ops.select("phase", "size", "start", "end").rows()
    [(0, 2000000000, 3.0, 5.0), (0, 1000000000, 5.0, 6.0), (1, 1000000000, 7.0, 8.0)]
    """
    import polars as pl

    from ..schemas import SITE_REQUESTS

    request_size = check_count(request_size, "request_size", minimum=1)
    job = workload.phase_job
    io_bytes = np.round(workload.io_bytes).astype(np.int64)
    alone = workload.t_cpu + io_bytes / workload.bandwidth
    before = np.cumsum(alone) - alone  # alone time of the earlier phases, all jobs
    first = workload.offsets[:-1][job]
    io_start = workload.release[job] + (before - before[first]) + workload.t_cpu
    n_requests = np.maximum(-(-io_bytes // request_size), 1)
    phase = np.repeat(np.arange(job.size), n_requests)
    index = np.arange(phase.size) - np.repeat(np.cumsum(n_requests) - n_requests, n_requests)
    done = index * request_size  # bytes of the phase moved before the request
    size = np.minimum(io_bytes[phase] - done, request_size)
    start = io_start[phase] + done / workload.bandwidth
    end = io_start[phase] + (done + size) / workload.bandwidth  # the next request's start, exactly
    moved = np.cumsum(io_bytes) - io_bytes  # bytes of the earlier phases, all jobs
    ids = pl.Series("job_id", workload.ids, dtype=pl.String).gather(job[phase])
    frame = pl.DataFrame(
        {
            "job_id": ids,
            "rank": np.zeros(phase.size, np.int64),
            "offset": moved[phase] - moved[first[phase]] + done,
            "size": size,
            "start": start,
            "end": end,
            "file": ids,
            "phase": phase - first[phase],
            "synthetic": np.zeros(phase.size, bool),
        }
    ).with_columns(op=pl.lit("write"))
    return SITE_REQUESTS.validate(frame.sort("start", "job_id", maintain_order=True), source="phase workload")
