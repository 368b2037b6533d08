"""``/v1/recommendation`` and ``/v1/recommendations``: the answer of a job about to start, or of a batch."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from .._deps import AUTH_ERRORS, NO_NUL, Reader, ServiceDep, errors
from .._models import INT64_MAX, Queries, Recommendation, Recommendations

router = APIRouter(prefix="/v1", tags=["recommendations"], dependencies=[Reader], responses=errors(*AUTH_ERRORS))


@router.get("/recommendation")
async def recommendation(
    service: ServiceDep,
    app: Annotated[str, Query(min_length=1, pattern=NO_NUL, description="The job's application.")],
    user: Annotated[str, Query(min_length=1, pattern=NO_NUL, description="The job's user.")],
    nprocs: Annotated[int | None, Query(ge=1, le=INT64_MAX, description="Processes.")] = None,
    requested_time: Annotated[
        float | None, Query(gt=0, le=1e12, allow_inf_nan=False, description="Time limit (s).")
    ] = None,
    job_id: Annotated[str | None, Query(description="The scheduler's job id, echoed.")] = None,
) -> Recommendation:
    """Set, priority and enforcement parameters of a job about to start."""
    query = {"app": app, "user": user, "nprocs": nprocs, "requested_time": requested_time, "job_id": job_id}
    return Recommendation(**(await service.recommend([query]))[0])


@router.post("/recommendations")
async def recommendations_batch(service: ServiceDep, body: Queries) -> Recommendations:
    """The recommendation of each job of a batch (at most 1000), in order."""
    answers = await service.recommend([query.model_dump() for query in body.jobs])
    return Recommendations(recommendations=[Recommendation(**answer) for answer in answers])
