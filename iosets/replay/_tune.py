"""Tuning by replay: a site's own jobs replayed under candidate set mappings, ranked."""

import numpy as np
import polars as pl

from .._validation import check_positive
from ..errors import InputError
from ..recommender import assign_sets
from ..schemas import TUNE_RANKING
from ..workload import Workload, periodic_jobs
from ._phase import replay_phases

TUNE_BASES = (2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0)
"""Bases of the SET-b mappings :func:`tune` tries by default."""


def _candidates(jobs: pl.DataFrame, bases, gmm: bool, random_state: int) -> dict[str, tuple | None]:
    """Mapping name -> (sets, priorities) for the given jobs; None = FAIR-SHARE (a set per job)."""
    candidates: dict[str, tuple | None] = {}
    for base in bases:
        name = f"set-{base:g}"
        candidates[name] = assign_sets(jobs, name, min_confidence=0.0)[:2]
    if gmm:
        candidates["gmm"] = assign_sets(jobs, "gmm", min_confidence=0.0, random_state=random_state)[:2]
    candidates["fair-share"] = None
    return candidates


def tune(
    jobs: pl.DataFrame,
    *,
    bases=TUNE_BASES,
    gmm: bool = True,
    bandwidth: float = 1e9,
    horizon: float | None = None,
    window: tuple[float, float] | None = None,
    tolerance: float = 1e-4,
    random_state: int = 0,
) -> pl.DataFrame:
    """Replay ``jobs`` under SET-b mappings, the clustering mapping and FAIR-SHARE; rank them.

    Each job with a ``w_iter`` and an ``alpha_io`` becomes a periodic job
    (:meth:`Workload.from_jobs`, releases drawn U[0, w_iter]) and the workload is
    replayed in the C phase engine once per candidate mapping.

    Parameters
    ----------
    jobs : polars.DataFrame
        Jobs table with ``job_id``, ``w_iter`` and ``alpha_io``.
    bases : sequence of float, default=TUNE_BASES
        Bases of the SET-b candidates (SET-10 among them by default).
    gmm : bool, default=True
        Also try the Gaussian-mixture mapping.
    bandwidth : float, default=1e9
        File system bandwidth B (bytes/s).
    horizon, window : default=None
        Replay length and measurement window (s); by default 20 times the largest
        w_iter and its middle 40 %, as in the paper (20 000 s, 6000-14 000 s, for
        w_iter up to about 1000 s). More than :data:`~iosets.workload.MAX_PHASES`
        phases (horizon / w_iter per job) are refused before anything is built.
    tolerance : float, default=1e-4
        Utilizations closer than this tie; ties go to the lower Max Stretch, then the
        lower IO-slowdown.

    Returns
    -------
    polars.DataFrame
        One row per candidate, best first (:data:`iosets.schemas.TUNE_RANKING`): ``rank``,
        ``mapping``, ``n_sets``, ``utilization``, ``io_slowdown``, ``max_stretch`` (null where
        the window cannot give it, e.g. IO-slowdown when no job does I/O; nulls rank last).
    """
    check_positive(tolerance, "tolerance")
    usable = periodic_jobs(jobs)
    if usable.height == 0:
        raise InputError("no job with a w_iter and an alpha_io to replay (all jobs are non-periodic)")
    if horizon is None:
        horizon = 20.0 * float(usable.select(pl.col("w_iter").max()).item())
    workload = Workload._from_periodic_jobs(
        usable, bandwidth=bandwidth, horizon=horizon, window=window, random_state=random_state
    )
    rows = []
    for name, assignment in _candidates(usable, bases, gmm, random_state).items():
        if assignment is None:
            metrics, n_sets = replay_phases(workload, "fair-share").metrics, workload.n_jobs
        else:
            metrics = replay_phases(workload.with_assignment(*assignment), "explicit").metrics
            n_sets = np.unique(assignment[0]).size
        rows.append({"mapping": name, "n_sets": n_sets, **metrics.values()})
    table = pl.DataFrame(rows, schema={name: TUNE_RANKING[name].dtype for name in TUNE_RANKING.names if name != "rank"})
    bucket = (pl.col("utilization") / tolerance).round(0)
    ranked = table.sort(
        [bucket, "max_stretch", "io_slowdown"], descending=[True, False, False], nulls_last=True, maintain_order=True
    )
    return ranked.with_row_index("rank", offset=1)
