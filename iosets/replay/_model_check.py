"""The model check of a trace replay: does the device model reproduce each job when it runs alone?

A contention prediction divides a job's replayed runtime among the others by its replayed runtime
alone, both from the device model. The trace recorded how long each job took; when the model does not
give that back for a job alone, the ratio of two wrong runtimes says little about contention.

Per job, ``alone_ratio = alone_runtime / recorded_runtime`` (null when the recorded runtime is 0: a
job whose every request starts and ends at one date). Both runtimes span the same part of the job: its
first recorded request's start to its last request's end (the alone replay releases the first request
at its recorded start). Compute before the first request (a site jobs table's ``start``) is in no trace
and is not replayed; adding it to both would pull every ratio towards 1 without the model doing any
better, so neither has it. Per replay, the median and the 90th percentile (linear interpolation) of
``|alone_ratio - 1|`` over the jobs with a ratio.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from .._validation import check_positive
from ..errors import InputError

MODEL_CHECK_THRESHOLD = 0.25
"""p90 of ``|alone_ratio - 1|`` above which a replay's contention predictions are not to be trusted.

Contention changes runtimes by tens of per cent (stretches of 1.1 to 1.3 on this machine's real runs);
a model that misses more than one job in ten by over a quarter alone makes errors as large as the effect
it predicts. It is also the bound the project holds calibration to on real logs (issue 21: held-out
median within 25 %), here asked of nine jobs in ten.
"""

UNTRUSTED = "the model does not reproduce these jobs alone: contention predictions are not to be trusted"
"""The verdict when the p90 passes the threshold (or when no job can be checked)."""

_CHECK_COLUMNS = ("job_id", "recorded_runtime", "alone_runtime", "alone_ratio")


def alone_ratio() -> pl.Expr:
    """``alone_runtime / recorded_runtime`` as the column ``alone_ratio``, null where the recorded runtime is 0."""
    ratio = pl.when(pl.col("recorded_runtime") > 0).then(pl.col("alone_runtime") / pl.col("recorded_runtime"))
    return ratio.alias("alone_ratio")


@dataclass(frozen=True)
class ModelCheck:
    """Result of :func:`model_check`: how far each job's replayed-alone runtime is from its recorded one.

    Attributes
    ----------
    jobs : polars.DataFrame
        Per job, in job_id order: ``job_id``, ``recorded_runtime``, ``alone_runtime`` (s) and ``alone_ratio``
        (alone / recorded; null when the recorded runtime is 0).
    median, p90 : float or None
        Median and 90th percentile of ``|alone_ratio - 1|``; None without a job with a ratio.
    n_jobs : int
        Jobs with a ratio (those the median and p90 are over).
    threshold : float
        The p90 above which the replay is not trusted.
    trusted : bool
        Whether p90 <= threshold (False when no job has a ratio).
    warning : str or None
        Why the replay is not trusted; None when it is.
    """

    jobs: pl.DataFrame = field(repr=False)
    median: float | None
    p90: float | None
    n_jobs: int
    threshold: float
    trusted: bool
    warning: str | None

    def farthest(self, n: int = 5) -> pl.DataFrame:
        """The ``n`` jobs whose ratio is farthest from 1 (ties by job_id), farthest first."""
        return (
            self.jobs.filter(pl.col("alone_ratio").is_not_null())
            .with_columns(_distance=(pl.col("alone_ratio") - 1).abs())
            .sort("_distance", "job_id", descending=[True, False])
            .head(n)
            .drop("_distance")
        )

    def to_dict(self) -> dict:
        """The statistics, the verdict and the per-job rows as plain values (``--json``)."""
        return {
            "median": self.median,
            "p90": self.p90,
            "n_jobs": self.n_jobs,
            "threshold": self.threshold,
            "trusted": self.trusted,
            "warning": self.warning,
            "jobs": self.jobs.to_dicts(),
        }


def _per_job(jobs: pl.DataFrame) -> pl.DataFrame:
    """``jobs``' job_id and runtimes, checked (one row per job, finite runtimes >= 0), with their ratio."""
    if not isinstance(jobs, pl.DataFrame):
        raise InputError(f"model check: expected a polars DataFrame of jobs, got {type(jobs).__name__}")
    missing = [name for name in _CHECK_COLUMNS[:3] if name not in jobs.columns]
    if missing:
        raise InputError(f"model check: missing column(s) {', '.join(missing)}; has {', '.join(jobs.columns)}")
    try:
        frame = jobs.select(
            pl.col("job_id").cast(pl.String),
            pl.col("recorded_runtime").cast(pl.Float64),
            pl.col("alone_runtime").cast(pl.Float64),
        )
    except pl.exceptions.PolarsError:
        raise InputError("model check: recorded_runtime and alone_runtime: expected numbers (s)") from None
    repeated = frame.filter(pl.col("job_id").is_duplicated())
    if repeated.height:
        raise InputError(
            f"model check: expected one row per job, got job_id {repeated['job_id'][0]!r} more than once "
            "(give one scheduler's rows)"
        )
    for name in ("recorded_runtime", "alone_runtime"):
        bad = frame.filter(pl.col(name).is_null() | ~pl.col(name).is_finite() | (pl.col(name) < 0))
        if bad.height:
            raise InputError(
                f"model check: job {bad['job_id'][0]!r}: {name}: expected seconds >= 0, got {bad[name][0]}"
            )
    return frame.sort("job_id").with_columns(alone_ratio())


def model_check(jobs: pl.DataFrame, *, threshold: float = MODEL_CHECK_THRESHOLD) -> ModelCheck:
    """Compare each job's replayed-alone runtime with its recorded runtime (see the module docstring).

    Parameters
    ----------
    jobs : polars.DataFrame
        One row per job with ``job_id``, ``recorded_runtime`` and ``alone_runtime`` (s): a
        :class:`TraceReplay`'s ``jobs``, or one scheduler's rows of a comparison's.
    threshold : float, default=MODEL_CHECK_THRESHOLD
        The p90 of ``|alone_ratio - 1|`` above which the replay is not trusted.

    Returns
    -------
    ModelCheck
        The per-job ratios, their median and p90 distance from 1, and the verdict.

    Examples
    --------
    >>> jobs = pl.DataFrame({"job_id": ["a", "b", "c"], "recorded_runtime": [4.0, 4.0, 4.0],
    ...     "alone_runtime": [4.0, 5.0, 8.0]})
    >>> check = model_check(jobs)
    >>> check.jobs["alone_ratio"].to_list(), check.median, round(check.p90, 6), check.trusted
    ([1.0, 1.25, 2.0], 0.25, 0.85, False)
    """
    threshold = check_positive(threshold, "threshold")
    frame = _per_job(jobs)
    distance = (frame["alone_ratio"].drop_nulls() - 1).abs().to_numpy()
    if distance.size == 0:
        why = "no job has a recorded runtime above 0: the model cannot be checked against the trace; " + UNTRUSTED
        return ModelCheck(frame, None, None, 0, threshold, False, why)
    median, p90 = float(np.quantile(distance, 0.5)), float(np.quantile(distance, 0.9))
    trusted = p90 <= threshold
    warning = None
    if not trusted:
        warning = f"p90 of |alone / recorded - 1| is {_percent(p90)}, above {_percent(threshold)}: {UNTRUSTED}"
    return ModelCheck(frame, median, p90, int(distance.size), threshold, trusted, warning)


def _percent(value: float) -> str:
    """A fraction in per cent as the project writes it: ``_percent(0.25) == "25 %"``."""
    return f"{value * 100:.3g} %"
