"""Hand-computed timelines of the phase-level engine (B = 1 GB/s)."""

import numpy as np
import pytest

from iosets.errors import ReplayError
from iosets.replay import _engine, replay_phases

GB = 1e9


def io_times(workload):
    timeline = replay_phases(workload, "explicit").timeline
    return timeline.select("io_start", "io_end").to_numpy()


def assert_io(workload, expected):
    np.testing.assert_allclose(io_times(workload), expected, rtol=1e-12, atol=1e-12)


def test_two_jobs_one_set_second_waits_for_first(workload_of):
    wl = workload_of([(0, 0, 1, [[1, GB]]), (0, 0, 1, [[1, GB]])])
    assert_io(wl, [[1, 2], [2, 3]])


def test_two_sets_share_bandwidth_by_priority(workload_of):
    # shares 10/11 and 1/11 until job 0 ends at 1.1 s; job 1 then has 0.9 GB left alone
    wl = workload_of([(0, 0, 1.0, [[0, GB]]), (0, 1, 0.1, [[0, GB]])])
    assert_io(wl, [[0, 1.1], [0, 2.0]])


def test_job_arriving_while_another_performs(workload_of):
    # job 0 alone for 1 s (1 GB left), then shares 0.8/0.2 with job 1 (priority 0.25)
    wl = workload_of([(0, 0, 1.0, [[0, 2 * GB]]), (0, 1, 0.25, [[1, GB]])])
    assert_io(wl, [[0, 2.25], [1, 3.0]])


@pytest.mark.parametrize("set_id, priority", [(0, 1.0), (7, 1e-3), (-2, 100.0)])
def test_lone_job_gets_full_bandwidth(workload_of, set_id, priority):
    wl = workload_of([(5, set_id, priority, [[2, 3 * GB], [1, GB]])])
    timeline = replay_phases(wl, "explicit").timeline
    assert timeline["cpu_start"].to_list() == pytest.approx([5, 10])
    assert timeline["cpu_end"].to_list() == pytest.approx([7, 11])
    assert timeline["io_start"].to_list() == pytest.approx([7, 11])
    assert timeline["io_end"].to_list() == pytest.approx([10, 12])


def test_fcfs_inside_a_set_follows_request_dates_not_job_order(workload_of):
    # job 2 holds the set until 3; job 1 asked at 1.5, job 0 at 2: job 1 goes first
    wl = workload_of([(0, 0, 1, [[2, GB]]), (0, 0, 1, [[1.5, GB]]), (0, 0, 1, [[0, 3 * GB]])])
    assert_io(wl, [[4, 5], [3, 4], [0, 3]])


def test_same_date_completion_then_request_then_admission(workload_of):
    # at t=1 job 0 ends its I/O and job 1 requests: job 2 (waiting since 0.5) is admitted first
    wl = workload_of([(0, 0, 1, [[0, GB], [5, 0]]), (0, 0, 1, [[1, GB]]), (0, 0, 1, [[0.5, GB]])])
    assert_io(wl, [[0, 1], [6, 6], [2, 3], [1, 2]])


def test_completion_frees_set_for_a_request_at_the_same_date(workload_of):
    wl = workload_of([(0, 0, 1, [[0, GB]]), (0, 0, 1, [[1, GB]])])
    assert_io(wl, [[0, 1], [1, 2]])


def test_next_compute_phase_starts_when_io_ends(workload_of):
    wl = workload_of([(0, 0, 1, [[1, GB], [2, GB]]), (0, 0, 1, [[1, GB]])])
    timeline = replay_phases(wl, "explicit").timeline
    # job 0 performs 1..2, then computes 2..4 while job 1 performs 2..3
    assert timeline["cpu_start"].to_list() == pytest.approx([0, 2, 0])
    assert timeline["io_end"].to_list() == pytest.approx([2, 5, 3])


def test_zero_byte_io_phase_does_not_wait_for_its_set(workload_of):
    wl = workload_of([(0, 0, 1, [[0, 4 * GB]]), (0, 0, 1, [[1, 0], [1, GB]])])
    assert_io(wl, [[0, 4], [1, 1], [4, 5]])


def test_three_sets_with_priorities_1_01_001(workload_of):
    # shares 100/111, 10/111, 1/111: job 0 ends at 1.11 s, then 10/11 and 1/11
    wl = workload_of([(0, 0, 1, [[0, GB]]), (0, 1, 0.1, [[0, GB]]), (0, 2, 0.01, [[0, GB]])])
    done1 = 1.11 * 10 / 111 * GB  # job 1's bytes at 1.11 s
    t1 = 1.11 + (GB - done1) / (GB * 10 / 11)
    done2 = 1.11 / 111 * GB + (t1 - 1.11) / 11 * GB
    t2 = t1 + (GB - done2) / GB
    assert_io(wl, [[0, 1.11], [0, t1], [0, t2]])


def test_events_count_compute_and_io_completions(workload_of):
    wl = workload_of([(0, 0, 1, [[1, GB], [1, GB]]), (0, 1, 1, [[1, GB]])])
    assert replay_phases(wl, "explicit").n_events == 6


@pytest.mark.parametrize(
    "jobs, message",
    [
        ([(0, 0, 0.0, [[1, GB]])], "priority must be finite and > 0 \\(job 0\\)"),
        ([(0, 0, 1, [[1, GB]]), (0, 0, -1, [[1, GB]])], "priority must be finite and > 0 \\(job 1\\)"),
    ],
)
def test_engine_rejects_bad_priorities_with_the_job_index(workload_of, jobs, message):
    with pytest.raises(ReplayError, match=message) as info:
        replay_phases(workload_of(jobs), "explicit")
    assert info.value.index == int(message[-3])


def test_timeline_columns_and_phase_numbers(workload_of):
    wl = workload_of([(0, 0, 1, [[1, GB], [1, GB]]), (0, 1, 1, [[1, GB]])])
    timeline = replay_phases(wl, "explicit").timeline
    assert timeline.columns == ["job_id", "phase", "cpu_start", "cpu_end", "io_start", "io_end"]
    assert timeline["job_id"].to_list() == ["j0", "j0", "j1"]
    assert timeline["phase"].to_list() == [0, 1, 0]
    assert np.all(timeline["io_start"].to_numpy() >= timeline["cpu_end"].to_numpy())


def test_set_labels_may_be_any_integers(workload_of):
    # labels far apart and negative: two sets share B 1:1, the third job waits for its set
    big = 2**40
    wl = workload_of([(0, -big, 1, [[0, GB]]), (0, big, 1, [[0, GB]]), (0, -big, 1, [[0, GB]])])
    assert_io(wl, [[0, 2], [0, 2], [2, 3]])


def test_timeline_is_built_once_on_first_access(workload_of):
    # j1 asks at 1.5 (j0 has 0.5 GB left): shares 2:1 until j0 ends at 2.25, j1 alone ends at 3
    wl = workload_of([(0, 0, 1, [[1, GB], [1, GB]]), (0, 1, 0.5, [[1.5, GB]])])
    result = replay_phases(wl, "explicit")
    assert "timeline" not in vars(result)
    timeline = result.timeline
    assert result.timeline is timeline
    for column in ("cpu_start", "cpu_end", "io_start", "io_end"):
        np.testing.assert_array_equal(timeline[column].to_numpy(), getattr(result, column))
    np.testing.assert_allclose(result.io_end, [2.25, 4.25, 3.0], rtol=1e-15)
    assert result.sets.tolist() == [0, 1] and result.priorities.tolist() == [1.0, 0.5]


def test_engine_refuses_a_bad_window():
    args = dict(release=np.zeros(1), sets=np.zeros(1, np.int64), priority=np.ones(1), phase_ptr=np.array([0, 1]))
    args |= dict(t_cpu=np.ones(1), io_bytes=np.ones(1), bandwidth=1.0)
    args |= dict(cpu_start=np.empty(1), cpu_end=np.empty(1), io_start=np.empty(1), io_end=np.empty(1))
    with pytest.raises(ReplayError, match="window must be finite with T_begin < T_end"):
        _engine.replay_phases(**args, window=(5.0, 5.0))
    with pytest.raises(ValueError, match="'phase_ptr' must start at 0"):
        _engine.replay_phases(**args | {"phase_ptr": np.array([1, 1])}, window=(0.0, 1.0))
    with pytest.raises(TypeError, match="'sets' must be int64 of length n_jobs=1 .*, got int32 of length 1$"):
        _engine.replay_phases(**args | {"sets": np.zeros(1, np.int32)}, window=(0.0, 1.0))
