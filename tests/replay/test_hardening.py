"""No input crashes, hangs or lies: bounded and interruptible engines, values checked once, no silent NaN."""

import array
import json
import signal
import subprocess
import sys
import time
from collections import deque

import numpy as np
import polars as pl
import pytest
from engine_interrupt import interrupted_inside, interrupted_script

from iosets import Workload, read_workload
from iosets.datasets import make_backlogged_requests, make_figure_workload, make_iosets_workload
from iosets.errors import InputError, ReplayError
from iosets.replay import Device, RequestArrays, _engine, backlogged_shares, replay_phases, replay_requests, tune

MIB = 1 << 20

# ------------------------------------------------------------------------------------ bounded WFQ


@pytest.mark.parametrize("scheduler", ["wfq", "iosets-wfq"])
def test_a_weight_of_1e_4_bytes_per_round_finishes_at_once(scheduler):
    # 1 MiB requests need 1e10 rounds of 1e-4 bytes: the empty rounds are skipped, not played
    ops = make_backlogged_requests(2000, 2, size_range=(MIB, MIB), random_state=0)
    start = time.perf_counter()
    result = replay_requests(ops, scheduler, weights={"c0": 1e-4, "c1": 3e-4}, device=Device(overhead=0, seek=0))
    print(f"\n{scheduler}: 2000 requests in {time.perf_counter() - start:.3f} s")
    np.testing.assert_allclose(backlogged_shares(result), [0.25, 0.75], atol=0.002)


def agios_wfq_order(cls, size, weights):
    """Dispatch order of AGIOS's WFQ played round by round (all requests queued at once, one at a time)."""
    queues = [deque(np.flatnonzero(cls == c).tolist()) for c in range(len(weights))]
    credit, amount, in_round = [0.0] * len(weights), [0.0] * len(weights), [False] * len(weights)
    current, order = 0, []
    while len(order) < cls.size:
        c, queue = current, queues[current]
        if not in_round[c]:
            amount[c], in_round[c] = weights[c] + credit[c], True
        if queue and amount[c] - size[queue[0]] >= 0:
            amount[c] -= size[queue[0]]
            order.append(queue.popleft())
            continue
        credit[c], in_round[c] = (amount[c] if queue else 0.0), False
        current = (c + 1) % len(weights)
    return order


@pytest.mark.parametrize("seed", range(5))
def test_skipping_empty_rounds_keeps_agios_order_exactly(seed):
    rng = np.random.default_rng(seed)
    n, weights = 300, rng.integers(1, 40, 3).astype(float)
    cls, size = rng.integers(0, 3, n), rng.integers(1, 2000, n)
    trace = RequestArrays(
        arrival=np.zeros(n),
        size=size.astype(float),
        offset=np.zeros(n, np.int64),
        cls=cls.astype(np.int32),
        stream=np.zeros(n, np.int32),
        server=np.zeros(n, np.int32),
        phase=np.full(n, -1, np.int32),
        op=np.zeros(n, np.int8),
        classes=np.arange(3),
        n_streams=1,
        n_servers=1,
        n_phases=0,
        order=np.arange(n),
    )
    result = replay_requests(trace, "wfq", weights=weights)
    assert np.argsort(result.unit).tolist() == agios_wfq_order(cls, size, weights)


# ------------------------------------------------------------------------------- interruptible C

# A long replay with little memory: one server, a class of 1 000 000 requests whose weight sends one
# per round, and 1 000 classes of one request each that waits billions of rounds, so that every pick
# passes the 1 000 waiting queues before it sends: about 10 s uninterrupted.
SLOW_REQUESTS = """
import numpy as np
from iosets.replay import RequestArrays, replay_requests
waiting, n = 1_000, 1_001_000
cls = np.concatenate([np.arange(1, waiting + 1), np.zeros(n - waiting)]).astype(np.int32)
trace = RequestArrays(
    arrival=np.zeros(n), size=np.full(n, 4096.0), offset=np.zeros(n, np.int64), cls=cls,
    stream=np.zeros(n, np.int32), server=np.zeros(n, np.int32), phase=np.full(n, -1, np.int32),
    op=np.zeros(n, np.int8), classes=np.arange(waiting + 1), n_streams=1, n_servers=1, n_phases=0, order=np.arange(n))
weights = np.r_[4096.0, np.full(waiting, 1e-6)]
"""
# Two million phases of 100 000 jobs sharing the bandwidth: about 2 s uninterrupted.
SLOW_PHASES = """
import numpy as np
from iosets import Workload
from iosets.replay import replay_phases
n_jobs, per_job = 100_000, 20
rng = np.random.default_rng(0)
workload = Workload.from_arrays(
    [f"j{i}" for i in range(n_jobs)], rng.uniform(0, 10, n_jobs), np.repeat(np.arange(n_jobs), per_job),
    rng.uniform(1, 10, n_jobs * per_job), rng.uniform(1e6, 1e7, n_jobs * per_job), horizon=1e6)
"""


@pytest.mark.timing
@pytest.mark.parametrize(
    "setup, call, engine",
    [
        (SLOW_REQUESTS, "replay_requests(trace, 'wfq', weights=weights)", "_engine.replay_requests"),
        (SLOW_PHASES, "replay_phases(workload, 'fair-share')", "_engine.replay_phases"),
    ],
    ids=["requests", "phases"],
)
def test_ctrl_c_stops_a_long_replay_inside_the_engine(setup, call, engine):
    child = subprocess.Popen(
        [sys.executable, "-c", interrupted_script(setup, call, engine)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = child.communicate(timeout=60)  # a bound on a hang, not a speed claim
    finally:
        child.kill()
    assert child.returncode != 0 and "done" not in out
    assert err.rstrip().endswith("KeyboardInterrupt") and f"{engine}(" in err  # raised by the C engine's check


@pytest.mark.timing
def test_an_interrupted_engine_releases_every_buffer():
    waiting, n = 1_000, 1_001_000  # SLOW_REQUESTS' long replay
    ints = np.zeros(n, np.int32)
    cls = np.concatenate([np.arange(1, waiting + 1), np.zeros(n - waiting)]).astype(np.int32)
    dispatch, complete, unit = array.array("d", bytes(8 * n)), array.array("d", bytes(8 * n)), array.array("q", [0] * n)
    args = dict(scheduler="wfq", arrival=np.zeros(n), size=np.full(n, 4096.0), offset=np.zeros(n, np.int64))
    args |= dict(cls=cls, stream=ints, server=ints, phase=np.full(n, -1, np.int32), op=np.zeros(n, np.int8))
    args |= dict(n_classes=waiting + 1, n_streams=1, n_servers=1, n_phases=0, device=Device())
    args |= dict(weight=np.r_[4096.0, np.full(waiting, 1e-6)], reservation=np.zeros(waiting + 1))
    args |= dict(limit=np.zeros(waiting + 1))
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), interrupted_inside(_engine.replay_requests):
            _engine.replay_requests(**args, params=np.empty(0), dispatch=dispatch, complete=complete, unit=unit)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert complete[-1] == 0.0  # stopped inside the engine, not after the whole replay
    for output in (dispatch, complete, unit):
        output.append(0)  # an array still exporting its buffer could not grow


# ------------------------------------------------------------------------------ bounded workloads


def test_tune_refuses_a_w_iter_of_a_microsecond_before_allocating():
    jobs = pl.DataFrame({"job_id": ["tiny", "b"], "w_iter": [1e-6, 1000.0], "alpha_io": [0.1, 0.1]})
    with pytest.raises(InputError) as info:
        tune(jobs)
    assert str(info.value) == (
        "job 'tiny' has w_iter 1e-06 s: 2e+10 phases over the horizon of 20000 s, 2e+10 for all jobs "
        "(limit 5e+07); use w_iter >= 0.0008 s (a floor on the jobs' w_iter) or a horizon <= 50 s"
    )


def test_from_jobs_and_the_generator_refuse_absurd_phase_counts():
    jobs = pl.DataFrame({"job_id": ["a"], "w_iter": [10.0], "alpha_io": [0.1]})
    with pytest.raises(InputError, match=r"^job 'a' has w_iter 10 s: 1e\+10 phases over the horizon of 1e\+11 s"):
        Workload.from_jobs(jobs, horizon=1e11)
    with pytest.raises(InputError, match=r"^job 'j0' has w_iter .* s: .* \(limit 5e\+07\); use w_iter >= 0\.0004 s"):
        make_iosets_workload([(1, 1e-5, 0.0)], random_state=0)


# ---------------------------------------------------------------------------- values checked once


def test_queue_depth_beyond_int32_is_an_input_error():
    with pytest.raises(InputError) as info:
        Device(queue_depth=2147483648)
    assert str(info.value) == "device queue_depth must be an integer in [1, 2147483647], got 2147483648"
    with pytest.raises(InputError, match=r"^device queue_depth must be an integer in \[1, 2147483647\], got 2\.0$"):
        Device(queue_depth=2.0)  # type: ignore[arg-type]
    assert Device.from_strings(["queue_depth=2147483647"]).queue_depth == 2**31 - 1


def test_a_deeply_nested_json_workload_is_an_input_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(InputError) as info:
        read_workload(path)
    assert str(info.value) == f"{path}: not valid JSON (nested too deeply)"


def test_a_string_w_iter_is_an_input_error(tmp_path):
    path = tmp_path / "wl.json"
    path.write_text('{"jobs": [{"id": "a", "w_iter": "10", "phases": [[1, 2]]}]}')
    with pytest.raises(InputError) as info:
        read_workload(path)
    assert str(info.value) == f"{path}: jobs[0].w_iter: expected a finite number, got '10'"
    jobs = pl.DataFrame({"job_id": ["a"], "w_iter": ["ten"], "alpha_io": [0.1]})
    for build in (tune, Workload.from_jobs):
        with pytest.raises(InputError) as info:
            build(jobs)
        assert str(info.value) == "jobs table row 0: w_iter: expected a number, got 'ten'"


@pytest.mark.parametrize(
    "job, message",
    [
        ({"id": ["a"]}, "jobs[0].id: expected text, got ['a']"),
        ({"release": -1}, "jobs[0].release: expected a number >= 0, got -1"),
        ({"set": 1e300}, "jobs[0].set: expected an integer in [-2^53, 2^53], got 1e+300"),
        ({"release": 10**400}, "jobs[0].release: expected a finite number, got " + "1" + "0" * 17 + "..." + "0" * 19),
        (
            {"phases": [[1, "2"]]},
            "jobs[0].phases[0]: expected t_cpu >= 0 and io_bytes >= 0, finite numbers, got [1, '2']",
        ),
        (
            {"phases": [[True, 2]]},
            "jobs[0].phases[0]: expected t_cpu >= 0 and io_bytes >= 0, finite numbers, got [True, 2]",
        ),
    ],
)
def test_json_values_are_checked_with_their_field(tmp_path, job, message):
    path = tmp_path / "wl.json"
    path.write_text(json.dumps({"jobs": [{"phases": [], **job}]}))
    with pytest.raises(InputError) as info:
        read_workload(path)
    assert str(info.value) == f"{path}: {message}"


def test_an_end_beyond_int64_continues_nothing_and_a_size_beyond_is_refused():
    ops = pl.DataFrame(
        {"job_id": "a", "rank": 0, "op": "write", "offset": [2**63 - 10, 0], "size": [100, 1], "start": [0.0, 1.0]}
    )
    for scheduler in ("fcfs", "aioli"):  # the first request ends past INT64_MAX (no overflow: UBSan checks it)
        assert replay_requests(ops, scheduler).metrics.n_units == 2
    with pytest.raises(ReplayError) as info:
        replay_requests(ops.with_columns(pl.Series("size", [2**63 - 1, 1])), "fcfs")
    assert str(info.value) == "size must be >= 0 and < 2^63 (request 0)" and info.value.index == 0


def test_dates_that_overflow_are_refused_not_left_unwritten(workload_of):
    with pytest.raises(ReplayError) as info:
        replay_phases(workload_of([(0, 0, 1, [[1e308, 1e9]] * 2)]), "explicit")
    assert str(info.value) == (
        "job 0 never finished: its dates overflow (release + t_cpu + io_bytes / (bandwidth * priority) "
        "beyond the largest double)"
    )
    with pytest.raises(ReplayError, match=r"^bandwidth \* priority and its inverse must be finite and > 0 \(job 1\)$"):
        replay_phases(workload_of([(0, 0, 1, [[1, 1e9]]), (0, 1, 1e300, [[1, 1e9]])], bandwidth=1e10), "explicit")
    ops = pl.DataFrame({"job_id": ["a"] * 2, "rank": 0, "op": "read", "offset": [0, 0], "size": 2**62, "start": 0.0})
    with pytest.raises(ReplayError) as info:
        replay_requests(ops, "fcfs", device=Device(bandwidth=1e-300))
    assert str(info.value) == (
        "2 requests never completed: their dates overflow "
        "(a unit's cost or a scheduler's wait beyond the largest double)"
    )


def test_a_null_class_is_an_input_error():
    ops = pl.DataFrame(
        {"job_id": ["a", "b"], "rank": 0, "op": "read", "offset": 0, "size": 1, "start": 0.0, "set": [1, None]}
    )
    with pytest.raises(InputError) as info:
        replay_requests(ops, "wfq", class_by="set")
    assert str(info.value) == "ops row 1: set: expected a value (it names a class, stream or server), got null"


def test_scheduler_values_that_are_not_numbers_are_input_errors():
    ops = make_backlogged_requests(10, 2, random_state=0)
    with pytest.raises(InputError, match=r"^weights: expected numbers, got \['heavy', 1\.0\]$"):
        replay_requests(ops, "wfq", weights={"c0": "heavy"})
    with pytest.raises(InputError, match="^rbfq: idle_credit must be a number, got 'x'$"):
        replay_requests(ops, "rbfq", idle_credit="x")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------- no silent NaN


def test_an_empty_workload_has_no_metrics_and_says_why():
    metrics = replay_phases(Workload.from_dict({"jobs": []}), "fair-share").metrics
    assert metrics.to_dict() == {
        "utilization": None,
        "io_slowdown": None,
        "max_stretch": None,
        "notes": dict.fromkeys(("utilization", "io_slowdown", "max_stretch"), "the workload has no job"),
    }


def test_all_zero_phases_have_no_metric():
    workload = Workload.from_dict({"horizon": 100, "jobs": [{"phases": [[0, 0]] * 3}, {"phases": [[0, 0]]}]})
    assert replay_phases(workload, "fair-share").metrics.to_dict() == {
        "utilization": None,
        "io_slowdown": None,
        "max_stretch": None,
        "notes": {
            "utilization": "no job did any work inside the window [30, 70]",
            "io_slowdown": "no job moves any byte (T_io = 0 for every job)",
            "max_stretch": "no job did any work inside the window [30, 70]",
        },
    }


def test_a_window_after_the_activity_has_no_metric():
    workload = Workload.from_dict({"horizon": 100, "window": [50, 100], "jobs": [{"phases": [[1, 1e9], [1, 1e9]]}]})
    assert replay_phases(workload, "fair-share").metrics.to_dict() == {
        "utilization": None,
        "io_slowdown": None,
        "max_stretch": None,
        "notes": {
            "utilization": "no job did any work inside the window [50, 100]",
            "io_slowdown": "no job completed an I/O phase inside the window [50, 100]",
            "max_stretch": "no job did any work inside the window [50, 100]",
        },
    }


def test_request_metrics_without_a_value_are_none_with_a_note():
    ops = pl.DataFrame({"job_id": ["a", "b"], "rank": 0, "op": "write", "offset": 0, "size": [0, 10], "start": 0.0})
    metrics = replay_requests(ops.head(0), "fcfs").metrics
    assert (metrics.aggregate_throughput, metrics.jain_index, metrics.mean_aggregation_size) == (None, None, None)
    assert metrics.to_dict()["notes"] == dict.fromkeys(
        ("aggregate_throughput", "jain_index", "mean_aggregation_size"), "no request"
    )
    metrics = replay_requests(ops, "fcfs", device=Device(overhead=0, seek=0)).metrics
    assert metrics.classes["throughput"].to_list() == [None, 1e9]
    assert metrics.jain_index is None
    assert metrics.notes == {
        "throughput": "class 'a': every request completed at the class's first arrival (zero span)",
        "jain_index": "no throughput for class 'a'",
    }
    metrics = replay_requests(ops.with_columns(size=0), "fcfs", device=Device(overhead=0, seek=0)).metrics
    assert metrics.aggregate_throughput is None and metrics.classes["share"].to_list() == [None, None]
    assert metrics.notes["aggregate_throughput"] == "every request completed at the first arrival (zero span)"
    assert metrics.notes["share"] == "no request moved a byte"


# ---------------------------------------------------------------------------- windows and horizons


def test_the_window_follows_the_horizon():
    assert make_iosets_workload([(2, 10, 1)], horizon=2000, random_state=0).window == (600.0, 1400.0)
    assert make_iosets_workload([(2, 10, 1)], random_state=0).window == (6000.0, 14000.0)
    assert make_figure_workload("fig6", 5, horizon=2000, random_state=0).window == (600.0, 1400.0)
    assert make_figure_workload("fig6", 5, random_state=0).window == (6000.0, 14000.0)
    jobs = pl.DataFrame({"job_id": ["a"], "w_iter": [10.0], "alpha_io": [0.1]})
    assert Workload.from_jobs(jobs, horizon=1000.0).window == (300.0, 700.0)
    assert Workload.from_dict({"horizon": 10.0, "jobs": []}).window == (3.0, 7.0)


def test_a_window_outside_the_horizon_is_an_input_error():
    with pytest.raises(InputError) as info:
        make_iosets_workload([(2, 10, 1)], horizon=2000, window=(6000, 14000), random_state=0)
    assert str(info.value) == (
        "workload: window must satisfy 0 <= T_begin < T_end <= horizon = 2000, got (6000, 14000) "
        "(for later dates give a longer horizon)"
    )
