"""aIOLi (the aIOLi paper): offset-sorted per-file queues, aggregation, reads first, waits on the shift phenomenon."""

import numpy as np
import pytest

from iosets.errors import ReplayError
from iosets.replay import SCHEDULER_PARAMS, replay_requests
from iosets.replay._device import Device
from iosets.replay._trace import RequestArrays

KIB = 1024
SIZE = 64 * KIB
DEVICE = Device()  # queue depth 1, 1 GB/s, 50 us per unit, 2 ms seek
COST = DEVICE.overhead + SIZE / DEVICE.bandwidth  # a 64 KiB request without seek


def make_trace(arrival, offset, *, cls=None, stream=None, op=None, size=SIZE) -> RequestArrays:
    """Requests sorted by arrival; one file (stream 0) and writes unless told."""
    arrival = np.asarray(arrival, float)
    n = arrival.size
    order = np.argsort(arrival, kind="stable")
    cls = np.zeros(n, np.int32) if cls is None else np.asarray(cls, np.int32)
    stream = np.zeros(n, np.int32) if stream is None else np.asarray(stream, np.int32)
    op = np.ones(n, np.int8) if op is None else np.asarray(op, np.int8)
    return RequestArrays(
        arrival=arrival[order],
        size=np.full(n, float(size)),
        offset=np.asarray(offset, np.int64)[order],
        cls=cls[order],
        stream=stream[order],
        server=np.zeros(n, np.int32),
        phase=np.full(n, -1, np.int32),
        op=op[order],
        classes=np.arange(int(cls.max()) + 1),
        n_streams=int(stream.max()) + 1,
        n_servers=1,
        n_phases=0,
        order=order.astype(np.int64),
    )


def region_writers(processes=8, count=200, period=0.008, seed=0) -> RequestArrays:
    """Each process writes its own contiguous region of one file, one 64 KiB request per period (jittered),
    the processes' arrivals interleaved."""
    rng = np.random.default_rng(seed)
    arrival = np.concatenate(
        [
            p * period / processes + np.arange(count) * period + rng.uniform(0, 0.2 * period, count)
            for p in range(processes)
        ]
    )
    offset = np.concatenate([p * count * SIZE + np.arange(count) * SIZE for p in range(processes)])
    return make_trace(arrival, offset, cls=np.repeat(np.arange(processes), count))


def strided_writers(processes=8, count=300, period=0.008, jitter=0.0005, seed=0) -> RequestArrays:
    """The shift phenomenon: at each step every process writes the next block of an interleaved pattern
    (block k * processes + p), the processes slightly shifted in time."""
    rng = np.random.default_rng(seed)
    arrival = np.concatenate([np.arange(count) * period + rng.uniform(0, jitter, count) for _ in range(processes)])
    offset = np.concatenate([(np.arange(count) * processes + p) * SIZE for p in range(processes)])
    return make_trace(arrival, offset, cls=np.repeat(np.arange(processes), count))


def units(replay):
    """Requests of each dispatched unit, in dispatch order."""
    order = np.lexsort((np.arange(replay.trace.n), replay.unit))
    bounds = np.flatnonzero(np.diff(replay.unit[order])) + 1
    return np.split(order, bounds)


def check_units(replay, max_aggregation):
    """Every unit is a contiguous run of one stream and one op, within max_aggregation bytes (or one request)."""
    trace = replay.trace
    for members in units(replay):
        members = members[np.argsort(trace.offset[members], kind="stable")]
        assert np.all(
            trace.offset[members][1:] == trace.offset[members][:-1] + trace.size[members][:-1].astype(np.int64)
        )
        assert np.unique(trace.stream[members]).size == 1 and np.unique(trace.op[members]).size == 1
        assert members.size == 1 or trace.size[members].sum() <= max_aggregation
        assert np.unique(replay.dispatch[members]).size == 1


def test_parameters_are_listed_in_c_order():
    assert SCHEDULER_PARAMS["aioli"] == {
        "quantum_step": 65536.0,
        "max_aggregation": 1048576.0,
        "max_wait": 0.0009,
    }


def test_interleaved_region_writers_beat_fcfs_by_aggregating():
    trace = region_writers()
    offered = 8 * SIZE / 0.008  # 65.5 MB/s
    fcfs = replay_requests(trace, "fcfs", device=DEVICE)
    # fcfs alternates regions: every request pays the seek, the device saturates at SIZE / (COST + seek)
    assert fcfs.metrics.aggregate_throughput == pytest.approx(SIZE / (COST + DEVICE.seek), rel=0.01)
    aioli = replay_requests(trace, "aioli", device=DEVICE)
    assert aioli.metrics.mean_aggregation_size > 1.5
    assert aioli.metrics.aggregate_throughput > 1.8 * fcfs.metrics.aggregate_throughput
    assert aioli.metrics.aggregate_throughput == pytest.approx(offered, rel=0.05)  # it keeps up with arrivals
    check_units(aioli, 1048576)


def test_aggregation_is_capped_by_max_aggregation():
    trace = region_writers(period=0.004)
    aioli = replay_requests(trace, "aioli", device=DEVICE, max_aggregation=4 * SIZE)
    check_units(aioli, 4 * SIZE)
    assert max(len(u) for u in units(aioli)) == 4


def test_offset_order_inside_a_queue():
    # a first write holds the device; ten non-contiguous writes arrive in scrambled offset order meanwhile
    rng = np.random.default_rng(1)
    offsets = rng.permutation(10) * 2 * SIZE + 100 * SIZE
    trace = make_trace(np.r_[0.0, 1e-4 + 1e-5 * np.arange(10)], np.r_[0, offsets])
    replay = replay_requests(trace, "aioli", device=DEVICE)
    served = trace.offset[np.argsort(replay.dispatch, kind="stable")]
    assert served[0] == 0
    assert np.all(np.diff(served[1:]) > 0)
    fcfs = replay_requests(trace, "time-order", device=DEVICE)
    assert np.array_equal(trace.offset[np.argsort(fcfs.dispatch, kind="stable")][1:], offsets)


def test_reads_before_writes_when_both_wait():
    # writes arrive first, reads later, all while a first request holds the device
    writes = 100 * SIZE + np.arange(5) * 2 * SIZE
    reads = 10 * SIZE + np.arange(5) * 2 * SIZE
    arrival = np.r_[0.0, 1e-4 + 1e-5 * np.arange(5), 2e-4 + 1e-5 * np.arange(5)]
    trace = make_trace(arrival, np.r_[0, writes, reads], op=np.r_[1, np.ones(5), np.zeros(5)])
    replay = replay_requests(trace, "aioli", device=DEVICE)
    order = np.argsort(replay.dispatch, kind="stable")[1:]
    assert np.array_equal(trace.op[order], np.r_[np.zeros(5), np.ones(5)])
    assert np.array_equal(trace.offset[order], np.r_[reads, writes])


def test_fifo_across_files_offset_order_within():
    # while request 0 holds the device, files 3, 1, 2, 0, 3, 1 get one request each: a file offers its
    # lowest offset, and the files go oldest offered request first
    arrival = np.r_[0.0, 1e-4 + 1e-5 * np.arange(6)]
    stream = np.r_[0, 3, 1, 2, 0, 3, 1]
    trace = make_trace(arrival, np.r_[0, 50, 40, 30, 20, 10, 5] * SIZE, stream=stream)
    replay = replay_requests(trace, "aioli", device=DEVICE)
    # file 3 offers request 5 (offset 10) before request 1, file 1 request 6 (offset 5) before request 2
    assert np.array_equal(np.argsort(replay.dispatch, kind="stable"), [0, 3, 4, 5, 1, 6, 2])


def test_shift_wait_improves_aggregation():
    # slightly shifted processes: without waiting, aIOLi serves whatever part of a step has arrived;
    # waiting up to max_wait (AGIOS default 0.9 ms) for the expected contiguous block gathers the whole step
    trace = strided_writers()
    offered = 8 * SIZE / 0.008
    eager = replay_requests(trace, "aioli", device=DEVICE, max_wait=0.0)
    patient = replay_requests(trace, "aioli", device=DEVICE)
    assert eager.metrics.mean_aggregation_size < 3.5
    assert patient.metrics.mean_aggregation_size > 7.5  # close to the 8 blocks of a step
    assert patient.metrics.aggregate_throughput == pytest.approx(offered, rel=0.03)
    assert patient.metrics.aggregate_throughput >= 0.99 * eager.metrics.aggregate_throughput
    # fewer seeks: the wait costs less than it saves, requests complete sooner
    assert np.median(patient.complete - trace.arrival) < np.median(eager.complete - trace.arrival)
    check_units(patient, 1048576)
    fcfs = replay_requests(trace, "fcfs", device=DEVICE)
    assert patient.metrics.aggregate_throughput > 1.8 * fcfs.metrics.aggregate_throughput


@pytest.mark.parametrize(
    ("max_wait", "max_aggregation", "run", "delay"),
    [
        (
            0.003,
            1048576,
            4,
            0.003,
        ),  # waits its whole budget: the 3 successors of the next 3 ms join
        (0.003, 2 * SIZE, 2, 0.001),  # stops waiting once the unit reaches max_aggregation
        (0.0005, 1048576, 1, 0.0),  # the successor, expected in 1 ms, is beyond the budget: no wait
        (0.0, 1048576, 1, 0.0),
    ],
)
def test_waits_are_bounded_on_the_simulated_clock(max_wait, max_aggregation, run, delay):
    # one sequential writer, a request every 1 ms on an idle device (0.12 ms per request): after the first
    # request the file knows its successors come 1 ms apart
    count = 1 + 4 * 50
    trace = make_trace(np.arange(count) * 0.001, np.arange(count) * SIZE)
    device = Device(seek=0.0)
    replay = replay_requests(trace, "aioli", device=device, max_wait=max_wait, max_aggregation=max_aggregation)
    sizes = [len(u) for u in units(replay)]
    assert sizes[0] == 1  # nothing learnt yet
    assert sizes[1:-1] == [run] * (len(sizes) - 2)
    wait = replay.dispatch - trace.arrival
    assert wait.max() == pytest.approx(delay, abs=1e-9)
    assert wait.max() <= max_wait + 1e-12


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("quantum_step", 0.0, "aioli: quantum_step must be > 0, got 0$"),
        ("max_aggregation", -1.0, "aioli: max_aggregation must be > 0, got -1$"),
        ("max_wait", -1e-3, "aioli: max_wait must be >= 0, got -0.001$"),
        ("max_wait", float("inf"), "aioli: max_wait must be >= 0, got inf$"),
    ],
)
def test_bad_parameters_are_refused_by_name(name, value, message):
    with pytest.raises(ReplayError, match=message) as info:
        replay_requests(make_trace([0.0], [0]), "aioli", device=DEVICE, **{name: value})
    assert info.value.index == -1
