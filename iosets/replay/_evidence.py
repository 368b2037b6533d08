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

MAX_CONCURRENCY = 1024
"""The largest concurrency :func:`calibrate` tries."""


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

    def of(self, name: str) -> Evidence:
        """The evidence for parameter ``name`` (``rate`` and ``burst``: the rate limit's)."""
        return self.bucket if name in ("rate", "burst") else getattr(self, name)


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
    return TraceEvidence(bandwidth, overhead, seek, concurrency, _bucket(end - start, idle), min(most, MAX_CONCURRENCY))


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
