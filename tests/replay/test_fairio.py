"""FAIRIO (the FAIRIO paper): disk-time shares, work conservation, Error_i, compensation within the window."""

import numpy as np
import pytest

from iosets.errors import ReplayError
from iosets.replay import SCHEDULER_PARAMS, replay_requests
from iosets.replay._device import Device
from iosets.replay._request_metrics import interval_bytes, share_error
from iosets.replay._trace import RequestArrays

DEVICE = Device()  # queue depth 1, 1 GB/s, 50 us per unit, 2 ms seek
SIZE = 65536
COST = DEVICE.overhead + SIZE / DEVICE.bandwidth + DEVICE.seek  # every request seeks: random offsets
WEIGHTS = np.array([3.0, 4.0, 5.0, 6.0])  # the paper's weights: 16.7 / 22.2 / 27.8 / 33.3 %


def make_trace(arrival, cls, *, seed=0) -> RequestArrays:
    """Random-offset 64 KiB requests (one stream per class), so every request costs COST (Condition 2)."""
    order = np.argsort(arrival, kind="stable")
    arrival, cls = np.asarray(arrival, float)[order], np.asarray(cls)[order].astype(np.int32)
    n = arrival.size
    offset = np.random.default_rng(seed).integers(0, 1 << 20, n).astype(np.int64) * SIZE * 16
    return RequestArrays(
        arrival=arrival,
        size=np.full(n, float(SIZE)),
        offset=offset,
        cls=cls,
        stream=cls.copy(),
        server=np.zeros(n, np.int32),
        phase=np.full(n, -1, np.int32),
        op=np.ones(n, np.int8),
        classes=np.arange(int(cls.max()) + 1),
        n_streams=int(cls.max()) + 1,
        n_servers=1,
        n_phases=0,
        order=np.arange(n),
    )


def backlogged(horizon, load=0.5, n_classes=4, seed=0) -> RequestArrays:
    """Each class arrives uniformly over [0, horizon] at `load` times the device's capacity."""
    rng = np.random.default_rng(seed)
    m = int(load / COST * horizon)
    arrival = np.concatenate([rng.uniform(0, horizon, m) for _ in range(n_classes)])
    return make_trace(arrival, np.repeat(np.arange(n_classes), m), seed=seed + 1)


def disk_time(trace, replay) -> np.ndarray:
    """Disk time of each request: completion - service start (queue depth 1: max(dispatch, previous completion))."""
    order = np.argsort(replay.complete, kind="stable")
    done = replay.complete[order]
    start = np.maximum(replay.dispatch[order], np.concatenate([[-np.inf], done[:-1]]))
    time = np.empty(trace.n)
    time[order] = done - start
    return time


def class_disk_time(trace, replay, start, end) -> np.ndarray:
    """Disk time per class of the requests completed in [start, end)."""
    inside = (replay.complete >= start) & (replay.complete < end)
    return np.bincount(trace.cls[inside], weights=disk_time(trace, replay)[inside], minlength=trace.classes.size)


def test_parameters_are_listed_in_c_order():
    assert list(SCHEDULER_PARAMS["fairio"]) == [
        "cycle_length",
        "window_cycles",
        "mode",
        "class_threshold",
        "storage_load",
        "compensate_idle",
    ]


@pytest.mark.parametrize("mode", [0, 1])
def test_four_backlogged_classes_get_disk_time_shares_of_their_weights(mode):
    # Section III-D: weights 3, 4, 5, 6 -> 16.7 / 22.2 / 27.8 / 33.3 % of the disk time
    horizon = 10.0
    trace = backlogged(horizon)
    replay = replay_requests(trace, "fairio", weights=WEIGHTS, device=DEVICE, cycle_length=0.1, mode=mode)
    disk = class_disk_time(trace, replay, 1.0, horizon)
    assert np.allclose(disk.sum(), horizon - 1.0, rtol=1e-3)  # the disk never idles while all are backlogged
    share = 100 * disk / disk.sum()
    assert np.abs(share - 100 * WEIGHTS / WEIGHTS.sum()).max() < 2.0


@pytest.mark.parametrize("mode", [0, 1])
def test_error_i_of_delivered_throughput_is_small(mode):
    # Section IV: Error_i = T_i / sum T - w_i / sum w; with equal costs per byte (Condition 2)
    # disk-time shares become throughput shares (the paper's varmail < 0.5 %, BTIO < 2 %)
    horizon = 10.0
    trace = backlogged(horizon, seed=3)
    replay = replay_requests(trace, "fairio", weights=WEIGHTS, device=DEVICE, cycle_length=0.1, mode=mode)
    error = share_error(interval_bytes(trace, replay.complete, 1.0, horizon), WEIGHTS)
    assert abs(error.sum()) < 1e-12
    assert np.abs(error).max() < 0.02
    unfair = replay_requests(trace, "fcfs", device=DEVICE)
    fcfs_error = share_error(interval_bytes(trace, unfair.complete, 1.0, horizon), WEIGHTS)
    assert np.abs(fcfs_error).max() > 0.08  # FCFS gives each class 25 %: 33.3 - 25 = 8.3 points


@pytest.mark.parametrize("load", [0.5, 0.2])
def test_aggregate_throughput_matches_fcfs(load):
    # work-conserving through fast-forwarding: every request costs the same, so the makespan is fcfs's
    # whether the classes stay backlogged (load 0.5 each) or not (0.2 each, 80 % of the device)
    trace = backlogged(8.0, load=load, seed=5)
    fcfs = replay_requests(trace, "fcfs", device=DEVICE).metrics.aggregate_throughput
    for mode in (0, 1):
        fairio = replay_requests(trace, "fairio", weights=WEIGHTS, device=DEVICE, cycle_length=0.1, mode=mode)
        assert fairio.metrics.aggregate_throughput == pytest.approx(fcfs, rel=0.04)
        assert fairio.metrics.aggregate_throughput == pytest.approx(fcfs, rel=1e-9)


def test_longer_windows_follow_the_weights_more_closely():
    # Section III-D: r shapes the error; the window keeps each class's deviation within about a cycle
    horizon = 20.0
    trace = backlogged(horizon, seed=7)
    target = 100 * WEIGHTS / WEIGHTS.sum()
    worst = {}
    for r in (5, 80):
        replay = replay_requests(trace, "fairio", weights=WEIGHTS, device=DEVICE, cycle_length=0.05, window_cycles=r)
        disk = class_disk_time(trace, replay, 1.0, horizon)
        worst[r] = np.abs(100 * disk / disk.sum() - target).max()
    assert worst[80] < 0.5
    assert worst[80] < worst[5]


@pytest.mark.parametrize("device", [Device(queue_depth=16), Device(iops=500.0)], ids=["depth-16", "iops"])
def test_shares_hold_with_a_deep_device_queue_and_in_iops_mode(device):
    # disk time is measured from completions (service start to end), whatever the depth
    horizon = 10.0
    trace = backlogged(horizon, seed=11)
    target = 100 * WEIGHTS / WEIGHTS.sum()
    for mode, bound in ((0, 2.0), (1, 0.5)):
        replay = replay_requests(trace, "fairio", weights=WEIGHTS, device=device, cycle_length=0.1, mode=mode)
        disk = class_disk_time(trace, replay, 1.0, horizon)
        assert np.abs(100 * disk / disk.sum() - target).max() < bound


@pytest.mark.parametrize(("mode", "r", "bound"), [(1, 20, 0.5), (0, 80, 1.0)])
def test_each_server_shares_its_own_disk(mode, r, bound):
    # every class sends half its requests to each of two servers, 0.5 x a device's capacity each
    horizon = 10.0
    trace = backlogged(horizon, load=1.0, seed=13)
    server = (np.arange(trace.n) % 2).astype(np.int32)
    split = RequestArrays(**{**trace.__dict__, "server": server, "n_servers": 2})
    replay = replay_requests(
        split,
        "fairio",
        weights=WEIGHTS,
        device=DEVICE,
        cycle_length=0.1,
        mode=mode,
        window_cycles=r,
    )
    time = np.empty(trace.n)
    for v in (0, 1):  # each device serves its own units one at a time
        mine = np.flatnonzero(server == v)
        order = mine[np.argsort(replay.complete[mine], kind="stable")]
        done = replay.complete[order]
        time[order] = done - np.maximum(replay.dispatch[order], np.concatenate([[-np.inf], done[:-1]]))
        inside = order[(done >= 1.0) & (done < horizon)]
        disk = np.bincount(trace.cls[inside], weights=time[inside], minlength=4)
        assert np.abs(100 * disk / disk.sum() - 100 * WEIGHTS / WEIGHTS.sum()).max() < bound


def idle_and_return(idle_from, back_at, horizon=9.0, seed=2):
    """Class 0 (weight 6): 0.35 x capacity until `idle_from`, idle, then a burst of 1.5 s of work at `back_at`
    and 0.5 x capacity after; classes 1-3 arrive at 0.5 x capacity throughout."""
    rng = np.random.default_rng(seed)
    m = int(0.5 / COST * horizon)
    arrival = [rng.uniform(0, horizon, m) for _ in range(3)]
    cls = [np.full(m, c) for c in (1, 2, 3)]
    before, burst, after = (
        int(0.35 / COST * idle_from),
        int(1.5 / COST),
        int(0.5 / COST * (horizon - back_at)),
    )
    arrival += [
        rng.uniform(0, idle_from, before),
        np.full(burst, back_at),
        rng.uniform(back_at, horizon, after),
    ]
    cls += [np.zeros(before + burst + after, int)]
    return make_trace(np.concatenate(arrival), np.concatenate(cls), seed=seed + 1)


def extra_after_return(trace, replay, weights, back_at, window):
    """Class 0's disk time beyond its weight share, accumulated from its return: (peak within a window, at +window)."""
    time = disk_time(trace, replay)
    order = np.argsort(replay.complete, kind="stable")
    order = order[replay.complete[order] >= back_at]
    done = replay.complete[order]
    extra = np.cumsum(np.where(trace.cls[order] == 0, time[order], 0)) - weights[0] / weights.sum() * np.cumsum(
        time[order]
    )
    inside = done <= back_at + window
    return extra[inside].max(), extra[inside][-1]


def test_idle_class_is_compensated_within_the_window_in_compensation_mode_only():
    weights = np.array([6.0, 3.0, 4.0, 5.0])
    idle_from, back_at, cycle, r = 3.0, 4.2, 0.05, 40
    window = cycle * r
    trace = idle_and_return(idle_from, back_at)
    params = {"weights": weights, "device": DEVICE, "cycle_length": cycle, "window_cycles": r}

    compensated = replay_requests(trace, "fairio", mode=0, compensate_idle=1, **params)
    idle = back_at - compensated.complete[(trace.cls == 0) & (trace.arrival < idle_from)].max()
    assert 0.9 < idle < 1.1 < window
    owed = weights[0] / weights.sum() * idle  # its weight share of the disk time it left to the others
    peak, after_window = extra_after_return(trace, compensated, weights, back_at, window)
    assert 0.75 * owed < peak < 1.3 * owed
    # the idle cycles leave the window before the compensation does: the extra is taken back
    assert abs(after_window) < 0.2 * owed

    proportional = replay_requests(trace, "fairio", mode=1, compensate_idle=1, **params)
    peak, _ = extra_after_return(trace, proportional, weights, back_at, window)
    assert peak < 0.1 * owed

    # the paper's Step 1: under-use with no pending request is the class's own doing, not compensated
    paper = replay_requests(trace, "fairio", mode=0, **params)
    peak, _ = extra_after_return(trace, paper, weights, back_at, window)
    assert peak < 0.25 * owed


def test_a_class_idle_longer_than_the_window_returns_without_history():
    weights = np.array([6.0, 3.0, 4.0, 5.0])
    back_at, cycle, r = 5.0, 0.05, 40
    trace = idle_and_return(1.0, back_at)
    replay = replay_requests(
        trace,
        "fairio",
        weights=weights,
        device=DEVICE,
        cycle_length=cycle,
        window_cycles=r,
        compensate_idle=1,
    )
    peak, _ = extra_after_return(trace, replay, weights, back_at, cycle * r)
    assert peak < 0.15 * weights[0] / weights.sum() * cycle * r


def test_class_threshold_defers_small_shares_without_starving_them():
    # cycles of ~5 requests: the weight-1 class's share (0.19 request) is below Class_threshold = 1, so it is
    # deferred; mode 1 carries the deferred share over (exact 1/25), mode 0 compensates it through the window,
    # where a class gets about one whole cycle per window at least (1/r = 5 %), a property of Compensation Mode
    trace = backlogged(6.0, seed=9)
    weights = np.array([1.0, 8.0, 8.0, 8.0])
    share = {}
    for mode in (0, 1):
        replay = replay_requests(trace, "fairio", weights=weights, device=DEVICE, cycle_length=0.01, mode=mode)
        disk = class_disk_time(trace, replay, 1.0, 6.0)
        share[mode] = 100 * disk[0] / disk.sum()
    assert share[1] == pytest.approx(4.0, abs=0.5)
    assert 3.5 < share[0] < 5.5


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("cycle_length", 0.0, "fairio: cycle_length must be > 0, got 0$"),
        ("window_cycles", 2.5, "fairio: window_cycles must be an integer in \\[1, 1000000\\], got 2.5$"),
        ("window_cycles", 0.0, "fairio: window_cycles must be an integer in \\[1, 1000000\\], got 0$"),
        ("mode", 2.0, "fairio: mode must be 0 or 1, got 2$"),
        ("class_threshold", -1.0, "fairio: class_threshold must be >= 0, got -1$"),
        ("storage_load", 0.5, "fairio: storage_load must be an integer in \\[0, 1000000000\\], got 0.5$"),
        ("compensate_idle", 0.5, "fairio: compensate_idle must be 0 or 1, got 0.5$"),
    ],
)
def test_bad_parameters_are_refused_by_name(name, value, message):
    with pytest.raises(ReplayError, match=message) as info:
        replay_requests(backlogged(0.1), "fairio", device=DEVICE, **{name: value})
    assert info.value.index == -1
