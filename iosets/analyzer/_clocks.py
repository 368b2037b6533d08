"""One clock for a job's processes: Darshan dates each log's I/O from a zero that the log does not keep.

A process's DXT times count from the moment Darshan started in it (``init_start`` in
darshan-runtime's ``darshan-core.c``; a forked child starts Darshan again); the log's header start
is stamped later in the same start-up (``start_ts``: 1.6 to 22 ms later in the real processes
measured). Placed at header start + DXT offset, each process's I/O lands late by its own amount, so
the logs of one job come out up to tens of ms apart and their union (the job's I/O phases,
alpha_io) is wider than what they did.

The I/O phases of a job are released together, so its logs' phase starts should coincide. Each
log's offset to a reference log (the one present in the most phases) is the median, over the
phases both are present in, of the difference between its first start and the reference's first
start in the phase. It is believed only with :data:`MIN_MATCHED_STARTS` matched phases or more and
when it is at most :data:`MAX_CLOCK_OFFSET` (a larger one is the job's own behaviour, not a
clock's); the logs believed then all move onto the earliest of them (Darshan only ever stamps
late) unless by less than :data:`MIN_CLOCK_SHIFT`, the others stay. What is left is the earliest
log's own lateness, which no log records.

The ranks of one MPI log are not moved, although each counts from its own zero and the header start
is the earliest over them: measured against IOR's per-rank timers (5 real logs, 4 and 8 ranks), the
ranks' first starts differ for real as much as their clocks do (each rank opens its file, its own
way), and moving them by their phase starts left their clocks further apart (3.2-25 ms before,
6.3-41 ms after).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ._periodicity import phase_bounds

if TYPE_CHECKING:
    from ._rhythm import Timeline

MAX_CLOCK_OFFSET = 0.1
"""Seconds two logs of one job may disagree by and still be moved together (Darshan's stamps: 1.6-22 ms)."""
MIN_MATCHED_STARTS = 3
"""Phases in which a clock and the reference both start I/O that a clock's offset needs."""
MIN_CLOCK_SHIFT = 1e-3
"""Seconds under which a log's clock does not move: the gap under which the analyzer takes one rank's requests as
one operation, and the order of the real differences between processes released together (0.1-0.8 ms)."""


def clock_shifts(clock: np.ndarray, start: np.ndarray, end: np.ndarray, *, resolution: float = 0.0) -> np.ndarray:
    """The shift (s, at most 0) that puts each clock's I/O on the earliest clock (see the module doc).

    Parameters
    ----------
    clock : numpy.ndarray of int, shape (n,)
        Each interval's clock, 0 to ``n_clocks - 1`` (a log of the job).
    start, end : numpy.ndarray of float, shape (n,)
        When each interval of I/O starts and ends, all clocks placed on one axis (s, >= 0).
    resolution : float, default=0.0
        Gaps this short never split a phase (s), as for :func:`~iosets.analyzer._periodicity.phase_bounds`.

    Returns
    -------
    numpy.ndarray of shape (clock.max() + 1,)
        The shift to add to each clock's times; 0 for a clock without enough evidence, or closer than
        :data:`MIN_CLOCK_SHIFT` to the earliest.

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
    shifts[np.abs(shifts) < MIN_CLOCK_SHIFT] = 0.0
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
