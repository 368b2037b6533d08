"""`GuardedH11Protocol`: uvicorn's HTTP/1.1 protocol that cuts slow clients (slowloris).

uvicorn bounds only the idle time between two requests (``timeout_keep_alive``); a client that sends
its request header, or its body, a byte at a time keeps its connection forever. This protocol gives
each request two deadlines, both measured on the server's clock, whatever the client sends meanwhile:

- its header must be complete within ``header_timeout`` s of the connection's start (or of the end of
  the previous answer on a kept-alive connection);
- its body must be complete within ``body_timeout`` s of the end of its header.

Past a deadline the connection is closed and one warning line is logged. ``iosets serve`` runs uvicorn
with ``http="iosets.api._transport:GuardedH11Protocol"``; the deadlines come from the settings in
``$IOSETS_SERVE_SETTINGS`` (read once per process, so every uvicorn worker has them).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("iosets.api")


@functools.cache
def deadlines() -> tuple[float, float]:
    """``(header_timeout, body_timeout)`` of the settings in ``$IOSETS_SERVE_SETTINGS`` (the defaults without)."""
    from ._app import SETTINGS_ENV
    from ._settings import Settings

    settings = Settings.model_validate(json.loads(os.environ.get(SETTINGS_ENV, "{}")))
    return settings.header_timeout, settings.body_timeout


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and a body deadline per request (see the module)."""

    _timer: asyncio.TimerHandle | None = None
    _waiting: object = None  # h11.IDLE: for a header; h11.SEND_BODY: for a body; None: for nothing

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._arm(None, 0.0)
        super().connection_lost(exc)

    def _watch(self) -> None:
        """Start the deadline of what the client owes now (header or body), keep it while it is owed."""
        if self.transport.is_closing():
            self._arm(None, 0.0)
            return
        header_timeout, body_timeout = deadlines()
        state = self.conn.their_state
        if state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
            self._arm(h11.IDLE, header_timeout)
        elif state is h11.SEND_BODY:
            self._arm(h11.SEND_BODY, body_timeout)
        else:  # a request is complete (the app answers), or the connection is ending
            self._arm(None, 0.0)

    def _arm(self, waiting: object, seconds: float) -> None:
        if waiting is self._waiting:
            return  # the deadline already running stays: trickled bytes do not extend it
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting = waiting
        if waiting is not None:
            self._timer = self.loop.call_later(seconds, self._cut, seconds)

    def _cut(self, seconds: float) -> None:
        what = "request header" if self._waiting is h11.IDLE else "request body"
        client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
        log.warning("iosets serve: closed the connection of %s: no complete %s within %g s", client, what, seconds)
        self._timer, self._waiting = None, None
        if not self.transport.is_closing():
            self.transport.close()
