"""`recommend_new_job`: one job about to start, recommended with a site's history (a fitted Recommender per call)."""

import polars as pl

from ._history import QUERY_FIELDS, WIterEstimator
from ._mappings import renamed_policy
from ._recommender import Recommender


def recommend_new_job(
    history: pl.DataFrame,
    *,
    mapping: str = "set-10",
    estimator: WIterEstimator | None = None,
    min_confidence: float = 0.5,
    policy: str | None = None,
    **fields,
) -> dict:
    """Set, priority and enforcement parameters of a job about to start.

    ``Recommender(mapping=mapping, ...).fit(history).predict_one(**fields)``: ``fields``
    are the job's ``app``, ``user`` and optional ``nprocs``, ``requested_time``; other
    keyword arguments (``bandwidth``, ``max_request``, ``safety``, ``limit``, ``base``...)
    are the :class:`Recommender`'s, and ``estimator`` gives the estimator's parameters.
    A service fits the :class:`Recommender` once and calls ``predict_one`` per job
    instead. ``policy`` is the deprecated name of ``mapping``.

    Returns
    -------
    dict
        See :meth:`Recommender.predict_one`.
    """
    options = {key: fields.pop(key) for key in list(fields) if key not in QUERY_FIELDS}
    recommender = Recommender(
        mapping=renamed_policy(mapping, policy), estimator=estimator, min_confidence=min_confidence, **options
    )
    return recommender.fit(history).predict_one(**fields)
