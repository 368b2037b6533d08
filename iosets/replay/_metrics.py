"""Utilization, IO-slowdown and Max Stretch over a window (seed 004, section V-D)."""

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class PhaseMetrics:
    """System and user metrics of one phase-level replay.

    Attributes
    ----------
    utilization : float
        sum_j e_cpu_j / (N (T_end - T_begin)); the upper bound is 1 - omega / N.
    io_slowdown : float
        Geometric mean over jobs with e_iter_j > 0 of
        (T_end - T_begin - e_cpu_j) / (T_io_j e_iter_j).
    max_stretch : float
        Max over jobs with work in the window of (T_end - T_begin) / (e_cpu_j + e_io_j).
    """

    utilization: float
    io_slowdown: float
    max_stretch: float

    def to_dict(self) -> dict[str, float]:
        """The metrics as a plain dict (the CLI's ``--json`` output)."""
        return asdict(self)


def _moved_before(date, io_bytes, io_start, io_end, remaining):
    """Bytes of each phase moved before ``date``, given the engine's probe at ``date``."""
    performing = (io_start < date) & (io_end > date)
    moved = np.where(io_end <= date, io_bytes, 0.0)
    return np.where(performing, io_bytes - np.nan_to_num(remaining), moved)


def compute_phase_metrics(
    job: np.ndarray,
    n_jobs: int,
    io_bytes: np.ndarray,
    cpu_start: np.ndarray,
    cpu_end: np.ndarray,
    io_start: np.ndarray,
    io_end: np.ndarray,
    remaining: tuple[np.ndarray, np.ndarray],
    *,
    bandwidth: float,
    window: tuple[float, float],
) -> PhaseMetrics:
    """Metrics of a replayed timeline; ``remaining`` holds the engine's window probes."""
    tb, te = window
    width = te - tb
    e_cpu = np.bincount(
        job, weights=np.clip(np.minimum(cpu_end, te) - np.maximum(cpu_start, tb), 0, None), minlength=n_jobs
    )
    moved = _moved_before(te, io_bytes, io_start, io_end, remaining[1]) - _moved_before(
        tb, io_bytes, io_start, io_end, remaining[0]
    )
    e_io = np.bincount(job, weights=moved / bandwidth, minlength=n_jobs)
    e_iter = np.bincount(job, weights=(io_end >= tb) & (io_end <= te), minlength=n_jobs)
    n_phases = np.bincount(job, minlength=n_jobs)
    t_io = np.bincount(job, weights=io_bytes, minlength=n_jobs) / np.maximum(n_phases, 1) / bandwidth

    counted = (e_iter > 0) & (t_io > 0)
    ratios = (width - e_cpu[counted]) / (t_io[counted] * e_iter[counted])
    with np.errstate(divide="ignore"):  # a job computing through the whole window has ratio 0
        io_slowdown = float(np.exp(np.mean(np.log(ratios)))) if counted.any() else float("nan")
    work = e_cpu + e_io
    max_stretch = float(np.max(width / work[work > 0])) if (work > 0).any() else float("nan")
    utilization = float(e_cpu.sum() / (n_jobs * width)) if n_jobs else float("nan")
    return PhaseMetrics(utilization=utilization, io_slowdown=io_slowdown, max_stretch=max_stretch)


def workload_metrics(workload, cpu_start, cpu_end, io_start, io_end, remaining) -> PhaseMetrics:
    """Metrics of a timeline of ``workload`` (phase arrays in the workload's phase order)."""
    return compute_phase_metrics(
        workload.phases["job"].to_numpy(),
        workload.n_jobs,
        workload.phases["io_bytes"].to_numpy(),
        cpu_start,
        cpu_end,
        io_start,
        io_end,
        remaining,
        bandwidth=workload.bandwidth,
        window=workload.window,
    )
