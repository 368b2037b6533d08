"""A generated site history: one row per past job in the jobs-table schema."""

import numpy as np
import polars as pl

from .._validation import check_count, check_positive
from ..errors import InputError

_CODES = (
    "wrf", "lammps", "gromacs", "nek", "cesm", "qe", "vasp", "openfoam", "amber", "namd",
    "hacc", "nyx", "e3sm", "lulesh", "milc", "chroma", "cp2k", "nwchem", "pytorch", "sw4",
)  # fmt: skip
_VARIANTS = ("prod", "dev", "mini", "big", "v2", "v3", "ens", "test")
_SPAN = 180 * 86400.0  # six months of submissions


def make_job_history(
    n_jobs: int = 2000,
    *,
    n_apps: int = 40,
    n_users: int = 15,
    noise: float = 0.15,
    drift: float = 0.3,
    missing: float = 0.1,
    random_state=None,
) -> pl.DataFrame:
    """Generate a site's job history with characteristic times to learn from.

    Apps come in code families (``lammps_prod``, ``lammps_mini``...): a family
    has a log10 w_iter centre drawn uniformly in [0.3, 3.7] (log-uniform
    w_iter in 2 s .. 5000 s) and each of its apps sits N(0, 0.3) decades from
    it, clipped to [0, 4] (1 s .. 1e4 s). Each user has a preferred scale
    and is more likely to run apps near it; each (app, user) pair has its own
    N(0, 0.15) offset (inputs differ). An app's w_iter drifts linearly over
    the six months by N(0, ``drift``) decades, and each job scatters around
    it with lognormal noise of ``noise`` decades. Submit-time metadata
    follows w_iter loosely: log2 nprocs grows with log10 w_iter, runtime
    covers at least two iterations and grows with sqrt(w_iter), and the
    requested time is the runtime times U[1.2, 3] rounded up to 15 minutes.
    A fraction ``missing`` of the jobs has no detected w_iter (null, source
    'counters', confidence 0); detected ones carry a confidence c ~ Beta(8, 2)
    and an extra detection error of N(0, 0.3 (1 - c)) decades.

    Parameters
    ----------
    n_jobs : int, default=2000
        Number of jobs (rows).
    n_apps : int, default=40
        Number of distinct apps.
    n_users : int, default=15
        Number of users.
    noise : float, default=0.15
        Job-to-job lognormal scatter of w_iter, in log10 decades.
    drift : float, default=0.3
        Standard deviation of each app's w_iter drift over the history, in decades.
    missing : float, default=0.1
        Fraction of jobs whose w_iter was not found, in [0, 1).
    random_state : int, numpy Generator, SeedSequence or None, default=None
        Seed for a reproducible history.

    Returns
    -------
    polars.DataFrame
        ``n_jobs`` rows ordered by ``start`` with the jobs-table columns
        job_id, user, app, nprocs, start, end, runtime, bytes_read,
        bytes_written, io_time, w_iter, w_iter_confidence, alpha_io,
        n_phases, source, plus ``requested_time`` (s).

    Examples
    --------
    >>> jobs = make_job_history(100, n_apps=5, n_users=3, random_state=0)
    >>> jobs.shape
    (100, 16)
    """
    rng = np.random.default_rng(random_state)
    check_count(n_jobs, "n_jobs", minimum=1)
    check_count(n_apps, "n_apps", minimum=1)
    check_count(n_users, "n_users", minimum=1)
    check_positive(noise, "noise", strict=False)
    check_positive(drift, "drift", strict=False)
    if not 0 <= check_positive(missing, "missing", strict=False) < 1:
        raise InputError(f"missing must be in [0, 1), got {missing!r}")

    # code families, apps and their owners
    n_codes = max(1, min(len(_CODES) * 4, round(n_apps / 3)))
    codes = [_CODES[k % len(_CODES)] + ("" if k < len(_CODES) else str(k // len(_CODES))) for k in range(n_codes)]
    code_centre = rng.uniform(0.3, 3.7, n_codes)
    app_code = np.concatenate([np.arange(min(n_codes, n_apps)), rng.integers(0, n_codes, max(0, n_apps - n_codes))])
    app_centre = np.clip(code_centre[app_code] + rng.normal(0, 0.3, n_apps), 0.0, 4.0)
    seen: dict[int, int] = {}
    names = []
    for code in app_code:
        k = seen.get(code, 0)
        seen[code] = k + 1
        suffix = _VARIANTS[k % len(_VARIANTS)] + ("" if k < len(_VARIANTS) else str(k // len(_VARIANTS)))
        names.append(f"{codes[code]}_{suffix}")
    user_centre = rng.uniform(0.0, 4.0, n_users)
    app_users = []
    for a in range(n_apps):
        p = np.exp(-((user_centre - app_centre[a]) ** 2) / (2 * 0.6**2)) + 1e-3
        k = min(n_users, 1 + rng.poisson(0.8))
        app_users.append(rng.choice(n_users, size=k, replace=False, p=p / p.sum()))
    app_slope = rng.normal(0, drift, n_apps)
    app_alpha = rng.uniform(0.02, 0.3, n_apps)
    app_log2p = np.clip(2 + 2 * app_centre + rng.normal(0, 1.5, n_apps), 0, 14)
    app_read = rng.uniform(0.05, 1.0, n_apps)
    pair_offset = {(a, u): rng.normal(0, 0.15) for a in range(n_apps) for u in app_users[a]}

    # jobs: popular apps run more often; start times increase
    popularity = rng.dirichlet(np.full(n_apps, 0.7))
    app = rng.choice(n_apps, size=n_jobs, p=popularity)
    user = np.array([rng.choice(app_users[a]) for a in app])
    start = np.sort(rng.uniform(0, _SPAN, n_jobs))
    log_w = (
        app_centre[app]
        + app_slope[app] * (start / _SPAN - 0.5)
        + np.array([pair_offset[a, u] for a, u in zip(app, user, strict=False)])
        + rng.normal(0, noise, n_jobs)
    )
    w = 10.0**log_w
    nprocs = 2 ** np.clip(np.round(app_log2p[app] + rng.normal(0, 0.7, n_jobs)), 0, 15).astype(np.int64)
    target = 10 ** (2.8 + 0.5 * log_w + rng.normal(0, 0.4, n_jobs))
    n_iter = np.maximum(2, np.round(target / w)).astype(np.int64)
    runtime = n_iter * w * rng.uniform(1.0, 1.1, n_jobs)
    requested = np.ceil(runtime * rng.uniform(1.2, 3.0, n_jobs) / 900.0) * 900.0
    alpha = np.clip(app_alpha[app] * rng.uniform(0.8, 1.2, n_jobs), 0.0, 1.0)
    io_time = alpha * runtime
    bytes_written = np.round(io_time * nprocs * 5e7 * rng.uniform(0.5, 2.0, n_jobs))
    bytes_read = np.round(bytes_written * app_read[app])

    found = rng.random(n_jobs) >= missing
    confidence = np.where(found, rng.beta(8, 2, n_jobs), 0.0)
    observed = 10 ** (log_w + rng.normal(0, 1, n_jobs) * 0.3 * (1 - confidence))
    return pl.DataFrame(
        {
            "job_id": [f"job{i:06d}" for i in range(n_jobs)],
            "user": [f"u{u:02d}" for u in user],
            "app": [names[a] for a in app],
            "nprocs": nprocs,
            "start": start,
            "end": start + runtime,
            "runtime": runtime,
            "bytes_read": bytes_read,
            "bytes_written": bytes_written,
            "io_time": io_time,
            "w_iter": np.where(found, observed, np.nan),
            "w_iter_confidence": confidence,
            "alpha_io": alpha,
            "n_phases": n_iter,
            "source": np.where(found, "dxt", "counters"),
            "requested_time": requested,
        }
    ).with_columns(pl.col("w_iter").fill_nan(None))
