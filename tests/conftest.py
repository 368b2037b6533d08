"""Shared fixtures: small hand-made workloads."""

import os

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
    fault (SIGSEGV), some read the freed bytes and get darshan-util's own "cannot read" error, and under
    AddressSanitizer (`make test-asan`) its allocator may end the worker with exit status 1 first. Each
    ending is contained and names the module; here they all count as the SIGSEGV.
    """
    text = text.replace("cannot read the LUSTRE module (truncated or corrupt log)", _LUSTRE_CRASH)
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
