"""WFQ's pick visits only the non-empty queues, with the same dispatch order as AGIOS's full round robin.

The reference below is the pick as it was before the bitmap of non-empty queues: it walks
every class in round-robin order, visiting the empty ones (which resets their credit), and
skips the rounds in which no queue can send from the second wrap of a pick on. It runs
inside a pure-Python copy of the request engine's open loop (arrivals, completions, queue
depth, device cost), so the C replay and the reference must agree on every date and unit.
"""

import dataclasses
import heapq
import math
from collections import deque

import numpy as np
import pytest

from iosets.replay import Device, replay_requests
from iosets.replay._trace import RequestArrays


class ReferenceWfq:
    """WFQ (and iosets-wfq's set exclusivity with ``exclusive``) with the full round robin of every pick."""

    def __init__(self, trace: RequestArrays, weight: np.ndarray, exclusive: bool):
        self.trace, self.weight, self.exclusive = trace, weight.tolist(), exclusive
        n_classes = trace.classes.size
        shape = (trace.n_servers, n_classes)
        self.queue = [[deque() for _ in range(n_classes)] for _ in range(trace.n_servers)]
        self.amount, self.credit = np.zeros(shape).tolist(), np.zeros(shape).tolist()
        self.in_round = np.zeros(shape, bool).tolist()
        self.current, self.pending = [0] * trace.n_servers, [0] * trace.n_servers
        self.phase_left = np.bincount(trace.phase[trace.phase >= 0], minlength=trace.n_phases).tolist()
        self.phase_wait: dict[int, deque] = {}
        self.active = [-1] * n_classes
        self.set_wait = [deque() for _ in range(n_classes)]

    def _to_queue(self, req: int) -> None:
        server = int(self.trace.server[req])
        self.queue[server][int(self.trace.cls[req])].append(req)
        self.pending[server] += 1

    def _admit(self, group: int) -> None:
        if self.active[group] >= 0 or not self.set_wait[group]:
            return
        phase = self.set_wait[group].popleft()
        self.active[group] = phase
        for req in self.phase_wait.pop(phase):
            self._to_queue(req)

    def enqueue(self, req: int) -> None:
        phase, group = int(self.trace.phase[req]), int(self.trace.cls[req])
        if not self.exclusive or phase < 0 or self.active[group] == phase:
            self._to_queue(req)
            return
        if phase not in self.phase_wait:
            self.phase_wait[phase] = deque()
            self.set_wait[group].append(phase)
        self.phase_wait[phase].append(req)
        self._admit(group)

    def complete(self, req: int) -> None:
        phase = int(self.trace.phase[req])
        if self.exclusive and phase >= 0:
            self.phase_left[phase] -= 1
            if self.phase_left[phase] == 0:
                group = int(self.trace.cls[req])
                self.active[group] = -1
                self._admit(group)

    def pick(self, server: int) -> int | None:
        if self.pending[server] == 0:
            return None
        queue, amount, credit = self.queue[server], self.amount[server], self.credit[server]
        in_round, weight, size = self.in_round[server], self.weight, self.trace.size
        passes = 0
        while True:
            c = self.current[server]
            if not in_round[c]:
                amount[c] = weight[c] + credit[c]
                in_round[c] = True
            if queue[c] and amount[c] - size[queue[c][0]] >= 0:
                req = queue[c].popleft()
                amount[c] -= size[req]
                self.pending[server] -= 1
                return req
            credit[c] = amount[c] if queue[c] else 0.0
            in_round[c] = False
            if c + 1 < len(queue):
                self.current[server] = c + 1
                continue
            self.current[server] = 0
            if passes > 0:
                needs = [math.floor((size[q[0]] - credit[k]) / weight[k]) - 1 for k, q in enumerate(queue) if q]
                rounds = min(needs)
                if rounds >= 1:
                    for k, q in enumerate(queue):
                        if q:
                            credit[k] += rounds * weight[k]
            passes += 1


def reference_replay(trace: RequestArrays, scheduler: str, weight: np.ndarray, device: Device):
    """The request engine's open loop in Python around :class:`ReferenceWfq`: (dispatch, complete, unit)."""
    sched = ReferenceWfq(trace, weight, exclusive=scheduler == "iosets-wfq")
    n, n_servers = trace.n, trace.n_servers
    dispatch, complete = np.full(n, np.nan), np.full(n, np.nan)
    unit = np.full(n, -1, dtype=np.int64)
    units = [deque() for _ in range(n_servers)]  # (request, end) outstanding per server
    busy_until, last_stream, last_end = [0.0] * n_servers, [-1] * n_servers, [-1] * n_servers
    done: list[tuple[float, int]] = []  # (end of the server's head unit, server)
    n_units = arrived = 0
    while True:
        now = min(trace.arrival[arrived] if arrived < n else math.inf, done[0][0] if done else math.inf)
        if now == math.inf:
            return dispatch, complete, unit
        dirty: list[int] = []  # servers that may dispatch now, in the engine's order
        while done and done[0][0] <= now:
            server = heapq.heappop(done)[1]
            req, _ = units[server].popleft()
            if units[server]:
                heapq.heappush(done, (units[server][0][1], server))
            complete[req] = now
            sched.complete(req)
            dirty += [server] if server not in dirty else []
        if dirty and sched.exclusive:  # cross-server: every server may dispatch after a completion
            dirty += [s for s in range(n_servers) if s not in dirty]
        while arrived < n and trace.arrival[arrived] <= now:
            sched.enqueue(arrived)
            server = int(trace.server[arrived])
            dirty += [server] if server not in dirty else []
            arrived += 1
        for server in dirty:
            while len(units[server]) < device.queue_depth and (req := sched.pick(server)) is not None:
                dispatch[req], unit[req] = now, n_units
                n_units += 1
                contiguous = trace.stream[req] == last_stream[server] and trace.offset[req] == last_end[server]
                last_stream[server], last_end[server] = trace.stream[req], trace.offset[req] + int(trace.size[req])
                cost = device.overhead + trace.size[req] / device.bandwidth + (0.0 if contiguous else device.seek)
                start = busy_until[server] if busy_until[server] > now else now
                busy_until[server] = end = start + cost
                if not units[server]:
                    heapq.heappush(done, (end, server))
                units[server].append((req, end))


def random_case(seed: int) -> tuple[RequestArrays, np.ndarray, Device]:
    """Random requests: bursts or spread arrivals, whole or fractional sizes and weights, 1-80 classes, 1-3 servers."""
    rng = np.random.default_rng(seed)
    n, n_classes, n_servers = int(rng.integers(20, 400)), int(rng.integers(1, 80)), int(rng.integers(1, 4))
    arrival = np.sort(np.round(rng.random(n) * rng.choice([0.001, 0.1, 10.0]), int(rng.integers(1, 6))))
    size = rng.integers(0, 1 << 21, n).astype(float) if rng.random() < 0.5 else rng.random(n) * 1e6
    if rng.random() < 0.3:
        size[:] = 1 << 20
    cls = rng.integers(0, n_classes, n).astype(np.int32)
    _, phase = np.unique(cls * 4 + rng.integers(0, 4, n), return_inverse=True)  # a phase belongs to one class
    phase = np.where(rng.random(n) < 0.1, -1, phase).astype(np.int32)
    n_streams = int(rng.integers(1, 5))
    stream = rng.integers(0, n_streams, n).astype(np.int32)
    trace = RequestArrays(
        arrival=arrival,
        size=size,
        offset=rng.integers(0, 4, n) << 20,
        cls=cls,
        stream=stream,
        server=rng.integers(0, n_servers, n).astype(np.int32),
        phase=phase,
        op=np.zeros(n, np.int8),
        classes=np.arange(n_classes),
        n_streams=n_streams,
        n_servers=n_servers,
        n_phases=int(phase.max(initial=-1)) + 1,
        order=np.arange(n),
    )
    weight = [
        rng.integers(1, 1 << 21, n_classes).astype(float),  # whole bytes
        rng.lognormal(0.0, 3.0, n_classes),  # fractional, from tiny to large
        np.ones(n_classes),  # one byte: nearly every pick skips rounds
        rng.random(n_classes) * 1e5 + 1e-3,
    ][seed % 4]
    device = Device(
        queue_depth=int(rng.integers(1, 4)),
        bandwidth=float(rng.choice([1e6, 3.3e8])),
        overhead=float(rng.choice([0.0, 1e-5])),
        seek=float(rng.choice([0.0, 1e-4])),
    )
    return trace, weight, device


@pytest.mark.parametrize("scheduler", ["wfq", "iosets-wfq"])
@pytest.mark.parametrize("first_seed", range(0, 120, 20))
def test_the_pick_dispatches_as_the_full_round_robin(scheduler, first_seed):
    for seed in range(first_seed, first_seed + 20):
        trace, weight, device = random_case(seed)
        result = replay_requests(trace, scheduler, weights=weight, device=device)
        dispatch, complete, unit = reference_replay(trace, scheduler, weight, device)
        np.testing.assert_array_equal(result.dispatch, dispatch, err_msg=f"seed {seed}")
        np.testing.assert_array_equal(result.complete, complete, err_msg=f"seed {seed}")
        np.testing.assert_array_equal(result.unit, unit, err_msg=f"seed {seed}")


def test_a_queue_that_empties_while_current_and_refills_keeps_what_is_left_of_its_round():
    """c0 sends its only request, refills before the next pick and goes on in its round: 50 B left, too few."""
    trace = RequestArrays(
        arrival=np.array([0.0, 0.0, 0.5, 0.5]),
        size=np.full(4, 100.0),
        offset=np.zeros(4, np.int64),
        cls=np.array([0, 1, 0, 1], np.int32),
        stream=np.zeros(4, np.int32),
        server=np.zeros(4, np.int32),
        phase=np.full(4, -1, np.int32),
        op=np.zeros(4, np.int8),
        classes=np.arange(2),
        n_streams=1,
        n_servers=1,
        n_phases=0,
        order=np.arange(4),
    )
    device = Device(queue_depth=1, bandwidth=100.0, overhead=0.0, seek=0.0)  # 100 B take 1 s
    weight = np.array([150.0, 100.0])
    # 0: c0 sends (150 - 100 = 50 left); 1: c0's 50 B are too few (credit 50), c1 sends; 2: c1 has 0 left,
    # then c0's new round has 150 + 50; 3: c0's queue is empty (credit reset), c1's new round sends.
    # Had c0's round been reset when it emptied, c0 would have sent at 1.
    expected = [0.0, 1.0, 2.0, 3.0]
    assert replay_requests(trace, "wfq", weights=weight, device=device).dispatch.tolist() == expected
    assert reference_replay(trace, "wfq", weight, device)[0].tolist() == expected


def spread_sets_case(seed: int) -> tuple[RequestArrays, np.ndarray, Device]:
    """A random case whose few sets each run several phases spread over 4-16 servers, with many simultaneous dates."""
    trace, _, device = random_case(seed)
    rng = np.random.default_rng(1000 + seed)
    n_servers, n_sets = int(rng.integers(4, 17)), int(rng.integers(1, 4))
    cls = rng.integers(0, n_sets, trace.n).astype(np.int32)
    _, phase = np.unique(cls * 8 + rng.integers(0, 8, trace.n), return_inverse=True)  # a phase belongs to one set
    trace = dataclasses.replace(
        trace,
        arrival=np.sort(np.round(rng.random(trace.n) * 0.01, 3)),  # ten dates: arrivals meet completions
        cls=cls,
        server=rng.integers(0, n_servers, trace.n).astype(np.int32),
        phase=phase.astype(np.int32),
        classes=np.arange(n_sets),
        n_servers=n_servers,
        n_phases=int(phase.max()) + 1,
    )
    weight = rng.integers(1, 1 << 21, n_sets).astype(float) if seed % 2 else rng.lognormal(0.0, 3.0, n_sets)
    return trace, weight, device


@pytest.mark.parametrize("first_seed", range(0, 60, 20))
def test_iosets_wfq_tries_the_servers_a_completion_unblocked_with_the_units_of_trying_all(first_seed):
    """The engine tries only the servers where an admitted phase queued work; the reference tries every server."""
    for seed in range(first_seed, first_seed + 20):
        trace, weight, device = spread_sets_case(seed)
        result = replay_requests(trace, "iosets-wfq", weights=weight, device=device)
        dispatch, complete, unit = reference_replay(trace, "iosets-wfq", weight, device)
        np.testing.assert_array_equal(result.dispatch, dispatch, err_msg=f"seed {seed}")
        np.testing.assert_array_equal(result.complete, complete, err_msg=f"seed {seed}")
        np.testing.assert_array_equal(result.unit, unit, err_msg=f"seed {seed}")
