"""Enforcement parameters from set priorities: AGIOS WFQ weights; RBFQ reservations (per set: one job's), weights."""

import warnings

import numpy as np

from .._validation import check_count, check_positive
from ..errors import InputError

AGIOS_MAX_WEIGHT = 2**31 - 1
"""AGIOS keeps a queue's weight plus credit in a C ``int`` (AGIOS WFQ report, section 2)."""


def wfq_weights(
    priorities, *, max_request: int = 1 << 20, max_weight: int = AGIOS_MAX_WEIGHT, reference=None
) -> np.ndarray:
    """Integer WFQ weights (bytes per round) proportional to ``priorities``.

    The lowest priority gets ``max_request`` bytes per round, so that its queue can
    always send its largest request in one round; the others get ``max_request x
    priority / lowest priority``, rounded. ``reference`` (a number, or one per
    priority) replaces the lowest priority, e.g. by the lowest one of the jobs a
    recommender was fitted on. A weight above ``max_weight`` is capped with a
    warning: the ratio between those sets is then compressed.

    Examples
    --------
    >>> wfq_weights([1.0, 0.1, 0.01], max_request=1024).tolist()
    [102400, 10240, 1024]
    """
    max_request = check_count(max_request, "max_request", minimum=1)
    if max_request > max_weight:
        raise InputError(
            f"max_request must be at most {max_weight} (AGIOS keeps a weight in a C int), got {max_request}"
        )
    p = np.asarray(priorities, dtype=np.float64)
    if p.size == 0:
        return np.empty(0, np.int64)
    if np.any(~(p > 0)) or not np.all(np.isfinite(p)):
        raise InputError(f"priorities must be finite and > 0, got {p.tolist()!r}")
    lowest = p.min() if reference is None else np.asarray(reference, dtype=np.float64)
    weights = np.rint(max_request * (p / lowest))
    if np.any(weights > max_weight):
        warnings.warn(
            f"WFQ weights above {max_weight} (AGIOS int) capped: priorities span {p.max() / np.min(lowest):.3g}x, "
            f"more than {max_weight // max_request}x with max_request={max_request}; lower max_request "
            "or use fewer sets to keep the exact ratios",
            stacklevel=2,
        )
        weights = np.minimum(weights, max_weight)
    return weights.astype(np.int64)


def set_reservations(demand, sets) -> tuple[np.ndarray, np.ndarray]:
    """``(set ids, reservation per set)``: a set's reservation is the largest demand among its jobs.

    Under IO-SETS one job of a set does I/O at a time (IO-SETS paper, section IV), so a set
    needs what one of its jobs needs, not the sum.

    Examples
    --------
    >>> ids, reservation = set_reservations([1.0, 4.0, 2.0], [0, 0, 1])
    >>> ids.tolist(), reservation.tolist()
    ([0, 1], [4.0, 2.0])
    """
    ids, members = np.unique(np.asarray(sets, dtype=np.int64), return_inverse=True)
    reservation = np.zeros(ids.size)
    np.maximum.at(reservation, members, np.asarray(demand, dtype=np.float64))
    return ids, reservation


def reservation_scale(demand, sets, *, bandwidth: float) -> float:
    """The factor (<= 1) that brings the sum of the sets' reservations down to ``bandwidth``."""
    total = float(set_reservations(demand, sets)[1].sum())
    return bandwidth / total if total > bandwidth else 1.0


def rbfq_reservations(alpha_io, sets, *, bandwidth: float, safety: float = 1.5) -> np.ndarray:
    """Reservation (bytes/s) per job: ``safety x alpha_io x bandwidth``, scaled so that the sets fit.

    ``alpha_io x bandwidth`` is a job's average demand (its I/O volume per iteration
    over the iteration's length); the safety factor (default 1.5) leaves room for the
    bursts of its I/O phases. A set's reservation is the largest demand of its jobs
    (:func:`set_reservations`), and RBFQ can only guarantee reservations that sum to at
    most the capacity: when the sets' reservations sum to more than ``bandwidth``, every
    reservation is scaled by the same factor, with a warning naming the sets. A job's
    reservation thus never exceeds its set's. Jobs without an ``alpha_io`` (NaN) get
    no reservation (0); an ``alpha_io`` outside [0, 1] is an InputError.

    Examples
    --------
    >>> rbfq_reservations([0.125, 0.25, 0.125], [0, 0, 1], bandwidth=1e9, safety=2.0).tolist()
    [250000000.0, 500000000.0, 250000000.0]
    """
    demand = rbfq_demands(alpha_io, bandwidth=bandwidth, safety=safety)
    sets = np.asarray(sets, dtype=np.int64)
    if sets.shape != demand.shape:
        raise InputError(f"sets must give one set per job: {sets.size} sets for {demand.size} alpha_io values")
    scale = reservation_scale(demand, sets, bandwidth=bandwidth)
    if scale < 1:
        warnings.warn(_scaled_down(*set_reservations(demand, sets), bandwidth), stacklevel=2)
    return demand * scale


def _scaled_down(ids: np.ndarray, reservation: np.ndarray, bandwidth: float) -> str:
    """The warning of reservations scaled to fit: the sets that reserve, their reservations, the factor."""
    reserving = reservation > 0
    each = ", ".join(
        f"{s} ({_rate(r)})" for s, r in zip(ids[reserving].tolist(), reservation[reserving].tolist(), strict=True)
    )
    total = float(reservation.sum())
    return (
        f"RBFQ reservations of sets {each} sum to {_rate(total)}, {total / bandwidth:.2f}x the bandwidth "
        f"({_rate(bandwidth)}); scaled down to fit"
    )


def _rate(value: float) -> str:
    """Bytes/s in the largest decimal unit below it, one decimal: ``29.0 GB/s``."""
    for unit, size in (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.1f} B/s"


def rbfq_demands(alpha_io, *, bandwidth: float, safety: float = 1.5) -> np.ndarray:
    """Unscaled reservation per job: ``safety x alpha_io x bandwidth`` (0 without an ``alpha_io``, NaN)."""
    bandwidth = check_positive(bandwidth, "bandwidth")
    safety = check_positive(safety, "safety")
    alpha = np.asarray(alpha_io, dtype=np.float64)
    bad = np.flatnonzero(~(np.isnan(alpha) | ((alpha >= 0) & (alpha <= 1))))
    if bad.size:
        raise InputError(
            f"alpha_io must be a number in [0, 1] (NaN: unknown), got {float(alpha.flat[bad[0]])!r} at index {bad[0]}"
        )
    return safety * np.where(np.isnan(alpha), 0.0, alpha) * bandwidth
