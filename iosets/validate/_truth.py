"""What a job really did, from its program's own timestamps: the truth the analyzer's answer is checked against."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import numpy as np

from ._timestamps import read_timestamps

TRUTH_FIELDS = ("w_iter", "alpha_io", "bytes", "n_phases")
"""The quantities compared with the analyzer's jobs table (its columns of the same names, ``bytes_written``)."""


@dataclass(frozen=True)
class JobTruth:
    """One job's rhythm from its timestamps (a program's CSV).

    Attributes
    ----------
    w_iter : float or None
        Mean spacing of the I/O phases' starts (s); None with fewer than two phases.
    alpha_io : float or None
        The union of the I/O phases over the job's run; None for a run of no length.
    bytes : int
        Bytes the phases wrote.
    n_phases : int
        I/O phases run.
    runtime : float
        The job's run: its release (the first compute's start) to its last I/O's end (s).
    compute : float
        Time in compute phases (s).
    """

    w_iter: float | None
    alpha_io: float | None
    bytes: int
    n_phases: int
    runtime: float
    compute: float

    def values(self) -> dict[str, float | int | None]:
        """The :data:`TRUTH_FIELDS`."""
        return {name: getattr(self, name) for name in TRUTH_FIELDS}

    def to_dict(self) -> dict:
        """Every attribute by name."""
        return asdict(self)

    def stretch(self, bandwidth: float) -> float | None:
        """The job's runtime over its runtime alone: its compute plus its bytes at ``bandwidth`` bytes/s."""
        alone = self.compute + self.bytes / bandwidth
        return self.runtime / alone if alone > 0 and self.n_phases else None


def job_truth(dates: np.ndarray, sizes: np.ndarray) -> JobTruth:
    """The truth of a job run with ``dates`` (ns, shape (4, n_phases): cpu_start, cpu_end, io_start, io_end, as
    :func:`read_timestamps` gives them) and ``sizes`` (bytes per phase).

    Examples
    --------
    >>> s = 10**9
    >>> dates = np.array([[0, 3 * s], [2 * s, 5 * s], [2 * s, 5 * s], [3 * s, 6 * s]])
    >>> truth = job_truth(dates, np.array([100, 100]))
    >>> truth.w_iter, truth.alpha_io, truth.bytes, truth.n_phases, truth.runtime, truth.compute
    (3.0, 0.3333333333333333, 200, 2, 6.0, 4.0)
    """
    n = dates.shape[1]
    if n == 0:
        return JobTruth(None, None, 0, 0, 0.0, 0.0)
    cpu_start, cpu_end, io_start, io_end = (row.astype(np.int64) for row in dates)
    runtime = int(io_end.max() - cpu_start[0]) / 1e9
    w_iter = int(io_start[-1] - io_start[0]) / 1e9 / (n - 1) if n > 1 else None
    alpha = _union_ns(io_start, io_end) / 1e9 / runtime if runtime > 0 else None
    compute = int((cpu_end - cpu_start).sum()) / 1e9
    return JobTruth(w_iter, alpha, int(sizes.sum()), n, runtime, compute)


def read_truth(path: str | os.PathLike) -> tuple[str, JobTruth]:
    """The job id and the truth of one program's CSV; InputError naming the file and line of a bad row."""
    job_id, dates, sizes = read_timestamps(path)
    return job_id, job_truth(dates, sizes)


def _union_ns(start: np.ndarray, end: np.ndarray) -> int:
    """Length of the union of the intervals [start, end] (ns)."""
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    reach = np.maximum.accumulate(end)
    begins = np.maximum(start, np.r_[start[0], reach[:-1]])  # each interval's part not covered by the earlier ones
    return int(np.maximum(reach - begins, 0).sum())
