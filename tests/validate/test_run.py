"""Real runs of small workloads: the programs released together, through an arbiter where asked."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from iosets.errors import IosetsError
from iosets.validate._arbiter import running_arbiter
from iosets.validate._run import RunSetup, run_workload
from iosets.workload import Workload

pytestmark = pytest.mark.timing
MB = 1e6


def two_jobs(n_phases: int, io_bytes: float) -> Workload:
    job = np.repeat([0, 1], n_phases)
    return Workload.from_arrays(
        ["a", "b"], [0.0, 0.0], job, np.full(job.size, 0.05), np.full(job.size, io_bytes), horizon=100.0
    )


def test_exclusive_fcfs_through_the_arbiter_never_overlaps_two_io_phases(periodic, tmp_path, fake_arbiter_command):
    workload = two_jobs(3, 4 * MB)
    setup = RunSetup(periodic, tmp_path, processes=2, request_size=1 << 20)
    with running_arbiter("exclusive-fcfs", 1e9) as address:
        run = run_workload(
            workload, setup, bound=60.0, arbiter=address, sets=np.array([0, 0]), priorities=np.ones(2), timeout=10.0
        )
    assert run.messages == {}
    io_start, io_end = run.times[2], run.times[3]
    order = np.argsort(io_start)
    assert (io_start[order][1:] >= io_end[order][:-1]).all()  # one phase at a time: the arbiter admitted them in turn
    assert np.isfinite(run.times).all()


def test_a_job_alone_is_paced_to_the_arbiters_bandwidth(periodic, tmp_path, fake_arbiter_command):
    workload = Workload.from_arrays(["a"], [0.0], [0, 0], [0.0, 0.0], [4 * MB, 4 * MB], horizon=100.0)
    setup = RunSetup(periodic, tmp_path, processes=2, request_size=1 << 20)
    with running_arbiter("set-10", 40 * MB) as address:
        run = run_workload(workload, setup, bound=60.0, arbiter=address, sets=[0], priorities=[1.0])
    written = 2 * 2 * MB  # each of 2 processes' share of 4 MB is already a multiple of 4 KiB
    assert (run.times[3] - run.times[2] >= written / (40 * MB)).all()  # alone, the job gets B: no faster


def test_system_runs_every_phase_with_its_compute_and_io(periodic, tmp_path):
    workload = two_jobs(2, 1 * MB)
    run = run_workload(workload, RunSetup(periodic, tmp_path), bound=60.0)
    cpu_start, cpu_end, io_start, io_end = run.times
    assert (cpu_end - cpu_start >= 0.05).all() and (io_start == cpu_end).all() and (io_end >= io_start).all()
    assert cpu_start[[0, 2]].tolist() == [0.0, 0.0]  # both released at the origin


def test_a_program_that_fails_is_an_error_naming_its_job(periodic, tmp_path):
    workload = two_jobs(1, 1 * MB)
    setup = RunSetup(periodic, tmp_path, request_size=5000)
    # both jobs' programs get the bad argument and exit at once: the error names whichever exit it saw first
    message = "the benchmark program of job '[ab]' ended with exit status 2: "
    message += "periodic: --request-size: expected a multiple of 4096, got 5000"
    with pytest.raises(IosetsError, match=message):
        run_workload(workload, setup, bound=60.0)


def test_an_arbiter_that_cannot_start_is_an_error_with_its_output(monkeypatch):
    import iosets.validate._arbiter as arbiter

    failing = [sys.executable, "-c", "import sys; print('unknown policy x'); sys.exit(3)"]
    monkeypatch.setattr(arbiter, "arbiter_command", lambda *_: failing)
    with (
        pytest.raises(IosetsError, match="the arbiter ended with status 3 before accepting jobs: unknown policy x"),
        running_arbiter("x", 1e9),
    ):
        pass
