"""The arbiter admits as the phase engine does: one set of rules, checked on random workloads.

Each job of a workload becomes a client of the arbiter's C core on a virtual clock
(:class:`iosets.arbiter.Admission`): it computes for t_cpu, says BEGIN, moves its bytes at the
rate it was granted (a rate that changes when other jobs are admitted or leave, as RATE lines
say), and says END when its bytes are done. The events of one date go in as the model orders
them (completions, then requests in job order, then admission). The clients send the set and
priority of their SET-10 recommendation; each policy decides what they count for, as the
arbiter's does. Admissions per set come in the phase engine's order, and every date of the
timeline equals the engine's to 1e-9 relative.
"""

from __future__ import annotations

import numpy as np
import pytest

from iosets import Workload
from iosets.arbiter import ARBITER_POLICIES, Admission
from iosets.datasets import make_iosets_workload
from iosets.replay import assign_policy, replay_phases

RTOL = 1e-9
SAME_DATE = 1e-10  # relative: events closer than this are one date (the driver computes in doubles)
HORIZON = {"set-10": 3000.0, "exclusive-fcfs": 3000.0, "fair-share": 1000.0, "share-priority": 1000.0}
"""FAIR-SHARE and SHARE+PRIORITY are chaotic (docs/benchmarks.md): the last-bit difference between the rates
sent (doubles) and the engine's exact shares grows about tenfold per 100 s of simulated time, from 1e-15 at
500 s to 1e-12 at 1000 s and 1e-9 near 2000 s on these workloads, while SET-10's stays at 1e-15."""


def run_clients(
    workload: Workload, policy: str, *, recommendation: str = "set-10"
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The (4, n_phases) timeline (cpu_start, cpu_end, io_start, io_end) of the workload's jobs as arbiter
    clients under ``policy``, and the (job, phase) pairs in the order the core granted them. Each job sends
    the set and priority that the phase replay's ``recommendation`` policy gives it."""
    sets, priorities = assign_policy(workload, recommendation)
    admission = Admission(policy, bandwidth=workload.bandwidth)
    for j, name in enumerate(workload.ids):
        admission.join(name, set=int(sets[j]), priority=float(priorities[j]))
    index = {name: j for j, name in enumerate(workload.ids)}
    offsets, t_cpu, io_bytes = workload.offsets, workload.t_cpu, workload.io_bytes
    times = np.full((4, workload.n_phases), np.nan)
    phase = offsets[:-1].copy()
    compute_end: dict[int, float] = {}
    performing: dict[int, list[float]] = {}  # job -> [bytes left, rate]
    passed: list[int] = []  # zero-byte phases granted: their END goes with the next date's events
    granted: list[tuple[int, int]] = []

    def start_compute(job: int, date: float) -> None:
        k = phase[job]
        times[0, k], times[1, k] = date, date + t_cpu[k]
        compute_end[job] = times[1, k]

    def next_phase(job: int) -> int | None:
        phase[job] += 1
        return phase[job] if phase[job] < offsets[job + 1] else None

    for job in range(workload.n_jobs):
        if offsets[job + 1] > offsets[job]:
            start_compute(job, float(workload.release[job]))
    now = 0.0
    while compute_end or performing:
        finish = {job: now + left / rate for job, (left, rate) in performing.items()}
        date = min([*finish.values(), *compute_end.values()])
        limit = date + SAME_DATE * max(1.0, abs(date))
        for state in performing.values():
            state[0] -= state[1] * (date - now)
        now = date
        ends = sorted(job for job, end in finish.items() if end <= limit)
        for job in ends:
            times[3, phase[job]] = date
            del performing[job]
            if next_phase(job) is not None:
                start_compute(job, date)
        begins = sorted(job for job, end in compute_end.items() if end <= limit)
        for job in begins:
            del compute_end[job]
        applied = admission.apply(
            date,
            ends=[workload.ids[j] for j in [*passed, *ends]],
            begins=[(workload.ids[j], io_bytes[phase[j]]) for j in begins],
        )
        passed = []
        for name, rate in applied.grants:
            job = index[name]
            k = phase[job]
            granted.append((job, int(k - offsets[job])))
            times[2, k] = date
            if io_bytes[k] == 0:  # a zero-byte phase ends at its grant
                times[3, k] = date
                passed.append(job)
                if next_phase(job) is not None:
                    start_compute(job, date)
            else:
                performing[job] = [io_bytes[k], rate]
        for name, rate in applied.changes:
            performing[index[name]][1] = rate
    return times, granted


def engine_order(workload: Workload, policy: str, io_start: np.ndarray) -> dict[int, list[tuple[int, int]]]:
    """Per set of the policy, its (job, phase) admissions in the phase engine's io_start order."""
    sets, _ = assign_policy(workload, policy)
    job = workload.phase_job
    local = np.arange(job.size) - workload.offsets[job]
    order: dict[int, list[tuple[int, int]]] = {}
    for k in np.argsort(io_start, kind="stable"):
        if workload.io_bytes[k] > 0:  # a zero-byte phase is granted outside its set
            order.setdefault(int(sets[job[k]]), []).append((int(job[k]), int(local[k])))
    return order


def assert_same_admissions(workload: Workload, policy: str) -> None:
    engine = replay_phases(workload, policy)
    times, granted = run_clients(workload, policy)
    np.testing.assert_allclose(times, engine.times, rtol=RTOL, atol=1e-12)
    sets, _ = assign_policy(workload, policy)
    by_set: dict[int, list[tuple[int, int]]] = {}
    for job, k in granted:
        if workload.io_bytes[workload.offsets[job] + k] > 0:
            by_set.setdefault(int(sets[job]), []).append((job, k))
    assert by_set == engine_order(workload, policy, engine.io_start)
    # and globally the core granted in date order
    starts = [engine.io_start[workload.offsets[job] + k] for job, k in granted]
    assert all(b >= a * (1 - RTOL) for a, b in zip(starts, starts[1:], strict=False))


@pytest.mark.parametrize("policy", ARBITER_POLICIES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_workloads_are_admitted_as_the_phase_engine_does(policy, seed):
    rng = np.random.default_rng([seed, 20])
    profiles = [(int(rng.integers(2, 5)), 10.0, 2.0), (int(rng.integers(1, 4)), 100.0, 10.0), (1, 1000.0, 50.0)]
    omega = float(rng.uniform(0.5, 1.5))
    workload = make_iosets_workload(profiles, horizon=HORIZON[policy], omega=omega, random_state=rng)
    assert workload.n_phases > 200
    assert_same_admissions(workload, policy)


def tie_workload(seed: int) -> Workload:
    """Integer dates and bytes, several jobs released together: completions and requests often share a date.

    Zero-byte phases are followed by compute (t_cpu >= 1): a zero-byte phase that would end and
    request again at one date is applied as a second batch of that date here.
    """
    rng = np.random.default_rng([seed, 7])
    n_jobs = int(rng.integers(2, 9))
    bandwidth = float(rng.choice([1.0, 4.0]))
    release = [float(rng.integers(0, 4)) for _ in range(n_jobs)]
    phase_job, t_cpu, io_bytes = [], [], []
    for job in range(n_jobs):
        previous = 1.0
        for _ in range(int(rng.integers(1, 7))):
            phase_job.append(job)
            t_cpu.append(float(rng.integers(0 if previous > 0 else 1, 5)))
            previous = float(rng.integers(0, 4)) * bandwidth
            io_bytes.append(previous)
    w_iter = 10.0 ** rng.integers(0, 4, n_jobs)  # SET-10 sets 0 to 3
    ids = [f"j{j}" for j in range(n_jobs)]
    return Workload.from_arrays(
        ids, release, phase_job, t_cpu, io_bytes, w_iter=w_iter, bandwidth=bandwidth, horizon=100
    )


@pytest.mark.parametrize("policy", ARBITER_POLICIES)
def test_workloads_with_simultaneous_events_are_admitted_as_the_phase_engine_does(policy):
    for seed in range(40):
        workload = tie_workload(seed)
        try:
            assert_same_admissions(workload, policy)
        except AssertionError as error:
            raise AssertionError(f"seed {seed}: {error}") from None


def test_the_driver_sees_ties_and_zero_byte_phases():
    """The tie family exercises what it claims: dates shared by several events, and zero-byte phases."""
    shared = zero = 0
    for seed in range(40):
        workload = tie_workload(seed)
        times = replay_phases(workload, "set-10").times
        dates = np.concatenate([times[1], times[3]])
        shared += dates.size - np.unique(dates).size
        zero += int((workload.io_bytes == 0).sum())
    assert shared > 100 and zero > 20


def test_a_hand_computed_timeline_through_the_core(workload_of):
    # job 0 alone in set 0 for 1 s (1 GB left), then shares 0.8/0.2 with job 1 of set 1 (priority 0.25);
    # job 2 (set 0) waits for job 0 until 2.25, then shares with job 1; job 1 has a zero-byte phase at 4
    gb = 1e9
    workload = workload_of(
        [(0, 0, 1.0, [[0, 2 * gb]]), (0, 1, 0.25, [[1, gb], [0.25, 0]]), (0, 0, 1.0, [[0.5, 0.5 * gb]])]
    )
    times, granted = run_clients(workload, "set-10", recommendation="explicit")
    # after 2.25: job 1 has 0.75 GB left at 0.2, job 2 0.5 GB at 0.8: job 2 ends at 2.875 (job 1 moved 0.125),
    # job 1 then has 0.625 GB alone: ends at 3.5; its zero-byte phase at 3.75
    np.testing.assert_allclose(times[2], [0, 1, 3.75, 2.25], rtol=1e-12)
    np.testing.assert_allclose(times[3], [2.25, 3.5, 3.75, 2.875], rtol=1e-12)
    assert granted == [(0, 0), (1, 0), (2, 0), (1, 1)]
    np.testing.assert_allclose(times, replay_phases(workload, "explicit").times, rtol=1e-12)
