"""`RequestObserver`: a pure ASGI middleware that sees each HTTP request's route, status and latency once."""

from __future__ import annotations

import time
from typing import Any


class RequestObserver:
    """Calls :meth:`observe` once per HTTP request, after the answer (or the failure: status 500)."""

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
            self.observe(scope, route, status[0], time.perf_counter() - start)

    def observe(self, scope: dict, route: str, status: int, seconds: float) -> None:
        """One finished request: its ASGI scope, route path template, status and latency (s)."""
        raise NotImplementedError
