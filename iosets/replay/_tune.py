"""Tuning by replay: a site's own jobs replayed under candidate set mappings, ranked; and which jobs it replays."""

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import polars as pl

from .._validation import check_positive
from ..errors import InputError
from ..recommender import TUNE_BASES, assign_sets
from ..schemas import JOBS, TUNE_RANKING
from ..workload import Workload
from ._phase import replay_phases

NO_W_ITER = "no w_iter"
"""Why a job without a ``not_periodic`` code is not periodic: its ``w_iter`` is null."""


@dataclass(frozen=True, eq=False)
class TuneSelection:
    """The jobs :func:`tune` replays, and why it leaves the others out (:func:`tune_selection`).

    Attributes
    ----------
    jobs : polars.DataFrame
        The rows replayed: periodic (a ``w_iter``, no ``not_periodic`` code) with an
        ``alpha_io``, and with ``overlap`` running at the busiest instant.
    n_given : int
        Rows of the table given.
    not_periodic : dict of str to int
        Jobs left out as not periodic, by ``not_periodic`` code (``'no w_iter'`` for a
        null w_iter without a code), the most frequent first.
    without_alpha : int
        Periodic jobs left out for a null ``alpha_io``.
    not_running : int
        Jobs left out by ``overlap`` because they did not run at ``instant``.
    overlap : bool
        Whether only the jobs running at the busiest instant were kept.
    instant : float or None
        With ``overlap``: the busiest instant (s since the epoch); None otherwise or
        when no job has dates.
    span : tuple of float or None
        Earliest start and latest end of the kept jobs that have dates (None: none has).
    max_running : int
        Most kept jobs whose [start, end] contain one date (jobs without dates count as
        always running).
    n_undated : int
        Kept jobs without a start or an end date.
    """

    jobs: pl.DataFrame
    n_given: int
    not_periodic: dict[str, int]
    without_alpha: int
    not_running: int
    overlap: bool
    instant: float | None
    span: tuple[float, float] | None
    max_running: int
    n_undated: int

    @property
    def summary(self) -> str:
        """What was used, in one or two lines, e.g. ``used 19 of 87 jobs; left out: 52 not periodic (...)``."""
        lines = [f"used {self.jobs.height} of {self.n_given} jobs"]
        left_out = []
        if self.not_periodic:
            codes = ", ".join(f"{code} {count}" for code, count in self.not_periodic.items())
            left_out.append(f"{sum(self.not_periodic.values())} not periodic ({codes})")
        if self.without_alpha:
            left_out.append(f"{self.without_alpha} without alpha_io")
        if self.not_running:
            left_out.append(f"{self.not_running} not running at the busiest instant")
        if left_out:
            lines[0] += "; left out: " + ", ".join(left_out)
        if self.overlap and self.instant is not None:
            always = f" ({self.n_undated} without dates, counted as always running)" if self.n_undated else ""
            lines.append(
                f"replayed the {self.jobs.height} jobs running at the busiest instant, "
                f"{_date(self.instant, time=True)}{always}"
            )
        elif self.overlap:
            lines.append("no job has dates: all replayed together")
        elif self.span is not None and self.max_running < self.jobs.height:
            lines.append(
                f"replayed together as one concurrent workload; their recorded runs span {_date(self.span[0])} .. "
                f"{_date(self.span[1])} and at most {self.max_running} ran at the same time"
            )
        return "\n".join(lines)


def _date(seconds: float, *, time: bool = False) -> str:
    """A date in s since the epoch as a UTC day (and time); ``<seconds> s`` beyond the calendar."""
    try:
        when = datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, ValueError, OSError):
        return f"{seconds:g} s"
    return when.strftime("%Y-%m-%d %H:%M:%S UTC" if time else "%Y-%m-%d")


def _dates(jobs: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``(start, end)`` of each job as floats, both NaN where either is missing (no column, or null)."""
    if "start" not in jobs.columns or "end" not in jobs.columns:
        return np.full(jobs.height, np.nan), np.full(jobs.height, np.nan)
    start, end = (jobs[name].cast(pl.Float64).fill_null(np.nan).to_numpy() for name in ("start", "end"))
    undated = np.isnan(start) | np.isnan(end)
    return np.where(undated, np.nan, start), np.where(undated, np.nan, end)


def busiest_instant(start, end) -> tuple[float | None, int]:
    """``(instant, count)``: the earliest date contained in the most [start, end] ranges, and how many.

    Ranges are closed: a job ending when another starts ran at the same time. None, 0
    without any range.

    Examples
    --------
    >>> busiest_instant([0.0, 5.0, 10.0, 20.0], [10.0, 30.0, 12.0, 25.0])
    (10.0, 3)
    """
    start, end = np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)
    if start.size == 0:
        return None, 0
    dates = np.concatenate((start, end))
    steps = np.concatenate((np.ones(start.size), -np.ones(end.size)))
    order = np.lexsort((-steps, dates))  # by date, starts before ends
    running = np.cumsum(steps[order])
    best = int(np.argmax(running))  # the first maximum: the earliest instant
    return float(dates[order][best]), int(running[best])


def tune_selection(jobs: pl.DataFrame, *, overlap: bool = False) -> TuneSelection:
    """The jobs :func:`tune` replays, and the count of those it leaves out, by reason.

    A job is replayed when it is periodic (a ``w_iter``, and no code in a
    ``not_periodic`` column when the table has one) and has an ``alpha_io``. By default
    those jobs are replayed as one concurrent workload, whatever their recorded dates
    (that is what IO-SETS ranks); the ``summary`` says so when their [start, end] ranges
    do not all overlap. With ``overlap``, only the jobs running at the busiest instant
    (the earliest date in the most ranges) are kept; jobs without dates count as always
    running.

    Parameters
    ----------
    jobs : polars.DataFrame
        Jobs table with ``job_id``, ``w_iter`` and ``alpha_io`` (``not_periodic``,
        ``start`` and ``end`` used when present).
    overlap : bool, default=False
        Keep only the jobs running at the busiest instant.

    Returns
    -------
    TuneSelection
        The kept rows (``jobs``), the counts left out, the dates and a ``summary`` text.

    Examples
    --------
    >>> table = pl.DataFrame({"job_id": ["a", "b", "c"], "w_iter": [10.0, None, 30.0], "alpha_io": [0.1, 0.2, None]})
    >>> print(tune_selection(table).summary)
    used 1 of 3 jobs; left out: 1 not periodic (no w_iter 1), 1 without alpha_io
    """
    jobs = JOBS.validate(jobs, source="jobs table", require=["w_iter", "alpha_io"], fill_optional=False)
    reason = _left_out_reason(jobs)
    reasons = reason.drop_nulls().value_counts(name="n").sort(["n", reason.name], descending=[True, False])
    periodic = jobs.filter(reason.is_null())
    with_alpha = periodic.filter(pl.col("alpha_io").is_not_null())
    start, end = _dates(with_alpha)
    dated = ~np.isnan(start)
    instant, n_running = busiest_instant(start[dated], end[dated])
    kept = with_alpha
    if overlap and instant is not None:
        kept = with_alpha.filter(pl.Series(~dated | ((start <= instant) & (instant <= end))))
    return TuneSelection(
        jobs=kept,
        n_given=jobs.height,
        not_periodic=dict(reasons.iter_rows()),
        without_alpha=periodic.height - with_alpha.height,
        not_running=with_alpha.height - kept.height,
        overlap=overlap,
        instant=instant if overlap else None,
        span=(float(start[dated].min()), float(end[dated].max())) if dated.any() else None,
        max_running=n_running + int((~dated).sum()),
        n_undated=int((~dated).sum()),  # always kept
    )


def _left_out_reason(jobs: pl.DataFrame) -> pl.Series:
    """Why each job is not periodic: its ``not_periodic`` code, else :data:`NO_W_ITER`; null for a periodic job."""
    code = jobs["not_periodic"].cast(pl.String) if "not_periodic" in jobs.columns else pl.lit(None, pl.String)
    periodic = code.is_null() & pl.col("w_iter").is_not_null()
    return jobs.select(pl.when(periodic).then(None).otherwise(code.fill_null(NO_W_ITER)).alias("reason")).to_series()


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
    overlap: bool = False,
) -> pl.DataFrame:
    """Replay ``jobs`` under SET-b mappings, the clustering mapping and FAIR-SHARE; rank them.

    The jobs :func:`tune_selection` keeps (periodic, with an ``alpha_io``; with
    ``overlap``, those running at the busiest instant) become periodic jobs
    (:meth:`Workload.from_jobs`, releases drawn U[0, w_iter]) replayed together, as one
    concurrent workload, in the C phase engine once per candidate mapping.
    :func:`tune_selection` tells which jobs were used and why the others were not.

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
    overlap : bool, default=False
        Replay only the jobs whose recorded [start, end] contain the busiest instant.

    Returns
    -------
    polars.DataFrame
        One row per candidate, best first (:data:`iosets.schemas.TUNE_RANKING`): ``rank``,
        ``mapping``, ``n_sets``, ``utilization``, ``io_slowdown``, ``max_stretch`` (null where
        the window cannot give it, e.g. IO-slowdown when no job does I/O; nulls rank last).
    """
    check_positive(tolerance, "tolerance")
    selection = tune_selection(jobs, overlap=overlap)
    usable = selection.jobs
    if usable.height == 0:
        raise InputError(f"no job with a w_iter and an alpha_io to replay: {selection.summary}")
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
