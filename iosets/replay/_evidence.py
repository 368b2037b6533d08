"""What a site trace can tell about each device parameter: the evidence rule of :func:`calibrate`.

A parameter is fitted only where the trace holds evidence for it (at least :data:`MIN_EVIDENCE`
requests that inform it); otherwise it takes a neutral value (0 for costs, 1 for concurrency)
and the reason is said. Requests are taken in recorded start order, as the engine sees them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_EVIDENCE = 20
"""Requests a parameter needs to be fitted (the seek: non-contiguous requests besides phase starts, and as many
contiguous ones to tell it from the overhead)."""

SIZE_SPREAD = 2.0
"""The overhead is told from the bandwidth when the requests that found the device idle differ in size by this
factor (10th to 90th percentile)."""

TAIL_RATIO = 3.0
"""A rate limit shows as a heavy tail: requests found idle whose mean duration is this many times their median."""

LIMIT_WINDOW = 1.0
"""Seconds: a rate limit caps what a trace moves over any stretch this long at its burst plus rate x stretch."""

LIMIT_SLACK = 0.5
"""A trace whose busiest :data:`LIMIT_WINDOW` moves more than this share over that cap beats the limit: it is none.
The cap is an estimate from the requests, and a limit granted per slice lets a slice's budget through at once (a
second of 100 ms slices can hold 11): blk-throttle's runs at 200 MB/s move 217-219 MB in their busiest second, up
to 5 % over; contention-light's jobs alone, whose disk stalled, up to 31 % over, and together 220 % over the
"limit" of those stalls (tests/replay/test_real_runs.py)."""

MAX_CONCURRENCY = 1024
"""The largest concurrency :func:`calibrate` tries."""

SLICE_SPREAD = 0.1
"""A wait of a slice-quantised rate limit ends within this share of the period of the line its waits' end dates fit
(the k-th slice of a busy stretch: stretch start + k x period + a common lag)."""


@dataclass(frozen=True)
class Evidence:
    """What informs one parameter.

    Attributes
    ----------
    count : int
        Requests that inform it.
    usable : bool
        Whether the parameter may be fitted.
    reason : str
        The evidence, or why there is not enough of it.
    """

    count: int
    usable: bool
    reason: str


@dataclass(frozen=True)
class TraceEvidence:
    """The evidence of a trace for each fittable parameter, and the concurrencies worth trying."""

    bandwidth: Evidence
    overhead: Evidence
    seek: Evidence
    concurrency: Evidence
    bucket: Evidence
    max_in_flight: int
    slice: Evidence = Evidence(0, False, "no slice looked for")
    rate: Evidence | None = None
    burst: Evidence | None = None

    def of(self, name: str) -> Evidence:
        """The evidence for parameter ``name`` (``rate`` and ``burst``: their own where set, else the rate limit's;
        with a usable ``slice``, the rate is the slice pattern's and there is no burst)."""
        if self.slice.usable and name in ("rate", "burst"):
            return self.slice if name == "rate" else Evidence(0, False, "a slice's budget is rate x slice: no burst")
        if name in ("rate", "burst"):
            return getattr(self, name) or self.bucket
        return getattr(self, name)


def found_idle(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Requests (in start order) that started no earlier than every earlier one ended and share their start with
    no other: their duration is their own service."""
    previous_end = np.maximum.accumulate(np.r_[-np.inf, end[:-1]])
    unique_start = np.r_[True, start[1:] != start[:-1]] & np.r_[start[:-1] != start[1:], True]
    return (start >= previous_end) & unique_start & (end > start)


def jumps(stream: np.ndarray, offset: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Requests that do not continue the previous request (same stream, offset at its end): the engine's seeks."""
    continues = (stream[1:] == stream[:-1]) & (offset[1:] == offset[:-1] + size[:-1]) & (offset[1:] >= 0)
    return np.r_[True, ~continues]


def phase_starts(phase: np.ndarray) -> np.ndarray:
    """The first request of each phase (in start order)."""
    first = np.zeros(phase.size, dtype=bool)
    first[np.unique(phase, return_index=True)[1]] = True
    return first


def in_flight(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per request, how many requests (itself included) were in flight when it started."""
    ends = np.sort(end)
    return np.arange(1, start.size + 1) - np.searchsorted(ends, start, side="right")


def trace_evidence(
    start: np.ndarray, end: np.ndarray, size: np.ndarray, stream: np.ndarray, offset: np.ndarray, phase: np.ndarray
) -> TraceEvidence:
    """The evidence of requests in recorded start order (their start, end, size, stream, offset and chain phase)."""
    timed = end > start
    n_timed = int(timed.sum())
    bandwidth = Evidence(n_timed, n_timed > 0, f"{n_timed} requests of positive duration, {size[timed].sum():.3g} B")

    idle = found_idle(start, end)
    flight = in_flight(start, end)
    overlapping = int((flight > 1).sum())
    most = int(flight.max(initial=1))
    if idle.sum() >= MIN_EVIDENCE:
        low, high = np.quantile(size[idle], [0.1, 0.9])
        spread = high >= SIZE_SPREAD * max(low, 1.0)
    else:
        spread = False
    if spread:
        overhead = Evidence(
            int(idle.sum()),
            True,
            f"{int(idle.sum())} requests found the device idle, of sizes {low:.3g} to {high:.3g} B",
        )
    elif overlapping >= MIN_EVIDENCE:
        overhead = Evidence(overlapping, True, f"{overlapping} requests ran while others did (up to {most} at once)")
    else:
        overhead = Evidence(
            int(idle.sum()),
            False,
            f"requests found idle are of one size and fewer than {MIN_EVIDENCE} ran while others did: a per-request "
            "cost cannot be told from the bandwidth (it is in the bandwidth)",
        )

    jumped = jumps(stream, offset, size) & ~phase_starts(phase)
    n_jumps, n_continuing = int(jumped.sum()), int((~jumps(stream, offset, size)).sum())
    if n_jumps >= MIN_EVIDENCE and n_continuing >= MIN_EVIDENCE:
        seek = Evidence(n_jumps, True, f"{n_jumps} non-contiguous requests inside phases, {n_continuing} contiguous")
    elif n_jumps < MIN_EVIDENCE:
        seek = Evidence(
            n_jumps,
            False,
            f"{n_jumps} non-contiguous requests besides phase starts (fewer than {MIN_EVIDENCE}): no seek to estimate",
        )
    else:
        seek = Evidence(
            n_jumps, False, f"only {n_continuing} contiguous requests: a seek cannot be told from the overhead"
        )

    if overlapping >= MIN_EVIDENCE:
        concurrency = Evidence(overlapping, True, f"{overlapping} requests ran while others did (up to {most} at once)")
    else:
        concurrency = Evidence(
            overlapping,
            False,
            f"{overlapping} requests ran while others did (fewer than {MIN_EVIDENCE}): served one at a time",
        )
    return TraceEvidence(
        bandwidth,
        overhead,
        seek,
        concurrency,
        _bucket(end - start, idle),
        min(most, MAX_CONCURRENCY),
        slice_pattern(start, end, size).evidence,
    )


def _bucket(duration: np.ndarray, idle: np.ndarray) -> Evidence:
    """A rate limit with bursts: requests found idle mostly fast, a tail of them waiting for the limit (at least
    :data:`MIN_EVIDENCE` of them, their mean duration :data:`TAIL_RATIO` times their median). Only when most
    requests found the device idle: among requests in flight together, a long one may be waiting for the
    others, not for a limit."""
    served = duration[idle]
    if served.size < MIN_EVIDENCE or 2 * served.size < duration.size:
        return Evidence(
            int(served.size),
            False,
            f"{served.size} of {duration.size} requests found the device idle (fewer than {MIN_EVIDENCE}, or not "
            "most): a long request may be waiting for others, not for a rate limit",
        )
    median, mean = float(np.median(served)), float(served.mean())
    waited = int((served > TAIL_RATIO * median).sum())
    if mean >= TAIL_RATIO * median and waited >= MIN_EVIDENCE:
        return Evidence(
            waited,
            True,
            f"{waited} of {served.size} requests found idle waited (mean {mean * 1e3:.3g} ms, "
            f"median {median * 1e3:.3g} ms): a rate limit with bursts",
        )
    return Evidence(
        waited,
        False,
        f"requests found idle take {mean / median:.2g}x their median on average (below "
        f"{TAIL_RATIO:g}x): no rate limit to see",
    )


def idle_bandwidth(start: np.ndarray, end: np.ndarray, size: np.ndarray) -> tuple[float, Evidence]:
    """The bandwidth of requests (in start order) under a rate limit: the median rate (bytes over duration) of those
    found idle, and its evidence.

    Under a rate limit the phases last what the limit lets through, whatever the device's own speed, so they cannot
    tell the bandwidth; the requests that found the device idle do, the many fast ones at its speed, the tail that
    waited for the limit (fewer than half, :func:`_bucket`) out of their median.

    Examples
    --------
    >>> start = np.arange(5.0)  # 1 MB each, three in 1 ms, one in 2 ms, one waits 500 ms
    >>> bandwidth, proof = idle_bandwidth(start, start + [1e-3, 1e-3, 1e-3, 2e-3, 0.5], np.full(5, 1e6))
    >>> bandwidth, proof.count, proof.reason
    (1000000000.0, 5, 'the median rate of 5 requests found idle (a rate limit: the phases do not tell it)')
    """
    idle = found_idle(start, end)
    rate = size[idle] / (end - start)[idle]
    bandwidth = float(np.median(rate)) if rate.size else 0.0
    return bandwidth, Evidence(
        int(rate.size),
        rate.size > 0,
        f"the median rate of {rate.size} requests found idle (a rate limit: the phases do not tell it)",
    )


def busiest_bytes(end: np.ndarray, size: np.ndarray, window: float) -> float:
    """The most bytes of requests ending within ``window`` seconds of each other (any order).

    Examples
    --------
    >>> busiest_bytes(np.array([0.0, 0.5, 1.0, 3.0]), np.array([1.0, 2.0, 4.0, 8.0]), 1.0)
    8.0
    """
    order = np.argsort(end, kind="stable")
    ends, moved = end[order], np.r_[0.0, np.cumsum(size[order])]
    last = np.searchsorted(ends, ends + window, side="right")
    return float((moved[last] - moved[:-1]).max(initial=0.0))


def beaten_limit(limit: Evidence, end: np.ndarray, size: np.ndarray, rate: float, burst: float) -> Evidence:
    """``limit`` (a rate limit's evidence, of ``rate`` and ``burst`` as the requests show them), or why the trace
    beats it: its busiest :data:`LIMIT_WINDOW` moved more than burst + rate x window by :data:`LIMIT_SLACK` (e.g. a
    disk's own stalls, among which several jobs together moved more than the "limit")."""
    cap = burst + rate * LIMIT_WINDOW
    moved = busiest_bytes(end, size, LIMIT_WINDOW)
    if not limit.usable or moved <= (1.0 + LIMIT_SLACK) * cap:
        return limit
    return Evidence(
        limit.count,
        False,
        f"{limit.reason}, but its busiest {LIMIT_WINDOW:g} s moved {moved * 1e-6:.4g} MB, more than "
        f"{1.0 + LIMIT_SLACK:g} x the {cap * 1e-6:.4g} MB such a limit lets through: no rate limit",
    )


@dataclass(frozen=True)
class SlicePattern:
    """A rate limit that grants its budget per slice (blk-throttle), seen in the waits of a trace.

    Attributes
    ----------
    evidence : Evidence
    period : float
        Seconds between slice boundaries (0 without evidence).
    budget : float
        Bytes a slice grants (0 without evidence).
    lag : float
        Seconds after its boundary a wait ends on average (the throttle's timer and dispatch).
    """

    evidence: Evidence
    period: float = 0.0
    budget: float = 0.0
    lag: float = 0.0


def slice_pattern(start: np.ndarray, end: np.ndarray, size: np.ndarray) -> SlicePattern:
    """The slice pattern of requests in recorded start order: a rate limit (the bucket's evidence) with at least
    :data:`MIN_EVIDENCE` long waits (requests found idle that took :data:`TAIL_RATIO` times the median, and at
    least half the 90th percentile of those: not the device's hiccups) whose end dates fall on a common period.

    A busy stretch opens a slice: it starts at a request that starts after every earlier one ended by more than
    most waits last (that 90th percentile, about a period). Counted from the stretch's start, a wait ends a
    whole number k >= 1 of periods later plus a common lag: the period is the slope of the line through the
    waits on it (within :data:`SLICE_SPREAD`; a wait off it is not the limit's). The budget is what the waits of the
    leading slices of each stretch (k = 1, 2, ... each with its wait) tell: the bytes that went before the first
    wait of slice k fit in k budgets, with that wait's they do not.
    """
    idle = found_idle(start, end)
    duration = end - start
    limit = _bucket(duration, idle)
    if not limit.usable:
        return SlicePattern(Evidence(0, False, f"no rate limit: {limit.reason}"))
    waited = idle & (duration > TAIL_RATIO * np.median(duration[idle]))
    longest = np.quantile(duration[waited], 0.9) if waited.any() else 0.0
    waited = np.flatnonzero(waited & (duration >= longest / 2))  # not the device's own hiccups
    if waited.size < MIN_EVIDENCE:
        return SlicePattern(Evidence(int(waited.size), False, f"{waited.size} long waits (fewer than {MIN_EVIDENCE})"))
    previous_end = np.maximum.accumulate(np.r_[-np.inf, end[:-1]])
    stretch = np.cumsum(start - previous_end > longest) - 1
    opened = start[np.r_[0, np.flatnonzero(np.diff(stretch)) + 1]][stretch[waited]]  # each wait's stretch start
    since = end[waited] - opened
    period, lag = _slice_phase(since, stretch[waited])
    for _ in range(2):  # the line through the waits on the period, then the waits on that line
        k = np.maximum(np.round((since - lag) / period), 1.0) if period > 0 else np.ones(since.size)
        on_period = np.abs(since - k * period - lag) <= SLICE_SPREAD * period
        if on_period.sum() < max(MIN_EVIDENCE, waited.size / 2) or np.unique(k[on_period]).size < 2:
            return SlicePattern(
                Evidence(
                    int(on_period.sum()),
                    False,
                    f"{on_period.sum()} of {waited.size} long waits end on a common period inside busy stretches "
                    f"(fewer than {MIN_EVIDENCE} or than half, or never two slices apart): a continuous rate limit",
                )
            )
        period, lag = np.polyfit(k[on_period], since[on_period], 1)
    low, high, told = _slice_budget(waited[on_period], k[on_period], stretch, size)
    if told < MIN_EVIDENCE or not low < high:
        return SlicePattern(
            Evidence(
                int(on_period.sum()),
                False,
                f"{on_period.sum()} waits end every {period * 1e3:.4g} ms, but the bytes before them fit no one budget "
                f"({told} slices of busy stretches tell it, {MIN_EVIDENCE} needed)",
            )
        )
    budget = (low + high) / 2
    return SlicePattern(
        Evidence(
            int(on_period.sum()),
            True,
            f"{on_period.sum()} of {waited.size} waits end every {period * 1e3:.4g} ms ({lag * 1e3:.3g} ms after the "
            f"boundary), {told} slices of busy stretches put {low:.9g} to {high:.9g} B in one: a rate limit granted "
            "per slice",
        ),
        float(period),
        float(budget),
        float(lag),
    )


def _slice_phase(since: np.ndarray, stretch: np.ndarray) -> tuple[float, float]:
    """A first period and lag from the waits' times since their stretch's start: the period the mean time between
    successive waits of a stretch one slice apart (within half the median of those times: a wait's lag varies
    with the bytes it was over its slice's budget), the lag where their times fall on it (a circular mean);
    period 0 when fewer than :data:`MIN_EVIDENCE` successive waits share a stretch."""
    same = stretch[1:] == stretch[:-1]
    if same.sum() < MIN_EVIDENCE:
        return 0.0, 0.0
    between = np.diff(since)[same]
    typical = float(np.median(between))
    period = float(between[np.abs(between - typical) < typical / 2].mean())
    turn = np.exp(2j * np.pi * since / period).mean()
    return period, float(np.angle(turn) / (2 * np.pi) * period)


def _slice_budget(waits: np.ndarray, k: np.ndarray, stretch: np.ndarray, size: np.ndarray) -> tuple[float, float, int]:
    """The budgets B that the waits (request indices, in start order, with their slice counts) allow: the first wait
    of slice k of a stretch whose slices 1 to k all had one, after c bytes of its stretch, had c <= k B < c + its
    size. Returns the bounds (low, high) of that interval (empty: low >= high) and how many waits set them."""
    bytes_before = np.cumsum(size) - size
    stretch_start = np.r_[0, np.flatnonzero(np.diff(stretch)) + 1]
    c = bytes_before[waits] - bytes_before[stretch_start[stretch[waits]]]
    first = np.r_[True, (k[1:] != k[:-1]) | (stretch[waits][1:] != stretch[waits][:-1])]
    low, high, told = 0.0, np.inf, 0
    expected, current = 1.0, -1
    for i in np.flatnonzero(first):
        if stretch[waits[i]] != current:
            current, expected = stretch[waits[i]], 1.0
        if k[i] != expected:  # a slice without a wait: the budget may not all have been used
            expected = np.nan
            continue
        low, high = max(low, c[i] / k[i]), min(high, (c[i] + size[waits[i]]) / k[i])
        expected, told = expected + 1.0, told + 1
    return low, high, told


def concurrency_candidates(most: int) -> list[int]:
    """Powers of two up to ``most`` (and ``most`` itself): the coarse search of :func:`calibrate`."""
    values, value = [], 1
    while value < most:
        values.append(value)
        value *= 2
    return [*values, most]


def between(low: int, high: int, limit: int = 16) -> list[int]:
    """Integers strictly between ``low`` and ``high``: all of them when at most ``limit``, else ``limit`` spread
    geometrically."""
    inside = list(range(low + 1, high))
    if len(inside) <= limit:
        return inside
    return sorted({int(round(v)) for v in np.geomspace(low + 1, high - 1, limit)})
