"""A job's rhythm from its Darshan logs: when it did I/O (one timeline per log), then w_iter, alpha_io and why.

alpha_io is one quantity whatever the source: the fraction of the job's run during which it does
I/O (any of its ranks). Each source measures it to its own resolution:

* DXT: the time in I/O phases of the job's whole operations (DXT_MPIIO calls and DXT_POSIX requests,
  a rank's back-to-back requests as one, union over ranks), to the microsecond;
* HEATMAP: bins say where the I/O was, to a bin: the job did I/O at most during its active bins, and
  at least ``bytes / the busiest bin's bytes`` of each bin; the counters' slowest-rank I/O time is
  taken within those bounds;
* counters only: the slowest rank's I/O time (read, write and metadata, every module) over the run:
  a lower bound when ranks do I/O at different times.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ._clocks import log_shifts
from ._evidence import counters_io_bound, counters_verdict
from ._ingest import DarshanJob
from ._periodicity import activity_runs, periodicity, phase_bounds
from ._sync_time import sync_requests

DXT_RESOLUTION = 1e-6
"""Time resolution of DXT segments (s)."""
ACTIVE_SHARE = 0.02
"""A HEATMAP bin with less than this share of the busiest bin's bytes is idle."""

RHYTHM_COLUMNS = (
    "w_iter",
    "w_iter_confidence",
    "alpha_io",
    "n_phases",
    "not_periodic",
    "explanation",
    "rhythm_from",
    "resolution",
)


@dataclass(frozen=True)
class Timeline:
    """When one log's processes did I/O: activity runs (s since the log's start), their bytes, and how known."""

    start: np.ndarray
    end: np.ndarray
    size: np.ndarray
    resolution: float
    """Gaps this short never split a phase (s): the DXT timer, or the heatmap's bin width."""
    origin: str
    """The modules the runs come from: ``DXT_MPIIO+DXT_POSIX``, ``DXT_POSIX``, ``HEATMAP``."""
    busy: float | None
    """The I/O time (s) a coarse timeline allows, tightened by the counters; None: the runs are exact."""


def _dxt_timeline(job: DarshanJob) -> Timeline:
    modules = [m for m in ("DXT_MPIIO", "DXT_POSIX") if m in job.dxt]
    ops = pl.concat([*(job.dxt[m].select("rank", "size", "start", "end") for m in modules), sync_requests(job)])
    t0, run_s, run_e, size = activity_runs(ops)
    return Timeline(run_s + t0, run_e + t0, size, DXT_RESOLUTION, "+".join(modules), None)


def _heatmap_timeline(job: DarshanJob) -> Timeline | None:
    assert job.heatmap is not None
    width, read, write = job.heatmap
    moved = np.asarray(read, dtype=np.float64) + np.asarray(write, dtype=np.float64)
    peak = float(moved.max(initial=0.0))
    if peak <= 0:
        return None
    active = np.flatnonzero(moved >= ACTIVE_SHARE * peak)
    upper = len(active) * width
    lower = width * float(np.minimum(moved / peak, 1.0).sum())
    slowest = job.counters.get("slowest_io_time") or 0.0
    busy = min(max(slowest, lower), upper) if slowest > 0 else upper
    start = active * width
    return Timeline(start, start + width, moved[active], width, "HEATMAP", busy)


def log_timeline(job: DarshanJob) -> Timeline | None:
    """When the log's job did I/O, from its richest time source; None for counters only (or no I/O)."""
    if job.source == "dxt" and job.dxt:
        return _dxt_timeline(job)
    if job.source == "heatmap" and job.heatmap is not None:
        return _heatmap_timeline(job)
    return None


def job_rhythm(
    timelines: list[tuple[float, Timeline | None]],
    *,
    runtime: float,
    total_bytes: float,
    busy_time: float,
    min_confidence: float = 0.5,
) -> dict:
    """The jobs-table rhythm columns (:data:`RHYTHM_COLUMNS`) of a job made of one or more logs.

    ``timelines`` pairs each log's timeline with its start (s after the job's start); ``busy_time`` is
    the slowest process's I/O time from the counters (s), the only evidence of logs without a timeline.
    """
    known = _known(timelines)
    if not known:
        alpha = min(1.0, busy_time / runtime) if runtime > 0 else None
        code, text = counters_verdict(total_bytes=total_bytes, alpha_io=alpha)
        return _columns(None, 0.0, alpha, None, code, text, "counters", None)
    ops, resolution = _runs_table(known)
    coarse = [line.busy for _, line in known if line.busy is not None]
    alpha = min(1.0, max(coarse) / runtime) if coarse and runtime > 0 else None
    result = periodicity(
        ops,
        min_confidence=min_confidence,
        runtime=runtime,
        resolution=resolution,
        total_bytes=total_bytes,
        alpha_io=alpha,
    )
    origins = "+".join(dict.fromkeys(o for _, line in known for o in line.origin.split("+")))
    share = busy_time / runtime if runtime > 0 else 0.0
    reason, text = counters_io_bound(result.reason, result.explanation, alpha_io=result.alpha_io, counters_share=share)
    if len(known) < len(timelines):
        text += f"; {len(timelines) - len(known)} of {len(timelines)} logs have no timeline"
    return _columns(
        result.w_iter if reason is None else None,
        result.confidence,
        result.alpha_io,
        result.n_phases,
        reason,
        text,
        origins,
        resolution,
    )


def job_phases(timelines: list[tuple[float, Timeline | None]]) -> tuple[np.ndarray, np.ndarray] | None:
    """The I/O phases behind :func:`job_rhythm`'s ``n_phases``: starts and ends (s after the job's start).

    ``timelines`` as for :func:`job_rhythm`, in the same order; None when no log has a timeline.
    """
    known = _known(timelines)
    if not known:
        return None
    ops, resolution = _runs_table(known)
    t0, starts, ends = phase_bounds(ops, resolution=resolution)
    return starts + t0, ends + t0


def _known(timelines: list[tuple[float, Timeline | None]]) -> list[tuple[float, Timeline]]:
    """The (shift, timeline) pairs that hold at least one activity run, their clocks on one (:func:`log_shifts`)."""
    aligned = zip(log_shifts(timelines), (line for _, line in timelines), strict=True)
    return [(shift, line) for shift, line in aligned if line is not None and len(line.start)]


def _runs_table(known: list[tuple[float, Timeline]]) -> tuple[pl.DataFrame, float]:
    """The activity runs of shifted timelines as one table (start, end, size), and the coarsest resolution.

    A run that a clock's shift moves before the job's start starts at 0."""
    ops = pl.DataFrame(
        {
            "start": np.concatenate([np.maximum(line.start + shift, 0.0) for shift, line in known]),
            "end": np.concatenate([np.maximum(line.end + shift, 0.0) for shift, line in known]),
            "size": np.concatenate([line.size for _, line in known]),
        }
    )
    return ops, max(line.resolution for _, line in known)


def _columns(w_iter, confidence, alpha, n_phases, code, text, origin, resolution) -> dict:
    return dict(zip(RHYTHM_COLUMNS, (w_iter, confidence, alpha, n_phases, code, text, origin, resolution), strict=True))
