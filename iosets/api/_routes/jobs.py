"""``/v1/jobs`` and ``/v1/apps/{app}``: store a finished job (a row or a Darshan log), read jobs and apps back."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from .._deps import AUTH_ERRORS, NO_NUL, Reader, ServiceDep, WriterToken, errors
from .._jobids import JobIdWindow
from .._models import AppSummary, Job, JobIn, JobPage, LoggedJob, UploadFields
from .._rowcheck import check_values
from .._service import Service
from .._turns import Turns
from .._uploads import UPLOAD_FIELD, read_body, read_upload

router = APIRouter(prefix="/v1", tags=["jobs"], responses=errors(*AUTH_ERRORS))

_JOB_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": JobIn.model_json_schema()},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": [UPLOAD_FIELD],
                    "additionalProperties": False,
                    "properties": {
                        UPLOAD_FIELD: {"type": "string", "format": "binary", "description": "A Darshan log."},
                        "job_id": {"type": "string", "description": "Replaces the log's job id."},
                        "nodes": {
                            "type": "integer",
                            "minimum": 1,
                            "description": "Nodes the job ran on, as its scheduler counts them (a log has none).",
                        },
                    },
                }
            },
        },
    }
}


@router.post(
    "/jobs",
    status_code=201,
    response_model=Job,
    responses={**errors(413, 429), 200: {"model": Job, "description": "The job was stored already: the stored row."}},
    openapi_extra=_JOB_BODY,
)
async def post_job(service: ServiceDep, request: Request, _token: WriterToken) -> Any:
    """Store a finished job: a jobs-table row (JSON) or a Darshan log (multipart: file field ``log``, optional
    text fields ``job_id`` and ``nodes``, values a log cannot know, checked as a row's); idempotent."""
    settings, readers, turns = service.settings, request.app.state.log_readers, request.app.state.post_turns
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        upload = await read_upload(request, settings.max_upload, request.app.state.upload_dir)
        try:  # the fields first: a bad one costs no analysis
            given = _validated(UploadFields, upload.fields).model_dump(exclude_unset=True)
            check_values(given)
            logged = await run_in_threadpool(readers.analyze, upload.path, upload.name)
        finally:
            upload.path.unlink(missing_ok=True)
        row = _validated(LoggedJob, logged | {"path": upload.name} | given, where=UPLOAD_FIELD)
    else:
        body = await read_body(request, settings.max_json, "max_json")
        await turns.wait()  # the row's checks, then (below) its answer: one post at a time between answers
        row = _validated(JobIn, body, where="body")
    return await stored_answer(service, request.app.state.job_ids, turns, row)


async def stored_answer(service: Service, job_ids: JobIdWindow, turns: Turns, row: Any) -> JSONResponse:
    """Store a checked row whose job id the window accepts; its answer (201, or 200 and the row stored already)
    on a later turn. InputError for a job id or a row the store refuses."""
    job_ids.check(row.job_id)
    stored, created = await asyncio.wrap_future(service.submit_job(row.model_dump()))  # answered once committed
    await turns.wait()
    return JSONResponse(stored, status_code=201 if created else 200)  # a stored row holds JSON's types


def _validated(model: Any, given: bytes | dict[str, Any], *, where: str | None = None) -> Any:
    """``given`` (JSON bytes or a row) as ``model``; a RequestValidationError (422) naming ``where.field``
    (``field`` without ``where``)."""
    try:
        return model.model_validate_json(given) if isinstance(given, bytes) else model.model_validate(given)
    except ValidationError as exc:
        inside = () if where is None else (where,)
        raise RequestValidationError([{**e, "loc": (*inside, *e["loc"])} for e in exc.errors()]) from None


@router.get("/jobs/{job_id}", dependencies=[Reader], responses=errors(404))
def get_job(service: ServiceDep, job_id: Annotated[str, Path(pattern=NO_NUL)]) -> Job:
    """A stored job."""
    found = service.store.get_job(job_id)
    if found is None:
        raise HTTPException(status_code=404, detail=f"job_id {job_id!r}: no such job")
    return found


@router.get("/jobs", dependencies=[Reader])
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


@router.get("/apps/{app}", dependencies=[Reader], responses=errors(404))
def get_app(service: ServiceDep, app: Annotated[str, Path(pattern=NO_NUL)]) -> AppSummary:
    """An app's history and the recommendation of its most frequent user."""
    summary = service.app_summary(app)
    if summary is None:
        raise HTTPException(status_code=404, detail=f"app {app!r}: no stored job")
    return AppSummary(**summary)
