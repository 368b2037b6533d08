"""The IO-SETS paper's real-run scenario (section VI-A, Fig. 4), scaled to a horizon and a bandwidth."""

from __future__ import annotations

import numpy as np

from .._validation import check_count, check_positive
from ..workload import Workload

PAPER_HORIZON = 6400.0
PAPER_WINDOW = (1300.0, 6300.0)
"""Section VI-A: H = 6400 s, metrics between 1300 s and 6300 s."""
PAPER_W_ITER = (64.0, 640.0)
"""The two sets' w_iter in the paper: H / 100 and H / 10."""


def make_fig4_workload(
    n_jobs: int = 8, *, horizon: float = 100.0, bandwidth: float = 200e6, n_high: int | None = None
) -> Workload:
    """The scenario of the IO-SETS paper's Fig. 4, its dates scaled from H = 6400 s to ``horizon``.

    ``n_high`` high-frequency jobs of w_iter = H / 100 and ``n_jobs - n_high`` low-frequency ones of
    w_iter = H / 10 (the paper's 64 s and 640 s: two SET-10 sets), all with alpha_io = 1 / n_jobs
    (I/O load 1), released at 0, without noise, metrics over (1300 / 6400 H, 6300 / 6400 H). Each
    phase computes (1 - alpha_io) w_iter s and moves alpha_io w_iter ``bandwidth`` bytes.

    Parameters
    ----------
    n_jobs : int, default=8
        N >= 1.
    horizon : float, default=100.0
        H in seconds; each job runs H / w_iter iterations (100 and 10).
    bandwidth : float, default=200e6
        B in bytes/s that sizes the phases.
    n_high : int, default=None
        High-frequency jobs, in [0, n_jobs]; by default n_jobs // 2.

    Returns
    -------
    Workload
        Jobs ``h0``, ``h1``... then ``l0``, ``l1``..., with ``w_iter`` filled.

    Examples
    --------
    >>> wl = make_fig4_workload(4, horizon=100.0, bandwidth=1e8)
    >>> wl.ids, wl.window
    (['h0', 'h1', 'l0', 'l1'], (20.3125, 98.4375))
    >>> float(wl.t_cpu[0]), float(wl.io_bytes[0]), int((wl.phase_job == 2).sum())
    (0.75, 25000000.0, 10)
    """
    n_jobs = check_count(n_jobs, "n_jobs", minimum=1)
    horizon = check_positive(horizon, "horizon")
    bandwidth = check_positive(bandwidth, "bandwidth")
    n_high = n_jobs // 2 if n_high is None else check_count(n_high, "n_high", maximum=n_jobs)
    scale = horizon / PAPER_HORIZON
    w_iter = np.where(np.arange(n_jobs) < n_high, PAPER_W_ITER[0] * scale, PAPER_W_ITER[1] * scale)
    alpha = 1.0 / n_jobs
    n_iter = np.rint(PAPER_HORIZON / (w_iter / scale)).astype(np.int64)  # 100 and 10, exactly
    job = np.repeat(np.arange(n_jobs), n_iter)
    ids = [f"h{j}" for j in range(n_high)] + [f"l{j}" for j in range(n_jobs - n_high)]
    return Workload.from_arrays(
        ids,
        np.zeros(n_jobs),
        job,
        ((1 - alpha) * w_iter)[job],
        (alpha * w_iter * bandwidth)[job],
        w_iter=w_iter,
        bandwidth=bandwidth,
        horizon=horizon,
        window=(PAPER_WINDOW[0] * scale, PAPER_WINDOW[1] * scale),
        source="fig4 workload",
    )
