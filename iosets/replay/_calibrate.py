"""Device calibration: the device under which the fcfs closed-loop replay reproduces a site trace's durations.

Each parameter is fitted only where the trace holds evidence for it (:mod:`._evidence`); the
others keep a neutral value, the given device's, or a value the caller fixed. A closed-form
start (a least-squares line ``duration = overhead + size / bandwidth (+ seek)`` over the
requests that found the device idle) is refined by a bounded derivative-free search on the
median relative error of phase durations, each evaluation one C call. Under a rate limit the
phases last what the limit lets through, so they tell neither the bandwidth nor the rate from
the burst: the bandwidth and the rate are what the requests show, the search is left the burst,
and a rate not below the bandwidth is refused (it limits nothing). The concurrency is fitted by a
coarse then fine search over integers. Cross-validation fits again on part of the jobs (or
phases, for one job) and reports the error on the others.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
import polars as pl
from scipy.optimize import minimize

from ..errors import InputError
from ._closed import _build, _Chains, _PerRequest, _run
from ._device import Device
from ._evidence import (
    TAIL_RATIO,
    Evidence,
    TraceEvidence,
    beaten_limit,
    between,
    concurrency_candidates,
    found_idle,
    idle_bandwidth,
    jumps,
    slice_pattern,
    trace_evidence,
)
from ._requests import _scheduler_params
from ._trace import RequestArrays

FIT_PARAMETERS = ("bandwidth", "overhead", "seek", "concurrency", "rate", "burst", "slice")
"""The device parameters :func:`calibrate` can fit; the others are site settings (or ``fix``)."""

DEFAULT_FIT = FIT_PARAMETERS
"""What :func:`calibrate` fits unless told: every parameter, each only where the trace holds its evidence. On the
real runs of blk-throttle (tests/replay/test_real_runs.py, two experiments) the slice, found on both, puts every
judged job's predicted stretch within 7.5 % of the measured one, where a continuous bucket (fit without
``"slice"``) is off by up to 11 % (jobs4r3) and 15 % (jobs4r5): the burst the phases set decides how long a 20 MB
phase waits, and no bucket is the kernel's 20 MB per 100 ms slice."""

FOLDS = 5
"""Cross-validation folds (fewer when the trace has fewer jobs, or phases for one job)."""

PHASE_SHARE = 1e-3
"""The errors are over phases that last at least this share of their job's recorded span: a phase of one 80-byte
request (16 us of an 11 s job) changes no runtime, and its error would weigh as much as the job's main phase."""

_LOG_SCALE = {"bandwidth", "rate", "burst"}  # searched on a log scale

_RATIO_FLOOR = 1e-3  # a phase replayed in no time counts as 1000 times too fast, not infinitely

CONCURRENCY_GAIN = 0.1
"""A concurrency above 1 is kept only when it lowers the phase error by this fraction: parallel service is not
invented to absorb noise."""

_MAX_EVALUATIONS = 60  # replays of one refinement
_FOLD_EVALUATIONS = 30  # replays of a fold's refinement, from the full fit
_COARSE_EVALUATIONS = 20  # replays of the refinement at each concurrency tried
_SPREAD = 10.0  # the search keeps bandwidth within [start / spread, start * spread]


@dataclass(frozen=True)
class Parameter:
    """One device parameter of a calibration: its value and what set it.

    Attributes
    ----------
    name : str
    value : float
    how : str
        ``fitted``, ``fixed`` (by the caller), ``not fitted`` (no evidence: a neutral value), ``given`` (not
        fittable: the given device's, a site setting) or ``refused`` (a rate limit fitted at a rate not below the
        bandwidth: it limits nothing, so 0).
    evidence : int
        Requests that informed it (0 when fixed or given).
    reason : str
        The evidence, or why it was not fitted.
    """

    name: str
    value: float
    how: str
    evidence: int
    reason: str


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate`.

    Attributes
    ----------
    device : Device
        The fitted device (``iops`` 0: the bandwidth model).
    parameters : tuple of Parameter
        Each fittable parameter, its value and the evidence behind it.
    error : dict of str to float
        In-sample relative errors of the fcfs replay on ``device``: ``phase_median``, ``phase_p90`` (phase
        durations), ``request_median``, ``request_p90`` (request durations); NaN when the trace has no phase or
        request of positive recorded duration.
    held_out : dict of str to float
        Cross-validation: ``median`` and ``p90`` of the held-out phases' ``|replayed / recorded - 1|`` (each phase
        replayed on the device fitted without its fold), ``n_phases`` and ``folds``; NaN with 0 folds when there is
        only one job with one phase.
    held_out_by : str
        ``jobs`` (folds of whole jobs), ``phases`` (one job: folds of its phases), ``ranks`` (one job of one
        phase: folds of its ranks) or ``none`` (not cross-validated).
    n_phases, n_requests : int
        Units the phase errors are over (phases lasting at least :data:`PHASE_SHARE` of their job's span; for one
        job of one phase, its ranks' spans in it: first request to last end) and requests of positive recorded
        duration.
    units : str
        What ``n_phases`` counts: ``phases`` or ``ranks``.
    """

    device: Device
    parameters: tuple[Parameter, ...]
    error: dict[str, float]
    held_out: dict[str, float]
    held_out_by: str
    n_phases: int
    n_requests: int
    units: str = "phases"

    def to_dict(self) -> dict:
        """The device, each parameter's evidence, the errors and the counts as plain values (``--json``)."""
        return {
            "device": self.device.to_dict(),
            "parameters": [vars(parameter) for parameter in self.parameters],
            "error": dict(self.error),
            "held_out": dict(self.held_out) | {"by": self.held_out_by},
            "n_phases": self.n_phases,
            "n_requests": self.n_requests,
            "units": self.units,
        }


@dataclass(frozen=True)
class _Fit:
    """What one replay is compared with: the trace, its chains and its recorded durations."""

    trace: RequestArrays
    chains: _Chains
    request_duration: np.ndarray  # recorded, per request in engine order
    phase_duration: np.ndarray  # recorded, per unit: chain phase, or rank span (ranks)
    counted: np.ndarray  # the units the errors are over (PHASE_SHARE)
    ranks: np.ndarray | None = None  # per request (engine order) its rank span in the one phase, or -1; None: phases

    def replay(self, device: Device) -> tuple[np.ndarray, np.ndarray]:
        """Replayed request and phase durations (requests in engine order, chain phases) of the fcfs replay on
        ``device`` (whose targets and striping are those the trace was built for)."""
        one = np.ones(self.trace.classes.size)
        got = _run(
            "fcfs",
            self.trace,
            self.chains,
            self.trace.server,
            self.trace.n_servers,
            device,
            one,
            one * 0,
            one * 0,
            _scheduler_params("fcfs", {}),
        )
        per_request = _PerRequest.of(self.chains.first)
        release, complete = per_request.first(got[1]), per_request.max(got[3])
        if self.ranks is None:
            return complete - release, got[6] - got[5]
        return complete - release, _spans(self.ranks, release, complete, self.phase_duration.size)

    def errors(self, device: Device, phases: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Relative errors of request and phase durations (positive recorded ones; of ``phases`` only if given)."""
        requests, replayed = self.replay(device)
        keep = self.counted if phases is None else phases & self.counted
        return (
            _relative(requests, self.request_duration, self.request_duration > 0),
            _relative(replayed, self.phase_duration, keep),
        )

    def score(self, device: Device, phases: np.ndarray | None = None) -> float:
        """The search's objective: the mean of |log(replayed / recorded)| over phases (over requests without
        phases): symmetric in too slow and too fast, and no phase far off is hidden by a median of few."""
        requests, phase_errors = self.errors(device, phases)
        errors = phase_errors if phase_errors.size else requests
        return float(np.mean(np.abs(np.log(np.maximum(errors + 1.0, _RATIO_FLOOR))))) if errors.size else 0.0


def _spans(unit: np.ndarray, start: np.ndarray, end: np.ndarray, n_units: int) -> np.ndarray:
    """Per unit, the last end of its requests minus their first start (requests of unit -1 left out)."""
    keep = unit >= 0
    first, last = np.full(n_units, np.inf), np.full(n_units, -np.inf)
    np.minimum.at(first, unit[keep], start[keep])
    np.maximum.at(last, unit[keep], end[keep])
    return last - first


def _rank_units(rank: np.ndarray, phase: np.ndarray, counted: np.ndarray) -> tuple[np.ndarray, int]:
    """Each request's rank span in the one counted phase (dense ids, -1 outside it) and the number of spans."""
    inside = counted[phase]
    unit = np.full(rank.size, -1, dtype=np.int64)
    ranks, dense = np.unique(rank[inside], return_inverse=True)
    unit[inside] = dense
    return unit, ranks.size


def _counted(phases: pl.DataFrame, duration: np.ndarray) -> np.ndarray:
    """The phases that last at least :data:`PHASE_SHARE` of their job's recorded span; all the phases of positive
    duration of a job none of whose phases does (a job of short bursts spread over a long life)."""
    job = phases["_job"].to_numpy()
    span = phases.select((pl.col("recorded_end").max() - pl.col("recorded_start").min()).over("_job"))
    lasting = duration >= PHASE_SHARE * span.to_series().to_numpy()
    has_lasting = np.bincount(job, weights=lasting, minlength=int(job.max(initial=-1)) + 1) > 0
    return (duration > 0) & (lasting | ~has_lasting[job])


def _relative(replayed: np.ndarray, recorded: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """replayed / recorded - 1 where ``keep``."""
    return replayed[keep] / recorded[keep] - 1.0


def _closed_form(
    size: np.ndarray,
    stream: np.ndarray,
    offset: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    evidence: TraceEvidence,
    fit: set[str],
) -> dict[str, float]:
    """Bandwidth, overhead and seek from a least-squares line over the requests that found the device idle.

    Without two such requests of different sizes, all requests are used. A parameter without evidence (or not
    to fit) is left out of the line (0); without a seek to fit, the line is over the more common of jumping and
    contiguous requests (the overhead then carries what the seek would). A non-positive slope falls back on
    bandwidth = bytes / time of the requests of at least median size.
    """
    idle = found_idle(start, end)
    duration = end - start
    if np.unique(size[idle]).size < 2:
        idle = duration > 0
    jumped = jumps(stream, offset, size)
    with_seek = "seek" in fit and evidence.seek.usable and 0 < jumped[idle].sum() < idle.sum()
    if not with_seek:
        idle &= jumped if 2 * jumped[idle].sum() >= idle.sum() else ~jumped
    size, duration, jumped = size[idle], duration[idle], jumped[idle]
    with_overhead = "overhead" in fit and evidence.overhead.usable
    columns = [size] + ([np.ones(size.size)] if with_overhead else []) + ([jumped * 1.0] if with_seek else [])
    coef = list(np.linalg.lstsq(np.column_stack(columns), duration, rcond=None)[0])
    slope = coef.pop(0)
    if slope > 0:
        bandwidth = 1.0 / slope
    else:
        big = size >= np.median(size)
        bandwidth = float(size[big].sum() / duration[big].sum())
    overhead = max(float(coef.pop(0)), 0.0) if with_overhead else 0.0
    seek = max(float(coef.pop(0)), 0.0) if with_seek else 0.0
    return {"bandwidth": float(bandwidth), "overhead": overhead if slope > 0 else 0.0, "seek": seek}


def _rate_limit(
    size: np.ndarray, start: np.ndarray, end: np.ndarray, phase: np.ndarray
) -> tuple[dict[str, float], int]:
    """A rate limit seen in the requests found idle (in start order, with their chain phase): ``rate`` (the bytes
    over the time of those from their phase's first wait on: what the limit lets through once the burst is spent)
    and ``burst`` (the bytes of the fast ones, those within :data:`TAIL_RATIO` of the median duration, per wait);
    and how many requests the rate is over."""
    idle = found_idle(start, end)
    served, moved = (end - start)[idle], size[idle]
    fast = served <= TAIL_RATIO * np.median(served)
    waits = max(int((~fast).sum()), 1)
    first_wait = np.full(int(phase.max(initial=-1)) + 1, np.inf)
    np.minimum.at(first_wait, phase[idle][~fast], start[idle][~fast])
    spent = start[idle] >= first_wait[phase[idle]]
    rate = float(moved[spent].sum() / served[spent].sum())
    return {"rate": rate, "burst": float(moved[fast].sum() / waits)}, int(spent.sum())


def _bucket_evidence(evidence: TraceEvidence, limited: set[str], informed: int) -> TraceEvidence:
    """``evidence`` saying how a continuous rate limit's ``limited`` parameters are set: the rate is the ``informed``
    requests' (:func:`_rate_limit`: what the limit lets through once the burst is spent), the burst the phases'
    given that rate and the bandwidth (a phase lasts about its bytes less the burst over the rate: one phase tells
    one of the two)."""
    bucket = evidence.bucket
    said = {
        "rate": f"the bytes over the time of requests found idle from their phase's first wait on: {bucket.reason}",
        "burst": f"the phases' durations at that rate and bandwidth: {bucket.reason}",
    }
    count = {"rate": informed, "burst": bucket.count}
    told: dict[str, Any] = {name: Evidence(count[name], True, said[name]) for name in limited}
    return replace(evidence, **told)


def _refuse_no_limit(device: Device, fitted: bool, wanted: set[str]) -> tuple[Device, dict[str, str]]:
    """``device`` without its rate limit (rate, burst and slice 0) when a ``fitted`` rate is not below its bandwidth,
    and why, per limit parameter dropped (those ``wanted`` or not 0); else ``device`` and no reason. Such a bucket
    refills faster than the device moves bytes: it limits nothing, and reporting it would claim a limit the trace
    does not show."""
    if not fitted or not device.rate >= device.bandwidth:
        return device, {}
    reason = (
        f"the fitted rate {device.rate * 1e-6:.4g} MB/s is not below the bandwidth {device.bandwidth * 1e-6:.4g} MB/s: "
        "no limit, refused"
    )
    limit = ("rate", "burst", "slice")
    dropped = {name: reason for name in limit if name in wanted or getattr(device, name) > 0}
    none: dict[str, Any] = dict.fromkeys(limit, 0.0)
    return replace(device, **none), dropped


def _slice_limit(
    size: np.ndarray, start: np.ndarray, end: np.ndarray, evidence: TraceEvidence, wanted: set[str], base: Device
) -> tuple[dict[str, float], set[str]]:
    """The slice and the rate of a limit granted per slice (:func:`slice_pattern`: the period of the waits and the
    budget the bytes between them allow, rate = budget / slice) when the slice is to fit and has evidence, else a
    slice of 0 when it is to fit; with a slice (fitted or given) the burst is 0. Returns those values and the
    parameters the search must leave alone: the budget is knife-edged (a phase one request over it waits a whole
    slice), only the request pattern tells it."""
    if "slice" in wanted and evidence.slice.usable:
        pattern = slice_pattern(start, end, size)
        values = {"slice": pattern.period, "burst": 0.0}
        if "rate" in wanted:
            values["rate"] = pattern.budget / pattern.period
        return values, {"rate", "burst"}
    if "slice" in wanted:
        return {"slice": 0.0}, set()
    return ({"burst": 0.0}, {"burst"}) if base.slice > 0 else ({}, set())


def _refine(
    score: Callable[[Device], float],
    device: Device,
    names: list[str],
    scale: float,
    evaluations: int,
    reach: int = 1,
) -> Device:
    """``device`` with ``names`` moved by a bounded Powell search on ``score``; kept only if it helps.

    The bandwidth stays within [start / spread, start x spread x ``reach``] (``reach``: the most requests the
    trace had in flight at once, whose streams together may move that much more than one), the rate limit's
    rate and burst within [start / spread, start x spread] (searched, as the bandwidth, on a log scale), the
    costs within [0, max(spread x start, ``scale``)]."""
    if not names:
        return device

    start, bounds = [], []
    for name in names:
        value = getattr(device, name)
        if name in _LOG_SCALE:
            start.append(np.log(value))
            bounds.append((np.log(value / _SPREAD), np.log(value * _SPREAD * (reach if name == "bandwidth" else 1))))
        else:
            start.append(value)
            bounds.append((0.0, max(_SPREAD * value, scale)))
    lower, upper = np.array(bounds).T

    def build(x: np.ndarray) -> Device:
        # Powell may step a last bit outside its bounds (a seek of -7e-21): the device takes the bound
        values: dict[str, Any] = {
            name: float(value) for name, value in zip(names, np.clip(x, lower, upper), strict=True)
        }
        for name in _LOG_SCALE & values.keys():
            values[name] = float(np.exp(values[name]))
        return replace(device, **values)

    best = minimize(
        lambda x: score(build(x)),
        np.array(start),
        method="Powell",
        bounds=bounds,
        options={"maxfev": evaluations, "xtol": 1e-4, "ftol": 1e-6},
    )
    refined = build(best.x)
    return refined if score(refined) < score(device) else device


def _with_concurrency(device: Device, concurrency: int) -> Device:
    """``device`` serving ``concurrency`` units at once (its queue depth at least as deep, or they could not)."""
    return replace(device, concurrency=concurrency, queue_depth=max(device.queue_depth, concurrency))


def _fit_concurrency(
    score: Callable[[Device], float], device: Device, names: list[str], scale: float, most: int
) -> Device:
    """The refined device serving one unit at a time, unless a concurrency (2 to ``most``: powers of two, then
    the integers around the best of them) fits the phases clearly better (:data:`CONCURRENCY_GAIN`)."""
    alone = _refine(score, _with_concurrency(device, 1), names, scale, _MAX_EVALUATIONS, most)
    if most < 2:
        return alone
    tried: dict[int, tuple[float, Device]] = {}

    def attempt(concurrency: int) -> None:
        if concurrency not in tried:
            refined = _refine(score, _with_concurrency(alone, concurrency), names, scale, _COARSE_EVALUATIONS, most)
            tried[concurrency] = (score(refined), refined)

    coarse = [c for c in concurrency_candidates(most) if c >= 2]
    for concurrency in coarse:
        attempt(concurrency)
    best = min(tried, key=lambda c: (tried[c][0], c))
    at = coarse.index(best)
    for concurrency in between(coarse[at - 1] if at else 1, coarse[min(at + 1, len(coarse) - 1)]):
        attempt(max(concurrency, 2))
    best = min(tried, key=lambda c: (tried[c][0], c))
    parallel = _refine(score, tried[best][1], names, scale, _MAX_EVALUATIONS, most)
    return parallel if score(parallel) < (1.0 - CONCURRENCY_GAIN) * score(alone) else alone


def _fit(
    fit: _Fit,
    base: Device,
    names: list[str],
    fit_concurrency: bool,
    most: int,
    phases: np.ndarray | None = None,
    evaluations: int = _MAX_EVALUATIONS,
) -> Device:
    """``base`` with ``names`` (and the concurrency when asked) fitted to the phases ``phases`` (all when None)."""
    scale = float(np.median(fit.request_duration))

    def score(device: Device) -> float:
        return fit.score(device, phases)

    if fit_concurrency:
        return _fit_concurrency(score, base, names, scale, most)
    return _refine(score, base, names, scale, evaluations, most)


def _folds(unit_job: np.ndarray, positive: np.ndarray, units: str) -> tuple[str, np.ndarray, int]:
    """Each unit's fold: by job when there are several jobs, else by unit (``units``: phases, or ranks);
    (by, fold per unit, folds)."""
    n_jobs = int(unit_job.max(initial=-1)) + 1
    if n_jobs >= 2:
        folds = min(FOLDS, n_jobs)
        return "jobs", unit_job % folds, folds
    order = np.cumsum(positive) - 1  # the positive units dealt in turn
    folds = min(FOLDS, int(positive.sum()))
    return units, np.where(positive, order % max(folds, 1), -1), folds if folds >= 2 else 0


def _cross_validate(
    fit: _Fit, device: Device, names: list[str], unit_job: np.ndarray, units: str
) -> tuple[str, dict[str, float]]:
    """Held-out errors: each fold's units replayed on the device fitted (from ``device``) on the other folds.

    The concurrency stays the full fit's (an integer chosen among few); bandwidth, overhead and seek are fitted
    again per fold.
    """
    positive = fit.counted
    by, fold, folds = _folds(unit_job, positive, units)
    held: list[np.ndarray] = []
    for k in range(folds):
        train, test = positive & (fold != k), positive & (fold == k)
        if not train.any() or not test.any():
            continue
        fitted, _ = _refuse_no_limit(
            _fit(fit, device, names, False, 1, train, _FOLD_EVALUATIONS), "rate" in names, set()
        )
        _, replayed = fit.replay(fitted)
        held.append(np.abs(replayed[test] / fit.phase_duration[test] - 1.0))
    errors = np.concatenate(held) if held else np.empty(0)
    return by, {
        "median": _quantile(errors, 0.5),
        "p90": _quantile(errors, 0.9),
        "n_phases": float(errors.size),
        "folds": float(len(held)),
    }


def _parameters(
    device: Device, evidence: TraceEvidence, fit: set[str], fixed: Mapping[str, float], refused: Mapping[str, str]
) -> tuple[Parameter, ...]:
    """Each fittable parameter's value and what set it (``refused``: the dropped rate limit's, and why)."""
    rows = []
    for name in FIT_PARAMETERS:
        value = float(getattr(device, name))
        if name in refused:
            rows.append(Parameter(name, value, "refused", evidence.of(name).count, refused[name]))
        elif name in fixed:
            rows.append(Parameter(name, value, "fixed", 0, f"--fix {name}={fixed[name]:g}"))
        elif name not in fit:
            rows.append(Parameter(name, value, "given", 0, "not asked to fit: the given device's value"))
        else:
            proof = evidence.of(name)
            rows.append(Parameter(name, value, "fitted" if proof.usable else "not fitted", proof.count, proof.reason))
    return tuple(rows)


def calibrate(
    site_requests: pl.DataFrame,
    *,
    fit=DEFAULT_FIT,
    device: Device | None = None,
    fix: Mapping[str, float] | None = None,
    layout: pl.DataFrame | None = None,
    cross_validate: bool = True,
) -> Calibration:
    """Fit the device so that the fcfs closed-loop replay reproduces the recorded request and phase durations.

    Give the trace of the runs to fit on: jobs that ran alone, jobs that ran together (their recorded overlap
    is replayed: the concurrency and the bandwidth shared), or both. A parameter is fitted only with evidence
    for it (:mod:`iosets.replay._evidence`: e.g. no seek from a trace whose only jumps are phase starts);
    without, it takes 0 (1 for the concurrency) and :attr:`Calibration.parameters` says why.

    Parameters
    ----------
    site_requests : polars.DataFrame
        A site trace (:data:`iosets.schemas.SITE_REQUESTS`) with every request's ``end``.
    fit : sequence of str, default=DEFAULT_FIT
        The parameters to fit, among :data:`FIT_PARAMETERS` (the default: all but the slice); the others keep
        ``device``'s values. With ``"slice"``, a rate limit whose waits end on a common period is fitted as
        blk-throttle grants it, per slice (:func:`iosets.replay._evidence.slice_pattern`), its burst 0.
    device : Device, default=None
        Values of the parameters not fitted (the site settings: targets, striping, client link); ``Device()``
        when None.
    fix : mapping of str to float, default=None
        Parameters pinned to a value (any :class:`Device` field, e.g. ``{"seek": 0}``): never fitted.
    layout : polars.DataFrame, default=None
        The files' striping (:data:`iosets.replay.LAYOUT`, e.g. from ``SiteTrace.files``), as
        :func:`replay_trace` takes it.
    cross_validate : bool, default=True
        Also fit on part of the jobs (or phases) and report the error on the others (:attr:`Calibration.held_out`).

    Returns
    -------
    Calibration

    Examples
    --------
    >>> ops = pl.DataFrame({"job_id": ["a"] * 3, "rank": [0] * 3, "op": ["write"] * 3, "offset": [0, 10**6, 3 * 10**6],
    ...     "size": [10**6, 2 * 10**6, 10**6], "start": [0.0, 1.001, 5.0], "end": [0.001, 1.003, 5.001],
    ...     "file": ["f"] * 3, "phase": [0, 0, 1], "synthetic": [False] * 3})
    >>> got = calibrate(ops, fit=("bandwidth", "seek"), fix={"overhead": 0})
    >>> round(got.device.bandwidth), got.parameters[1].how, got.parameters[2].how
    (1000000000, 'fixed', 'not fitted')
    """
    fit = tuple(fit)
    unknown = sorted(set(fit) - set(FIT_PARAMETERS))
    if unknown:
        raise InputError(f"fit: unknown device parameters {unknown}; expected some of {', '.join(FIT_PARAMETERS)}")
    fixed = dict(fix or {})
    known = {f.name for f in fields(Device)}
    strange = sorted(set(fixed) - known)
    if strange:
        raise InputError(f"fix: unknown device parameters {strange}; expected some of {', '.join(sorted(known))}")
    whole = {f.name for f in fields(Device) if f.type in (int, "int")}  # --fix targets=8 gives 8.0
    fixed = {
        name: int(value) if name in whole and float(value).is_integer() else value for name, value in fixed.items()
    }
    base = Device.from_dict({**(device or Device()).to_dict(), "iops": 0.0, **fixed}, source="fix")
    plain, _, _, keys = _build(site_requests, None)  # the recorded requests, unsplit: the evidence
    start, end = keys["start"].to_numpy(), keys["end"].to_numpy()
    if not (end > start).any():
        raise InputError("site ops: no request has a positive duration (end > start): nothing to calibrate on")
    trace, chains, phases, _ = _build(site_requests, None, device=base, layout=layout)
    phase_duration = (phases["recorded_end"] - phases["recorded_start"]).to_numpy()
    counted = _counted(phases, phase_duration)
    recorded = _Fit(trace, chains, end - start, phase_duration, counted)
    unit_job, units = chains.job, "phases"
    if counted.sum() == 1 and phases["_job"].n_unique() == 1:  # one job of one phase: its ranks' spans
        rank_unit, n_ranks = _rank_units(site_requests["rank"].to_numpy()[plain.order], plain.phase, counted)
        span = _spans(rank_unit, start, end, n_ranks)
        recorded = _Fit(trace, chains, end - start, span, span > 0, rank_unit)
        unit_job, units = np.zeros(n_ranks, dtype=np.int64), "ranks"
    evidence = trace_evidence(start, end, plain.size, plain.stream, plain.offset, plain.phase)
    wanted = set(fit) - set(fixed)
    if "slice" not in wanted:  # the rate and burst are then the bucket's
        evidence = replace(evidence, slice=Evidence(0, False, "not fitted"))
    if evidence.bucket.usable:
        limit, informed = _rate_limit(plain.size, start, end, plain.phase)
        bucket = beaten_limit(evidence.bucket, end, plain.size, limit["rate"], limit["burst"])
        if not bucket.usable:
            evidence = replace(evidence, bucket=bucket, slice=Evidence(0, False, bucket.reason))
    usable = {name for name in wanted if evidence.of(name).usable}
    estimate = _closed_form(plain.size, plain.stream, plain.offset, start, end, evidence, usable)
    costs: dict[str, Any] = {
        name: estimate[name] if name in usable else 0.0 for name in ("bandwidth", "overhead", "seek") if name in wanted
    }
    limited = {"rate", "burst"} & usable
    if limited:
        costs |= {name: limit[name] for name in limited}
    costs |= {name: 0.0 for name in {"rate", "burst"} & wanted - usable}
    sliced, kept = _slice_limit(plain.size, start, end, evidence, wanted, base)
    # under a rate limit a phase lasts what the limit lets through: it tells neither the bandwidth (the requests
    # found idle do) nor the rate from the burst (one phase, one duration); the search is left the burst
    if "bandwidth" in usable and evidence.bucket.usable and (limited or base.rate > 0):
        costs["bandwidth"], proof = idle_bandwidth(start, end, plain.size)
        evidence, kept = replace(evidence, bandwidth=proof), kept | {"bandwidth"}
    if limited - kept:
        evidence, kept = _bucket_evidence(evidence, limited - kept, informed), kept | {"rate"}
    start_device = replace(base, **costs | sliced)
    if "concurrency" in wanted - usable:
        start_device = _with_concurrency(start_device, 1)
    names = [name for name in ("bandwidth", "overhead", "seek", "rate", "burst") if name in usable - kept]
    current = _fit(recorded, start_device, names, "concurrency" in usable, evidence.max_in_flight)
    current, refused = _refuse_no_limit(current, "rate" in usable, wanted)
    names = [name for name in names if name not in refused]  # the folds do not fit again a limit refused
    requests, phase_errors = (np.abs(errors) for errors in recorded.errors(current))
    by, held_out = (
        _cross_validate(recorded, current, names, unit_job, units)
        if cross_validate
        else ("none", {"median": math.nan, "p90": math.nan, "n_phases": 0.0, "folds": 0.0})
    )
    return Calibration(
        device=current,
        parameters=_parameters(current, evidence, set(fit), fixed, refused),
        error={
            "phase_median": _quantile(phase_errors, 0.5),
            "phase_p90": _quantile(phase_errors, 0.9),
            "request_median": _quantile(requests, 0.5),
            "request_p90": _quantile(requests, 0.9),
        },
        held_out=held_out,
        held_out_by=by,
        n_phases=int(phase_errors.size),
        n_requests=int(requests.size),
        units=units,
    )


def _quantile(values: np.ndarray, q: float) -> float:
    """The q-quantile, NaN for no values."""
    return float(np.quantile(values, q)) if values.size else float("nan")
