"""Shared fixtures: small hand-made workloads."""

import os
import re
from dataclasses import dataclass

import numpy as np
import polars as pl
import pytest

from iosets.workload import Workload


def build_workload(jobs, *, bandwidth=1e9, window=(0.0, 100.0), horizon=100.0) -> Workload:
    """Workload from ``[(release, set, priority, [[t_cpu, io_bytes], ...]), ...]``.

    Built from arrays, which skips the table validation, so that the engine's own checks can be tested too.
    """
    phases = np.array([(j, t, b) for j, job in enumerate(jobs) for t, b in job[3]], dtype=np.float64).reshape(-1, 3)
    return Workload.from_arrays(
        [f"j{j}" for j in range(len(jobs))],
        [float(job[0]) for job in jobs],
        phases[:, 0].astype(np.int64),
        phases[:, 1],
        phases[:, 2],
        set=[job[1] for job in jobs],
        priority=[float(job[2]) for job in jobs],
        bandwidth=bandwidth,
        window=window,
        horizon=horizon,
    )


@pytest.fixture
def workload_of():
    """Factory for hand-made workloads replayed with policy 'explicit'."""
    return build_workload


UNDER_ASAN = "libasan" in os.environ.get("LD_PRELOAD", "")
_LUSTRE_CRASH = "darshan-util crashed: signal 11 (SIGSEGV) while reading LUSTRE"


def _seen_crash(text: str) -> str:
    """A contained darshan-util crash as the tests expect it, whatever the heap's layout.

    Crash 3 of docs/darshan-util-crashes.md (LUSTRE) uses a record darshan-util has freed: most runs
    fault (SIGSEGV), some read the freed bytes and get darshan-util's own "cannot read" error or go on
    to a STDIO record with an impossible rank (the analyzer's "corrupt STDIO record" check), and under
    AddressSanitizer (`make test-asan`) its allocator may end the worker with exit status 1 first. Each
    ending is contained and names the log; here they all count as the SIGSEGV.
    """
    text = text.replace("cannot read the LUSTRE module (truncated or corrupt log)", _LUSTRE_CRASH)
    text = re.sub(r"corrupt STDIO record \d+: rank -?\d+ in a job of \d+ process(es)?", _LUSTRE_CRASH, text)
    return text.replace("exited with status 1", "crashed: signal 11 (SIGSEGV)") if UNDER_ASAN else text


@pytest.fixture
def seen_crash():
    """``seen_crash(message)``: a crash report as the tests expect it, whatever build runs them."""
    return _seen_crash


def writer_ops(burst_starts) -> pl.DataFrame:
    """Ops of job ``app``: at each burst start, 20 writes of 1 MB, 0.05 s each, back to back, 4 ranks in turn."""
    starts = np.concatenate([t + np.arange(20) * 0.05 for t in burst_starts])
    return pl.DataFrame(
        {
            "job_id": "app",
            "rank": np.arange(starts.size) % 4,
            "op": "write",
            "offset": np.arange(starts.size) * 1_000_000,
            "size": 1_000_000,
            "start": starts,
            "end": starts + 0.05,
        }
    )


@pytest.fixture
def writer_ops_of():
    """Factory of :func:`writer_ops` tables."""
    return writer_ops


@dataclass(frozen=True)
class AloneKnown:
    """A site trace whose alone replay is known by hand, a recommendation of its jobs and the device.

    On the device (1 MB/s, no overhead, no seek) each job's replayed-alone runtime is its bytes in MB (s):

    - a: two 1 MB requests recorded [0, 1], [1, 2]: alone 2 s, recorded 2 s, ratio 1
    - b: one 1 MB request recorded [0, 2] (the storage was slower): alone 1 s, ratio 0.5
    - c: one 2 MB request recorded [10, 11]: alone 2 s, ratio 2
    - d: one 5 MB request recorded [20, 24]: alone 5 s, ratio 1.25
    - e: one 1 MB request recorded at one date, 30: recorded 0 s, no ratio

    |ratio - 1| of a, d, b, c: 0, 0.25, 0.5, 1: median 0.375, p90 0.85 (linear, rank 2.7).
    """

    site: pl.DataFrame
    rec: pl.DataFrame
    device: object


def _alone_known() -> AloneKnown:
    from iosets.replay import Device

    mb = 1_000_000
    rows = [
        ("a", 0, mb, 0.0, 1.0),
        ("a", mb, mb, 1.0, 2.0),
        ("b", 0, mb, 0.0, 2.0),
        ("c", 0, 2 * mb, 10.0, 11.0),
        ("d", 0, 5 * mb, 20.0, 24.0),
        ("e", 0, mb, 30.0, 30.0),
    ]
    site = pl.DataFrame(
        {
            "job_id": [r[0] for r in rows],
            "rank": 0,
            "op": "write",
            "offset": [r[1] for r in rows],
            "size": [r[2] for r in rows],
            "start": [r[3] for r in rows],
            "end": [r[4] for r in rows],
            "file": [f"{r[0]}.dat" for r in rows],
            "phase": 0,
            "synthetic": False,
        }
    )
    rec = pl.DataFrame(
        {
            "job_id": ["a", "b", "c", "d", "e"],
            "set": 0,
            "priority": 1.0,
            "wfq_weight": mb,
            "rbfq_reservation": None,
            "rbfq_weight": 1.0,
            "rbfq_limit": None,
        },
        schema_overrides={"rbfq_reservation": pl.Float64, "rbfq_limit": pl.Float64},
    )
    return AloneKnown(site, rec, Device(bandwidth=1e6, overhead=0.0, seek=0.0))


@pytest.fixture
def alone_known() -> AloneKnown:
    """:class:`AloneKnown`: five jobs whose replayed-alone runtimes are known by hand (the model check's cases)."""
    return _alone_known()
