"""Request bodies read with a size limit: a JSON body, or a multipart Darshan log saved to a temporary file.

Reading stops as soon as the body passes the limit (413), whatever its declared length. A multipart
body is bounded by ``max_upload``; every other body by ``max_json`` (:class:`JsonBodyLimit`), and
must be UTF-8 (else 422). Uploads are saved under ``DIR/uploads`` as
``upload-PID-*.darshan``; :func:`remove_orphans` removes those of processes that are gone (a
``kill -9`` mid-upload), at the service's start.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import JSONResponse

from ..errors import InputError, IosetsError

UPLOAD_FIELD = "log"
"""The multipart field that holds the Darshan log."""


class TooLarge(IosetsError):
    """The request body passed the service's ``max_upload`` (413)."""


@dataclass(frozen=True)
class Upload:
    """An uploaded log: where it was saved, its file name as sent, and the text fields sent with it (name -> text)."""

    path: Path
    name: str
    fields: dict[str, str]


_ORPHAN = re.compile(r"upload-(\d+)-.*\.darshan")


def _too_large(declared: str | None, limit: int, name: str) -> str:
    if declared is not None:
        return f"request body: {declared} bytes, more than {name} ({limit} bytes)"
    return f"request body: more than {name} ({limit} bytes)"


async def _limited(request: Request, limit: int, name: str = "max_upload") -> AsyncGenerator[bytes, None]:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(_too_large(declared, limit, name))
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(_too_large(None, limit, name))
        yield chunk


async def read_body(request: Request, limit: int, name: str) -> bytes:
    """The whole body, at most ``limit`` bytes (TooLarge beyond, naming the setting ``name``)."""
    return b"".join([chunk async for chunk in _limited(request, limit, name)])


class JsonBodyLimit:
    """Pure ASGI middleware: a body that is not multipart is read whole, at most ``max_json`` bytes (413
    beyond), checked to be UTF-8 (422 otherwise), then handed to the app."""

    def __init__(self, app: Any, max_json: int):
        self.app = app
        self.limit, self.name = max_json, "max_json"

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers", [])) if scope["type"] == "http" else {}
        if scope["type"] != "http" or headers.get(b"content-type", b"").startswith(b"multipart/form-data"):
            await self.app(scope, receive, send)
            return
        declared = headers.get(b"content-length", b"").decode("latin-1")
        over = declared.isdigit() and int(declared) > self.limit
        problem = _too_large(declared, self.limit, self.name) if over else ""
        body, more = bytearray(), not problem
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left: nobody to answer
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.limit:
                problem = _too_large(None, self.limit, self.name)
                break
        if problem:
            await JSONResponse({"detail": problem}, status_code=413)(scope, receive, send)
            return
        try:
            bytes(body).decode("utf-8")
        except UnicodeDecodeError as exc:
            answer = JSONResponse({"detail": f"body: not JSON: invalid UTF-8 at byte {exc.start}"}, status_code=422)
            await answer(scope, receive, send)
            return
        whole = {"type": "http.request", "body": bytes(body), "more_body": False}
        await self.app(scope, replaying(whole, receive), send)


def replaying(first: dict, receive: Any) -> Any:
    """An ASGI ``receive`` that gives ``first`` (a message read already), then what ``receive`` gives."""
    given = False

    async def replay() -> dict:
        nonlocal given
        if given:
            return await receive()
        given = True
        return first

    return replay


def remove_orphans(folder: Path) -> list[Path]:
    """Remove the uploads in ``folder`` left by processes that are gone; return their paths."""
    removed = []
    for path in folder.glob("upload-*.darshan"):
        match = _ORPHAN.fullmatch(path.name)
        if match is None or _alive(int(match.group(1))):
            continue
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _save(upload: UploadFile, folder: Path) -> Path:
    with tempfile.NamedTemporaryFile(
        prefix=f"upload-{os.getpid()}-", suffix=".darshan", dir=folder, delete=False
    ) as out:
        shutil.copyfileobj(upload.file, out, 1 << 20)
    return Path(out.name)


async def read_upload(request: Request, limit: int, folder: Path) -> Upload:
    """The Darshan log of a multipart body (file field ``log``) saved in ``folder``, and its text fields.

    The caller checks the text fields' names and values, and removes ``Upload.path``. An empty text
    field is no value (as a form leaves it). InputError names the field that is missing, given twice,
    or a file where text is expected.
    """
    parser = MultiPartParser(request.headers, _limited(request, limit), max_files=1, max_fields=8)
    try:
        form = await parser.parse()
    except MultiPartException as exc:
        raise InputError(f"multipart body: {exc.message}") from None
    try:
        log = form.get(UPLOAD_FIELD)
        if not isinstance(log, UploadFile):
            raise InputError(f"{UPLOAD_FIELD}: expected a file field '{UPLOAD_FIELD}' holding a Darshan log")
        fields = _text_fields(form.multi_items())
        name = Path(log.filename or "upload.darshan").name or "upload.darshan"
        return Upload(await run_in_threadpool(_save, log, folder), name, fields)
    finally:
        await form.close()


def _text_fields(items: list[tuple[str, str | UploadFile]]) -> dict[str, str]:
    """The text fields of a form holding one file field ``log``: name -> text, the empty ones left out."""
    seen: set[str] = set()
    fields = {}
    for key, value in items:
        if key in seen:
            raise InputError(f"{key}: given twice")
        seen.add(key)
        if key == UPLOAD_FIELD:
            continue
        if not isinstance(value, str):
            raise InputError(f"{key}: expected a text field, got a file")
        if value:
            fields[key] = value
    return fields
