"""Device calibration: the device under which the fcfs closed-loop replay reproduces a site trace's durations.

A closed-form start (a least-squares line ``duration = overhead + size / bandwidth (+ seek
when the request does not continue the previous one)`` over the requests that found the
device idle), refined by a bounded derivative-free search on the median relative error of
phase durations, each evaluation one C call; the queue depth by trying a few integers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import polars as pl
from scipy.optimize import minimize

from ..errors import InputError
from ._closed import _build, _Chains, _run
from ._device import Device
from ._requests import _scheduler_params
from ._trace import RequestArrays

FIT_PARAMETERS = ("bandwidth", "overhead", "queue_depth", "seek")
"""The device parameters :func:`calibrate` can fit."""

QUEUE_DEPTHS = (1, 2, 4, 8, 16)
"""The queue depths :func:`calibrate` tries."""

_MAX_EVALUATIONS = 60  # replays of the refinement
_SPREAD = 10.0  # the search keeps bandwidth within [start / spread, start * spread]


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate`.

    Attributes
    ----------
    device : Device
        The fitted device (``iops`` 0: the bandwidth model).
    error : dict of str to float
        Relative errors of the fcfs replay on ``device``: ``phase_median``, ``phase_p90``
        (phase durations), ``request_median``, ``request_p90`` (request durations); NaN
        when the trace has no phase or request of positive recorded duration.
    n_phases, n_requests : int
        Phases and requests of positive recorded duration the errors are over.
    """

    device: Device
    error: dict[str, float]
    n_phases: int
    n_requests: int

    def to_dict(self) -> dict:
        """The device, the errors and the counts as plain values (``iosets calibrate --json``)."""
        return {
            "device": self.device.to_dict(),
            "error": dict(self.error),
            "n_phases": self.n_phases,
            "n_requests": self.n_requests,
        }


@dataclass(frozen=True)
class _Fit:
    """What one replay is compared with: the trace, its chains and its recorded durations."""

    trace: RequestArrays
    chains: _Chains
    request_duration: np.ndarray  # recorded, per request in engine order
    phase_duration: np.ndarray  # recorded, per chain phase

    def replay(self, device: Device) -> tuple[np.ndarray, np.ndarray]:
        """Relative errors of request and phase durations (positive recorded ones) of the fcfs replay on ``device``."""
        one = np.ones(self.trace.classes.size)
        got = _run(
            "fcfs",
            self.trace,
            self.chains,
            self.trace.server,
            1,
            device,
            one,
            one * 0,
            one * 0,
            _scheduler_params("fcfs", {}),
        )
        return (
            _relative(got[3] - got[1], self.request_duration),
            _relative(got[6] - got[5], self.phase_duration),
        )

    def score(self, device: Device) -> float:
        """The refinement's objective: median relative phase-duration error (request error without phases)."""
        requests, phases = self.replay(device)
        errors = phases if phases.size else requests
        return float(np.median(errors))


def _relative(replayed: np.ndarray, recorded: np.ndarray) -> np.ndarray:
    """|replayed - recorded| / recorded where recorded > 0."""
    keep = recorded > 0
    return np.abs(replayed[keep] - recorded[keep]) / recorded[keep]


def _closed_form(trace: RequestArrays, start: np.ndarray, end: np.ndarray, fit: tuple[str, ...]) -> dict[str, float]:
    """Bandwidth, overhead and seek from a least-squares line over the requests that found the device idle.

    Requests are in recorded start order. One found the device idle when it started no
    earlier than every earlier request ended and shares its start with no other. Without
    two such requests of different sizes, all requests are used. A non-positive slope
    falls back on bandwidth = bytes / time of the requests of at least median size.
    """
    duration = end - start
    previous_end = np.maximum.accumulate(np.r_[-np.inf, end[:-1]])
    unique_start = np.r_[True, start[1:] != start[:-1]] & np.r_[start[:-1] != start[1:], True]
    idle = (start >= previous_end) & unique_start & (duration > 0)
    if np.unique(trace.size[idle]).size < 2:
        idle = duration > 0
    if not idle.any():
        raise InputError("site ops: no request has a positive duration (end > start): nothing to calibrate on")
    size, duration = trace.size[idle], duration[idle]
    continues = np.r_[
        False, (trace.stream[1:] == trace.stream[:-1]) & (trace.offset[1:] == trace.offset[:-1] + trace.size[:-1])
    ]
    columns = [np.ones(size.size), size]
    jumps = (~continues[idle]).astype(np.float64)
    with_seek = "seek" in fit and 0 < jumps.sum() < jumps.size
    if with_seek:
        columns.append(jumps)
    coef = np.linalg.lstsq(np.column_stack(columns), duration, rcond=None)[0]
    if coef[1] > 0:
        bandwidth = 1.0 / coef[1]
    else:
        big = size >= np.median(size)
        bandwidth = float(size[big].sum() / duration[big].sum())
    overhead = float(np.median(duration - size / bandwidth)) if coef[1] <= 0 else float(coef[0])
    return {
        "bandwidth": float(bandwidth),
        "overhead": max(overhead, 0.0),
        "seek": max(float(coef[2]), 0.0) if with_seek else 0.0,
    }


def _refine(fit: _Fit, device: Device, names: list[str], scale: float) -> Device:
    """``device`` with ``names`` moved by a bounded Powell search on :meth:`_Fit.score`; kept only if it helps."""
    if not names:
        return device

    start, bounds = [], []
    for name in names:
        value = getattr(device, name)
        if name == "bandwidth":
            start.append(np.log(value))
            bounds.append((np.log(value / _SPREAD), np.log(value * _SPREAD)))
        else:
            start.append(value)
            bounds.append((0.0, max(_SPREAD * value, scale)))
    lower, upper = np.array(bounds).T

    def build(x: np.ndarray) -> Device:
        # Powell may step a last bit outside its bounds (a seek of -7e-21): the device takes the bound
        values: dict[str, Any] = {
            name: float(value) for name, value in zip(names, np.clip(x, lower, upper), strict=True)
        }
        if "bandwidth" in values:
            values["bandwidth"] = float(np.exp(values["bandwidth"]))
        return replace(device, **values)

    best = minimize(
        lambda x: fit.score(build(x)),
        np.array(start),
        method="Powell",
        bounds=bounds,
        options={"maxfev": _MAX_EVALUATIONS, "xtol": 1e-4, "ftol": 1e-6},
    )
    refined = build(best.x)
    return refined if fit.score(refined) < fit.score(device) else device


def calibrate(site_requests: pl.DataFrame, *, fit=FIT_PARAMETERS, device: Device | None = None) -> Calibration:
    """Fit the device so that the fcfs closed-loop replay reproduces the recorded request and phase durations.

    Parameters
    ----------
    site_requests : polars.DataFrame
        A site trace (:data:`iosets.schemas.SITE_REQUESTS`) with every request's ``end``.
    fit : sequence of str, default=FIT_PARAMETERS
        The parameters to fit, among ``bandwidth``, ``overhead``, ``queue_depth`` and ``seek``;
        the others keep ``device``'s values.
    device : Device, default=None
        Values of the parameters not fitted; ``Device()`` when None.

    Returns
    -------
    Calibration
        The fitted device and the median and p90 relative errors of phase and request durations.

    Examples
    --------
    >>> ops = pl.DataFrame({"job_id": ["a"] * 3, "rank": [0] * 3, "op": ["write"] * 3, "offset": [0, 10**6, 3 * 10**6],
    ...     "size": [10**6, 2 * 10**6, 10**6], "start": [0.0, 1.001, 5.0], "end": [0.001, 1.003, 5.001],
    ...     "file": ["f"] * 3, "phase": [0, 0, 1], "synthetic": [False] * 3})
    >>> round(calibrate(ops, fit=("bandwidth", "overhead")).device.bandwidth)
    1000000000
    """
    fit = tuple(fit)
    unknown = sorted(set(fit) - set(FIT_PARAMETERS))
    if unknown:
        raise InputError(f"fit: unknown device parameters {unknown}; expected some of {', '.join(FIT_PARAMETERS)}")
    trace, chains, phases, keys = _build(site_requests, None)
    start, end = keys["start"].to_numpy(), keys["end"].to_numpy()
    recorded = _Fit(trace, chains, end - start, (phases["recorded_end"] - phases["recorded_start"]).to_numpy())
    base = replace(device or Device(), iops=0.0)
    estimate = _closed_form(trace, start, end, fit)
    fitted: dict[str, Any] = {name: value for name, value in estimate.items() if name in fit}
    current = replace(base, **fitted)
    if "queue_depth" in fit:
        scores = {depth: recorded.score(replace(current, queue_depth=depth)) for depth in QUEUE_DEPTHS}
        current = replace(current, queue_depth=min(scores, key=lambda depth: (scores[depth], depth)))
    names = [name for name in ("bandwidth", "overhead", "seek") if name in fit]
    current = _refine(recorded, current, names, float(np.median(recorded.request_duration)))
    requests, phase_errors = recorded.replay(current)
    return Calibration(
        device=current,
        error={
            "phase_median": _quantile(phase_errors, 0.5),
            "phase_p90": _quantile(phase_errors, 0.9),
            "request_median": _quantile(requests, 0.5),
            "request_p90": _quantile(requests, 0.9),
        },
        n_phases=int(phase_errors.size),
        n_requests=int(requests.size),
    )


def _quantile(values: np.ndarray, q: float) -> float:
    """The q-quantile, NaN for no values."""
    return float(np.quantile(values, q)) if values.size else float("nan")
