"""Bearer tokens: made once, stored as their SHA-256 only, checked per request with a scope."""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..errors import InputError
from ._accesslog import TOKEN_ID
from ._store import Store

SCOPES = ("read", "write", "admin")
"""``read``: hooks asking; ``write``: posting jobs; ``admin``: the policy (implies read and write)."""
PREFIX = "iosets_"

bearer = HTTPBearer(auto_error=False, description="A token from `iosets token create`.")
_credentials = Depends(bearer)
TOKEN_CACHE_SECONDS = 5.0
"""How long a token's scopes (or its absence) are trusted without the store: a revocation reaches every
replica within this time, and a request costs no store query."""
_CACHE_LIMIT = 10_000


class TokenCache:
    """Token hash -> (id, scopes) or None, from the store, kept :data:`TOKEN_CACHE_SECONDS`."""

    def __init__(self, store: Store):
        self.store = store
        self._seen: dict[str, tuple[float, tuple[int, frozenset[str]] | None]] = {}

    def scopes(self, digest: str) -> tuple[int, frozenset[str]] | None:
        now = time.monotonic()
        hit = self._seen.get(digest)
        if hit is not None and hit[0] > now:
            return hit[1]
        if len(self._seen) >= _CACHE_LIMIT:  # many unknown tokens: forget them all rather than grow
            self._seen.clear()
        found = self.store.token_scopes(digest)
        self._seen[digest] = (now + TOKEN_CACHE_SECONDS, found)
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
        found = request.app.state.tokens.scopes(token_hash(credentials.credentials))
        if found is None:
            raise _unauthorized("Authorization: unknown or revoked token")
        token_id, scopes = found
        setattr(request.state, TOKEN_ID, token_id)  # the access log's token=ID
        if scope not in scopes and "admin" not in scopes:
            raise HTTPException(status_code=403, detail=f"Authorization: this token lacks the {scope!r} scope")
        return token_id

    return check
