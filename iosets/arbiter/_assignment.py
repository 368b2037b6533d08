"""A job's set and priority for the arbiter: from its recommendation (a file or the service), or as it passes them."""

from __future__ import annotations

import os

from ..errors import InputError


def assignment(
    job_id: str | None = None,
    *,
    app: str | None = None,
    user: str | None = None,
    recommendation: str | os.PathLike | None = None,
) -> tuple[int, float]:
    """The set and priority a job tells the arbiter (``HELLO``), learned from its recommendation.

    Parameters
    ----------
    job_id, app, user : str, default=None
        The job. With ``recommendation``, its row is found by ``job_id``, else by ``app`` (and ``user`` when
        given); without it, the service is asked for ``app`` and ``user`` (``iosets.api.client.recommend``,
        configured by ``IOSETS_URL`` / ``IOSETS_TOKEN``), which answers its default when it cannot.
    recommendation : path, default=None
        A recommendation written by ``iosets recommend -o`` (:class:`iosets.recommender.Recommendation`).

    Returns
    -------
    (int, float)
        The set and its priority. Several rows of an app in different sets give the largest set (the lowest
        priority): a job never gets more priority than the evidence behind every run of its app.

    Raises
    ------
    InputError
        Neither ``job_id`` nor ``app``; the recommendation has no row for the job; it cannot be read.

    Examples
    --------
    >>> import tempfile
    >>> import polars as pl
    >>> from iosets.recommender import Recommendation, recommend
    >>> jobs = pl.DataFrame({"job_id": ["a", "b"], "app": ["wrf", "lammps"], "w_iter": [10.0, 1000.0]})
    >>> path = Recommendation.of(recommend(jobs)).write(f"{tempfile.mkdtemp()}/rec.parquet").written[0]
    >>> assignment(app="lammps", recommendation=path)
    (3, 0.001)
    """
    if job_id is None and app is None:
        raise InputError("assignment: give the job's job_id or its app")
    if recommendation is None:
        if app is None:
            raise InputError("assignment: asking the service needs the job's app (and user)")
        from ..api.client import recommend

        answer = recommend(app, user or "", job_id=job_id)
        return int(answer["set"]), float(answer["priority"])
    return _from_file(recommendation, job_id, app, user)


def _from_file(path: str | os.PathLike, job_id: str | None, app: str | None, user: str | None) -> tuple[int, float]:
    """The job's row of a written recommendation: by job id, else the largest set of its app's (and user's) rows."""
    import polars as pl

    from ..recommender import Recommendation

    jobs = Recommendation.read(path).jobs
    rows = jobs.filter(pl.col("job_id") == job_id) if job_id is not None else jobs.head(0)
    if rows.is_empty() and app is not None:
        rows = jobs.filter(pl.col("app") == app) if "app" in jobs.columns else rows
        if user is not None and "user" in jobs.columns and not rows.filter(pl.col("user") == user).is_empty():
            rows = rows.filter(pl.col("user") == user)
    if rows.is_empty():
        who = f"job {job_id!r}" if job_id is not None else ""
        who += f"{' or ' if who else ''}app {app!r}" if app is not None else ""
        raise InputError(f"{path}: no row for {who}")
    chosen = rows.sort(["set", "priority"], descending=[True, False]).row(0, named=True)
    return int(chosen["set"]), float(chosen["priority"])
