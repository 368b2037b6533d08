"""Standard-library client of the iosets service, for scheduler hooks.

It imports nothing from iosets nor from outside the standard library, so a copy of this
one file works on a host where iosets is not installed (a slurmctld, PBS or Flux host):
``python3 client.py recommend --app lammps --user 1001``.

Environment: ``IOSETS_URL`` (default ``http://127.0.0.1:8642``), ``IOSETS_TOKEN`` or
``IOSETS_TOKEN_FILE``, ``IOSETS_TIMEOUT`` (seconds, default 1.0; the whole request,
connection included), ``IOSETS_POST_TIMEOUT`` (for posting a finished job, default 10.0:
a log upload is analysed before the answer), ``IOSETS_DEFAULT_SET`` (default 99) and
``IOSETS_DEFAULT_PRIORITY`` (default ``10**-set``) for the answer given when the service
cannot answer. Proxy variables are ignored: the service is on the site's own network.

The default answer (:data:`DEFAULT_SET`, priority ``10**-set``, conservative) is the one the
service gives while it knows no job and the one its Lua document holds then; here its source
says why: ``unavailable``. A ``429 Too Many Requests`` is tried again after its ``Retry-After``
when that leaves the request within its timeout; else it is refused at once.

Exit codes of ``post-job``: 0 stored (2xx), 3 unreachable, 4 not stored (the service refused it,
or a bad row, log or token file; the reason on stderr); ``recommend`` always exits 0.
"""

from __future__ import annotations

import argparse
import email.utils
import json
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8642"
DEFAULT_SET = 99
"""The default answer's set: below every set the service hands out (priority ``10**-99``)."""
RETRY_AFTER = 1.0
"""Seconds waited after a 429 that names no (readable) ``Retry-After``."""
EXIT_UNREACHABLE = 3
EXIT_FAILED = 4


class Unreachable(Exception):
    """The service did not answer in time (down, slow, or not listening)."""


class Refused(Exception):
    """The service answered with an error ``status`` (None: not an HTTP error); the message carries its ``detail``."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Connection:
    """Where the service is and how to ask it: URL, bearer token, timeouts in seconds."""

    url: str = DEFAULT_URL
    token: str | None = None
    timeout: float = 1.0
    post_timeout: float = 10.0

    @classmethod
    def from_environment(cls, environ: dict[str, str] | None = None) -> Connection:
        """The connection described by ``IOSETS_URL``, ``IOSETS_TOKEN[_FILE]``, ``IOSETS_[POST_]TIMEOUT``."""
        env = os.environ if environ is None else environ
        token = env.get("IOSETS_TOKEN") or None
        if token is None and env.get("IOSETS_TOKEN_FILE"):
            token = Path(env["IOSETS_TOKEN_FILE"]).read_text(encoding="utf-8").strip() or None
        return cls(
            url=env.get("IOSETS_URL") or DEFAULT_URL,
            token=token,
            timeout=float(env.get("IOSETS_TIMEOUT") or 1.0),
            post_timeout=float(env.get("IOSETS_POST_TIMEOUT") or 10.0),
        )


def default_answer(request: dict | None = None, *, environ: dict[str, str] | None = None) -> dict:
    """``request`` with the answer given when the service cannot: ``IOSETS_DEFAULT_SET`` (99), source unavailable."""
    env = os.environ if environ is None else environ
    chosen = int(env.get("IOSETS_DEFAULT_SET") or DEFAULT_SET)
    priority = float(env.get("IOSETS_DEFAULT_PRIORITY") or 10.0**-chosen)
    return {**(request or {}), "set": chosen, "priority": priority, "conservative": True, "source": "unavailable"}


def tag(answer: dict) -> str:
    """An answer as a scheduler comment: ``iosets set=S priority=P source=X`` (plus `` conservative``)."""
    text = f"iosets set={answer['set']} priority={float(answer['priority']):g} source={answer['source']}"
    return text + " conservative" if answer.get("conservative") else text


def recommend(
    app: str,
    user: str,
    *,
    nprocs: int | None = None,
    requested_time: float | None = None,
    job_id: str | None = None,
    connection: Connection | None = None,
) -> dict:
    """``GET /v1/recommendation`` for one job; the default answer (never an exception) when the service fails.

    The default answer also holds ``error``, one line saying why.
    """
    request = {"app": app, "user": user, "nprocs": nprocs, "requested_time": requested_time, "job_id": job_id}
    asked = {key: value for key, value in request.items() if value is not None}
    try:
        conn = connection or Connection.from_environment()
        url = f"{conn.url.rstrip('/')}/v1/recommendation?{urllib.parse.urlencode(asked)}"
        _, body = _send(urllib.request.Request(url, headers=_headers(conn)), conn.timeout)
        answer = json.loads(body)
        if not isinstance(answer, dict) or "set" not in answer:
            raise Refused(f"not a recommendation: {body[:200]!r}")
    except (Unreachable, Refused, OSError, ValueError) as error:  # OSError, ValueError: a bad token file or timeout
        return {**default_answer(asked), "error": str(error)}
    return answer


def post_job(row: dict, *, connection: Connection | None = None) -> dict:
    """``POST /v1/jobs`` with a jobs-table row as JSON; the stored row. Raises Unreachable or Refused."""
    conn = connection or Connection.from_environment()
    data = json.dumps(row).encode()
    headers = {**_headers(conn), "Content-Type": "application/json"}
    request = urllib.request.Request(f"{conn.url.rstrip('/')}/v1/jobs", data=data, headers=headers, method="POST")
    return json.loads(_send(request, conn.post_timeout)[1])


def post_log(
    path: str | Path,
    *,
    job_id: str | None = None,
    nodes: int | None = None,
    connection: Connection | None = None,
    data: bytes | bytearray | None = None,
) -> dict:
    """``POST /v1/jobs`` with a Darshan log (multipart: ``log``, optional ``job_id``, ``nodes``); the stored row.

    ``job_id`` replaces the log's job id; ``nodes`` is the node count the scheduler gave the job (a
    log does not record it). ``data`` is the log's bytes when the caller has read them already (the
    Slurm epilog reads them as the job's user); else the file at ``path`` is read.
    """
    conn = connection or Connection.from_environment()
    boundary = uuid.uuid4().hex
    name = "".join("_" if c in '"\r\n' else c for c in Path(path).name)  # a name cannot break out of its header
    parts = []
    for field, value in (("job_id", job_id), ("nodes", nodes)):
        if value is not None:
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"\r\n\r\n{value}\r\n'.encode())
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="log"; filename="{name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode()
    )
    log = Path(path).read_bytes() if data is None else data
    body = b"".join([*parts, log, f"\r\n--{boundary}--\r\n".encode()])
    headers = {**_headers(conn), "Content-Type": f"multipart/form-data; boundary={boundary}"}
    request = urllib.request.Request(f"{conn.url.rstrip('/')}/v1/jobs", data=body, headers=headers, method="POST")
    return json.loads(_send(request, conn.post_timeout)[1])


def _headers(conn: Connection) -> dict[str, str]:
    return {"Accept": "application/json"} | ({"Authorization": f"Bearer {conn.token}"} if conn.token else {})


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _send(request: urllib.request.Request, timeout: float) -> tuple[int, str]:
    """(status, body) of a 2xx answer, within ``timeout`` seconds in all (name look-up and slow bodies included).

    The request runs in a daemon thread so that nothing it waits on can hold the caller
    longer than ``timeout``. Whichever ends the wait, the socket's own timeout or the caller's,
    the reason is the same: "no answer within ``timeout`` s". A 429 is sent again after its
    ``Retry-After`` while that keeps within ``timeout``; else it is Refused, naming the wait.
    """
    outcome: list = []
    where = request.full_url.split("?")[0]
    too_late = Unreachable(f"{where}: no answer within {timeout:g} s")
    deadline = time.monotonic() + timeout

    def attempt() -> None:
        while True:
            try:
                with _OPENER.open(request, timeout=max(deadline - time.monotonic(), 0.001)) as response:
                    outcome.append((response.status, response.read().decode("utf-8", "replace")))
                    return
            except urllib.error.HTTPError as error:
                wait = _retry_after(error) if error.code == 429 else None
                if wait is not None and time.monotonic() + wait < deadline:
                    error.close()
                    time.sleep(wait)
                    continue
                later = "" if wait is None else f" (Retry-After {wait:g} s: past the {timeout:g} s timeout)"
                outcome.append(Refused(f"HTTP {error.code}: {_detail(error)}{later}", error.code))
            except (OSError, ValueError) as error:  # URLError, timeouts, resets, a malformed URL
                reason = getattr(error, "reason", error)  # URLError wraps a connect timeout; a slow answer is bare
                timed_out = isinstance(reason, (TimeoutError, socket.timeout))  # one class since Python 3.10
                outcome.append(too_late if timed_out else Unreachable(f"{where}: {reason}"))
            return

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise too_late
    if isinstance(outcome[0], Exception):
        raise outcome[0]
    return outcome[0]


def _retry_after(error: urllib.error.HTTPError) -> float:
    """Seconds a 429 asks to wait: its ``Retry-After`` (seconds or an HTTP date), else :data:`RETRY_AFTER`."""
    value = (error.headers.get("Retry-After") if error.headers else None) or ""
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        return max(email.utils.parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return RETRY_AFTER


def _detail(error: urllib.error.HTTPError) -> str:
    """The ``detail`` of an error answer, on one line."""
    body = error.read().decode("utf-8", "replace")
    try:
        detail = json.loads(body).get("detail", body)
    except (ValueError, AttributeError):
        detail = body
    return " ".join(str(detail if isinstance(detail, str) else json.dumps(detail)).split())[:500]


def main(argv: list[str] | None = None) -> int:
    """``python -m iosets.api.client recommend|post-job ...``; the exit code."""
    args = _parser().parse_args(argv)
    if args.command == "recommend":
        answer = recommend(
            args.app,
            args.user,
            nprocs=args.nprocs,
            requested_time=args.requested_time,
            job_id=args.job_id,
        )
        print(json.dumps(answer))
        return 0
    try:
        if args.log:
            row = post_log(args.log, job_id=args.job_id, nodes=args.nodes)
        else:
            row = post_job(_row(args.json, job_id=args.job_id, nodes=args.nodes))
    except Unreachable as error:
        print(f"iosets client: {error}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except (Refused, OSError, ValueError) as error:  # refused, or a bad row, log path or token file
        print(f"iosets client: not stored: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(row))
    return 0


def _row(text: str, **given: object) -> dict:
    """The row of ``--json``, with the options ``given`` (those not None) over its own values."""
    row = json.loads(text)
    if not isinstance(row, dict):
        raise ValueError(f"--json: expected a JSON object, got {text[:80]!r}")
    return row | {key: value for key, value in given.items() if value is not None}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="iosets-client", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ask = commands.add_parser("recommend", help="print a job's recommendation (the default one when unavailable)")
    ask.add_argument("--app", required=True)
    ask.add_argument("--user", required=True)
    ask.add_argument("--nprocs", type=int)
    ask.add_argument("--requested-time", type=float)
    ask.add_argument("--job-id")
    post = commands.add_parser("post-job", help="post a finished job: a jobs-table row or a Darshan log")
    body = post.add_mutually_exclusive_group(required=True)
    body.add_argument("--json", help="the row as a JSON object")
    body.add_argument("--log", help="a Darshan log file")
    post.add_argument("--job-id", help="the job id (overrides the row's or the log's)")
    post.add_argument("--nodes", type=int, help="nodes the job ran on (overrides the row's; a log has none)")
    return parser


if __name__ == "__main__":
    sys.exit(main())
