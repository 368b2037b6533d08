"""`GuardedHttpToolsProtocol`: uvicorn's HTTP/1.1 protocol (httptools) that cuts slow clients (slowloris).

uvicorn bounds only the idle time between two requests (``timeout_keep_alive``); a client that sends
its request header, or its body, a byte at a time keeps its connection forever. This protocol gives
each request two deadlines, both measured on the server's clock, whatever the client sends meanwhile:

- its header must be complete within ``header_timeout`` s of the connection's start (or of the end of
  the previous answer on a kept-alive connection);
- its body must be complete within ``body_timeout`` s of the end of its header.

Past a deadline the connection is closed and one warning line is logged. ``iosets serve`` runs uvicorn
with ``http="iosets.api._transport:GuardedHttpToolsProtocol"``; the deadlines come from the settings in
``$IOSETS_SERVE_SETTINGS`` (read once per process, so every uvicorn worker has them). The parser is
httptools (C), not h11 (Python): the event loop that answers recommendations spends less per request.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("iosets.api")

HEADER, BODY = "request header", "request body"


@functools.cache
def deadlines() -> dict[str, float]:
    """The seconds allowed for a request's header and for its body, from ``$IOSETS_SERVE_SETTINGS`` (or defaults)."""
    from ._app import SETTINGS_ENV
    from ._settings import Settings

    settings = Settings.model_validate(json.loads(os.environ.get(SETTINGS_ENV, "{}")))
    return {HEADER: settings.header_timeout, BODY: settings.body_timeout}


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header deadline and a body deadline per request (see the module)."""

    _timer: asyncio.TimerHandle | None = None
    _waiting: str | None = None  # the deadline running: HEADER, BODY or None
    _reading: str | None = None  # what the parser is in the middle of: HEADER, BODY or None (between requests)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(HEADER)

    def connection_lost(self, exc: Exception | None) -> None:
        self._arm(None)
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading = HEADER
        self._arm(HEADER)  # a pipelined request's header starts its deadline; a running one goes on

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._reading = BODY
        self._arm(BODY)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._reading = None
        self._arm(None)  # the app answers: the client owes nothing

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._reading is None and not self.transport.is_closing():
            self._arm(HEADER)  # the next request's header, on a kept-alive connection

    def _arm(self, waiting: str | None) -> None:
        if waiting == self._waiting:
            return  # the deadline already running stays: trickled bytes do not extend it
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting = waiting
        if waiting is not None:
            seconds = deadlines()[waiting]
            self._timer = self.loop.call_later(seconds, self._cut, seconds)

    def _cut(self, seconds: float) -> None:
        client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
        log.warning(
            "iosets serve: closed the connection of %s: no complete %s within %g s", client, self._waiting, seconds
        )
        self._timer, self._waiting = None, None
        if not self.transport.is_closing():
            self.transport.close()
