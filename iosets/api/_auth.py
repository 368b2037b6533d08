"""Bearer tokens: made once, stored as their SHA-256 only, checked per request with a scope."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
import time
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from ..errors import InputError
from ._accesslog import TOKEN_ID
from ._store import Store

SCOPES = ("read", "write", "admin")
"""``read``: hooks asking; ``write``: posting jobs; ``admin``: the policy (implies read and write)."""
PREFIX = "iosets_"
log = logging.getLogger("iosets.api")

bearer = HTTPBearer(auto_error=False, description="A token from `iosets token create`.")
_credentials = Depends(bearer)
TOKEN_CACHE_SECONDS = 5.0
"""How long a token's scopes (or its absence) are trusted without the store: a revocation reaches every
replica within this time and one store read, and a request costs no store query."""
_CACHE_LIMIT = 10_000


class TokenCache:
    """Token hash -> (id, scopes) or None, from the store, kept :data:`TOKEN_CACHE_SECONDS`.

    The store is read in a worker thread, never on the event loop, where every request would wait behind
    the read (a round trip to PostgreSQL; on SQLite, a read beside the writer's commits): a token's first
    use waits for it, and an entry past its time still answers while one read renews it in the background.
    """

    def __init__(self, store: Store):
        self.store = store
        self._seen: dict[str, tuple[float, tuple[int, frozenset[str]] | None]] = {}
        self._renewing: dict[str, asyncio.Task] = {}

    async def scopes(self, digest: str) -> tuple[int, frozenset[str]] | None:
        """``(id, scopes)`` of the live token with this hash, or None."""
        hit = self._seen.get(digest)
        if hit is None:
            return await run_in_threadpool(self._read, digest)
        loop = asyncio.get_running_loop()
        renewal = self._renewing.get(digest)
        if hit[0] <= time.monotonic() and (renewal is None or renewal.get_loop() is not loop):  # another loop's died
            renewal = self._renewing[digest] = loop.create_task(run_in_threadpool(self._read, digest))
            renewal.add_done_callback(lambda done: self._forget_renewal(digest, done))
        return hit[1]

    def fresh(self, digest: str) -> tuple[int, frozenset[str]] | None:
        """``(id, scopes)`` of a live token whose entry is within its time; None otherwise (ask :meth:`scopes`)."""
        hit = self._seen.get(digest)
        return None if hit is None or hit[0] <= time.monotonic() else hit[1]

    async def renewed(self) -> None:
        """Return once the renewals under way (on this event loop) have read the store."""
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(r for r in list(self._renewing.values()) if r.get_loop() is loop), return_exceptions=True
        )

    def _forget_renewal(self, digest: str, done: asyncio.Task) -> None:
        """A renewal ended: the next expired use starts another; one that failed leaves the entry as it was."""
        if self._renewing.get(digest) is done:
            del self._renewing[digest]
        if not done.cancelled() and done.exception() is not None:
            log.warning("iosets serve: a token's scopes could not be renewed: %s", done.exception())

    def _read(self, digest: str) -> tuple[int, frozenset[str]] | None:
        found = self.store.token_scopes(digest)
        if len(self._seen) >= _CACHE_LIMIT:  # many unknown tokens: forget them all rather than grow
            self._seen.clear()
        self._seen[digest] = (time.monotonic() + TOKEN_CACHE_SECONDS, found)
        return found


def new_token() -> str:
    """A fresh token: ``iosets_`` and 43 URL-safe characters (256 random bits)."""
    return PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """The SHA-256 hex digest the store keeps instead of the token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(store: Store, scopes: list[str], note: str = "") -> tuple[int, str]:
    """Store a new token with ``scopes``; return its id and the token (shown once, never stored)."""
    unknown = [scope for scope in scopes if scope not in SCOPES]
    if unknown or not scopes:
        raise InputError(f"--scope: expected one or more of {', '.join(SCOPES)}, got {', '.join(scopes) or 'none'}")
    token = new_token()
    return store.add_token(token_hash(token), sorted(set(scopes), key=SCOPES.index), note), token


def _unauthorized(reason: str) -> HTTPException:
    return HTTPException(status_code=401, detail=reason, headers={"WWW-Authenticate": "Bearer"})


def require(scope: str) -> Callable[..., Coroutine[Any, Any, int]]:
    """A FastAPI dependency: the id of the request's token if it holds ``scope`` (or admin); else 401 or 403."""

    async def check(request: Request, credentials: HTTPAuthorizationCredentials | None = _credentials) -> int:
        if credentials is None:
            raise _unauthorized("Authorization: expected a Bearer token")
        found = await request.app.state.tokens.scopes(token_hash(credentials.credentials))
        if found is None:
            raise _unauthorized("Authorization: unknown or revoked token")
        token_id, scopes = found
        setattr(request.state, TOKEN_ID, token_id)  # the access log's token=ID
        if scope not in scopes and "admin" not in scopes:
            raise HTTPException(status_code=403, detail=f"Authorization: this token lacks the {scope!r} scope")
        return token_id

    return check
