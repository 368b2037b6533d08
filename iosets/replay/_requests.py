"""Request-level replay: one C call per trace through a named scheduler."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Real

import numpy as np
import polars as pl

from .._results import Part, Tables, Written
from .._validation import check_choice, check_positive
from ..errors import InputError
from ..schemas import REQUEST_CLASSES, REQUEST_RESULTS
from . import _engine
from ._device import Device
from ._request_metrics import RequestMetrics, compute_request_metrics
from ._trace import RequestArrays

SCHEDULER_PARAMS: dict[str, dict[str, float]] = {
    name: {param: default for param, default, _, _ in params} for name, params in _engine.scheduler_params().items()
}
"""Each scheduler's scalar parameters and their defaults, in the order the engine takes them.

They are declared in C next to each scheduler; ``_engine.scheduler_params()`` also gives
each parameter's allowed values and a one-line description."""

SCHEDULERS = tuple(SCHEDULER_PARAMS)

_DEFAULT_DEVICE = Device()


@dataclass(frozen=True)
class RequestResults(Tables):
    """The tables of a request replay, as ``iosets replay-requests -o`` writes them and the report reads them.

    ``write(path)`` writes the per-request table at ``path`` and the per-class one beside it as
    ``<stem>.classes<suffix>``; ``read(path)`` reads them back.
    """

    PARTS = (
        Part("requests", REQUEST_RESULTS, "request results"),
        Part("classes", REQUEST_CLASSES, "per-class results"),
    )

    requests: pl.DataFrame
    """:data:`iosets.schemas.REQUEST_RESULTS`: one row per request."""
    classes: pl.DataFrame
    """:data:`iosets.schemas.REQUEST_CLASSES`: one row per class."""


@dataclass(frozen=True)
class RequestReplay:
    """Result of :func:`replay_requests`.

    Attributes
    ----------
    scheduler : str
        The scheduler replayed.
    trace : RequestArrays
        The requests as replayed (sorted by arrival).
    dispatch, complete : numpy.ndarray
        Dispatch and completion date of each request of ``trace``.
    unit : numpy.ndarray
        Dispatched unit of each request (requests aggregated together share one).
    metrics : RequestMetrics
    weight : numpy.ndarray
        Weight of each class as the scheduler used it.
    engine_seconds : float
        Wall time of the C call.
    """

    scheduler: str
    trace: RequestArrays
    dispatch: np.ndarray
    complete: np.ndarray
    unit: np.ndarray
    metrics: RequestMetrics
    weight: np.ndarray
    engine_seconds: float

    def requests(self) -> pl.DataFrame:
        """Per request (:data:`iosets.schemas.REQUEST_RESULTS`): ``row`` (in the source requests table), ``class``,
        ``arrival``, ``dispatch``, ``complete``, ``unit``, ``size``, ``scheduler``."""
        return pl.DataFrame(
            {
                "row": self.trace.order,
                "class": self.trace.classes[self.trace.cls],
                "arrival": self.trace.arrival,
                "dispatch": self.dispatch,
                "complete": self.complete,
                "unit": self.unit,
                "size": self.trace.size.astype(np.int64),
            }
        ).with_columns(scheduler=pl.lit(self.scheduler))

    @property
    def results(self) -> RequestResults:
        """The per-request and per-class tables (:class:`RequestResults`), each with the scheduler's name."""
        classes = self.metrics.classes.with_columns(scheduler=pl.lit(self.scheduler))
        return RequestResults(requests=self.requests(), classes=classes)

    def write(self, path: str | os.PathLike) -> Written:
        """Write :attr:`results`: the per-request table at ``path``, the per-class one as ``<stem>.classes<suffix>``."""
        return self.results.write(path)


def _per_class(values, trace: RequestArrays, name: str, default: float) -> np.ndarray:
    """A per-class float64 array from None, a scalar, a mapping class -> value or an array
    (the engine checks the values' ranges)."""
    labels = trace.classes.tolist()
    if values is None:
        return np.full(len(labels), float(default))
    if isinstance(values, Mapping):
        unknown = set(values) - set(labels)
        if unknown:
            raise InputError(f"{name}: unknown classes {sorted(map(str, unknown))}; classes are {labels}")
        values = [values.get(c, default) for c in labels]
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name}: expected numbers, got {values!r}") from None
    if array.ndim == 0:
        return np.full(len(labels), float(array))
    if array.shape != (len(labels),):
        raise InputError(f"{name}: expected {len(labels)} values (one per class), got {array.size}")
    return array


def _scheduler_params(scheduler: str, params: dict) -> np.ndarray:
    """The scheduler's parameter vector, defaults filled in (the engine checks each one's range)."""
    defaults = SCHEDULER_PARAMS[scheduler]
    unknown = params.keys() - defaults.keys()
    if unknown:
        expected = f"expected one of {', '.join(defaults)}" if defaults else "it takes none"
        raise InputError(f"{scheduler}: unknown parameters {sorted(unknown)}; {expected}")
    vector = np.empty(len(defaults))
    for k, (param, default) in enumerate(defaults.items()):
        value = params.get(param, default)
        if not isinstance(value, Real):
            raise InputError(f"{scheduler}: {param} must be a number, got {value!r}")
        vector[k] = value
    return vector


def replay_requests(
    ops: pl.DataFrame | RequestArrays,
    scheduler: str = "fcfs",
    *,
    device: Device | None = None,
    class_by: str = "job_id",
    server_by: str | None = None,
    weights=None,
    reservations=None,
    limits=None,
    phase_gap: float = 1.0,
    **params: float,
) -> RequestReplay:
    """Replay a request trace through ``scheduler`` and the device model, in C.

    Parameters
    ----------
    ops : polars.DataFrame or RequestArrays
        A requests table (:data:`iosets.schemas.REQUESTS`), a site trace (:data:`iosets.schemas.SITE_REQUESTS`,
        ``iosets ingest --site``: told by its ``synthetic`` column; its requests synthesised from HEATMAP bins
        are read as :meth:`RequestArrays.from_site` says) or a prepared trace.
    scheduler : str, default="fcfs"
        One of :data:`SCHEDULERS`.
    device : Device, default=None
        Device model; ``Device()`` when None.
    class_by : str, default="job_id"
        Column of ``ops`` giving each request's class.
    server_by : str, default=None
        Column of ``ops`` naming each request's server; ``server`` when present, else one server.
    weights, reservations, limits : scalar, mapping class -> value, or array, default=None
        Per-class parameters (weights default to 1, the others to 0 = none).
    phase_gap : float, default=1.0
        For ``iosets-wfq`` without a ``phase`` column: idle gap (s) that starts a new I/O phase.
    **params : float
        The scheduler's scalar parameters (see :data:`SCHEDULER_PARAMS`).

    Returns
    -------
    RequestReplay
    """
    check_choice(scheduler, "scheduler", SCHEDULERS)
    vector = _scheduler_params(scheduler, params)
    device = device or _DEFAULT_DEVICE
    if isinstance(ops, RequestArrays):
        trace = ops
    elif "synthetic" in ops.columns:  # a site trace
        trace = RequestArrays.from_site(
            ops, class_by=class_by, server_by=server_by or ("server" if "server" in ops.columns else None)
        )
    else:
        trace = RequestArrays.from_ops(
            ops,
            class_by=class_by,
            server_by=server_by or ("server" if "server" in ops.columns else None),
            phase_gap=check_positive(phase_gap, "phase_gap", strict=False) if scheduler == "iosets-wfq" else None,
        )
    weight = _per_class(weights, trace, "weights", 1.0)
    reservation = _per_class(reservations, trace, "reservations", 0.0)
    limit = _per_class(limits, trace, "limits", 0.0)
    dispatch, complete = np.full((2, trace.n), np.nan)  # NaN for a request never dispatched
    unit = np.full(trace.n, -1, dtype=np.int64)
    start = time.perf_counter()
    n_units = _engine.replay_requests(
        scheduler=scheduler,
        arrival=trace.arrival,
        **trace.engine_arrays(),
        device=device,
        weight=weight,
        reservation=reservation,
        limit=limit,
        params=vector,
        dispatch=dispatch,
        complete=complete,
        unit=unit,
    )
    seconds = time.perf_counter() - start
    metrics = compute_request_metrics(
        trace, complete, n_units, weight, reservation, cost_bytes=bool(params.get("cost_bytes", 0.0))
    )
    return RequestReplay(scheduler, trace, dispatch, complete, unit, metrics, weight, seconds)
