"""Closed-loop trace replay on hand-computed cases (issue #13, first acceptance bullet)."""

import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from engine_interrupt import interrupted_script

from iosets.errors import InputError, ReplayError
from iosets.replay import SCHEDULERS, Device, _engine, replay_requests, replay_trace

MB = 1_000_000
DEVICE = Device(queue_depth=1, bandwidth=1e6, overhead=0.0, seek=0.0)  # 1e6 bytes take 1 s


def site(rows):
    """rows: (job_id, rank, start, end, size, phase); phase None for a request outside every phase."""
    return pl.DataFrame(
        {
            "job_id": [r[0] for r in rows],
            "rank": [r[1] for r in rows],
            "op": "write",
            "offset": [k * 10 * MB for k in range(len(rows))],
            "size": [r[4] for r in rows],
            "start": [float(r[2]) for r in rows],
            "end": [float(r[3]) for r in rows],
            "file": [f"{r[0]}.{r[1]}" for r in rows],
            "phase": pl.Series([r[5] for r in rows], dtype=pl.Int64),
            "synthetic": [r[5] is None for r in rows],
        }
    )


def job(result, job_id):
    """The job's row of result.jobs as a dict."""
    return result.jobs.filter(pl.col("job_id") == job_id).row(0, named=True)


def phase_dates(result, job_id):
    """The job's replayed (start, end) per phase."""
    rows = result.phases.filter(pl.col("job_id") == job_id).sort("phase")
    return list(zip(rows["start"].to_list(), rows["end"].to_list(), strict=True))


def test_a_job_alone_keeps_its_compute_gap_and_has_stretch_one():
    result = replay_trace(site([("a", 0, 0, 1, MB, 0), ("a", 0, 6, 7, MB, 1)]), device=DEVICE)
    assert phase_dates(result, "a") == [(0.0, 1.0), (6.0, 7.0)]  # 1 + 5 + 1
    a = job(result, "a")
    assert (a["recorded_runtime"], a["runtime"], a["alone_runtime"]) == (7.0, 7.0, 7.0)
    assert (a["stretch"], a["io_slowdown"], a["wait"]) == (1.0, 1.0, 0.0)


def test_the_second_job_of_a_set_waits_and_its_later_phases_shift_by_the_wait():
    ops = site([("a", 0, 0, 1, MB, 0), ("b", 0, 0, 1, MB, 0), ("b", 0, 4, 5, MB, 1), ("b", 0, 7, 8, MB, 2)])
    result = replay_trace(ops, classes={"a": "s", "b": "s"}, device=DEVICE)
    assert phase_dates(result, "a") == [(0.0, 1.0)]
    # b's first phase ends at 2 s (a is served first), its next phases open 3 s and 2 s after: 1 s late
    assert phase_dates(result, "b") == [(0.0, 2.0), (5.0, 6.0), (8.0, 9.0)]
    recorded = result.phases.filter(pl.col("job_id") == "b")["recorded_start"].to_list()
    assert [s - r for (s, _), r in zip(phase_dates(result, "b"), recorded, strict=True)] == [0.0, 1.0, 1.0]
    b = job(result, "b")
    assert (b["recorded_runtime"], b["runtime"], b["alone_runtime"], b["wait"]) == (8.0, 9.0, 8.0, 1.0)
    assert b["stretch"] == 9 / 8 and b["io_slowdown"] == 4 / 3  # phases take 2 + 1 + 1 s against 1 + 1 + 1
    assert job(result, "a")["stretch"] == 1.0
    assert result.trace.classes.tolist() == ["s"]


def test_a_rank_keeps_its_think_time_alone_and_behind_another_job():
    rows = [("a", 0, 0, 1, MB, 0), ("a", 0, 3, 4, MB, 0)]
    alone = replay_trace(site(rows), device=DEVICE)
    assert alone.requests["release"].to_list() == [0.0, 3.0]
    assert alone.requests["complete"].to_list() == [1.0, 4.0]
    # b's 2 MB request, first in the trace, holds the device over [0, 2]: a's first request
    # ends at 3, its second is released 2 s later (think time) and ends at 6
    shared = replay_trace(site([("b", 0, 0, 2, 2 * MB, 0), *rows]), device=DEVICE)
    a = shared.requests.filter(pl.col("job_id") == "a")
    assert a["release"].to_list() == [0.0, 5.0]
    assert a["dispatch"].to_list() == [0.0, 5.0]  # fcfs hands requests to the device as they come
    assert a["complete"].to_list() == [3.0, 6.0]
    assert job(shared, "a") | {"job_id": None} == {
        "job_id": None,
        "recorded_runtime": 4.0,
        "runtime": 6.0,
        "alone_runtime": 4.0,
        "alone_ratio": 1.0,  # alone, a replays as recorded
        "stretch": 1.5,
        "io_slowdown": 1.5,
        "wait": 2.0,
    }


def test_a_rank_keeps_as_many_requests_outstanding_as_it_had():
    # the first two overlap (d = 2) and are both released at the opening; the third is
    # released by the first one's completion (it started as the first ended: think 0)
    ops = site([("a", 0, 0, 2, MB, 0), ("a", 0, 0, 2, MB, 0), ("a", 0, 2, 3, MB, 0)])
    result = replay_trace(ops, device=DEVICE)
    assert result.requests["release"].to_list() == [0.0, 0.0, 1.0]
    assert result.requests["complete"].to_list() == [1.0, 2.0, 3.0]
    # one at a time (each ends as the next starts), the third waits for the second
    serial = replay_trace(site([("a", 0, 0, 1, MB, 0), ("a", 0, 1, 2, MB, 0), ("a", 0, 2.5, 3, MB, 0)]), device=DEVICE)
    assert serial.requests["release"].to_list() == [0.0, 1.0, 2.5]


def test_wfq_without_feedback_matches_the_open_loop_replay_and_shares_equally():
    # every request of a rank overlaps the others: all are released at their recorded starts
    starts = [0.0, 0.5, 1.0, 1.5]
    rows = [(j, 0, s, 20, MB, 0) for j in ("a", "b") for s in starts]
    closed = replay_trace(site(rows), scheduler="wfq", device=DEVICE)
    assert closed.requests["release"].to_list() == closed.trace.arrival.tolist()
    open_loop = replay_requests(closed.trace, "wfq", device=DEVICE)
    np.testing.assert_array_equal(closed.requests["complete"].to_numpy(), open_loop.complete)
    done_by_4 = closed.requests.filter(pl.col("complete") <= 4.0).group_by("job_id").len().sort("job_id")
    assert done_by_4["len"].to_list() == [2, 2]


def test_requests_outside_phases_are_one_request_phases_gapped_like_any():
    ops = site([("a", 0, 0, 1, MB, 0), ("a", -1, 2, 3, MB, None), ("a", 0, 5, 6, MB, 1)])
    result = replay_trace(ops, device=DEVICE)
    assert phase_dates(result, "a") == [(0.0, 1.0), (2.0, 3.0), (5.0, 6.0)]
    assert job(result, "a")["runtime"] == 6.0


def three_jobs():
    """Three jobs, two ranks, overlapping requests, a request outside the phases."""
    rows = []
    for j, (job_id, base) in enumerate([("a", 0.0), ("b", 0.5), ("c", 1.0)]):
        for phase, t in enumerate([base, base + 10]):
            for rank in (0, 1):
                rows += [(job_id, rank, t + 0.1 * k, t + 0.1 * k + 0.3, (j + 1) * 100_000, phase) for k in range(4)]
        rows.append((job_id, -1, base + 6, base + 7, 50_000, None))
    return site(sorted(rows, key=lambda r: r[2]))


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_every_scheduler_completes_every_request_once_along_the_chains(scheduler):
    ops = three_jobs()
    sets = {"a": "x", "b": "x", "c": "y"}
    result = replay_trace(ops, scheduler=scheduler, classes=sets, device=Device(queue_depth=2, bandwidth=1e6))
    req = result.requests
    assert req.height == ops.height and sorted(req["row"].to_list()) == list(range(ops.height))
    assert req["complete"].is_finite().all() and (req["unit"] >= 0).all()
    assert (req["release"] <= req["dispatch"]).all() and (req["dispatch"] < req["complete"]).all()
    units = req.group_by("unit").agg(pl.col("complete").n_unique())
    assert units["complete"].max() == 1  # a request is completed once, with its unit
    # each phase opens at the previous one's replayed end + the recorded gap, ends at its last completion
    phases = result.phases.sort("job_id", "phase")
    for _, group in phases.group_by("job_id"):
        gaps = group["recorded_start"].to_numpy()[1:] - group["recorded_end"].to_numpy()[:-1]
        opened = group["end"].to_numpy()[:-1] + np.maximum(gaps, 0)
        np.testing.assert_allclose(group["start"].to_numpy()[1:], opened, rtol=0, atol=1e-9)
    last = req.group_by("job_id", "phase").agg(pl.col("complete").max())
    check = phases.join(last, on=["job_id", "phase"])
    assert (check["end"] == check["complete"]).all()
    assert (result.jobs["alone_runtime"] > 0).all() and result.jobs.height == 3


def test_bad_input_names_the_problem():
    ops = site([("a", 0, 0, 1, MB, 0)])
    with pytest.raises(InputError, match=r"site ops row 0: end: expected a date"):
        replay_trace(ops.with_columns(pl.lit(None, pl.Float64).alias("end")))
    with pytest.raises(InputError, match=r"classes: no class for jobs \['a'\]"):
        replay_trace(ops, classes={"b": "x"})
    with pytest.raises(InputError, match="classes: site ops have no column 'set'"):
        replay_trace(ops, classes="set")
    with pytest.raises(InputError, match="unknown scheduler 'lottery'"):
        replay_trace(ops, scheduler="lottery")


def engine_call(gate, prev, think=(0.0, 0.0), gap=(0.0, 1.0), phase=(0, 0), job=(0, 0)):
    """_engine.replay_trace on two 1-byte requests and two phases."""
    n, n_phases = 2, len(prev)
    i32 = np.int32
    return _engine.replay_trace(
        scheduler="fcfs", size=np.ones(n), offset=np.zeros(n, np.int64), cls=np.zeros(n, i32),
        stream=np.zeros(n, i32), server=np.zeros(n, i32), phase=np.array(phase, i32), op=np.zeros(n, np.int8),
        n_classes=1, n_streams=1, n_servers=1, n_phases=n_phases, gate=np.array(gate, np.int64),
        think=np.array(think), prev=np.array(prev, i32), gap=np.array(gap[:n_phases]),
        job=np.array(job[:n_phases], i32), device=Device(bandwidth=1.0, overhead=0.0, seek=0.0),
        weight=np.ones(1), reservation=np.zeros(1), limit=np.zeros(1), params=np.zeros(0),
        release=np.full(n, np.nan), dispatch=np.full(n, np.nan), complete=np.full(n, np.nan),
        unit=np.zeros(n, np.int64), phase_start=np.full(n_phases, np.nan), phase_end=np.full(n_phases, np.nan),
    )  # fmt: skip


def test_the_engine_checks_the_chains():
    assert engine_call(gate=[-1, 0], prev=[-1]) == 2
    with pytest.raises(ReplayError, match=r"earlier request of its phase.*\(request 1\)$") as info:
        engine_call(gate=[-1, 1], prev=[-1])
    assert info.value.index == 1
    with pytest.raises(ReplayError, match=r"\(request 0\)$"):
        engine_call(gate=[-1, -1], prev=[-1], think=(-1.0, 0.0))
    with pytest.raises(ReplayError, match=r"\(request 1\)$"):  # a gate in another phase
        engine_call(gate=[-1, 0], prev=[-1, 0], phase=(0, 1))
    with pytest.raises(ReplayError, match=r"earlier phase of its job.*\(phase 1\)$"):
        engine_call(gate=[-1, -1], prev=[-1, 0], phase=(0, 1), job=(0, 1))
    with pytest.raises(ReplayError, match=r"a phase needs a request.*\(phase 1\)$"):  # phase 1 is empty
        engine_call(gate=[-1, 0], prev=[-1, 0])
    assert engine_call(gate=[-1, -1], prev=[-1, 0], phase=(0, 1), gap=(2.0, 3.0)) == 2


def test_the_jobs_contend_in_the_small_site_trace():
    result = replay_trace(three_jobs(), device=Device(queue_depth=2, bandwidth=1e6))
    assert (result.jobs["wait"] > 0).any() and (result.jobs["stretch"] >= 1 - 1e-12).all()


# One phase whose requests are all released at its opening: a class of 1 000 000 requests whose weight
# sends one per round, and 1 000 classes of one request each that waits billions of rounds, so that
# every wfq pick passes the 1 000 waiting queues before it sends: about 10 s uninterrupted.
SLOW_PHASE = """
import numpy as np
from iosets.replay import Device, _engine
waiting, n = 1_000, 1_001_000
i32 = np.int32
zeros = np.zeros(n, i32)
cls = np.concatenate([np.arange(1, waiting + 1), np.zeros(n - waiting)]).astype(i32)
args = dict(scheduler="wfq", size=np.full(n, 4096.0), offset=np.zeros(n, np.int64), cls=cls, stream=zeros,
    server=zeros, phase=zeros, op=np.zeros(n, np.int8), n_classes=waiting + 1, n_streams=1, n_servers=1, n_phases=1,
    gate=np.full(n, -1), think=np.zeros(n), prev=np.full(1, -1, i32), gap=np.zeros(1), job=np.zeros(1, i32),
    device=Device(bandwidth=1e9, overhead=0.0, seek=0.0), weight=np.r_[4096.0, np.full(waiting, 1e-6)],
    reservation=np.zeros(waiting + 1), limit=np.zeros(waiting + 1), params=np.zeros(0), release=np.full(n, np.nan),
    dispatch=np.full(n, np.nan), complete=np.full(n, np.nan), unit=np.zeros(n, np.int64),
    phase_start=np.full(1, np.nan), phase_end=np.full(1, np.nan))
"""


@pytest.mark.timing
def test_ctrl_c_stops_a_long_closed_loop_replay():
    code = interrupted_script(SLOW_PHASE, "_engine.replay_trace(**args)", "_engine.replay_trace")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = child.communicate(timeout=60)  # a bound on a hang, not a speed claim
    finally:
        child.kill()
    assert child.returncode != 0 and "done" not in out
    call_line = code.splitlines().index("    _engine.replay_trace(**args)") + 1
    assert err.rstrip().endswith(f"line {call_line}, in <module>\nKeyboardInterrupt")  # raised in the C call


def reference_gates(group, start, end):
    """The gates by sorting the start and end events of each group: the level's maximum is its depth."""
    n = group.size
    times = np.concatenate([start, end])
    delta = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)])
    tie = np.concatenate([np.ones(n), np.where(end > start, 0.0, 2.0)])  # ends first, zero-length last
    groups = np.concatenate([group, group])
    order = np.lexsort((tie, times, groups))
    level = np.cumsum(delta[order])
    depth = np.ones(group.max() + 1, np.int64)
    np.maximum.at(depth, groups[order], level)
    gate = np.full(n, -1, np.int64)
    for g in range(depth.size):
        members = np.flatnonzero(group == g)
        gate[members[depth[g] :]] = members[: members.size - depth[g]]
    return gate


def test_gates_keep_each_ranks_recorded_depth_on_random_traces():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n, n_groups = int(rng.integers(1, 500)), int(rng.integers(1, 20))
        start = np.sort(np.round(rng.random(n) * rng.choice([1, 10]), int(rng.integers(0, 3))))
        end = start + np.round(rng.random(n), int(rng.integers(0, 3))) * (rng.random(n) < 0.8)  # ties, zero lengths
        group = rng.integers(0, n_groups, n).astype(np.int32)
        gate = np.empty(n, np.int64)
        _engine.chain_gates(group=group, n_groups=n_groups, start=start, end=end, gate=gate)
        np.testing.assert_array_equal(gate, reference_gates(group, start, end))
    with pytest.raises(ValueError, match="request 1: group out of range"):
        _engine.chain_gates(
            group=np.array([0, 2], np.int32), n_groups=2, start=np.zeros(2), end=np.ones(2), gate=np.empty(2, np.int64)
        )
