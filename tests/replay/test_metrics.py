"""The window metrics of seed 004 on hand-computed cases."""

import math

import pytest

from iosets.replay import replay_phases

GB = 1e9


def metrics(workload):
    return replay_phases(workload, "explicit").metrics


def test_single_job_inside_window(workload_of):
    # cpu 0-3, io 3-4, cpu 4-7, io 7-8, cpu 8-11, io 11-12; window [0, 10]
    wl = workload_of([(0, 0, 1, [[3, GB]] * 3)], window=(0, 10))
    m = metrics(wl)
    assert m.utilization == pytest.approx(8 / 10)  # e_cpu = 3 + 3 + 2
    assert m.io_slowdown == pytest.approx((10 - 8) / (1 * 2))  # two I/O phases end inside
    assert m.max_stretch == pytest.approx(10 / (8 + 2))


def test_window_cutting_an_io_phase_counts_its_share_of_bytes(workload_of):
    wl = workload_of([(0, 0, 1, [[3, GB]] * 3)], window=(3.5, 10))
    m = metrics(wl)
    assert m.utilization == pytest.approx(5 / 6.5)  # e_cpu = 3 (4-7) + 2 (8-10)
    assert m.io_slowdown == pytest.approx((6.5 - 5) / (1 * 2))
    assert m.max_stretch == pytest.approx(6.5 / (5 + 0.5 + 1))


def test_shared_io_phase_cut_by_window_uses_bytes_not_time(workload_of):
    # two sets share equally: both move 1 GB over [0, 2]; at 0.5 each moved 0.25 GB
    wl = workload_of([(0, 0, 1, [[0, GB]]), (0, 1, 1, [[0, GB]])], window=(0.5, 10))
    m = metrics(wl)
    assert m.utilization == 0
    assert m.io_slowdown == pytest.approx(9.5 / 1.0)
    assert m.max_stretch == pytest.approx(9.5 / 0.75)


def test_priority_shares_seen_through_the_window(workload_of):
    # priorities 1 and 0.1: at 0.55 s job 1 moved 0.05 GB, job 0 0.5 GB
    wl = workload_of([(0, 0, 1.0, [[0, GB]]), (0, 1, 0.1, [[0, GB]])], window=(0.55, 20))
    m = metrics(wl)
    width = 20 - 0.55
    assert m.max_stretch == pytest.approx(width / 0.5)  # job 0 moved its last 0.5 GB inside
    assert m.io_slowdown == pytest.approx(width)  # both: (width - 0) / (1 s * 1 phase)


def test_io_slowdown_is_a_geometric_mean(workload_of):
    # job 0: T_io 1 s, 2 phases end inside; job 1: T_io 2 s, 1 phase
    wl = workload_of([(0, 0, 1, [[1, GB], [1, GB]]), (50, 1, 1, [[1, 2 * GB]])], window=(0, 60))
    m = metrics(wl)
    ratio0 = (60 - 2) / (1 * 2)
    ratio1 = (60 - 1) / (2 * 1)
    assert m.io_slowdown == pytest.approx(math.sqrt(ratio0 * ratio1))
    assert m.utilization == pytest.approx(3 / (2 * 60))
