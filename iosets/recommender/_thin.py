"""Thin evidence in a job history: why a pair or an app known only from it gets the conservative set."""

import numpy as np
import polars as pl

from ._recommend import not_periodic


def thin_jobs(history: pl.DataFrame, *, min_confidence: float) -> np.ndarray:
    """The jobs a recommender holds as thin evidence of the jobs to come, as booleans.

    An analyzed job (with a w_iter, a ``w_iter_confidence`` or a ``not_periodic`` code)
    that has no w_iter, a code, or a confidence below ``min_confidence``. A null confidence
    counts as 1, as :class:`WIterEstimator` reads it (a row posted with a w_iter and no
    confidence is evidence); a job with none of the three (a scheduler's post of its
    metadata, no trace analyzed) is no evidence either way.

    Examples
    --------
    >>> jobs = pl.DataFrame({"w_iter": [2.0, None, 3.0, 4.0, None], "w_iter_confidence": [0.9, 0.0, 0.3, None, None]})
    >>> thin_jobs(jobs, min_confidence=0.5).tolist()
    [False, True, True, False, False]
    """
    has_w = history["w_iter"].is_not_null()
    firm, analyzed = has_w, has_w
    if "w_iter_confidence" in history.columns:
        confidence = history["w_iter_confidence"].cast(pl.Float64)
        firm &= confidence.fill_null(1.0) >= min_confidence
        analyzed |= confidence.is_not_null()
    codes = not_periodic(history)
    if codes is not None:
        firm &= codes.is_null()
        analyzed |= codes.is_not_null()
    return (analyzed & ~firm).to_numpy()


def thin_reasons(
    history: pl.DataFrame, *, min_confidence: float, pairs: pl.DataFrame, apps: pl.DataFrame
) -> dict[tuple[str, str | None], str]:
    """What the history's jobs of each thin pair and app are, in words.

    Parameters
    ----------
    history : polars.DataFrame
        The jobs a recommender was fitted on (``app``, ``user``, ``w_iter``; optional
        ``w_iter_confidence`` and ``not_periodic``).
    min_confidence : float
        The recommender's: a job whose w_iter is less confident is thin evidence
        (:func:`thin_jobs`).
    pairs, apps : polars.DataFrame
        The (app, user) pairs (columns app, user) and apps (column app) whose jobs are all
        thin evidence (:attr:`WIterEstimator.thin_pairs_`, :attr:`WIterEstimator.thin_apps_`).

    Returns
    -------
    dict
        ``(app, user)`` of a pair, ``(app, None)`` of an app -> text such as
        ``"user 0's only run of iobound_writer: io_bound"`` or
        ``"the 3 runs of ior: 2 few_bytes, 1 no w_iter"``; each job counts under its
        ``not_periodic`` code, else ``no w_iter``, ``confidence 0`` or ``confidence below X``.

    Examples
    --------
    >>> jobs = pl.DataFrame({"app": ["a", "a"], "user": ["u", "v"], "w_iter": [None, 2.0],
    ...                      "w_iter_confidence": [0.0, 0.3], "not_periodic": ["io_bound", None]})
    >>> thin_reasons(jobs, min_confidence=0.5, pairs=jobs.select("app", "user"), apps=jobs.select("app")[:1])
    {('a', 'u'): "user u's only run of a: io_bound", ('a', 'v'): "user v's only run of a: confidence below 0.5", \
('a', None): 'the 2 runs of a: 1 confidence below 0.5, 1 io_bound'}
    """
    codes = not_periodic(history)
    code = pl.lit(None, pl.String) if codes is None else pl.lit(codes)
    if "w_iter_confidence" in history.columns:
        confidence = pl.col("w_iter_confidence").cast(pl.Float64).fill_null(1.0)
    else:
        confidence = pl.lit(1.0)
    reason = (
        pl.when(code.is_not_null())
        .then(code)
        .when(pl.col("w_iter").is_null())
        .then(pl.lit("no w_iter"))
        .when(confidence <= 0)
        .then(pl.lit("confidence 0"))
        .otherwise(pl.lit(f"confidence below {min_confidence:g}"))
    )
    rows = history.select(pl.col("app").cast(pl.String), pl.col("user").cast(pl.String), reason=reason)
    rows = rows.filter(pl.Series(thin_jobs(history, min_confidence=min_confidence)))  # not the unanalyzed ones
    texts: dict[tuple[str, str | None], str] = {}
    for keys, wanted in ((["app", "user"], pairs), (["app"], apps)):
        counts = rows.join(wanted.select(keys), on=keys, how="semi").group_by(*keys, "reason").len()
        counts = counts.sort([*keys, "len", "reason"], descending=[False] * len(keys) + [True, False])
        for key, group in counts.group_by(keys, maintain_order=True):
            app, user = key[0], key[1] if len(key) > 1 else None
            texts[app, user] = _runs_text(app, user, list(group.select("reason", "len").iter_rows()))
    return texts


def _runs_text(app: str, user: str | None, reasons: list[tuple[str, int]]) -> str:
    """``user U's only run of A: io_bound`` / ``the N runs of A: 2 io_bound, 1 no w_iter``."""
    n = sum(count for _, count in reasons)
    whose = f"user {user}'s" if user is not None else "the"
    runs = f"{whose} only run of {app}" if n == 1 else f"{whose} {n} runs of {app}"
    if n == 1:
        return f"{runs}: {reasons[0][0]}"
    return f"{runs}: " + ", ".join(f"{count} {reason}" for reason, count in reasons)
