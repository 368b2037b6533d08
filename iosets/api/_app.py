"""`create_app`: the FastAPI application of a service, its error answers and its metrics."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.requests import ClientDisconnect

from .._version import __version__
from ..analyzer import LogReaders
from ._accesslog import AccessLog
from ._auth import TokenCache
from ._errors import DETAIL_ERRORS, detail_answer
from ._fastpath import ANSWER_PATH, JOBS_PATH, AnswerFastPath, PostFastPath
from ._jobids import JobIdWindow
from ._metrics import MetricsMiddleware
from ._routes import health, jobs, policy, recommendations, report
from ._service import Service
from ._settings import Settings
from ._turns import TakeTurns, Turns
from ._uploads import JsonBodyLimit, remove_orphans

SETTINGS_ENV = "IOSETS_SERVE_SETTINGS"
"""The settings (JSON) ``iosets serve`` hands to each uvicorn worker's :func:`app_from_environment`."""
log = logging.getLogger("iosets.api")


async def _detail(request: Request, exc: Exception) -> JSONResponse:
    return detail_answer(exc)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 as one line: ``query.app: Field required; body.nprocs: ...``."""
    assert isinstance(exc, RequestValidationError)
    items = [f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}" for error in exc.errors()]
    return JSONResponse({"detail": "; ".join(items)}, status_code=422)


async def _client_left(request: Request, exc: Exception) -> Response:
    """A client that disconnected mid-request: one line in the log, no traceback, nobody to answer."""
    client = request.client.host if request.client else "a client"
    log.warning("iosets serve: %s left during %s %s", client, request.method, request.url.path)
    return Response(status_code=400)


def create_app(settings: Settings | None = None, *, settle_heap: bool = False) -> FastAPI:
    """The service's FastAPI app on the store ``settings`` names (default: ``Settings()``).

    The recommender is fitted, and kept fresh, from the app's start (lifespan) to its stop. ``settle_heap``:
    the process is the service alone, its long-lived state frozen after each refit (:class:`Service`).
    """
    settings = settings or Settings()
    service = Service(settings, settle_heap=settle_heap)
    readers = LogReaders(settings.log_workers)
    upload_dir = Path(settings.data_dir) / "uploads"

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if not upload_dir.exists():
            upload_dir.mkdir(parents=True, exist_ok=True)
            upload_dir.chmod(0o700)  # users' logs, whatever the umask
        for path in remove_orphans(upload_dir):
            log.warning("iosets serve: removed %s, an upload left by a stopped process", path)
        service.start()
        try:
            yield
        finally:
            service.stop()
            readers.close()

    app = FastAPI(
        title="iosets",
        version=__version__,
        description="Sets, priorities and bandwidth shares of jobs about to start, learned from every finished job.",
        lifespan=lifespan,
        docs_url=None,  # Swagger UI and ReDoc load from a CDN: off (air-gapped sites); /openapi.json stays
        redoc_url=None,
    )
    app.state.service = service
    app.state.log_readers = readers
    app.state.post_turns = Turns()  # posts' work on the event loop, one post per iteration (answers between)
    app.state.job_ids = JobIdWindow(service.store, settings.job_id_window)
    app.state.upload_dir = upload_dir
    app.state.tokens = TokenCache(service.store)
    for resource in (health, recommendations, jobs, report, policy):
        app.include_router(resource.router)
    for error in DETAIL_ERRORS:
        app.add_exception_handler(error, _detail)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ClientDisconnect, _client_left)
    app.state.fast_paths = True  # AnswerFastPath and PostFastPath on (tests turn them off to compare with the routes)
    post_route = _route(jobs.router, JOBS_PATH, "POST")
    app.add_middleware(
        PostFastPath,
        service=service,
        tokens=app.state.tokens,
        turns=app.state.post_turns,
        job_ids=app.state.job_ids,
        route=post_route,
    )
    app.add_middleware(JsonBodyLimit, max_json=settings.max_json)
    app.add_middleware(TakeTurns, turns=app.state.post_turns, path=JOBS_PATH)
    answer_route = _route(recommendations.router, ANSWER_PATH, "GET")
    app.add_middleware(AnswerFastPath, service=service, tokens=app.state.tokens, route=answer_route)
    app.add_middleware(MetricsMiddleware, metrics=service.metrics)
    app.add_middleware(AccessLog)
    return app


def _route(router: APIRouter, path: str, method: str) -> APIRoute:
    """The route of ``router`` that answers ``method path``."""
    return next(r for r in router.routes if isinstance(r, APIRoute) and r.path == path and method in (r.methods or ()))


def app_from_environment() -> FastAPI:
    """The app of the settings in ``$IOSETS_SERVE_SETTINGS`` (the uvicorn factory ``iosets serve`` runs)."""
    return create_app(Settings.model_validate(json.loads(os.environ[SETTINGS_ENV])), settle_heap=True)
