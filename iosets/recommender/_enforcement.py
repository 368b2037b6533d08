"""Enforcement parameters from set priorities: AGIOS WFQ weights and RBFQ reservations, weights, limits."""

import warnings

import numpy as np

from .._validation import check_count, check_positive
from ..errors import InputError

AGIOS_MAX_WEIGHT = 2**31 - 1
"""AGIOS keeps a queue's weight plus credit in a C ``int`` (seed 000, section 2)."""


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


def peak_concurrent(demand, start=None, end=None) -> float:
    """Largest sum of ``demand`` over jobs running at the same time.

    Jobs run over [start, end); without dates (or with a null one) a job counts as
    running all the time, so without any dates this is the plain sum.
    """
    demand = np.asarray(demand, dtype=np.float64)
    if start is None or end is None:
        return float(demand.sum())
    start = np.asarray(start, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    always = np.isnan(start) | np.isnan(end)
    dated = ~always
    dates = np.concatenate((end[dated], start[dated]))
    steps = np.concatenate((-demand[dated], demand[dated]))  # at equal dates, ends come first
    order = np.argsort(dates, kind="stable")
    running = np.cumsum(steps[order])
    return float(demand[always].sum() + (running.max() if running.size else 0.0))


def reservation_scale(demand, *, bandwidth: float, start=None, end=None) -> float:
    """The factor (<= 1) that brings the peak of ``demand`` over jobs running together down to ``bandwidth``."""
    peak = peak_concurrent(demand, start, end)
    return bandwidth / peak if peak > bandwidth else 1.0


def rbfq_reservations(alpha_io, *, bandwidth: float, safety: float = 1.5, start=None, end=None) -> np.ndarray:
    """Reservation (bytes/s) per job: ``safety x alpha_io x bandwidth``, scaled to fit.

    ``alpha_io x bandwidth`` is a job's average demand (its I/O volume per
    iteration over the iteration's length); the safety factor (default 1.5)
    leaves room for the bursts of its I/O phases. RBFQ can only guarantee
    reservations that sum to at most the capacity over the jobs running at the
    same time (``start``/``end`` dates; all jobs at once without them): when the
    peak exceeds ``bandwidth`` every reservation is scaled down in proportion,
    with a warning. Jobs without an ``alpha_io`` (NaN) get no reservation (0); an
    ``alpha_io`` outside [0, 1] is an InputError.
    """
    reservation = rbfq_demands(alpha_io, bandwidth=bandwidth, safety=safety)
    scale = reservation_scale(reservation, bandwidth=bandwidth, start=start, end=end)
    if scale < 1:
        warnings.warn(
            f"RBFQ reservations of concurrent jobs sum to {1 / scale:.2f}x the bandwidth; scaled down to fit",
            stacklevel=2,
        )
    return reservation * scale


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
