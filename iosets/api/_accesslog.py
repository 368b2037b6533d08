"""`AccessLog`: one line per request on the ``iosets.access`` logger, never the token itself.

``POST /v1/jobs 201 12.3 ms token=4 client=10.0.0.7``: the method, the route's path template (not
the path, which may hold a user's name), the status, the latency, the id of the request's token (``-``
without one; :func:`iosets.api._auth.require` records it) and the client's address.
"""

from __future__ import annotations

import logging

from ._observer import RequestObserver

access = logging.getLogger("iosets.access")
TOKEN_ID = "iosets_token_id"
"""The key of the request's token id in the ASGI scope's ``state``."""


class AccessLog(RequestObserver):
    """Pure ASGI middleware writing one access line per HTTP request at INFO."""

    def observe(self, scope: dict, route: str, status: int, seconds: float) -> None:
        token = scope.get("state", {}).get(TOKEN_ID, "-")
        client = scope.get("client") or ("-", 0)
        line = "%s %s %d %.1f ms token=%s client=%s"
        access.info(line, scope["method"], route, status, seconds * 1000, token, client[0])
