"""Fast paths: the two requests a scheduler's hooks make per job, served without FastAPI's routing.

The hooks ask ``GET /v1/recommendation`` once per job start, and its answers' tail is what a site feels
(p99 < 5 ms while posts run); they post each finished job to ``POST /v1/jobs``. Through FastAPI, routing,
dependencies, validation, exception wrappers and serialization took about half of an answer's time on the
event loop, and two thirds of a post's. :class:`AnswerFastPath` and :class:`PostFastPath` serve the common
case directly, byte for byte as the routes: a request whose parameters or body are plainly valid, and a
bearer token the cache holds, fresh, with the route's scope. Anything else goes to the route, which
answers it, or its error, as documented.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl

from fastapi.security.utils import get_authorization_scheme_param
from pydantic import TypeAdapter, ValidationError
from starlette.responses import Response

from ._accesslog import TOKEN_ID
from ._auth import TokenCache, token_hash
from ._errors import DETAIL_ERRORS, detail_answer
from ._jobids import JobIdWindow
from ._models import INT64_MAX, JobIn, Recommendation
from ._routes.jobs import stored_answer
from ._service import Service
from ._turns import Turns
from ._uploads import replaying

ANSWER_PATH = "/v1/recommendation"
JOBS_PATH = "/v1/jobs"
_DETAIL_ERRORS = tuple(DETAIL_ERRORS)  # what a post's store-and-answer raises that the app answers with a detail
_RECOMMENDATION = TypeAdapter(Recommendation)
_COUNT = re.compile(r"[1-9][0-9]{0,18}")  # what the route reads as the same int; others go to it
_SECONDS = re.compile(r"[0-9]{1,13}(\.[0-9]{1,17})?")  # what the route reads as the same float
_FIELDS = ("app", "user", "nprocs", "requested_time", "job_id")


def plain_query(query_string: bytes) -> dict[str, Any] | None:
    """The route's parameters if each is given once and plainly valid (as the route reads them); else None."""
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)  # as Starlette reads it
    given = {name: value for name, value in pairs if name in _FIELDS}
    if len(given) != sum(name in _FIELDS for name, _ in pairs):
        return None  # a parameter given twice
    app, user = given.get("app", ""), given.get("user", "")
    if not app or not user or "\x00" in app or "\x00" in user:
        return None
    nprocs, seconds = given.get("nprocs"), given.get("requested_time")
    if nprocs is not None and not (_COUNT.fullmatch(nprocs) and int(nprocs) <= INT64_MAX):
        return None
    if seconds is not None and not (_SECONDS.fullmatch(seconds) and 0 < float(seconds) <= 1e12):
        return None
    return {
        "app": app,
        "user": user,
        "nprocs": None if nprocs is None else int(nprocs),
        "requested_time": None if seconds is None else float(seconds),
        "job_id": given.get("job_id"),
    }


def bearer_digest(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The hash of the request's bearer token (the first Authorization header, read as HTTPBearer does), or None."""
    value = _header(headers, b"authorization")
    scheme, token = get_authorization_scheme_param(None if value is None else value.decode("latin-1"))
    return token_hash(token) if scheme.lower() == "bearer" and token else None


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    """The first value of header ``name`` (lowercase, as ASGI gives names), or None."""
    return next((value for given, value in headers if given == name), None)


def _cached_token(scope: dict, tokens: TokenCache, scope_name: str) -> int | None:
    """The id of the request's token if the cache holds it, fresh, with ``scope_name`` or admin; else None."""
    digest = bearer_digest(scope["headers"])
    found = None if digest is None else tokens.fresh(digest)
    return found[0] if found is not None and {scope_name, "admin"} & found[1] else None


def _served(scope: dict, route: Any, token_id: int) -> None:
    """Mark the request as the route's, by the token ``token_id``, as routing and the token check would."""
    scope.setdefault("state", {})[TOKEN_ID] = token_id
    scope["route"] = route


def _fast(scope: dict, method: str, path: str) -> bool:
    """Whether the request is ``method path`` and the app's fast paths are on (``state.fast_paths``)."""
    return (
        scope["type"] == "http"
        and scope["method"] == method
        and scope["path"] == path
        and getattr(scope["app"].state, "fast_paths", True)
    )


class AnswerFastPath:
    """Pure ASGI middleware: answers ``GET /v1/recommendation`` itself when it can do so as the route would.

    Parameters
    ----------
    app : ASGI app
        The rest of the stack, which gets every other request.
    service, tokens : Service, TokenCache
        Where answers and token scopes come from.
    route : starlette route
        The route's object, set in the scope as routing would (the access log and metrics name it).

    The app's ``state.fast_paths`` turns it off (False): tests compare its answers with the route's.
    """

    def __init__(self, app: Any, service: Service, tokens: TokenCache, route: Any):
        self.app, self.service, self.tokens, self.route = app, service, tokens, route

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        body = self._answer(scope) if _fast(scope, "GET", ANSWER_PATH) else None
        if body is None:
            await self.app(scope, receive, send)
            return
        await Response(body, media_type="application/json")(scope, receive, send)

    def _answer(self, scope: dict) -> bytes | None:
        """The route's body for this request, or None when the route must answer it."""
        token_id = _cached_token(scope, self.tokens, "read")
        if token_id is None:
            return None
        query = plain_query(scope["query_string"])
        answer = None if query is None else self.service.answer_now(query)
        if answer is None:
            return None
        _served(scope, self.route, token_id)
        return _RECOMMENDATION.dump_json(Recommendation(**answer))


class PostFastPath:
    """Pure ASGI middleware: stores a JSON ``POST /v1/jobs`` itself when it can do so as the route would.

    It sits inside :class:`~iosets.api._uploads.JsonBodyLimit` (the body read whole, within ``max_json``,
    UTF-8) and :class:`~iosets.api._turns.TakeTurns` (the post's first turn taken). A body that is not a
    valid job row, a token over its write rate, or one the cache does not hold fresh with the write scope
    goes to the route, which answers it (422, 429, 401, 403) as documented; a refused job id or row is
    answered as the route's error handlers would.

    Parameters
    ----------
    app : ASGI app
        The rest of the stack, which gets every other request.
    service, tokens, turns, job_ids : Service, TokenCache, Turns, JobIdWindow
        What the route uses: the store's writer, token scopes, the event loop's turns, the job id bound.
    route : starlette route
        The route's object, set in the scope as routing would.
    """

    def __init__(self, app: Any, service: Service, tokens: TokenCache, turns: Turns, job_ids: JobIdWindow, route: Any):
        self.app, self.service, self.tokens, self.turns, self.job_ids = app, service, tokens, turns, job_ids
        self.route = route

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        token_id = self._writer(scope)
        if token_id is None:
            await self.app(scope, receive, send)
            return
        message = await receive()  # the whole body (JsonBodyLimit's replay)
        try:
            row = JobIn.model_validate_json(message.get("body", b""))
        except ValidationError:
            row = None
        if row is None or self.service.write_bucket.take(token_id):  # a refused take takes nothing: the route's
            await self.app(scope, replaying(message, receive), send)  # is refused too, and answers 429
            return
        try:
            answer = await stored_answer(self.service, self.job_ids, self.turns, row)
        except _DETAIL_ERRORS as exc:
            answer = detail_answer(exc)
        _served(scope, self.route, token_id)
        await answer(scope, receive, send)

    def _writer(self, scope: dict) -> int | None:
        """The id of the request's writing token if this path may store it (a JSON post); else None."""
        if not _fast(scope, "POST", JOBS_PATH):
            return None
        content_type = _header(scope["headers"], b"content-type") or b""
        return None if content_type.startswith(b"multipart/form-data") else _cached_token(scope, self.tokens, "write")
