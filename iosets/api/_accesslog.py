"""`AccessLog`: one line per request on the ``iosets.access`` logger, never the token itself.

``POST /v1/jobs 201 12.3 ms token=4 client=10.0.0.7``: the method, the route's path template (not
the path, which may hold a user's name), the status, the latency, the id of the request's token (``-``
without one; :func:`iosets.api._auth.require` records it) and the client's address.
"""

from __future__ import annotations

import logging
import time
from typing import Any

access = logging.getLogger("iosets.access")
TOKEN_ID = "iosets_token_id"
"""The key of the request's token id in the ASGI scope's ``state``."""


class AccessLog:
    """Pure ASGI middleware writing one access line per HTTP request at INFO."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = [500]

        async def send_status(message: dict) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            token = scope.get("state", {}).get(TOKEN_ID, "-")
            client = scope.get("client") or ("-", 0)
            milliseconds = (time.perf_counter() - start) * 1000
            access.info(
                "%s %s %d %.1f ms token=%s client=%s", scope["method"], route, status[0], milliseconds, token, client[0]
            )
