"""One clock for a job's processes: Darshan dates each process's I/O from its own zero, which the log does not keep.

A process's DXT times count from the moment Darshan started in it (``init_start`` in
darshan-runtime's ``darshan-core.c``; a forked child starts Darshan again); the log's header start
is stamped later in the same start-up (``start_ts``: 1.6 to 22 ms later in the real processes
measured), and an MPI log's header start is the earliest over its ranks while each rank's DXT times
count from its own zero. Placed at header start + DXT offset, the I/O of every process lands late by
its own amount, so the processes of one job, or the ranks of one MPI log, come out a few ms (up to
tens of ms) apart, and their union (the job's I/O phases, alpha_io) is wider than what they did.

The I/O phases of a job are released together, so its clocks' phase starts should coincide. Each
clock's offset to a reference clock (the one present in the most phases) is the median, over the
phases both are present in, of the difference between its first start and the reference's first
start in the phase. It is believed only with :data:`MIN_MATCHED_STARTS` matched phases or more and
when it is at most :data:`MAX_CLOCK_OFFSET` (a larger one is the job's own behaviour, not a
clock's); the clocks believed then all move onto the earliest of them (Darshan only ever stamps
late), the others stay. What is left is the earliest clock's own lateness, which no log records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ._periodicity import phase_bounds

if TYPE_CHECKING:
    from ._ingest import DarshanJob
    from ._rhythm import Timeline

MAX_CLOCK_OFFSET = 0.1
"""Seconds two clocks of one job may disagree by and still be moved together (Darshan's stamps: 1-76 ms)."""
MIN_MATCHED_STARTS = 3
"""Phases in which a clock and the reference both start I/O that a clock's offset needs."""
_DXT_TIMER = 1e-6  # s: DXT's resolution (the timelines' DXT_RESOLUTION)


def clock_shifts(clock: np.ndarray, start: np.ndarray, end: np.ndarray, *, resolution: float = 0.0) -> np.ndarray:
    """The shift (s, at most 0) that puts each clock's I/O on the earliest clock (see the module doc).

    Parameters
    ----------
    clock : numpy.ndarray of int, shape (n,)
        Each interval's clock, 0 to ``n_clocks - 1`` (a log of the job, a rank of the log).
    start, end : numpy.ndarray of float, shape (n,)
        When each interval of I/O starts and ends, all clocks placed on one axis (s, >= 0).
    resolution : float, default=0.0
        Gaps this short never split a phase (s), as for :func:`~iosets.analyzer._periodicity.phase_bounds`.

    Returns
    -------
    numpy.ndarray of shape (clock.max() + 1,)
        The shift to add to each clock's times; 0 for a clock without enough evidence.

    Examples
    --------
    >>> import numpy as np
    >>> starts = np.array([0.0, 10.0, 20.0, 30.0, 0.004, 10.006, 20.005, 30.005])
    >>> clock_shifts(np.repeat([0, 1], 4), starts, starts + 1.0).round(6).tolist()
    [0.0, -0.005]
    """
    n_clocks = int(clock.max()) + 1 if len(clock) else 0
    shifts = np.zeros(n_clocks)
    if n_clocks < 2:
        return shifts
    firsts = _phase_firsts(clock, start, end, n_clocks, resolution)
    present = np.isfinite(firsts)
    ref = int(present.sum(axis=1).argmax())
    offsets = np.full(n_clocks, np.nan)
    for c in range(n_clocks):
        both = present[c] & present[ref]
        if both.sum() >= MIN_MATCHED_STARTS:
            offset = float(np.median(firsts[c, both] - firsts[ref, both]))
            if abs(offset) <= MAX_CLOCK_OFFSET:
                offsets[c] = offset
    believed = np.isfinite(offsets)
    if believed.sum() < 2:
        return shifts
    shifts[believed] = offsets[believed].min() - offsets[believed]
    return shifts


def _phase_firsts(
    clock: np.ndarray, start: np.ndarray, end: np.ndarray, n_clocks: int, resolution: float
) -> np.ndarray:
    """Each clock's first start in each I/O phase of the clocks' union (inf where it does no I/O), shape (clocks,
    phases)."""
    ops = pl.DataFrame({"rank": clock, "start": start, "end": end, "size": np.ones(len(start))})
    t0, phase_s, phase_e = phase_bounds(ops, resolution=resolution)
    phase = np.searchsorted(phase_s + t0, start, side="right") - 1
    inside = (phase >= 0) & (start <= phase_e[np.maximum(phase, 0)] + t0)
    firsts = np.full((n_clocks, len(phase_s)), np.inf)
    np.minimum.at(firsts, (clock[inside], phase[inside]), start[inside])
    return firsts


def log_shifts(timelines: Sequence[tuple[float, Timeline | None]]) -> list[float]:
    """Each log's start in its job (s), its clock moved onto the job's earliest (:func:`clock_shifts`).

    ``timelines`` pairs each log's start in the job with its timeline; only exact timelines (DXT) move,
    HEATMAP bins (coarser than any clock error) and logs without a timeline keep their start.
    """
    out = [shift for shift, _ in timelines]
    exact = [(i, line) for i, (_, line) in enumerate(timelines) if line is not None and line.busy is None]
    exact = [(i, line) for i, line in exact if len(line.start)]
    if len(exact) < 2:
        return out
    clock = np.concatenate([np.full(len(line.start), k) for k, (_, line) in enumerate(exact)])
    start = np.concatenate([line.start + out[i] for i, line in exact])
    end = np.concatenate([line.end + out[i] for i, line in exact])
    moved = clock_shifts(clock, start, end, resolution=max(line.resolution for _, line in exact))
    for k, (i, _) in enumerate(exact):
        out[i] += float(moved[k])
    return out


def dxt_rank_shifts(job: DarshanJob) -> dict[int, float]:
    """The shift of each rank of one log whose clock moves (:func:`clock_shifts` on all its DXT requests).

    The same for the log's timeline and its requests in a site trace, which :func:`shift_ranks` moves by it.
    """
    if not job.dxt:
        return {}
    ops = pl.concat([table.select("rank", "start", "end") for table in job.dxt.values()])
    ranks, clock = np.unique(ops.get_column("rank").to_numpy(), return_inverse=True)
    if len(ranks) < 2:
        return {}
    start = ops.get_column("start").cast(pl.Float64).to_numpy()
    end = ops.select(pl.coalesce("end", "start").cast(pl.Float64)).to_series().to_numpy()
    shifts = clock_shifts(clock, start, end, resolution=_DXT_TIMER)
    return {int(r): float(s) for r, s in zip(ranks, shifts, strict=True) if s != 0.0}


def shift_ranks(ops: pl.DataFrame, shifts: dict[int, float]) -> pl.DataFrame:
    """``ops`` with each shifted rank's ``start`` and ``end`` moved by its shift (never before 0)."""
    if not shifts:
        return ops
    by = pl.col("rank").replace_strict(shifts, default=0.0, return_dtype=pl.Float64)
    return ops.with_columns(((pl.col(c) + by).clip(lower_bound=0.0)).alias(c) for c in ("start", "end"))
