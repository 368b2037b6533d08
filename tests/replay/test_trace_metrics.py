"""Window metrics of closed-loop trace replays, against hand-computed values."""

import math

import polars as pl
import pytest

from iosets.errors import InputError
from iosets.replay import Device, TraceMetrics, replay_trace, trace_metrics

MB = 1_000_000
DEVICE = Device(queue_depth=1, bandwidth=1e6, overhead=0.0, seek=0.0)  # 1e6 bytes take 1 s


def site(rows):
    """rows: (job_id, start, end, size, phase), all on rank 0."""
    return pl.DataFrame(
        {
            "job_id": [r[0] for r in rows],
            "rank": 0,
            "op": "write",
            "offset": [k * 10 * MB for k in range(len(rows))],
            "size": [r[3] for r in rows],
            "start": [float(r[1]) for r in rows],
            "end": [float(r[2]) for r in rows],
            "file": [f"{r[0]}.0" for r in rows],
            "phase": pl.Series([r[4] for r in rows], dtype=pl.Int64),
            "synthetic": False,
        }
    )


@pytest.fixture(scope="module")
def two_jobs():
    """a: one 1 s phase at 0; b: phases at 0, 4 and 7. Replayed: a [0, 1]; b [0, 2], [5, 6], [8, 9]."""
    ops = site([("a", 0, 1, MB, 0), ("b", 0, 1, MB, 0), ("b", 4, 5, MB, 1), ("b", 7, 8, MB, 2)])
    return replay_trace(ops, device=DEVICE)


def test_whole_replay_window(two_jobs):
    m = trace_metrics(two_jobs)
    assert m.window == (0.0, 9.0)
    # a: present 1, e_cpu 0, e_io 1, one phase of alone time 1; b: present 9, I/O 2 + 1 + 1, e_cpu 5, e_io 3
    assert m.utilization == pytest.approx(5 / 10)
    assert m.utilization_bound == pytest.approx(5 / (1 + 5 + 3))
    assert m.io_slowdown == pytest.approx(math.sqrt(1 * (4 / 3)))  # a: 1 / 1, b: (9 - 5) / (1 * 3)
    assert m.max_stretch == pytest.approx(9 / 8)  # b: 9 / (5 + 3); a: 1 / 1
    assert m.mean_stretch == pytest.approx((1 + 9 / 8) / 2)
    assert m.p99_stretch == pytest.approx(1 + 0.99 / 8)
    assert m.throughput == pytest.approx(4 * MB / 9)
    assert m.class_shares == pytest.approx({"a": 0.25, "b": 0.75})
    assert m.notes == {}


def test_a_window_cutting_phases_and_requests(two_jobs):
    m = trace_metrics(two_jobs, window=(0.5, 5.5))
    # a: present 0.5, all I/O, half its request moved (e_io 0.5), its phase ends inside
    # b: present 5, I/O 1.5 + 0.5, e_cpu 3; served [1, 2] and [5, 6]: 1.5 MB moved, e_io 1.5; one phase ends inside
    assert m.utilization == pytest.approx(3 / 5.5)
    assert m.utilization_bound == pytest.approx(3 / (0.5 + 3 + 1.5))
    assert m.io_slowdown == pytest.approx(math.sqrt(0.5 * 2))  # a: 0.5 / 1, b: (5 - 3) / 1
    assert m.max_stretch == pytest.approx(5 / 4.5)
    assert m.throughput == pytest.approx(2 * MB / 5)
    assert m.class_shares == pytest.approx({"a": 0.25, "b": 0.75})
    assert m.values() == {
        "utilization": m.utilization,
        "utilization_bound": m.utilization_bound,
        "io_slowdown": m.io_slowdown,
        "max_stretch": m.max_stretch,
        "mean_stretch": m.mean_stretch,
        "p99_stretch": m.p99_stretch,
        "throughput": m.throughput,
    }


def test_jobs_queued_behind_each_other_show_it_in_io_slowdown_and_stretch():
    # three jobs, fcfs: each 2 MB phase waits behind the earlier ones, compute gaps kept
    ops = site([("a", 0, 2, 2 * MB, 0), ("b", 0, 2, 2 * MB, 0), ("c", 0, 2, 2 * MB, 0), ("c", 3, 5, 2 * MB, 1)])
    result = replay_trace(ops, scheduler="fcfs", device=DEVICE)
    ends = result.phases.sort("job_id", "phase")["end"].to_list()
    assert ends == [2.0, 4.0, 6.0, 9.0]  # c's second phase opens at 6 + 1
    m = trace_metrics(result)
    # a: present 2, e_cpu 0; b: present 4, e_cpu 0; c: present 9, I/O 6 + 2, e_cpu 1; alone phases 2 s each
    assert m.utilization == pytest.approx(1 / 15)
    assert m.io_slowdown == pytest.approx((1 * 2 * (8 / 4)) ** (1 / 3))
    assert m.max_stretch == pytest.approx(max(2 / 2, 4 / 2, 9 / 5))
    assert m.mean_stretch == pytest.approx((1 + 2 + 9 / 5) / 3)


def test_an_empty_window_gives_nulls_with_notes(two_jobs):
    m = trace_metrics(two_jobs, window=(10, 20))
    assert (m.utilization, m.utilization_bound, m.io_slowdown, m.max_stretch, m.mean_stretch, m.p99_stretch) == (
        None,
    ) * 6
    assert m.throughput == 0.0 and m.class_shares == {}
    assert m.notes["utilization"] == m.notes["utilization_bound"] == "no job did any work inside the window [10, 20]"
    assert m.notes["io_slowdown"] == "no job completed an I/O phase inside the window [10, 20]"
    assert set(m.to_dict()) == {*m.values(), "window", "class_shares", "notes"}
    assert isinstance(m, TraceMetrics)


def test_utilization_bound_is_the_utilization_had_no_job_waited():
    # fcfs, 2 MB phases of 2 s alone: a [0, 2]; b waits, its phase 0 [0, 4], computes 1 s, phase 1 [5, 7]
    ops = site([("a", 0, 2, 2 * MB, 0), ("b", 0, 2, 2 * MB, 0), ("b", 3, 5, 2 * MB, 1)])
    m = trace_metrics(replay_trace(ops, scheduler="fcfs", device=DEVICE))
    assert m.window == (0.0, 7.0)
    # a: present 2, e_cpu 0, e_io 2; b: present 7, e_cpu 1, e_io 4 (alone: [0, 2], [3, 5])
    assert m.utilization == pytest.approx(1 / 9)
    assert m.utilization_bound == pytest.approx(1 / (2 + 1 + 4))


def test_the_default_window_starts_at_the_first_phase_not_at_zero():
    ops = site([("a", 100, 101, MB, 0), ("a", 104, 105, MB, 1)])
    m = trace_metrics(replay_trace(ops, device=DEVICE))
    assert m.window == (100.0, 105.0)
    assert m.throughput == pytest.approx(2 * MB / 5)


@pytest.fixture(scope="module")
def late_requests():
    """a and b start computing at 0 and both request 1 MB at 2; fcfs: a [2, 3], b waits, [2, 4]; a again at 5."""
    ops = site([("a", 2, 3, MB, 0), ("b", 2, 3, MB, 0), ("a", 5, 6, MB, 1)])
    return replay_trace(ops, scheduler="fcfs", device=DEVICE)


def test_the_jobs_starts_count_the_compute_before_their_first_request(late_requests):
    starts = pl.DataFrame({"job_id": ["a", "b", "c"], "start": [0.0, 0.0, 1.0]})  # c: no request, ignored
    m = trace_metrics(late_requests, jobs=starts)
    assert m.window == (0.0, 6.0)
    # a: present 6, I/O 1 + 1, e_cpu 4, e_io 2; b: present 4, I/O 2, e_cpu 2, e_io 1
    assert m.utilization == pytest.approx(6 / 10)
    assert m.utilization_bound == pytest.approx(6 / (4 + 2 + 2 + 1))
    assert m.io_slowdown == pytest.approx(math.sqrt(1 * 2))
    assert m.max_stretch == pytest.approx(4 / 3)
    # stretch from the start: a 6 / 6, b 4 / 3 (from the first request: 2 / 1)
    assert m.mean_stretch == pytest.approx((1 + 4 / 3) / 2)
    without = trace_metrics(late_requests)
    assert without.window == (2.0, 6.0)
    assert without.utilization == pytest.approx(2 / (4 + 2))
    assert without.mean_stretch == pytest.approx((1 + 2) / 2)
    # a null start, or a job left out, starts at its first request
    null_b = pl.DataFrame({"job_id": ["a", "b"], "start": [0.0, None]})
    assert trace_metrics(late_requests, jobs=null_b).values() == trace_metrics(late_requests, jobs=starts[:1]).values()


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        (
            {"job_id": ["a"], "start": [2.5]},
            r"jobs: job 'a': start: expected a date <= its first request \(2\), got 2.5",
        ),
        ({"job_id": ["a", "a"], "start": [0.0, 1.0]}, "jobs: expected one row per job, got job_id 'a' more than once"),
        ({"job_id": ["a"], "start": [math.inf]}, "jobs: job 'a': start: expected a finite date, got inf"),
        ({"job_id": ["a"], "begin": [0.0]}, r"jobs: expected a polars DataFrame with job_id and start columns, got \["),
        ({"job_id": ["a"], "start": ["x"]}, "jobs: start: expected dates in seconds, got String"),
    ],
)
def test_bad_jobs_are_refused(late_requests, jobs, message):
    with pytest.raises(InputError, match=message):
        trace_metrics(late_requests, jobs=pl.DataFrame(jobs))


@pytest.mark.parametrize("window", [(5, 5), (6, 2), (0, math.inf), "ab", (1,)])
def test_bad_windows_are_refused(two_jobs, window):
    with pytest.raises(InputError, match="window: expected"):
        trace_metrics(two_jobs, window=window)


def test_busy_metrics_sum_each_job_over_the_periods(two_jobs):
    # Periods [0, 1] and [5, 6]: a present 1 (all I/O, e_io 1, a phase ends); b present 1 + 1, all I/O: served
    # [1, 2] is outside, [0, 1] waited; its phase [5, 6] moved 1 MB (e_io 1) and ends inside.
    from iosets.replay._trace_metrics import busy_metrics

    m = busy_metrics(two_jobs, [(0.0, 1.0), (5.0, 6.0)])
    assert m.window == (0.0, 6.0)
    assert m.utilization == pytest.approx(0.0)  # no compute inside either period
    assert m.throughput == pytest.approx(2 * MB / 2.0)  # a's MB in [0, 1], b's third in [5, 6]
    one = trace_metrics(two_jobs, window=(5.0, 6.0))
    alone = busy_metrics(two_jobs, [(5.0, 6.0)])
    assert alone.values() == one.values()  # one period is one window


def test_busy_metrics_refuse_overlapping_periods_and_have_none_without_periods(two_jobs):
    from iosets.replay._trace_metrics import busy_metrics

    with pytest.raises(InputError, match="periods: expected disjoint"):
        busy_metrics(two_jobs, [(0.0, 2.0), (1.0, 3.0)])
    empty = busy_metrics(two_jobs, [])
    assert empty.utilization is None and empty.notes["utilization"] == "no busy period"
