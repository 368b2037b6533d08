"""`AnswerFastPath`: a well-formed ``GET /v1/recommendation`` of a known reader answered without FastAPI's routing.

The hooks ask this route once per job start, and its answers' tail is what a site feels (p99 < 5 ms while
posts run). Through FastAPI, dependencies, validation, exception wrappers and response serialization took
about half of an answer's time on the event loop. This middleware answers the common case directly, byte
for byte as the route does: a query whose parameters are plainly valid, and a bearer token the cache holds,
fresh, with the read scope. Anything else goes to the route, which answers it, or its error, as documented.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl

from fastapi.security.utils import get_authorization_scheme_param
from pydantic import TypeAdapter
from starlette.responses import Response

from ._accesslog import TOKEN_ID
from ._auth import TokenCache, token_hash
from ._models import INT64_MAX, Recommendation
from ._service import Service

PATH = "/v1/recommendation"
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
    value = next((value for name, value in headers if name == b"authorization"), None)
    scheme, token = get_authorization_scheme_param(None if value is None else value.decode("latin-1"))
    return token_hash(token) if scheme.lower() == "bearer" and token else None


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

    The app's ``state.answer_fast`` turns it off (False): tests compare its answers with the route's.
    """

    def __init__(self, app: Any, service: Service, tokens: TokenCache, route: Any):
        self.app, self.service, self.tokens, self.route = app, service, tokens, route

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        body = self._answer(scope) if scope["type"] == "http" and scope["path"] == PATH else None
        if body is None:
            await self.app(scope, receive, send)
            return
        await Response(body, media_type="application/json")(scope, receive, send)

    def _answer(self, scope: dict) -> bytes | None:
        """The route's body for this request, or None when the route must answer it."""
        if scope["method"] != "GET" or not getattr(scope["app"].state, "answer_fast", True):
            return None
        digest = bearer_digest(scope["headers"])
        found = None if digest is None else self.tokens.fresh(digest)
        if found is None or not {"read", "admin"} & found[1]:
            return None
        query = plain_query(scope["query_string"])
        answer = None if query is None else self.service.answer_now(query)
        if answer is None:
            return None
        scope.setdefault("state", {})[TOKEN_ID] = found[0]
        scope["route"] = self.route
        return _RECOMMENDATION.dump_json(Recommendation(**answer))
