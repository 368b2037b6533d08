"""One job's requests with periodic (or Poisson) I/O bursts, and the true rhythm to detect."""

import numpy as np
import polars as pl

from .._validation import check_count, check_positive
from ..errors import InputError
from ..schemas import REQUESTS


def make_periodic_requests(
    w_iter: float,
    duty: float,
    n_ranks: int = 1,
    *,
    n_phases: int = 20,
    jitter: float = 0.3,
    requests_per_burst: int = 4,
    request_gap: float = 0.03,
    poisson: bool = False,
    random_state=None,
) -> tuple[pl.DataFrame, dict]:
    """Generate the requests table of one job doing jittered periodic I/O bursts, with the true rhythm.

    Burst k starts at ``first + sum of k spacings``: each spacing is ``w_iter`` times
    U[1 - jitter, 1 + jitter] (exponential of mean ``w_iter`` with ``poisson``), each burst lasts
    ``duty * w_iter`` times U[1 - jitter, 1 + jitter]. Every rank tiles every burst with
    ``requests_per_burst`` contiguous requests cut at random points, each shortened by up to
    ``request_gap`` of its length (a rank's last request ends with the burst); a request moves
    0.5e8 to 2e8 bytes per second of its length.

    Parameters
    ----------
    w_iter : float
        Mean time between the starts of two bursts (s), > 0.
    duty : float
        Mean burst length over ``w_iter``, in (0, 1).
    n_ranks : int, default=1
        Ranks doing I/O in every burst.
    n_phases : int, default=20
        Bursts, >= 2.
    jitter : float, default=0.3
        Relative spread of the spacings and lengths, in [0, 1).
    requests_per_burst : int, default=4
        Requests of each rank in each burst, >= 1.
    request_gap : float, default=0.03
        Largest idle fraction after each request but a rank's last, in [0, 1).
    poisson : bool, default=False
        Exponential spacings: bursts at Poisson times, not periodic.
    random_state : int, numpy Generator, SeedSequence or None, default=None
        Seed for reproducible requests.

    Returns
    -------
    ops : polars.DataFrame of shape (n_phases * n_ranks * requests_per_burst, 7)
        The requests table (:data:`iosets.schemas.REQUESTS`, ``job_id`` 'job0', no ``file``), sorted by ``start``.
    truth : dict
        ``w_iter`` (mean spacing of the bursts, s), ``alpha_io`` (time covered by bursts over
        the time from the first start to the last end) and ``n_phases`` (bursts once
        overlapping ones are merged).

    Examples
    --------
    >>> ops, truth = make_periodic_requests(60.0, 0.05, 4, n_phases=12, random_state=0)
    >>> ops.height, truth["n_phases"], round(truth["w_iter"], 2)
    (192, 12, 62.69)
    """
    rng = np.random.default_rng(random_state)
    check_positive(w_iter, "w_iter")
    if not 0 < check_positive(duty, "duty") < 1:
        raise InputError(f"duty must be in (0, 1), got {duty!r}")
    check_count(n_ranks, "n_ranks", minimum=1)
    check_count(n_phases, "n_phases", minimum=2)
    check_count(requests_per_burst, "requests_per_burst", minimum=1)
    for name, value in (("jitter", jitter), ("request_gap", request_gap)):
        if check_positive(value, name, strict=False) >= 1:
            raise InputError(f"{name} must be in [0, 1), got {value!r}")
    if poisson:
        spacing = rng.exponential(w_iter, n_phases - 1)
    else:
        spacing = w_iter * rng.uniform(1 - jitter, 1 + jitter, n_phases - 1)
    length = duty * w_iter * rng.uniform(1 - jitter, 1 + jitter, n_phases)
    first = w_iter * (1 - duty) * rng.uniform(0.5, 1.5)
    b_start = first + np.r_[0.0, np.cumsum(spacing)]
    b_end = b_start + length
    r = requests_per_burst
    # each rank tiles each burst with r contiguous requests at random cut points
    cuts = np.sort(rng.uniform(0, 1, (n_phases, n_ranks, r - 1)), axis=2)
    frac = np.concatenate([np.zeros((n_phases, n_ranks, 1)), cuts, np.ones((n_phases, n_ranks, 1))], axis=2)
    t = b_start[:, None, None] + frac * length[:, None, None]
    s = t[:, :, :-1].ravel()
    e = t[:, :, 1:].ravel()
    e = s + (e - s) * rng.uniform(1 - request_gap, 1, len(s))  # small idle gaps between a rank's requests
    e[r - 1 :: r] = t[:, :, -1].ravel()  # a rank's last request ends with the burst, so bursts keep their true end
    size = np.maximum(1, np.rint((e - s) * rng.uniform(0.5e8, 2e8, len(s)))).astype(np.int64)
    rank = np.broadcast_to(np.arange(n_ranks)[None, :, None], (n_phases, n_ranks, r)).ravel()
    ops = pl.DataFrame(
        {
            "job_id": ["job0"] * len(s),
            "rank": rank,
            "op": np.where(rng.uniform(size=len(s)) < 0.5, "read", "write"),
            "offset": np.cumsum(size) - size,
            "size": size,
            "start": s,
            "end": e,
        },
        schema_overrides=REQUESTS.polars,
    ).sort("start")
    reach = np.maximum.accumulate(b_end)  # bursts come in start order: one that starts before
    joins = b_start[1:] <= reach[:-1]  # the earlier ones end joins their phase
    covered = float(np.sum(reach[np.r_[~joins, True]] - b_start[np.r_[True, ~joins]]))
    truth = {
        "w_iter": float(np.diff(b_start).mean()),
        "alpha_io": covered / float(b_end.max() - b_start.min()),
        "n_phases": int(np.count_nonzero(~joins)) + 1,
    }
    return ops, truth
