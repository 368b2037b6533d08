"""What the routes share: the service, the token checks, the rate-limited writer and the documented error answers."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request

from ._auth import require
from ._models import ErrorDetail
from ._ratelimit import retry_after
from ._service import Service

NO_NUL = r"^[^\x00]*$"
"""The pattern of a text parameter: PostgreSQL text holds no NUL character."""
AUTH_ERRORS = (401, 403, 422)
"""The answers of a route that takes a token and arguments: no token, a token without the scope, bad arguments."""


async def get_service(request: Request) -> Service:
    """The app's :class:`Service` (a coroutine: FastAPI runs a plain function dependency in its thread pool,
    a thread hop per request that the answers paid for)."""
    return request.app.state.service


async def limited_writer(request: Request, token_id: Annotated[int, Depends(require("write"))]) -> int:
    """The writing token's id, or 429 when it posts faster than ``write_rate`` per second."""
    service = request.app.state.service
    wait = service.write_bucket.take(token_id)
    if wait:
        rate = service.settings.write_rate
        raise HTTPException(
            status_code=429,
            detail=f"POST /v1/jobs: more than {rate:g} jobs per second with this token; retry in {wait:.2f} s",
            headers={"Retry-After": retry_after(wait)},
        )
    return token_id


ServiceDep = Annotated[Service, Depends(get_service)]
"""A route parameter: the app's service."""
WriterToken = Annotated[int, Depends(limited_writer)]
"""A route parameter: the id of a token with the ``write`` scope, within its write rate."""
Reader = Depends(require("read"))
"""A route or router dependency: a token with the ``read`` scope (401 or 403 otherwise)."""
Admin = Depends(require("admin"))
"""A route dependency: a token with the ``admin`` scope."""


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of error codes, each a JSON :class:`ErrorDetail`."""
    return {code: {"model": ErrorDetail} for code in codes}
