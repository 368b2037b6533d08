"""Metrics of a request-level replay: shares, throughput, fairness, latency, aggregation.

A metric that cannot be computed is None (null in tables), never NaN, and ``notes`` says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from ._trace import RequestArrays


@dataclass(frozen=True, eq=False)
class RequestMetrics:
    """Summary of one request-level replay.

    Attributes
    ----------
    classes : polars.DataFrame
        One row per class (:data:`iosets.schemas.REQUEST_CLASSES`): ``class``, ``set`` (the class's IO-SETS
        set when the classes are the values of a ``set`` column, else null), ``bytes``,
        ``requests``, ``share`` (of all bytes; null when none moved), ``throughput`` (bytes /
        (last completion - first arrival) of the class; null over a zero span),
        ``latency_p50``, ``latency_p99`` (completion - arrival, s), ``reservation`` and
        ``reservation_met`` (null without a reservation). Built on first access.
    aggregate_throughput : float or None
        All bytes / (last completion - first arrival).
    jain_index : float or None
        Jain's fairness index of per-class throughput divided by the class weight.
    mean_aggregation_size : float or None
        Requests per dispatched unit.
    n_units : int
        Dispatched units.
    notes : dict of str to str
        Why a metric is None (or the ``throughput`` of some classes null).
    """

    aggregate_throughput: float | None
    jain_index: float | None
    mean_aggregation_size: float | None
    n_units: int
    replay: _ReplayedTrace = field(repr=False)
    notes: dict[str, str] = field(default_factory=dict)

    @cached_property
    def classes(self) -> pl.DataFrame:
        """Per-class bytes, requests, share, throughput, latency percentiles and reservation."""
        return self.replay.classes()

    def to_dict(self) -> dict:
        """JSON-ready form (the CLI's ``--json``)."""
        return {
            "classes": self.classes.with_columns(pl.col("class").cast(pl.String)).to_dicts(),
            "aggregate_throughput": self.aggregate_throughput,
            "jain_index": self.jain_index,
            "mean_aggregation_size": self.mean_aggregation_size,
            "n_units": self.n_units,
            "notes": dict(self.notes),
        }


@dataclass(frozen=True)
class _ReplayedTrace:
    """What the per-class table is built from, on demand."""

    trace: RequestArrays
    complete: np.ndarray
    reservation: np.ndarray
    cost_bytes: bool
    throughput: np.ndarray  # of the classes with requests, in class order; NaN over a zero span

    def classes(self) -> pl.DataFrame:
        """One row per class with requests (see :attr:`RequestMetrics.classes`)."""
        trace, reservation = self.trace, self.reservation
        frame = pl.DataFrame(
            {"cls": trace.cls, "size": trace.size, "arrival": trace.arrival, "complete": self.complete}
        ).with_columns((pl.col("complete") - pl.col("arrival")).alias("latency"))
        per_class = (
            frame.group_by("cls")
            .agg(
                pl.col("size").sum().alias("bytes"),
                pl.len().alias("requests"),
                pl.col("latency").quantile(0.5, "linear").alias("latency_p50"),
                pl.col("latency").quantile(0.99, "linear").alias("latency_p99"),
            )
            .sort("cls")
            .with_columns(pl.Series("throughput", self.throughput, nan_to_null=True))
        )
        total = float(trace.size.sum())
        ids = per_class["cls"].to_numpy()
        rate = (
            per_class["throughput"]
            if self.cost_bytes
            else per_class["throughput"] / per_class["bytes"] * per_class["requests"]
        )
        reserved = pl.Series(np.where(reservation[ids] > 0, reservation[ids], np.nan)).fill_nan(None)
        labels = pl.Series("class", trace.classes[ids])
        sets = labels.cast(pl.Int64, strict=False) if trace.class_by == "set" else pl.Series([None] * ids.size)
        return per_class.with_columns(
            labels,
            sets.cast(pl.Int64).alias("set"),
            (pl.col("bytes") / total if total > 0 else pl.lit(None, pl.Float64)).alias("share"),
            reserved.alias("reservation"),
            (rate >= 0.99 * reserved).alias("reservation_met"),
        ).select(
            "class",
            "set",
            "bytes",
            pl.col("requests").cast(pl.Int64),
            "share",
            "throughput",
            "latency_p50",
            "latency_p99",
            "reservation",
            "reservation_met",
        )


def jain_index(values: np.ndarray) -> float | None:
    """(sum x)^2 / (n sum x^2): 1 when all equal, 1/n when one takes everything; None when
    there is no value, one is not finite, or all are 0."""
    values = np.asarray(values, dtype=np.float64)
    square = float(np.sum(values**2))
    return float(np.sum(values) ** 2 / (values.size * square)) if 0 < square < np.inf else None


def class_throughput(trace: RequestArrays, complete: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ids of the classes with requests and their throughput: bytes / (last completion - first arrival),
    NaN over a zero span (every request of the class completed at its first arrival)."""
    n_classes = trace.classes.size
    requests = np.bincount(trace.cls, minlength=n_classes)
    served = np.bincount(trace.cls, weights=trace.size, minlength=n_classes)
    first = np.full(n_classes, np.inf)
    np.minimum.at(first, trace.cls, trace.arrival)
    last = np.full(n_classes, -np.inf)
    np.maximum.at(last, trace.cls, complete)
    ids = np.flatnonzero(requests)
    span = last[ids] - first[ids]
    return ids, np.divide(served[ids], span, out=np.full(ids.size, np.nan), where=span > 0)


def compute_request_metrics(
    trace: RequestArrays,
    complete: np.ndarray,
    n_units: int,
    weight: np.ndarray,
    reservation: np.ndarray,
    *,
    cost_bytes: bool = False,
) -> RequestMetrics:
    """Per-class and global metrics of a replayed trace, None with a note where undefined.

    A class with a reservation (> 0, in IOs/s, or bytes/s with ``cost_bytes``) has it
    met when its rate over its own active span reaches 99 % of it.
    """
    span = float(complete.max() - trace.arrival.min()) if trace.n else 0.0
    ids, throughput = class_throughput(trace, complete)
    jain = jain_index(throughput / weight[ids])
    zero_span = trace.classes[ids[np.isnan(throughput)]].tolist()
    return RequestMetrics(
        aggregate_throughput=float(trace.size.sum()) / span if span > 0 else None,
        jain_index=jain,
        mean_aggregation_size=trace.n / n_units if n_units else None,
        n_units=n_units,
        replay=_ReplayedTrace(trace, complete, reservation, cost_bytes, throughput),
        notes=_why_undefined(trace, span, zero_span, jain),
    )


def _why_undefined(trace: RequestArrays, span: float, zero_span: list, jain: float | None) -> dict[str, str]:
    """Why each request metric that is None (or null for some classes) is so."""
    if not trace.n:
        return dict.fromkeys(("aggregate_throughput", "jain_index", "mean_aggregation_size"), "no request")
    classes = ", ".join(map(repr, zero_span))
    notes = {}
    if zero_span:
        notes["throughput"] = f"class {classes}: every request completed at the class's first arrival (zero span)"
    if span <= 0:
        notes["aggregate_throughput"] = "every request completed at the first arrival (zero span)"
    if not trace.size.any():
        notes["share"] = "no request moved a byte"
    if jain is None and zero_span:
        notes["jain_index"] = f"no throughput for class {classes}"
    elif jain is None:
        notes["jain_index"] = "every class moved 0 bytes" if not trace.size.any() else "throughput / weight overflows"
    return notes


def interval_bytes(trace, complete: np.ndarray, start: float, end: float) -> np.ndarray:
    """Bytes per class completed in [start, end)."""
    inside = (complete >= start) & (complete < end)
    return np.bincount(trace.cls[inside], weights=trace.size[inside], minlength=trace.classes.size)


def backlogged_shares(result) -> np.ndarray:
    """Byte share of each class among the requests completed before the first class completes its last one."""
    trace, complete = result.trace, result.complete
    first_done = min(complete[trace.cls == c].max() for c in range(trace.classes.size))
    done = interval_bytes(trace, complete, -np.inf, first_done + 1e-12 * max(1.0, abs(first_done)))
    return done / done.sum()


def sliding_shares(trace, dispatch: np.ndarray, window: int) -> np.ndarray:
    """Byte share of each class over windows of ``window`` consecutive dispatched requests (AGIOS WFQ report, sec. 3).

    Returns an array of shape (n - window + 1, n_classes).
    """
    order = np.argsort(dispatch, kind="stable")
    one_hot = np.zeros((trace.n + 1, trace.classes.size))
    np.add.at(one_hot, (np.arange(1, trace.n + 1), trace.cls[order]), trace.size[order])
    cumulative = np.cumsum(one_hot, axis=0)
    sums = cumulative[window:] - cumulative[:-window]
    return sums / sums.sum(axis=1, keepdims=True)


def share_error(throughput: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """FAIRIO's Error_i = T_i / sum(T) - w_i / sum(w) (FAIRIO paper, section IV)."""
    return throughput / throughput.sum() - weight / weight.sum()
