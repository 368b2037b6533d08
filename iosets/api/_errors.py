"""The service's errors answered with their message as a JSON ``detail``, and their status codes."""

from __future__ import annotations

from starlette.responses import JSONResponse

from ..errors import InputError
from ._service import Conflict
from ._uploads import TooLarge

DETAIL_ERRORS: dict[type[Exception], int] = {InputError: 422, Conflict: 409, TooLarge: 413}
"""Each error class the app answers ``{"detail": message}`` with its status (a subclass, as its base)."""


def detail_answer(exc: Exception) -> JSONResponse:
    """The answer of an error of :data:`DETAIL_ERRORS`: its message as ``detail``, its class's status."""
    status = next(status for kind, status in DETAIL_ERRORS.items() if isinstance(exc, kind))
    return JSONResponse({"detail": str(exc)}, status_code=status)
