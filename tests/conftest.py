"""Shared fixtures: small hand-made workloads."""

import numpy as np
import polars as pl
import pytest

from iosets.workload import JOB_SCHEMA, PHASE_SCHEMA, Workload


def build_workload(jobs, *, bandwidth=1e9, window=(0.0, 100.0), horizon=100.0) -> Workload:
    """Workload from ``[(release, set, priority, [[t_cpu, io_bytes], ...]), ...]``."""
    phases = [(j, t, b) for j, job in enumerate(jobs) for t, b in job[3]]
    frame = pl.DataFrame(
        {
            "id": [f"j{j}" for j in range(len(jobs))],
            "release": [float(job[0]) for job in jobs],
            "set": [job[1] for job in jobs],
            "priority": [float(job[2]) for job in jobs],
            "w_iter": None,
            "profile": None,
        },
        schema=JOB_SCHEMA,
    )
    phase_frame = pl.DataFrame(
        np.array(phases, dtype=np.float64).reshape(-1, 3), schema=["job", "t_cpu", "io_bytes"], orient="row"
    ).cast(PHASE_SCHEMA)
    return Workload(jobs=frame, phases=phase_frame, bandwidth=bandwidth, window=window, horizon=horizon)


@pytest.fixture
def workload_of():
    """Factory for hand-made workloads replayed with policy 'explicit'."""
    return build_workload
