"""The recommendation for a job that has not run yet: estimate its w_iter, then map it with the site's jobs."""

import polars as pl

from ..errors import InputError
from ._history import WIterEstimator
from ._recommend import RECOMMENDATION_COLUMNS, recommend

_NEW_JOB = "<new job>"


def _alpha_of_app(history: pl.DataFrame, app: str) -> float | None:
    """Median alpha_io of the app's past jobs (for its RBFQ reservation), None without any."""
    if "alpha_io" not in history.columns:
        return None
    return history.filter(pl.col("app") == app)["alpha_io"].cast(pl.Float64).median()


def recommend_new_job(
    history: pl.DataFrame,
    *,
    policy: str = "set-10",
    estimator: WIterEstimator | None = None,
    min_confidence: float = 0.5,
    **fields,
) -> dict:
    """Set, priority and enforcement parameters of a job about to start.

    ``estimator`` (a :class:`WIterEstimator` already fitted on ``history``, so that a
    service fits it once; by default one is fitted here) estimates the job's w_iter
    from ``fields`` (``app``, ``user``,
    optional ``nprocs``, ``requested_time``). The job is then recommended
    together with the history's jobs, so that its set, priority and weights are
    those the site's own recommendation gives (an estimate below
    ``min_confidence``, or none, lands in the conservative set). Other keyword
    arguments of :func:`recommend` (``bandwidth``, ``max_request``, ``safety``,
    ``limit``, ``base``...) pass through; the reservation uses the app's median
    past ``alpha_io``.

    Returns
    -------
    dict
        The query fields, ``w_iter``, ``w_iter_confidence``, ``estimate_source``
        ('history', 'model' or 'none'), and the columns of :data:`RECOMMENDATION_COLUMNS`.
    """
    options = {k: fields.pop(k) for k in list(fields) if k not in ("app", "user", "nprocs", "requested_time")}
    if "job_id" not in history.columns:
        raise InputError("history: missing column job_id")
    if estimator is None:
        estimator = WIterEstimator().fit(history)
    estimate = estimator.estimate_one(**fields)
    query = pl.DataFrame(
        {
            "job_id": [_NEW_JOB],
            "app": [str(fields["app"])],
            "user": [str(fields["user"])],
            "w_iter": [estimate["w_iter"]],
            "w_iter_confidence": [estimate["w_iter_confidence"]],
            "alpha_io": [_alpha_of_app(history, str(fields["app"]))],
        },
        schema={
            "job_id": pl.String,
            "app": pl.String,
            "user": pl.String,
            "w_iter": pl.Float64,
            "w_iter_confidence": pl.Float64,
            "alpha_io": pl.Float64,
        },
    )
    if "w_iter_confidence" not in history.columns:
        history = history.with_columns(pl.lit(1.0).alias("w_iter_confidence"))
    kept = [c for c in (*query.columns, "start", "end") if c in history.columns]  # dates: who runs together
    past = history.select(kept).cast({c: t for c, t in query.schema.items() if c in kept})
    recommended = recommend(pl.concat([past, query], how="diagonal"), policy, min_confidence=min_confidence, **options)
    row = recommended.row(-1, named=True)
    return {**fields, **estimate, **{name: row[name] for name in RECOMMENDATION_COLUMNS}}
