"""The HTTP routes: each parses its request, calls the service and answers; one router per resource."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from ._auth import require
from ._models import (
    INT64_MAX,
    AppSummary,
    ErrorDetail,
    Job,
    JobIn,
    JobPage,
    Policy,
    PolicyParams,
    PolicyVersions,
    Queries,
    Readiness,
    Recommendation,
    Recommendations,
    Status,
)
from ._ratelimit import retry_after
from ._service import Service
from ._uploads import UPLOAD_FIELD, read_body, read_upload

NO_NUL = r"^[^\x00]*$"  # PostgreSQL text holds no NUL character


def _service(request: Request) -> Service:
    return request.app.state.service


async def _limited_writer(request: Request, token_id: Annotated[int, Depends(require("write"))]) -> int:
    """The writing token's id, or 429 when it posts faster than ``write_rate`` per second."""
    service = _service(request)
    wait = service.write_bucket.take(token_id)
    if wait:
        rate = service.settings.write_rate
        raise HTTPException(
            status_code=429,
            detail=f"POST /v1/jobs: more than {rate:g} jobs per second with this token; retry in {wait:.2f} s",
            headers={"Retry-After": retry_after(wait)},
        )
    return token_id


ServiceDep = Annotated[Service, Depends(_service)]
Reader = Depends(require("read"))
Admin = Depends(require("admin"))


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of error codes, each a JSON :class:`ErrorDetail`."""
    return {code: {"model": ErrorDetail} for code in codes}


_AUTH = (401, 403, 422)
health = APIRouter(tags=["health"])
recommendations = APIRouter(prefix="/v1", tags=["recommendations"], dependencies=[Reader], responses=_errors(*_AUTH))
jobs = APIRouter(prefix="/v1", tags=["jobs"], responses=_errors(*_AUTH))
policy = APIRouter(prefix="/v1/policy", tags=["policy"], responses=_errors(*_AUTH))

# ---------------------------------------------------------------------------------------------- health


@health.get("/healthz")
async def healthz() -> Status:
    """Liveness: the process answers."""
    return Status(status="ok")


@health.get("/readyz", response_model=Readiness, responses=_errors(503))
def readyz(service: ServiceDep) -> Any:
    """Readiness: the store answers and the recommender is fitted (or the store holds no usable job)."""
    ready = service.readiness()
    if ready is None:
        return JSONResponse({"detail": "not ready: fitting the recommender or waiting for the store"}, 503)
    return ready


@health.get("/metrics", response_class=PlainTextResponse, responses={200: {"content": {"text/plain": {}}}})
async def metrics(service: ServiceDep) -> Response:
    """Prometheus metrics."""
    return Response(service.metrics.text(), media_type="text/plain; version=0.0.4; charset=utf-8")


# ------------------------------------------------------------------------------------- recommendations


@recommendations.get("/recommendation")
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


@recommendations.post("/recommendations")
async def recommendations_batch(service: ServiceDep, body: Queries) -> Recommendations:
    """The recommendation of each job of a batch (at most 1000), in order."""
    answers = await service.recommend([query.model_dump() for query in body.jobs])
    return Recommendations(recommendations=[Recommendation(**answer) for answer in answers])


# ------------------------------------------------------------------------------------------------- jobs

_JOB_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": JobIn.model_json_schema()},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": [UPLOAD_FIELD],
                    "properties": {
                        UPLOAD_FIELD: {"type": "string", "format": "binary", "description": "A Darshan log."},
                        "job_id": {"type": "string", "description": "Replaces the log's job id."},
                    },
                }
            },
        },
    }
}


@jobs.post(
    "/jobs",
    status_code=201,
    response_model=Job,
    responses={**_errors(413, 429), 200: {"model": Job, "description": "The job was stored already: the stored row."}},
    openapi_extra=_JOB_BODY,
)
async def post_job(service: ServiceDep, request: Request, _token: Annotated[int, Depends(_limited_writer)]) -> Any:
    """Store a finished job: a jobs-table row (JSON) or a Darshan log (multipart field ``log``); idempotent."""
    limit = service.settings.max_upload
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        upload = await read_upload(request, limit)
        try:
            stored, created = await run_in_threadpool(service.add_log, upload.path, upload.name, upload.job_id)
        finally:
            upload.path.unlink(missing_ok=True)
    else:
        try:
            row = JobIn.model_validate_json(await read_body(request, limit))
        except ValidationError as exc:
            raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]) from None
        stored, created = await run_in_threadpool(service.add_job, row.model_dump())
    return JSONResponse(jsonable_encoder(stored), status_code=201 if created else 200)


@jobs.get("/jobs/{job_id}", dependencies=[Reader], responses=_errors(404))
def get_job(service: ServiceDep, job_id: Annotated[str, Path(pattern=NO_NUL)]) -> Job:
    """A stored job."""
    found = service.store.get_job(job_id)
    if found is None:
        raise HTTPException(status_code=404, detail=f"job_id {job_id!r}: no such job")
    return found


@jobs.get("/jobs", dependencies=[Reader])
def list_jobs(
    service: ServiceDep,
    app: Annotated[str | None, Query(pattern=NO_NUL)] = None,
    user: Annotated[str | None, Query(pattern=NO_NUL)] = None,
    since: Annotated[float | None, Query(allow_inf_nan=False, description="Jobs with start >= since (s).")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(description="next_cursor of the previous page.")] = None,
) -> JobPage:
    """Stored jobs ordered by (start, job_id), a page at a time."""
    page, next_cursor = service.store.list_jobs(app=app, user=user, since=since, limit=limit, cursor=cursor)
    return JobPage(jobs=page, next_cursor=next_cursor)


@jobs.get("/apps/{app}", dependencies=[Reader], responses=_errors(404))
def get_app(service: ServiceDep, app: Annotated[str, Path(pattern=NO_NUL)]) -> AppSummary:
    """An app's history and the recommendation of its most frequent user."""
    summary = service.app_summary(app)
    if summary is None:
        raise HTTPException(status_code=404, detail=f"app {app!r}: no stored job")
    return AppSummary(**summary)


_HTML = {"text/html": {"schema": {"type": "string"}}}


@jobs.get(
    "/report",
    dependencies=[Reader],
    response_class=HTMLResponse,
    responses={**_errors(409), 200: {"content": _HTML, "description": "One self-contained HTML page."}},
)
def get_report(service: ServiceDep) -> Response:
    """The report of the stored jobs under the current policy (``iosets report``): one offline HTML page."""
    from ..report._render import CSP

    return HTMLResponse(service.report(), headers={"Content-Security-Policy": CSP})


# ----------------------------------------------------------------------------------------------- policy


@policy.get("", dependencies=[Reader])
def get_policy(service: ServiceDep) -> Policy:
    """The current policy."""
    return Policy(**service.current_policy())


@policy.put("", dependencies=[Admin])
def put_policy(service: ServiceDep, body: PolicyParams) -> Policy:
    """Store a new policy version (the previous ones are kept) and answer with it from now on."""
    return Policy(**service.put_policy(body.model_dump()))


@policy.get("/versions", dependencies=[Reader])
def policy_versions(service: ServiceDep) -> PolicyVersions:
    """Every policy version, oldest first."""
    return PolicyVersions(policies=[Policy(**row) for row in service.policies()])


_EXPORT_CONTENT = {"text/plain": {"schema": {"type": "string"}}, "application/json": {"schema": {"type": "object"}}}


@policy.get("/export", dependencies=[Reader], responses={**_errors(409), 200: {"content": _EXPORT_CONTENT}})
def export_policy(
    service: ServiceDep,
    format: Annotated[Literal["agios", "tbf", "cgroup", "json", "lua"], Query(description="Export format.")],
    active: Annotated[str | None, Query(description="tbf: comma-separated job ids running now.")] = None,
    rpc_capacity: Annotated[
        float | None, Query(gt=0, le=1e12, allow_inf_nan=False, description="tbf: RPC/s of a partition.")
    ] = None,
) -> Response:
    """The file ``iosets export`` writes for the stored jobs under the current policy (agios: wfq.conf)."""
    running = None if active is None else [name for name in active.split(",") if name]
    text = service.export(format, active=running, rpc_capacity=rpc_capacity)
    return Response(text, media_type="application/json" if format == "json" else "text/plain; charset=utf-8")
