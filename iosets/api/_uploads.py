"""Request bodies read with a size limit: a JSON row, or a multipart Darshan log saved to a temporary file.

Reading stops as soon as the body passes the limit (413), whatever its declared length.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request

from ..errors import InputError, IosetsError

UPLOAD_FIELD = "log"
"""The multipart field that holds the Darshan log."""


class TooLarge(IosetsError):
    """The request body passed the service's ``max_upload`` (413)."""


@dataclass(frozen=True)
class Upload:
    """An uploaded log: where it was saved, its file name as sent, and the job_id given with it (if any)."""

    path: Path
    name: str
    job_id: str | None


async def _limited(request: Request, limit: int) -> AsyncGenerator[bytes, None]:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"request body: {declared} bytes, more than max_upload ({limit} bytes)")
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"request body: more than max_upload ({limit} bytes)")
        yield chunk


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body, at most ``limit`` bytes (TooLarge beyond)."""
    return b"".join([chunk async for chunk in _limited(request, limit)])


def _save(upload: UploadFile) -> Path:
    with tempfile.NamedTemporaryFile(prefix="iosets-upload-", suffix=".darshan", delete=False) as out:
        shutil.copyfileobj(upload.file, out, 1 << 20)
    return Path(out.name)


async def read_upload(request: Request, limit: int) -> Upload:
    """The Darshan log of a multipart body (field ``log``, optional field ``job_id``), saved to a temporary file.

    The caller removes ``Upload.path``. InputError names the field that is missing or malformed.
    """
    parser = MultiPartParser(request.headers, _limited(request, limit), max_files=1, max_fields=8)
    try:
        form = await parser.parse()
    except MultiPartException as exc:
        raise InputError(f"multipart body: {exc.message}") from None
    try:
        log, job_id = form.get(UPLOAD_FIELD), form.get("job_id")
        if not isinstance(log, UploadFile):
            raise InputError(f"{UPLOAD_FIELD}: expected a file field '{UPLOAD_FIELD}' holding a Darshan log")
        if job_id is not None and not isinstance(job_id, str):
            raise InputError("job_id: expected a text field, got a file")
        name = Path(log.filename or "upload.darshan").name or "upload.darshan"
        return Upload(await run_in_threadpool(_save, log), name, job_id or None)
    finally:
        await form.close()
