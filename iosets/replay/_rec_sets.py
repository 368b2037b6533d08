"""Each request's IO-SETS set, from the recommendation that gives each job its set (``replay-requests --rec``)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ..errors import InputError
from ._compare import SET_SCHEDULERS, _job_sets


@dataclass(frozen=True)
class RequestSets:
    """Result of :func:`request_sets`.

    Attributes
    ----------
    requests : polars.DataFrame
        The requests with a ``set`` column (Int64): their job's set.
    absent : list of str
        Jobs of the requests the recommendation does not hold; they went to its conservative set.
    conservative : int
        The recommendation's conservative set: its largest (lowest priority).
    per_set : polars.DataFrame
        Per set of the recommendation: ``set``, ``wfq_weight``, ``rbfq_weight``, ``rbfq_reservation`` and
        ``rbfq_limit`` (0: none), its largest job's (one job of a set does I/O at a time).
    """

    requests: pl.DataFrame
    absent: list[str]
    conservative: int
    per_set: pl.DataFrame

    def parameters(self, scheduler: str) -> dict[str, dict[int, float]]:
        """The per-set keyword arguments of ``replay_requests`` the recommendation gives ``scheduler``: WFQ
        weights for iosets-wfq, RBFQ weights, reservations and limits for rbfq, none for the others (as
        ``iosets replay-trace`` gives them)."""
        if scheduler not in SET_SCHEDULERS:
            return {}
        used = set(self.requests["set"].unique().to_list())
        rows = [row for row in self.per_set.iter_rows(named=True) if row["set"] in used]

        def of(name: str) -> dict[int, float]:
            return {row["set"]: float(row[name]) for row in rows}

        if scheduler == "iosets-wfq":
            return {"weights": of("wfq_weight")}
        return {"weights": of("rbfq_weight"), "reservations": of("rbfq_reservation"), "limits": of("rbfq_limit")}


def request_sets(requests: pl.DataFrame, rec: pl.DataFrame) -> RequestSets:
    """Give each request its job's set in the recommendation ``rec``, joined on ``job_id``.

    A job id names one run: ``<job id>.<step>`` when one job id holds several (job steps, or a reused id), in
    the site trace as in the jobs table the recommendation was made from, so no other column joins. A job of
    the requests absent from ``rec`` goes to its conservative (largest) set, with a warning naming it, as in
    ``iosets replay-trace``.

    Parameters
    ----------
    requests : polars.DataFrame
        A requests table or a site trace (a ``job_id`` column, no ``set`` column).
    rec : polars.DataFrame
        The recommendation (``iosets recommend -o``): columns ``job_id``, ``set``, ``priority``,
        ``wfq_weight``, ``rbfq_reservation``, ``rbfq_weight``, ``rbfq_limit``, one row per job.

    Returns
    -------
    RequestSets
    """
    if "job_id" not in requests.columns:
        raise InputError(f"requests: no job_id column to join the recommendation on; has {requests.columns}")
    if "set" in requests.columns:
        raise InputError("requests: already have a set column; class by it without a recommendation, or drop it")
    jobs = requests.with_columns(pl.col("job_id").cast(pl.String))
    job_sets, _, per_set = _job_sets(jobs, rec, what="requests")
    absent = sorted(set(job_sets) - set(rec["job_id"].cast(pl.String).to_list()))
    table = pl.DataFrame(
        {"job_id": list(job_sets), "set": list(job_sets.values())}, schema={"job_id": pl.String, "set": pl.Int64}
    )
    with_sets = jobs.join(table, on="job_id", how="left", maintain_order="left")
    return RequestSets(with_sets, absent, int(per_set["set"].max()), per_set)  # type: ignore[arg-type]
