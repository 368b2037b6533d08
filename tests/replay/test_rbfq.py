"""RBFQ (the RBFQ paper): the paper's worked examples and closed forms, replayed in C.

Capacities are modelled with a fixed-IOPS device (every request costs 1 / iops)
or, for bytes and per-server capacities, a bandwidth device without overhead
or seek. Clients are backlogged from t = 0 unless said otherwise; service is
counted over an interval where every client still has requests queued.
"""

import numpy as np
import pytest

from iosets.errors import InputError, ReplayError
from iosets.replay import Device, RequestArrays, replay_requests
from iosets.replay._request_metrics import interval_bytes

MB = 1e6


def make_trace(arrival, cls, server=None, size=None) -> RequestArrays:
    """A trace straight from arrays (class c is client c; one stream per client)."""
    arrival = np.asarray(arrival, dtype=np.float64)
    order = np.argsort(arrival, kind="stable")
    n = arrival.size
    cls = np.asarray(cls, dtype=np.int32)[order]
    server = np.zeros(n, np.int32) if server is None else np.asarray(server, dtype=np.int32)[order]
    size = np.full(n, MB) if size is None else np.asarray(size, dtype=np.float64)[order]
    n_classes = int(cls.max()) + 1
    return RequestArrays(
        arrival=arrival[order],
        size=size,
        offset=np.zeros(n, np.int64),
        cls=cls,
        stream=cls.copy(),
        server=server,
        phase=np.full(n, -1, np.int32),
        op=np.zeros(n, np.int8),
        classes=np.arange(n_classes),
        n_streams=n_classes,
        n_servers=int(server.max()) + 1,
        n_phases=0,
        order=order.astype(np.int64),
    )


def backlogged(counts) -> RequestArrays:
    """``counts[c]`` requests of client c, all arriving at t = 0."""
    cls = np.repeat(np.arange(len(counts)), counts)
    return make_trace(np.zeros(cls.size), cls)


def served(trace, result, start, end, server=None) -> np.ndarray:
    """Requests per client completed in [start, end) (at one server if given), per second."""
    inside = (result.complete >= start) & (result.complete < end)
    if server is not None:
        inside &= trace.server == server
    return np.bincount(trace.cls[inside], minlength=trace.classes.size) / (end - start)


def allocation(minimum, weight, capacity) -> np.ndarray:
    """The RBFQ Scheduling Property (section 3, Appendix B) in closed form."""
    minimum, weight = np.asarray(minimum, float), np.asarray(weight, float)
    if capacity <= minimum.sum():
        return capacity * minimum / minimum.sum()
    order = np.argsort(minimum / weight, kind="stable")
    m, w = minimum[order], weight[order]
    # critical capacities C_k = (M_k/w_k) sum_{i<=k} w_i + sum_{i>k} M_i
    critical = m / w * np.cumsum(w) + (m.sum() - np.cumsum(m))
    k = int(np.searchsorted(critical, capacity, side="right"))  # clients 1..k get weighted service
    share = np.where(np.arange(m.size) < k, w * (capacity - m[k:].sum()) / w[:k].sum(), m)
    result = np.empty_like(share)
    result[order] = share
    return result


# Table 1: weights 1:5, minimum 1 MB/s each -> B/2, B/2 | 1, B-1 | B/6, 5B/6
TABLE_1 = [(1.5, [0.75, 0.75]), (3.0, [1.0, 2.0]), (12.0, [2.0, 10.0])]


@pytest.mark.parametrize(("capacity", "expected"), TABLE_1)
def test_table_1_allocation_in_bytes(capacity, expected):
    horizon = 400.0
    trace = backlogged([int(capacity * horizon)] * 2)
    device = Device(bandwidth=capacity * MB, overhead=0.0, seek=0.0)
    result = replay_requests(trace, "rbfq", weights=[1, 5], reservations=[MB, MB], device=device, cost_bytes=1)
    rate = interval_bytes(trace, result.complete, 0.0, horizon) / horizon / MB
    np.testing.assert_allclose(allocation([1, 1], [1, 5], capacity), expected)
    np.testing.assert_allclose(rate, expected, rtol=0.02)


@pytest.mark.parametrize(("capacity", "expected"), TABLE_1)
def test_table_1_allocation_in_ios(capacity, expected):
    horizon = 400.0
    trace = backlogged([int(capacity * horizon)] * 2)
    device = Device(iops=capacity)
    result = replay_requests(trace, "rbfq", weights=[1, 5], reservations=[1, 1], device=device)
    np.testing.assert_allclose(served(trace, result, 0.0, horizon), expected, rtol=0.02)


# Figure 4: c1..c4 with M = 50, 120, 75, 25 and w = 10, 20, 5, 1 (the paper lists
# them first as 120, 75, 50, 25 / 20, 5, 10, 1: the same pairs, before renumbering
# by M/w). Critical capacities 270, 280, 550, 900.
FIGURE_4_M = [50, 120, 75, 25]
FIGURE_4_W = [10, 20, 5, 1]


@pytest.mark.parametrize(
    ("capacity", "expected"),
    [(900, [250, 500, 125, 25]), (725, [200, 400, 100, 25]), (310, [70, 140, 75, 25])],
)
def test_figure_4_allocation(capacity, expected):
    horizon = 20.0
    trace = backlogged([int(capacity * horizon)] * 4)
    result = replay_requests(trace, "rbfq", weights=FIGURE_4_W, reservations=FIGURE_4_M, device=Device(iops=capacity))
    np.testing.assert_allclose(allocation(FIGURE_4_M, FIGURE_4_W, capacity), expected)
    np.testing.assert_allclose(served(trace, result, 0.0, horizon), expected, rtol=0.02)


def test_figure_4_closed_form_between_critical_capacities():
    # C_2 = 280: c1, c2 at normalized service 6; C_3 = 550: c1..c3 at 15;
    # below sum(M) = 270 the shares follow M
    np.testing.assert_allclose(allocation(FIGURE_4_M, FIGURE_4_W, 280), [60, 120, 75, 25])
    np.testing.assert_allclose(allocation(FIGURE_4_M, FIGURE_4_W, 550), [150, 300, 75, 25])
    np.testing.assert_allclose(allocation(FIGURE_4_M, FIGURE_4_W, 135), [25, 60, 37.5, 12.5])


@pytest.mark.parametrize("capacity", [135, 280, 550])
def test_figure_4_between_critical_capacities(capacity):
    horizon = 40.0
    trace = backlogged([int(capacity * horizon)] * 4)
    result = replay_requests(trace, "rbfq", weights=FIGURE_4_W, reservations=FIGURE_4_M, device=Device(iops=capacity))
    expected = allocation(FIGURE_4_M, FIGURE_4_W, capacity)
    np.testing.assert_allclose(served(trace, result, 0.0, horizon), expected, rtol=0.02)


@pytest.mark.parametrize("seed", range(12))
def test_random_backlogged_clients_get_the_closed_form(seed):
    # the RBFQ Scheduling Property for random minimums, weights and capacities,
    # from below sum(M) (shares follow M) to far above C_n (shares follow w)
    rng = np.random.default_rng(seed)
    n_clients = int(rng.integers(2, 7))
    minimum = rng.integers(5, 100, n_clients).astype(float)
    weight = rng.integers(1, 20, n_clients).astype(float)
    capacity = float(rng.uniform(0.5, 3.0) * minimum.sum())
    horizon = 40000 / capacity
    trace = backlogged([int(capacity * horizon * 1.1)] * n_clients)
    result = replay_requests(trace, "rbfq", weights=weight, reservations=minimum, device=Device(iops=capacity))
    expected = allocation(minimum, weight, capacity)
    np.testing.assert_allclose(served(trace, result, 0.0, horizon), expected, rtol=0.01)


def test_table_3_tag_schedule():
    # M = 20, 40 IOPS, w = 3:1, C = 100 IOPS: every 50 ms c1 c2 c1(global) c2 c1(global)
    trace = backlogged([700, 700])
    device = Device(iops=100)
    result = replay_requests(trace, "rbfq", weights=[3, 1], reservations=[20, 40], device=device)
    order = np.argsort(result.dispatch, kind="stable")
    assert trace.cls[order[:15]].tolist() == [0, 1, 0, 1, 0] * 3
    np.testing.assert_allclose(result.dispatch[order[:15]], np.arange(15) * 0.01, atol=1e-9)
    np.testing.assert_allclose(served(trace, result, 0.0, 5.0), [60, 40], rtol=0.02)


def test_upper_bound_caps_a_client():
    trace = backlogged([2000, 2000])
    result = replay_requests(trace, "rbfq", limits=[10, 0], device=Device(iops=100))
    np.testing.assert_allclose(served(trace, result, 0.0, 15.0), [10, 90], rtol=0.02)
    # alone, the capped client leaves the device idle: one request every 100 ms
    alone = backlogged([50])
    result = replay_requests(alone, "rbfq", limits=[10], device=Device(iops=100))
    np.testing.assert_allclose(np.diff(np.sort(result.dispatch)), 0.1, atol=1e-9)
    assert result.complete.max() == pytest.approx(4.9 + 0.01)


def test_upper_bound_in_bytes_per_second():
    trace = backlogged([400, 400])
    device = Device(bandwidth=10 * MB, overhead=0.0, seek=0.0)
    result = replay_requests(trace, "rbfq", limits=[2 * MB, 0], device=device, cost_bytes=1)
    rate = interval_bytes(trace, result.complete, 0, 20) / 20 / MB
    np.testing.assert_allclose(rate, [2, 8], rtol=0.02)


def burst_latency(sigma: float) -> float:
    """Closed form: a burst of 128 meets a backlogged client of equal weight at a
    1000 IOPS device, 0.5 ms into the backlogged client's request. With credit
    sigma the burst's tags start sigma / w before the other head: its first
    sigma + 1 requests (the last ties, lower class first) go back to back, then
    the two alternate."""
    j = np.arange(128)
    done = np.where(j <= sigma, j + 1, sigma + 1 + 2 * (j - sigma))
    return 0.5e-3 + done.mean() * 1e-3


def bursty_replay(sigma: float):
    """Seed 001, Table 6: a client sends 128 IOs every 400 ms next to a backlogged one
    (equal weights, 1000 IOPS). Returns the bursty client's mean latency and both rates."""
    period, bursts = 0.4, 12
    starts = 0.0005 + period * np.arange(1, bursts + 1)
    steady = (bursts + 1) * period * 1000
    arrival = np.concatenate([np.repeat(starts, 128), np.zeros(int(steady))])
    cls = np.concatenate([np.zeros(bursts * 128, int), np.ones(int(steady), int)])
    trace = make_trace(arrival, cls)
    result = replay_requests(trace, "rbfq", device=Device(iops=1000), idle_credit=sigma)
    latency = (result.complete - trace.arrival)[trace.cls == 0]
    return latency.mean(), served(trace, result, period, (bursts + 1) * period)


@pytest.mark.parametrize("sigma", [1, 64])
def test_idle_credit_latency_closed_form(sigma):
    latency, rate = bursty_replay(sigma)
    assert latency == pytest.approx(burst_latency(sigma), rel=0.02)
    # the bursty client's throughput is its arrival rate, whatever the credit
    np.testing.assert_allclose(rate, [320, 680], rtol=0.02)


def test_idle_credits_lower_a_bursty_clients_latency():
    # Table 6: sigma = 64 serves the burst sooner than sigma = 1 (30.8 vs 49 ms there;
    # 80.75 vs 127.5 ms here), at the same throughput
    (short, rate_64), (long, rate_1) = bursty_replay(64), bursty_replay(1)
    assert short < 0.7 * long
    np.testing.assert_allclose(rate_64, rate_1, rtol=0.01)


def test_tag_adjustment_lets_a_late_client_compete_at_once():
    # A alone for 10 s pushes its global tags 1000 s ahead of real time; B arrives at
    # t = 10: without adjustment B would take the whole device until its tags catch up
    arrival = np.concatenate([np.zeros(2000), np.full(1000, 10.0)])
    trace = make_trace(arrival, np.repeat([0, 1], [2000, 1000]))
    result = replay_requests(trace, "rbfq", device=Device(iops=100))
    np.testing.assert_allclose(served(trace, result, 0.0, 10.0), [100, 0])
    np.testing.assert_allclose(served(trace, result, 10.0, 12.0), [50, 50], rtol=0.02)


def hot_spot(capacity_2: float, distributed: float):
    """Section 2, Figure 3: c1 spread over S1 and S2, c2 only on S2; equal weights,
    20 IOPS reserved for each client at each server; S1 serves 100 IOPS."""
    horizon = 40.0
    n1, n2 = int(100 * horizon * 1.5), int(capacity_2 * horizon * 1.5)
    cls = np.repeat([0, 0, 1], [n1, n2, n2])
    server = np.repeat([0, 1, 1], [n1, n2, n2])
    # 1 request = 1 IO; S1 does 100 IOPS, S2 capacity_2 IOPS
    size = np.where(server == 0, MB, MB * 100 / capacity_2)
    trace = make_trace(np.zeros(cls.size), cls, server, size)
    device = Device(bandwidth=100 * MB, overhead=0.0, seek=0.0)
    result = replay_requests(trace, "rbfq", reservations=[20, 20], device=device, distributed=distributed)
    return [served(trace, result, 0.0, horizon, server=s) for s in (0, 1)]


@pytest.mark.parametrize(
    ("capacity_2", "c1_at_s2", "c2_at_s2"),
    [
        (100, 20, 80),  # the paper: c1 gets 120 (100 + its 20 minimum at S2), c2 80
        (140, 20, 120),  # the paper: each client 120 IOPS
        (200, 50, 150),  # global 1:1 closed form: c1 100 + 50 = c2 150
    ],
)
def test_hot_spot_distributed_delta(capacity_2, c1_at_s2, c2_at_s2):
    s1, s2 = hot_spot(capacity_2, distributed=1)
    np.testing.assert_allclose(s1, [100, 0], rtol=0.02)
    np.testing.assert_allclose(s2, [c1_at_s2, c2_at_s2], rtol=0.02)


def test_hot_spot_without_delta_is_locally_fair():
    # each server alone splits S2 1:1, starving c2 globally (150 vs 50)
    s1, s2 = hot_spot(100, distributed=0)
    np.testing.assert_allclose(s1 + s2, [150, 50], rtol=0.02)


def test_bad_parameters():
    trace = backlogged([3, 3])
    with pytest.raises(InputError, match="^rbfq: unknown parameters \\['sigma'\\]; expected one of cost_bytes, "):
        replay_requests(trace, "rbfq", sigma=2)
    with pytest.raises(ReplayError, match="^rbfq: cost_bytes must be 0 or 1, got 2$"):
        replay_requests(trace, "rbfq", cost_bytes=2)
    with pytest.raises(ReplayError, match="^rbfq: idle_credit must be >= 0, got -1$"):
        replay_requests(trace, "rbfq", idle_credit=-1)
    with pytest.raises(ReplayError, match="^rbfq: distributed must be 0 or 1, got nan$"):
        replay_requests(trace, "rbfq", distributed=float("nan"))
    with pytest.raises(ReplayError, match="reservation"):
        replay_requests(trace, "rbfq", reservations=[-1, 0])
    with pytest.raises(ReplayError, match="limit"):
        replay_requests(trace, "rbfq", limits=[0, np.inf])


def test_unused_classes_and_servers_change_nothing():
    # many (server, class) pairs without requests take the sparse flow numbering
    rng = np.random.default_rng(3)
    n = 3000
    cls, server = rng.integers(0, 6, n), rng.integers(0, 3, n)
    arrival = np.sort(rng.exponential(1 / 900, n).cumsum())
    weight, reservation = rng.uniform(1, 5, 6), rng.uniform(0, 60, 6)
    limit = np.where(np.arange(6) == 2, 40.0, 0.0)
    kwargs = dict(device=Device(iops=300, queue_depth=2), idle_credit=4)
    small = replay_requests(
        make_trace(arrival, cls, server),
        "rbfq",
        weights=weight,
        reservations=reservation,
        limits=limit,
        **kwargs,
    )
    spread = 5000 * cls  # same class order, 25001 classes, 6 used
    big = make_trace(arrival, spread, 7 * server)

    def expand(values):
        return np.repeat(values, 5000)[: big.classes.size]

    result = replay_requests(
        big,
        "rbfq",
        weights=expand(weight),
        reservations=expand(reservation),
        limits=expand(limit),
        **kwargs,
    )
    np.testing.assert_array_equal(result.dispatch, small.dispatch)
    np.testing.assert_array_equal(result.complete, small.complete)
