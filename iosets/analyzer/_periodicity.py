"""Period detection of an application's I/O: DFT with harmonic scoring, cross-checked by phase segmentation."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from .._validation import check_fraction, check_positive
from ..errors import InputError
from ..schemas import REQUESTS
from ._evidence import CODES as NOT_PERIODIC
from ._evidence import verdict

__all__ = ["NOT_PERIODIC", "Periodicity", "bandwidth_signal", "periodicity", "periodicity_from_signal"]

_MAX_BINS = 1 << 20
_MIN_BINS = 1 << 12
_N_HARMONICS = 8  # harmonics scored together when choosing the fundamental
_MAX_REFINE_HARMONICS = 64  # harmonics used to refine the fundamental below bin resolution
_AGREE_TOL = 0.10  # DFT and segmentation periods agree fully within this relative difference
_CV_SCALE = 0.40  # coefficient of variation (of spacings or of idle gaps) at which a rhythm's regularity is exp(-1)
_SPREAD_WEIGHT = 0.25  # share of a compute rhythm's confidence that the spread of its phase spacing can take away
_DFT_WEIGHT = 0.25  # share of the confidence that depends on the DFT agreeing with segmentation
_MIN_JUMP = 3.0  # idle gaps between phases are at least this many times longer than gaps inside
_MAX_IDLE_SPREAD = 100.0  # longest / shortest idle gap between phases, at most
_MAX_COVERAGE = 0.5  # a harmonic comb over more of the spectrum than this is not evidence
BACK_TO_BACK = 1e-3
"""Seconds between two requests of one rank under which they are one operation (s)."""


@dataclass(frozen=True)
class Periodicity:
    """Periodic I/O behaviour of one application."""

    w_iter: float | None
    """Characteristic time (s): mean time between starts of consecutive I/O phases; None if not periodic."""
    alpha_io: float
    """Fraction of the time span the application spends in I/O phases (0..1)."""
    n_phases: int
    """Number of I/O phases found by segmentation."""
    confidence: float
    """Confidence (0..1) that the application is periodic with period ``w_iter``."""
    periodic: bool
    """True if a period was found and every evidence gate passed (:mod:`iosets.analyzer._evidence`)."""
    reason: str | None = None
    """Why the job is not periodic: one of :data:`NOT_PERIODIC` (None when periodic)."""
    explanation: str = ""
    """One sentence: the period found, or why there is none."""


# ----------------------------------------------------------------------------- signal


def _bin_bandwidth(start: np.ndarray, end: np.ndarray, size: np.ndarray, n_bins: int, dt: float) -> np.ndarray:
    """Bytes per second in each bin, each request's bytes spread evenly over its [start, end] interval.

    Times are in [0, n_bins * dt).
    """
    i0 = (start / dt).astype(np.int64)  # floor, as times are >= 0
    i1 = (end / dt).astype(np.int64)
    cross = np.flatnonzero(i0 != i1)  # requests over several bins
    if len(cross) == 0:
        return np.bincount(i0, weights=size, minlength=n_bins) / dt
    a, b = i0[cross] + 1, i1[cross]  # second and last bin
    del i1  # big temporaries go as soon as possible: fresh memory is slow to come by
    p0, p1 = start[cross] / dt, end[cross] / dt
    rate = size[cross] / (p1 - p0)  # bytes per bin width
    first = np.array(size, dtype=np.float64)  # bytes in the first bin
    first[cross] = rate * (a - p0)
    out: np.ndarray = np.bincount(i0, weights=first, minlength=n_bins)
    del i0, first
    out += np.bincount(b, weights=rate * (p1 - b), minlength=n_bins)
    inner = np.flatnonzero(b > a)  # whole bins a..b-1 get ``rate`` each: difference array
    if len(inner):
        r_in = rate[inner]
        diff = np.bincount(a[inner], weights=r_in, minlength=n_bins)
        diff -= np.bincount(b[inner], weights=r_in, minlength=n_bins)
        out += np.cumsum(diff)
    out /= dt
    return out


# ----------------------------------------------------------------------------- DFT


@dataclass(frozen=True)
class _Spectral:
    period: float | None
    comb: float  # 0..1: excess share of spectral energy explained by the harmonic comb


_STAGES = ((1, 4, 1), (5, 16, 2), (17, _MAX_REFINE_HARMONICS, 4))  # harmonics lo..hi, peak search within +-w bins
_SCALAR_HARMONICS = 16  # up to this many harmonics, a Python loop costs less than numpy calls
_TRIO = np.arange(-1, 2)
_WINDOW = {w: np.arange(-w, w + 1) for _, _, w in _STAGES}
_ROWS = np.arange(_MAX_REFINE_HARMONICS)
_TINY = float(np.finfo(np.float64).tiny)


def _stage_scalar(power: np.ndarray, f: float, hs: range, w: int, thr: float, tiny: float) -> tuple[float, float, int]:
    """Sums of weight * h * (peak + offset) and weight * h^2 over the significant harmonics ``hs``, and their count.

    The peak of harmonic h is the highest bin within +-w bins of h * f; its sub-bin offset is the vertex of the
    parabola through the log power around it; its weight is its power. The fundamental always counts.
    """
    half = len(power) - 1
    num = den = 0.0
    n = 0
    for h in hs:
        mid = round(h * f)
        lo = max(mid - w, 1)
        seg = power[lo - 1 : min(mid + w, half - 1) + 2].tolist()  # the window and one neighbour on each side
        win = seg[1:-1]
        peak = max(win)
        if peak < thr and h > 1:
            continue
        q = win.index(peak)
        a, b, c = math.log(seg[q] + tiny), math.log(peak + tiny), math.log(seg[q + 2] + tiny)
        curv = a - 2.0 * b + c
        shift = 0.5 * (a - c) / curv if curv < 0 else 0.0
        num += peak * h * (lo + q + shift)
        den += peak * h * h
        n += 1
    return num, den, n


def _stage_vector(power: np.ndarray, f: float, hs: range, w: int, thr: float, tiny: float) -> tuple[float, float, int]:
    """:func:`_stage_scalar` with numpy, for many harmonics (all above the fundamental)."""
    h = np.arange(hs.start, hs.stop)
    idx = np.rint(h * f).astype(np.int64)[:, None] + _WINDOW[w]
    np.maximum(idx, 1, out=idx)  # rint(h * f) + w <= half - 1 by the choice of hs
    win = power[idx]
    rows = _ROWS[: len(h)]
    j = win.argmax(axis=1)
    p, peak = idx[rows, j], win[rows, j]
    keep = peak >= thr
    if not keep.all():
        h, p, peak = h[keep], p[keep], peak[keep]
    a, b, c = np.log(power[p[:, None] + _TRIO] + tiny).T
    curv = a - 2.0 * b + c
    shift = np.zeros(len(p))
    np.divide(0.5 * (a - c), curv, out=shift, where=curv < 0)
    wh = peak * h
    return float(wh @ (p + shift)), float(wh @ h), len(h)


def _refine(power: np.ndarray, k: int) -> float:
    """Fundamental (in bins, below bin resolution) from the interpolated peaks of its significant harmonics."""
    half = len(power) - 1
    thr = 10.0 * float(np.partition(power[1:], half // 2)[half // 2])  # significant: ten times the median
    tiny = max(float(power.max()) * 1e-30, _TINY)
    f = float(k)
    num = den = 0.0
    for lo, hi, w in _STAGES:  # f gets sharper, windows reach further
        hs = range(lo, min(hi, int((half - w - 1) / f)) + 1)
        if not hs:
            break
        stage = _stage_scalar if len(hs) <= _SCALAR_HARMONICS else _stage_vector
        d_num, d_den, n = stage(power, f, hs, w, thr, tiny)
        if n == 0:  # no significant harmonic in this stage: stop
            break
        num += d_num
        den += d_den
        f = num / den
        if n == 1 and lo == 1:  # only the fundamental: stop
            break
    return f


def _harmonic_score(power: np.ndarray, k_max: int) -> np.ndarray:
    """Score of each fundamental k: power near its first harmonics h*k, weighted 1/h."""
    score = power[: k_max + 1].copy()  # h = 1
    spread = power.copy()  # running maximum over +-r bins, r growing with the harmonic order
    for h in range(2, _N_HARMONICS + 1):
        r = h // 2  # true h*f lies within h/2 bins of h*k
        if h % 2 == 0:
            np.maximum(spread[r:], power[:-r], out=spread[r:])
            np.maximum(spread[:-r], power[r:], out=spread[:-r])
        comb = spread[::h][: k_max + 1]  # spread at h*k for k = 0, 1, ...
        score[: len(comb)] += comb / h
    score[:2] = 0.0  # at least two periods in the trace
    return score


def _fundamental(score: np.ndarray, power: np.ndarray, best: int) -> int:
    """The best-scoring bin, or a sub-multiple that scores as well and has its own peak (octave errors)."""
    top = 0.9 * float(score[best])
    near = score[: best // 2 + 2].tolist()  # the candidates' neighbourhoods, as Python floats
    peaks = power[: best // 2 + 3].tolist()
    peak = max(power[max(best - 1, 1) : best + 2].tolist())
    for m in range(6, 1, -1):
        lo, hi = max(2, best // m - 1), best // m + 2
        if lo < hi and max(near[lo:hi]) >= top:
            cand = lo + near[lo:hi].index(max(near[lo:hi]))
            if max(peaks[max(cand - 1, 1) : cand + 2]) >= 0.3 * peak:
                return cand
    return best


def _comb_energy(power: np.ndarray, total: float, f: float) -> float:
    """Share of the power within one bin of the harmonics of f, minus the share expected by chance (0..1)."""
    half = len(power) - 1
    pos = np.arange(1, int(half / f) + 1) * f
    mask = np.zeros(half + 2, dtype=bool)  # a spare slot: the last harmonic may round up past half
    mask[pos.astype(np.int64)] = True  # the two bins around each harmonic
    mask[np.ceil(pos).astype(np.int64)] = True
    mask = mask[: half + 1]
    coverage = np.count_nonzero(mask[1:]) / half
    if coverage > _MAX_COVERAGE:  # a comb that covers much of the spectrum explains nothing
        return 0.0
    share = float(power[mask].sum()) / total
    return min(1.0, max(0.0, (share - coverage) / (1.0 - coverage)))


def _spectral_period(signal: np.ndarray, dt: float) -> _Spectral:
    """Fundamental period of a binned bandwidth signal from its harmonic-scored power spectrum."""
    parts = np.fft.rfft(signal - float(signal.sum()) / len(signal)).view(np.float64) ** 2  # re^2, im^2 interleaved
    power = parts[0::2] + parts[1::2]
    power[0] = 0.0
    k_max = (len(power) - 1) // 2  # period of at least 4 bins
    total = float(power[1:].sum())
    if k_max < 2 or total <= 0:
        return _Spectral(None, 0.0)
    score = _harmonic_score(power, k_max)
    best = int(score.argmax())
    if score[best] <= 0:
        return _Spectral(None, 0.0)
    f = _refine(power, _fundamental(score, power, best))
    if f <= 0:
        return _Spectral(None, 0.0)
    return _Spectral(len(signal) * dt / f, _comb_energy(power, total, f))


# ----------------------------------------------------------------------------- segmentation


@dataclass(frozen=True)
class _Segments:
    starts: np.ndarray  # start of each I/O phase
    ends: np.ndarray  # end of each I/O phase
    clear: bool  # idle gaps are clearly longer than the gaps inside phases


def _merge(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as sorted, disjoint runs."""
    if (start[1:] < start[:-1]).any():
        order = np.argsort(start, kind="stable")
        start, end = start[order], end[order]
    reach = np.maximum.accumulate(end)
    brk = np.ones(len(start) + 1, dtype=bool)  # brk[i]: a run starts at i (and one ends at i - 1)
    np.greater(start[1:], reach[:-1], out=brk[1:-1])
    return start[brk[:-1]], reach[brk[1:]]


def _segment(run_s: np.ndarray, run_e: np.ndarray, span: float, period: float | None, min_gap: float) -> _Segments:
    """Group activity runs into I/O phases separated by idle gaps longer than a data-derived threshold.

    The threshold sits at the largest ratio between consecutive gap lengths (any ratio of 3x or more
    between two gaps beats "every gap is idle"); without a clear break (< 3x) it is a tenth of
    ``period`` if one is given. A gap of ``min_gap`` or less (the source's time
    resolution, e.g. one empty heatmap bin) never splits a phase.
    """
    gaps = run_s[1:] - run_e[:-1]
    min_gap *= 1 + 1e-6  # gaps of whole bins, computed from bin edges, may exceed it by round-off
    wide = gaps[gaps > min_gap]
    if len(wide) == 0:
        return _Segments(run_s[:1], run_e[-1:], False)
    floor = max(span * 1e-9, 1e-12, min_gap)
    desc = np.empty(len(wide) + 1)
    desc[:-1] = np.sort(wide)[::-1]
    desc[-1] = floor
    logs = np.log(desc)
    desc = desc[:-1]
    jumps = logs[:-1] - logs[1:]  # jumps[i]: ratio of the (i+1)-th longest gap to the next one
    jumps[desc < desc[0] / _MAX_IDLE_SPREAD] = -np.inf  # idle gaps: a bounded ratio to the longest
    cut = int(jumps.argmax())
    inner = jumps[:-1]  # between two gaps; the last jump, to the floor, says "every gap is idle"
    if cut == len(inner) and inner.size and inner.max() >= math.log(_MIN_JUMP):
        cut = int(inner.argmax())  # a break between gap lengths beats the arbitrary floor
    clear = bool(jumps[cut] >= math.log(_MIN_JUMP))
    if not clear and period is not None:
        threshold = max(0.1 * period, min_gap)
    else:
        below = desc[cut + 1] if cut + 1 < len(desc) else floor
        threshold = math.sqrt(desc[cut] * max(below, floor))
    brk = np.ones(len(run_s) + 1, dtype=bool)  # brk[i]: a phase starts at run i (and one ends at run i - 1)
    np.greater(gaps, threshold, out=brk[1:-1])
    return _Segments(run_s[brk[:-1]], run_e[brk[1:]], clear)


def _resegment(
    run_s: np.ndarray, run_e: np.ndarray, span: float, seg: _Segments, period: float | None, min_gap: float
) -> _Segments:
    """Segmentation redone with a threshold from the DFT period when the gaps show no clear break."""
    if period is None or seg.clear:
        return seg
    return _segment(run_s, run_e, span, period, min_gap)


# ----------------------------------------------------------------------------- combination


def _cv(values: np.ndarray) -> float:
    """Coefficient of variation (population standard deviation over mean) of positive values; inf if the mean is 0."""
    mean = float(values.sum()) / len(values)
    if mean <= 0:
        return math.inf
    spread = values - mean
    return math.sqrt(float((spread * spread).sum()) / len(values)) / mean


def _regularity(cv_spacing: float, cv_gaps: float) -> float:
    """How regular a job's rhythm is (0..1), from its phase spacing and its idle gaps (phase end to next start).

    Two rhythms are read, the better one counts: a clock (regular spacing of phase starts, whatever the
    I/O lasts) and a compute loop (regular gaps, I/O durations that vary, as on a shared file system).
    Each is ``exp(-(cv / _CV_SCALE)^2)``; the compute loop's also loses up to :data:`_SPREAD_WEIGHT` of
    itself as the spacing spreads, since ``w_iter`` (the mean spacing) then summarises phases less well.
    """
    by_spacing = math.exp(-((cv_spacing / _CV_SCALE) ** 2))
    by_gaps = math.exp(-((cv_gaps / _CV_SCALE) ** 2)) * (1.0 - _SPREAD_WEIGHT * (1.0 - by_spacing))
    return max(by_spacing, by_gaps)


def _combine(
    spec: _Spectral, seg: _Segments, run: float, min_confidence: float, total_bytes: float, alpha_io: float | None
) -> Periodicity:
    """Cross-check the DFT period with the phase spacing, judge the evidence and build the result.

    ``run`` is the job's length (s): alpha_io is the time in I/O phases over it, unless given.
    """
    n_phases = len(seg.starts)
    if alpha_io is None:
        alpha_io = float((seg.ends - seg.starts).sum()) / run if run > 0 else 1.0
    alpha = min(1.0, max(0.0, alpha_io))
    w_seg = c_seg = None
    if n_phases >= 3:
        spacing = seg.starts[1:] - seg.starts[:-1]
        w_seg = float(spacing.sum()) / len(spacing)
        c_seg = _regularity(_cv(spacing), _cv(seg.starts[1:] - seg.ends[:-1]))
    # evidence 1: a regular rhythm (phase spacing or compute gaps), supported by a DFT peak at the same period
    c_seg_total = 0.0
    if w_seg is not None and c_seg is not None and seg.clear:
        agree = 0.0
        if spec.period is not None:
            rel = abs(spec.period - w_seg) / w_seg
            agree = 1.0 if rel <= _AGREE_TOL else math.exp(-(((rel - _AGREE_TOL) / _AGREE_TOL) ** 2))
        c_seg_total = c_seg * (1.0 - _DFT_WEIGHT + _DFT_WEIGHT * agree)
    # evidence 2: a harmonic comb that explains the spectral energy (strictly periodic I/O, with or without gaps)
    c_dft = spec.comb if spec.period is not None else 0.0
    w_iter: float | None
    if c_seg_total >= c_dft and c_seg_total > 0:
        confidence, w_iter = c_seg_total, w_seg
    elif c_dft > 0:
        confidence, w_iter = c_dft, spec.period
    else:
        confidence, w_iter = 0.0, None
    confidence = min(1.0, max(0.0, float(confidence)))
    reason, text = verdict(
        total_bytes=total_bytes,
        alpha_io=alpha,
        n_phases=n_phases,
        w_iter=w_iter,
        confidence=confidence,
        min_confidence=min_confidence,
        run=run,
    )
    return Periodicity(
        w_iter=w_iter if reason is None else None,
        alpha_io=alpha,
        n_phases=int(n_phases),
        confidence=confidence,
        periodic=reason is None,
        reason=reason,
        explanation=text,
    )


def _auto_bins(span: float, run_s: np.ndarray, run_e: np.ndarray) -> int:
    """Number of bins: a few per shortest burst, between 2^12 and 2^20."""
    lengths = run_e - run_s
    lengths = lengths[lengths > 0]
    short = float(np.sort(lengths)[len(lengths) // 20]) if len(lengths) else span / (1 << 16)
    want = 4.0 * span / max(short, span / _MAX_BINS)
    return int(min(_MAX_BINS, max(_MIN_BINS, 1 << math.ceil(math.log2(max(want, 1.0))))))


def _check_ops(ops) -> bool:
    """Raise InputError unless ``ops`` is a non-empty table of one job's requests; True if it has an end column."""
    if not isinstance(ops, pl.DataFrame):
        raise InputError(f"ops must be a polars DataFrame, got {type(ops).__name__}")
    names = ops.columns
    missing = [c for c in ("size", "start") if c not in names]
    if missing:
        raise InputError(f"ops: missing column(s) {', '.join(missing)}; expected size and start (end optional)")
    if ops.height == 0:
        raise InputError("ops: empty table, expected at least one request")
    if "job_id" in names and ops.get_column("job_id").n_unique() > 1:
        jobs = ops.get_column("job_id").unique(maintain_order=True)
        raise InputError(
            f"ops: {len(jobs)} jobs ({', '.join(map(str, jobs.head(3)))}, ...); expected the requests of one job"
        )
    return "end" in names


def _check_values(ops: pl.DataFrame, start: np.ndarray, end: np.ndarray, size: np.ndarray) -> None:
    """Raise InputError at the first row that breaks the ops schema's rules on size, start and end.

    The rules and the message are those of ``REQUESTS.validate``: size >= 0, start finite >= 0, end
    (null: start) finite >= start; the first bad row is named, ties go to the schema's column order.
    """
    if (
        math.isfinite(float(start.sum()) + float(end.sum()) + float(size.sum()))  # one cheap test, then rows
        and size.min() >= 0
        and start.min() >= 0
        and not (end < start).any()
    ):
        return
    with np.errstate(invalid="ignore"):
        broken = {
            "size": ~np.isfinite(size) | (size < 0),
            "start": ~np.isfinite(start) | (start < 0),
            "end": ~np.isfinite(end) | (end < start),
        }
    firsts = [(int(np.argmax(bad)), k) for k, bad in enumerate(broken.values()) if bad.any()]
    if not firsts:  # the sums overflowed: every value is fine
        return
    row, k = min(firsts)
    name = list(broken)[k]
    value = ops.get_column(name)[row]
    if value is None:
        expect = "a value (not null)"
    elif not math.isfinite(value):
        expect = "a finite number"
    else:
        expect = REQUESTS[name].expect
    raise InputError(f"ops row {row}: {name}: expected {expect}, got {'null' if value is None else repr(value)}")


def _columns(ops: pl.DataFrame, has_end: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """start, end (null -> start) and size of ``ops`` as float64 arrays."""
    series = [ops.get_column(c) for c in ("start", "end" if has_end else "start", "size")]
    if series[1].null_count() == 0:  # fast path: no fill, cast numbers only
        start, end, size = (s.to_numpy() for s in series)
        if all(c.dtype.kind in "fiu" for c in (start, end, size)):
            return (
                start.astype(np.float64, copy=False),
                end.astype(np.float64, copy=False),
                size.astype(np.float64, copy=False),
            )
    end_expr = (
        pl.col("end").cast(pl.Float64).fill_null(pl.col("start").cast(pl.Float64)) if has_end else pl.col("start")
    )
    try:
        cols = ops.select(
            pl.col("start").cast(pl.Float64),
            end_expr.cast(pl.Float64).alias("end"),
            pl.col("size").cast(pl.Float64),
        )
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"ops: start, end and size must be numeric ({str(exc).splitlines()[0]})") from None
    start, end, size = (np.ascontiguousarray(cols.get_column(c).to_numpy(), dtype=np.float64) for c in cols.columns)
    return start, end, size


@dataclass(frozen=True)
class _Activity:
    start: np.ndarray  # operation starts (s since the first request)
    end: np.ndarray  # operation ends (s since the first request)
    size: np.ndarray  # bytes
    span: float  # last end (s)
    run_s: np.ndarray  # starts of the activity runs (union over ranks)
    run_e: np.ndarray  # ends of the activity runs
    seg: _Segments  # I/O phases from the gaps alone
    resolution: float  # gaps this short never split a phase (s)
    t0: float  # date of the first request, that times count from


def _rank_codes(ops: pl.DataFrame) -> np.ndarray | None:
    """Each request's rank as a small integer code, or None when the table has no complete rank column."""
    if "rank" not in ops.columns or ops.get_column("rank").null_count():
        return None
    rank = ops.get_column("rank")
    if rank.dtype.is_numeric():
        return rank.to_numpy()
    return rank.cast(pl.String).cast(pl.Categorical).to_physical().to_numpy()


def _whole_operations(
    start: np.ndarray, end: np.ndarray, size: np.ndarray, rank: np.ndarray, span: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each rank's back-to-back requests (apart by at most :data:`BACK_TO_BACK`) as one operation.

    A large MPI-IO or library call reaches the file system as many sub-requests; the job's rhythm is
    that of the calls. Returns the operations' starts, ends and bytes, each where its first request was.
    """
    stretch = 2.0 * span + 1.0  # ranks on disjoint stretches of one axis: one sort, one running maximum for all
    order = np.argsort(rank * stretch + start)
    s, e, z, r = start[order], end[order], size[order], rank[order]
    new_rank = np.ones(len(r), dtype=bool)
    np.not_equal(r[1:], r[:-1], out=new_rank[1:])
    shift = np.cumsum(new_rank) * stretch
    reach = np.maximum.accumulate(e + shift) - shift
    first = new_rank.copy()
    np.greater(s[1:], reach[:-1] + BACK_TO_BACK, out=first[1:], where=~new_rank[1:])
    idx = np.flatnonzero(first)
    back = np.argsort(order[idx])  # the operations in the requests' own order (by start, if they were)
    return s[idx][back], np.maximum.reduceat(e, idx)[back], np.add.reduceat(z, idx)[back]


def _activity(ops: pl.DataFrame, resolution: float = 0.0) -> _Activity:
    """One job's requests, checked, as whole operations from its first request, with activity runs and phases."""
    start, end, size = _columns(ops, _check_ops(ops))
    _check_values(ops, start, end, size)
    t0 = float(start.min())
    start, end = start - t0, end - t0
    span = float(end.max())
    rank = _rank_codes(ops)
    if rank is not None and len(start) > 1:
        start, end, size = _whole_operations(start, end, size, rank, span)
    run_s, run_e = _merge(start, end)
    seg = _segment(run_s, run_e, span, None, resolution)
    return _Activity(start, end, size, span, run_s, run_e, seg, resolution, t0)


def activity_runs(ops: pl.DataFrame) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """When a job did I/O: the first request's date, then the union over ranks of its whole operations
    (starts and ends, s since that date) with the bytes of each run."""
    act = _activity(ops)
    run_of = np.searchsorted(act.run_s, act.start, side="right") - 1
    return act.t0, act.run_s, act.run_e, np.bincount(run_of, weights=act.size, minlength=len(act.run_s))


def _signal(act: _Activity, bin_width: float | None) -> tuple[np.ndarray, float]:
    """The binned bandwidth signal (bytes/s) of the requests, and its bin width (s)."""
    if bin_width is None:  # a few bins per shortest I/O phase (per shortest activity run if no clear phases)
        seg = act.seg
        n_bins = _auto_bins(act.span, seg.starts, seg.ends) if seg.clear else _auto_bins(act.span, act.run_s, act.run_e)
        dt = act.span / n_bins * (1 + 1e-12)
    else:
        dt = bin_width
        n_bins = math.ceil(act.span / dt * (1 + 1e-12)) + 1
        if n_bins > 16 * _MAX_BINS:
            raise InputError(
                f"bin_width {bin_width!r} gives {n_bins} bins over {act.span:g} s; expected at most {16 * _MAX_BINS}"
            )
    return _bin_bandwidth(act.start, act.end, act.size, n_bins, dt), dt


def bandwidth_signal(ops: pl.DataFrame, *, bin_width: float | None = None) -> tuple[np.ndarray, float]:
    """The bandwidth signal :func:`periodicity` analyses: bytes per second in each bin, and the bin width.

    Parameters
    ----------
    ops : polars.DataFrame
        Requests of one job, as for :func:`periodicity`.
    bin_width : float, default=None
        Width (s) of the bins; None chooses it as :func:`periodicity` does.

    Returns
    -------
    bandwidth : numpy.ndarray of shape (n_bins,)
        Bytes per second in each bin; bin 0 starts at the first request, each request's bytes
        spread evenly over its [start, end] interval (round-off below zero is clipped).
    bin_width : float
        Width of a bin (s).

    Examples
    --------
    >>> import polars as pl
    >>> ops = pl.DataFrame({"size": [100, 100], "start": [0.0, 3.0], "end": [1.0, 4.0]})
    >>> bandwidth, width = bandwidth_signal(ops, bin_width=1.0)
    >>> bandwidth.tolist(), width
    ([100.0, 0.0, 0.0, 100.0, 0.0, 0.0], 1.0)
    """
    if bin_width is not None:
        bin_width = check_positive(bin_width, "bin_width")
    act = _activity(ops)
    if act.span <= 0:
        raise InputError("ops: every request starts and ends at one date; there is no signal to bin")
    bandwidth, width = _signal(act, bin_width)
    return np.maximum(bandwidth, 0.0, out=bandwidth), width  # no round-off below zero


def periodicity(
    ops: pl.DataFrame,
    *,
    bin_width: float | None = None,
    min_confidence: float = 0.5,
    runtime: float | None = None,
    resolution: float = 0.0,
    total_bytes: float | None = None,
    alpha_io: float | None = None,
) -> Periodicity:
    """Detect the I/O period, I/O time fraction and phases of one job from its requests table.

    The job's rhythm is that of whole operations: a rank's back-to-back requests (apart by at most
    :data:`BACK_TO_BACK` s) are one operation, and the job is in an I/O phase whenever any rank is
    in one (the union over ranks). Phases are separated by idle gaps longer than a threshold found
    in the gap lengths themselves; the DFT of the bandwidth signal cross-checks their spacing. The
    phases are regular when their starts are evenly spaced, or when the idle gaps between them are
    (a fixed compute, I/O that lasts longer or shorter as the file system is shared): then ``w_iter``
    is the mean spacing and the confidence drops, by at most a quarter, as that spacing spreads. The
    job is "not periodic" (``reason``) when the evidence is thin: see :data:`NOT_PERIODIC`.

    Parameters
    ----------
    ops : polars.DataFrame
        Requests of one job (:data:`iosets.schemas.REQUESTS`): ``size`` bytes, ``start`` and ``end`` s
        (null ``end`` is taken as ``start``), ``rank`` optional; values must keep the schema's rules.
    bin_width : float, default=None
        Width (s) of the bandwidth signal's bins; None chooses a few bins per shortest I/O
        phase, with 2^12 to 2^20 bins.
    min_confidence : float, default=0.5
        Confidence (0..1) needed to declare the job periodic.
    runtime : float, default=None
        The job's length (s), when known (a Darshan log's run time): alpha_io is the time in I/O
        phases over it, and the run must last a few periods. Default: first request to last end.
    resolution : float, default=0
        Time resolution of the trace (s): gaps this short never split a phase.
    total_bytes : float, default=None
        Bytes the job moved, for the byte floor; default: the sum of ``size``.
    alpha_io : float, default=None
        The job's I/O time fraction when a better estimate than its phases is known (a coarse
        trace tightened by counters); default: time in I/O phases over the run.

    Returns
    -------
    Periodicity
        ``w_iter`` (None unless periodic), ``alpha_io``, ``n_phases``, ``confidence``, ``periodic``,
        ``reason`` and ``explanation``.

    Examples
    --------
    >>> from iosets.datasets import make_periodic_requests
    >>> ops, truth = make_periodic_requests(60.0, 0.05, 4, n_phases=12, random_state=0)
    >>> p = periodicity(ops)
    >>> p.periodic, round(p.w_iter / truth["w_iter"], 6), p.n_phases
    (True, 1.0, 12)
    """
    min_confidence = check_fraction(min_confidence, "min_confidence")
    if bin_width is not None:
        bin_width = check_positive(bin_width, "bin_width")
    resolution = check_positive(resolution, "resolution", strict=False)
    act = _activity(ops, resolution)
    moved = float(act.size.sum()) if total_bytes is None else check_positive(total_bytes, "total_bytes", strict=False)
    run = max(act.span, 0.0 if runtime is None else check_positive(runtime, "runtime", strict=False))
    spec, seg = _phases(act, bin_width)
    return _combine(spec, seg, run, min_confidence, moved, alpha_io)


def _phases(act: _Activity, bin_width: float | None) -> tuple[_Spectral, _Segments]:
    """The DFT period and the I/O phases of a job's activity (re-segmented on the period when gaps are unclear)."""
    if act.span <= 0 or act.size.sum() <= 0:
        return _Spectral(None, 0.0), _Segments(act.run_s[:1], act.run_e[-1:], False)
    signal, dt = _signal(act, bin_width)
    spec = _spectral_period(signal, dt)
    return spec, _resegment(act.run_s, act.run_e, act.span, act.seg, spec.period, act.resolution)


def phase_bounds(ops: pl.DataFrame, *, resolution: float = 0.0) -> tuple[float, np.ndarray, np.ndarray]:
    """The I/O phases :func:`periodicity` finds in one job's requests (the same segmentation, phase by phase).

    Returns the first request's date, then the phases' starts and ends in s since that date
    (``n_phases`` of each, in order): every whole operation lies inside one phase.
    """
    act = _activity(ops, check_positive(resolution, "resolution", strict=False))
    _, seg = _phases(act, None)
    return act.t0, seg.starts, seg.ends


def periodicity_from_signal(bandwidth: np.ndarray, bin_width: float, *, min_confidence: float = 0.5) -> Periodicity:
    """Detect the I/O period, I/O time fraction and phases from a binned bandwidth signal.

    Parameters
    ----------
    bandwidth : numpy.ndarray of shape (n_bins,)
        Bytes per second in each bin (e.g. Darshan HEATMAP bytes per bin / ``bin_width``).
    bin_width : float
        Width of a bin (s).
    min_confidence : float, default=0.5
        Confidence (0..1) needed to declare the signal periodic.

    Returns
    -------
    Periodicity
        Phases are runs of bins above 2 % of the peak bandwidth; one empty bin never splits a phase.

    Examples
    --------
    >>> import numpy as np
    >>> bw = np.tile([1e9] * 4 + [0.0] * 36, 25)
    >>> p = periodicity_from_signal(bw, 1.0)
    >>> p.periodic, p.w_iter, p.n_phases, p.alpha_io
    (True, 40.0, 25, 0.1)
    """
    dt = check_positive(bin_width, "bin_width")
    min_confidence = check_fraction(min_confidence, "min_confidence")
    try:
        signal = np.asarray(bandwidth, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("bandwidth must be a 1-D array of numbers") from None
    if signal.ndim != 1 or len(signal) == 0:
        raise InputError(f"bandwidth must be a non-empty 1-D array, got shape {signal.shape}")
    bad = np.flatnonzero(~np.isfinite(signal) | (signal < 0))
    if len(bad):
        raise InputError(f"bandwidth bin {bad[0]}: expected a finite value >= 0, got {float(signal[bad[0]])}")
    active = signal > 0.02 * float(signal.max()) if signal.max() > 0 else np.zeros(len(signal), dtype=bool)
    if not active.any():
        return Periodicity(None, 0.0, 0, 0.0, False, "no_io", "no I/O recorded")
    edges = np.diff(np.r_[0, active.astype(np.int8), 0])
    run_s = np.flatnonzero(edges == 1) * dt
    run_e = np.flatnonzero(edges == -1) * dt
    span = len(signal) * dt
    spec = _spectral_period(signal, dt)
    seg = _resegment(run_s, run_e, span, _segment(run_s, run_e, span, None, dt), spec.period, dt)
    return _combine(spec, seg, span, min_confidence, float(signal.sum()) * dt, None)
