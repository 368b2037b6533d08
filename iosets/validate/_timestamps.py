"""The benchmark program's per-phase timestamps, and the IO-SETS paper's metrics computed from them.

The metrics are the phase engine's own (:func:`iosets.replay.workload_metrics`, the C ``phase_metrics``
that ``replay_phases`` uses), so that measured and simulated values follow one definition. A phase cut
by the window's edge counts the bytes it moved before the edge, read off a constant rate over its I/O
(the program does not time single requests).
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError

if TYPE_CHECKING:
    from ..replay import PhaseMetrics
    from ..workload import Workload

TIMESTAMP_COLUMNS = ("job_id", "phase", "cpu_start", "cpu_end", "io_start", "io_end", "bytes")
"""The header of a program's CSV: dates in CLOCK_REALTIME ns, ``bytes`` written by all its processes."""
TIMES = ("cpu_start", "cpu_end", "io_start", "io_end")


def read_timestamps(path: str | os.PathLike) -> tuple[str, np.ndarray, np.ndarray]:
    """One program's CSV: its job id, its dates (int64 ns, shape (4, n_phases): the rows of :data:`TIMES`)
    and the bytes of each phase, phases numbered 0, 1, ... in order.

    Raises InputError naming the file and the line of a bad row.
    """
    path = Path(path)
    try:
        with path.open(newline="", encoding="ascii") as file:
            rows = list(csv.reader(file))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the program's timestamps ({exc})") from None
    if not rows or tuple(rows[0]) != TIMESTAMP_COLUMNS:
        raise InputError(f"{path}: expected the header {','.join(TIMESTAMP_COLUMNS)}")
    job_ids, dates, sizes = set(), [], []
    for line, row in enumerate(rows[1:], start=2):
        where = f"{path} line {line}"
        try:
            phase, *times, size = (int(value) for value in row[1:])
        except ValueError:
            raise InputError(f"{where}: expected integers after the job id, got {row[1:]}") from None
        if len(times) != 4 or phase != line - 2:
            raise InputError(f"{where}: expected phase {line - 2} and 4 dates, got {row[1:]}")
        if not times[0] <= times[1] <= times[2] <= times[3]:
            raise InputError(f"{where}: dates out of order (cpu_start <= cpu_end <= io_start <= io_end): {times}")
        job_ids.add(row[0])
        dates.append(times)
        sizes.append(size)
    if len(job_ids) > 1:
        raise InputError(f"{path}: rows of several jobs: {sorted(job_ids)}")
    job_id = job_ids.pop() if job_ids else ""
    return job_id, np.array(dates, dtype=np.int64).reshape(-1, 4).T, np.array(sizes, dtype=np.int64)


def workload_times(workload: Workload, paths: list[Path], origin_ns: int) -> np.ndarray:
    """The (4, n_phases) float64 dates (s since ``origin_ns``) of ``workload`` from its jobs' CSVs (``paths[j]``
    for job j); a phase a job did not run is at +inf (after any window)."""
    times = np.full((4, workload.n_phases), math.inf)
    offsets = workload.offsets
    for j, path in enumerate(paths):
        _, dates, _ = read_timestamps(path)
        n_run, n_planned = dates.shape[1], int(offsets[j + 1] - offsets[j])
        if n_run > n_planned:
            raise InputError(f"{path}: {n_run} phases, but job {workload.ids[j]!r} has {n_planned}")
        times[:, offsets[j] : offsets[j] + n_run] = (dates - origin_ns) / 1e9
    return times


def remaining_at(times: np.ndarray, io_bytes: np.ndarray, date: float) -> np.ndarray:
    """Bytes left at ``date`` of each phase performing I/O then, at a constant rate over [io_start, io_end];
    NaN for the others."""
    io_start, io_end = times[2], times[3]
    performing = (io_start < date) & (io_end > date)
    with np.errstate(invalid="ignore", divide="ignore"):
        left = io_bytes * (io_end - date) / (io_end - io_start)
    return np.where(performing, left, np.nan)


def measured_metrics(workload: Workload, times: np.ndarray) -> PhaseMetrics:
    """Utilization, IO-slowdown and Max Stretch of ``workload`` run with the dates ``times`` (s, shape (4, n_phases)),
    over the workload's window and at its bandwidth, as the phase engine computes them."""
    from ..replay import workload_metrics

    tb, te = workload.window
    remaining = (remaining_at(times, workload.io_bytes, tb), remaining_at(times, workload.io_bytes, te))
    return workload_metrics(workload, times[0], times[1], times[2], times[3], remaining)
