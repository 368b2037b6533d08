"""The workload generation protocol of the IO-SETS paper, section V-B."""

from collections.abc import Sequence

import numpy as np

from .._validation import check_count, check_positive
from ..errors import InputError
from ..workload import Workload, iteration_counts, metric_window


def _truncated_normal(rng: np.random.Generator, mu: float, sigma: float, size: int) -> np.ndarray:
    """Draws of N(mu, sigma) kept only when positive (rejection, vectorised)."""
    values = rng.normal(mu, sigma, size)
    bad = values <= 0
    while bad.any():
        values[bad] = rng.normal(mu, sigma, int(bad.sum()))
        bad = values <= 0
    return values


def make_iosets_workload(
    profiles: Sequence[tuple[int, float, float]],
    *,
    omega: float = 0.8,
    noise: float = 0.1,
    horizon: float = 20000.0,
    window: tuple[float, float] | None = None,
    bandwidth: float = 1e9,
    random_state=None,
) -> Workload:
    """Generate periodic jobs as in the IO-SETS paper.

    For each profile ``(count, mu, sigma)``, ``count`` jobs draw w_iter from
    N(mu, sigma) truncated to positive values; a job runs n = floor(h / w_iter)
    iterations (at least one; more than :data:`~iosets.workload.MAX_PHASES` in all
    are refused), is released at U[0, w_iter], and has
    alpha_io = omega alpha_j / sum(alpha) with alpha_j ~ U[0, 1]. Phase i lasts
    t_cpu (1 + g) and moves t_io (1 + g') B bytes with g, g' ~ U[-b, b],
    t_cpu = (1 - alpha_io) w_iter and t_io = alpha_io w_iter.

    Parameters
    ----------
    profiles : sequence of (count, mu, sigma)
        Job profiles; the profile index is stored in the ``profile`` column.
    omega : float, default=0.8
        Target I/O stress sum(alpha_io).
    noise : float, default=0.1
        Noise bound b, in [0, 1].
    horizon : float, default=20000.0
        h in seconds.
    window : tuple of float, default=None
        Metric window, within [0, horizon]; by default (0.3 h, 0.7 h), the paper's
        (6000, 14000) for h = 20 000 s.
    bandwidth : float, default=1e9
        B in bytes/s.
    random_state : int, numpy Generator, SeedSequence or None, default=None
        Seed for reproducible workloads.

    Returns
    -------
    Workload
        Jobs with ``w_iter`` and ``profile`` filled, ``set``/``priority`` empty.

    Examples
    --------
    >>> wl = make_iosets_workload([(2, 10, 1), (1, 100, 10)], random_state=0)
    >>> wl.n_jobs, wl.jobs["profile"].to_list()
    (3, [0, 0, 1])
    """
    rng = np.random.default_rng(random_state)
    check_positive(omega, "omega")
    check_positive(noise, "noise", strict=False)
    if noise > 1:
        raise InputError(f"noise must be in [0, 1], got {noise!r}")
    check_positive(horizon, "horizon")
    window = metric_window(window, horizon)
    check_positive(bandwidth, "bandwidth")
    counts, mus, sigmas = [], [], []
    for i, profile in enumerate(profiles):
        if len(profile) != 3:
            raise InputError(f"profiles[{i}]: expected (count, mu, sigma), got {profile!r}")
        counts.append(check_count(profile[0], f"profiles[{i}] count"))
        mus.append(check_positive(profile[1], f"profiles[{i}] mu"))
        sigmas.append(check_positive(profile[2], f"profiles[{i}] sigma", strict=False))
    n_jobs = sum(counts)
    if n_jobs == 0:
        raise InputError("profiles: expected at least one job")

    w_iter = np.concatenate([_truncated_normal(rng, m, s, c) for c, m, s in zip(counts, mus, sigmas, strict=True)])
    profile_of_job = np.repeat(np.arange(len(counts)), counts)
    ids = [f"j{k}" for k in range(n_jobs)]
    n_iter = iteration_counts(ids, w_iter, horizon)
    release = rng.uniform(0.0, w_iter)
    alpha = rng.uniform(0.0, 1.0, n_jobs)
    alpha_io = omega * alpha / alpha.sum()

    job = np.repeat(np.arange(n_jobs), n_iter)
    gamma = rng.uniform(-noise, noise, (2, job.size))
    t_cpu = (1 - alpha_io[job]) * w_iter[job] * (1 + gamma[0])
    io_bytes = alpha_io[job] * w_iter[job] * (1 + gamma[1]) * bandwidth

    return Workload.from_arrays(
        ids,
        release,
        job,
        t_cpu,
        io_bytes,
        w_iter=w_iter,
        profile=profile_of_job,
        bandwidth=bandwidth,
        horizon=horizon,
        window=window,
    )
