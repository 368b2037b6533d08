"""`create_app`: the FastAPI application of a service, its error answers and its metrics."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect

from .._version import __version__
from ..analyzer import LogReaders
from ..errors import InputError
from ._accesslog import AccessLog
from ._auth import TokenCache
from ._fastpath import PATH, AnswerFastPath
from ._jobids import JobIdWindow
from ._metrics import MetricsMiddleware
from ._routes import health, jobs, policy, recommendations, report
from ._service import Conflict, Service
from ._settings import Settings
from ._turns import TakeTurns, Turns
from ._uploads import JsonBodyLimit, TooLarge, remove_orphans

SETTINGS_ENV = "IOSETS_SERVE_SETTINGS"
"""The settings (JSON) ``iosets serve`` hands to each uvicorn worker's :func:`app_from_environment`."""
log = logging.getLogger("iosets.api")


def _detail(status: int):
    async def answer(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=status)

    return answer


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
    app.add_exception_handler(InputError, _detail(422))
    app.add_exception_handler(Conflict, _detail(409))
    app.add_exception_handler(TooLarge, _detail(413))
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ClientDisconnect, _client_left)
    app.add_middleware(JsonBodyLimit, max_json=settings.max_json)
    app.add_middleware(TakeTurns, turns=app.state.post_turns, path="/v1/jobs")
    app.state.answer_fast = True  # AnswerFastPath on (tests turn it off to compare with the route)
    route = next(route for route in recommendations.router.routes if getattr(route, "path", None) == PATH)
    app.add_middleware(AnswerFastPath, service=service, tokens=app.state.tokens, route=route)
    app.add_middleware(MetricsMiddleware, metrics=service.metrics)
    app.add_middleware(AccessLog)
    return app


def app_from_environment() -> FastAPI:
    """The app of the settings in ``$IOSETS_SERVE_SETTINGS`` (the uvicorn factory ``iosets serve`` runs)."""
    return create_app(Settings.model_validate(json.loads(os.environ[SETTINGS_ENV])), settle_heap=True)
