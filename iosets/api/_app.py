"""`create_app`: the FastAPI application of a service, its error answers and its metrics."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from .._version import __version__
from ..errors import InputError
from ._auth import TokenCache
from ._metrics import MetricsMiddleware
from ._routes import health, jobs, policy, recommendations, report
from ._service import Conflict, Service
from ._settings import Settings
from ._uploads import TooLarge

SETTINGS_ENV = "IOSETS_SERVE_SETTINGS"
"""The settings (JSON) ``iosets serve`` hands to each uvicorn worker's :func:`app_from_environment`."""


def _detail(status: int):
    async def answer(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=status)

    return answer


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 as one line: ``query.app: Field required; body.nprocs: ...``."""
    assert isinstance(exc, RequestValidationError)
    items = [f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}" for error in exc.errors()]
    return JSONResponse({"detail": "; ".join(items)}, status_code=422)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The service's FastAPI app on the store ``settings`` names (default: ``Settings()``).

    The recommender is fitted, and kept fresh, from the app's start (lifespan) to its stop.
    """
    service = Service(settings or Settings())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.start()
        try:
            yield
        finally:
            service.stop()

    app = FastAPI(
        title="iosets",
        version=__version__,
        description="Sets, priorities and bandwidth shares of jobs about to start, learned from every finished job.",
        lifespan=lifespan,
    )
    app.state.service = service
    app.state.tokens = TokenCache(service.store)
    for resource in (health, recommendations, jobs, report, policy):
        app.include_router(resource.router)
    app.add_exception_handler(InputError, _detail(422))
    app.add_exception_handler(Conflict, _detail(409))
    app.add_exception_handler(TooLarge, _detail(413))
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_middleware(MetricsMiddleware, metrics=service.metrics)
    return app


def app_from_environment() -> FastAPI:
    """The app of the settings in ``$IOSETS_SERVE_SETTINGS`` (the uvicorn factory ``iosets serve`` runs)."""
    return create_app(Settings.model_validate(json.loads(os.environ[SETTINGS_ENV])))
