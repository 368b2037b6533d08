"""``/healthz``, ``/readyz`` and ``/metrics``: liveness, readiness and Prometheus metrics, without a token."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from .._deps import ServiceDep, errors
from .._models import Readiness, Status

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> Status:
    """Liveness: the process answers."""
    return Status(status="ok")


@router.get("/readyz", response_model=Readiness, responses=errors(503))
def readyz(service: ServiceDep) -> Any:
    """Readiness: the store answers and the recommender is fitted (or the store holds no usable job)."""
    ready = service.readiness()
    if ready is None:
        return JSONResponse({"detail": "not ready: fitting the recommender or waiting for the store"}, 503)
    return ready


@router.get("/metrics", response_class=PlainTextResponse, responses={200: {"content": {"text/plain": {}}}})
async def metrics(service: ServiceDep) -> Response:
    """Prometheus metrics."""
    return Response(service.metrics.text(), media_type="text/plain; version=0.0.4; charset=utf-8")
