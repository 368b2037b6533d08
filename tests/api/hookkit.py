"""Helpers shared by the hook tests: learned jobs, a fake ``scontrol``, a stub HTTP service, hook file paths."""

import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path

import pytest

HOOKS = Path(str(files("iosets.api") / "hooks"))
CLIENT = Path(str(files("iosets.api") / "client.py"))
SLURM_HOOKS = HOOKS / "slurm"
WAIT = 60.0
"""Seconds a test waits for a condition at most (a loaded machine's refits and daemons take seconds)."""


def wait_for(what: str, predicate, logs=(), *, seconds: float = WAIT) -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` after ``seconds``, with the tails of ``logs``."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p}\n{p.read_text()[-3000:]}" for p in logs if p.exists())
            pytest.fail(f"{what}: not within {seconds:g} s\n{tails}")
        time.sleep(0.05)


def learned_jobs(app: str, user: str, n: int = 20, *, first: int = 0) -> list[dict]:
    """``n`` finished jobs of ``app``, w_iter about 40 s (confidence 0.9, alpha_io 0.1): SET-10's set 2."""
    return [
        {
            "job_id": f"{app}-{first + k}",
            "user": user,
            "app": app,
            "nprocs": 64,
            "start": 1_700_000_000.0 + 3600 * k,
            "end": 1_700_000_000.0 + 3600 * k + 1800,
            "runtime": 1800.0,
            "w_iter": 38.0 + (k % 5),
            "w_iter_confidence": 0.9,
            "alpha_io": 0.1,
        }
        for k in range(n)
    ]


@contextmanager
def open_folder() -> Iterator[Path]:
    """A temporary folder every user may enter (pytest's are root's only): the epilog reads as the job's user."""
    folder = Path(tempfile.mkdtemp(prefix="iosets-hooks-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def give(path: Path, uid: int, mode: int | None = None) -> Path:
    """``path`` owned by ``uid`` (its group too; a link itself, not its target), with ``mode`` when given."""
    if os.geteuid() == 0:
        os.lchown(path, uid, uid)
    if mode is not None:
        path.chmod(mode)
    return path


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


SHOW_JOB = """JobId={job_id} JobName={name}
   UserId={user_name}({uid}) GroupId={user_name}({uid}) MCS_label=N/A
   JobState=RUNNING Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag={batch} Reboot=0 ExitCode=0:0
   RunTime=00:00:01 TimeLimit={time_limit} TimeMin=N/A
   SubmitTime=2026-11-23T16:29:41 EligibleTime=2026-11-23T16:29:41
   StartTime={start} EndTime={end} Deadline=N/A
   Partition=debug AllocNode:Sid=localhost:28232
   NumNodes={nodes} NumCPUs=8 NumTasks={tasks} CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   Command={command}
   WorkDir=/home/my jobs
   AdminComment={admin_comment} 
   StdOut=/home/my jobs/slurm-{job_id}.out
"""

FAKE_SCONTROL = """#!{python}
import json, os, signal, sys
with open(os.environ["FAKE_SCONTROL_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if " ".join(sys.argv[1:3]) == os.environ.get("FAKE_SCONTROL_HANG"):
    signal.pause()  # a slurmctld that does not answer: until the caller kills it
if sys.argv[1:3] == ["show", "job"]:
    sys.stdout.write(open(os.environ["FAKE_SCONTROL_SHOW"]).read())
if sys.argv[1:3] == ["write", "batch_script"]:
    if not os.path.exists(os.environ["FAKE_SCONTROL_SCRIPT"]):
        sys.exit("job " + sys.argv[3] + " has no batch script")
    sys.stdout.write(open(os.environ["FAKE_SCONTROL_SCRIPT"]).read())
"""


def fake_scontrol(folder: Path, script: str | None = None, **job) -> dict[str, str]:
    """A fake ``scontrol`` in ``folder``: logs its argv (JSON lines), shows ``job`` and its batch ``script``
    (None: a job without one). Returns the env for hooks; with ``FAKE_SCONTROL_HANG="show job"`` added to it,
    ``scontrol show job`` never answers."""
    folder.mkdir(parents=True, exist_ok=True)
    command = folder / "scontrol"
    command.write_text(FAKE_SCONTROL.format(python=sys.executable))
    command.chmod(0o755)
    fields = {"tasks": "16", "nodes": "2", "time_limit": "1-02:00:00", "start": "2026-11-23T16:29:42", "end": "Unknown"}
    fields |= {"batch": "1", "command": "/home/my jobs/run.sh"}
    fields |= {"job_id": "77", "name": "A", "user_name": "alice", "uid": "1001", "admin_comment": "", **job}
    (folder / "show.txt").write_text(SHOW_JOB.format(**fields))
    if script is not None:
        (folder / "script.sh").write_text(script)
    return {
        "PATH": f"{folder}:/usr/bin:/bin:{Path(sys.executable).parent}",  # the hooks' python3: the system's, else ours
        "FAKE_SCONTROL_LOG": str(folder / "calls.jsonl"),
        "FAKE_SCONTROL_SHOW": str(folder / "show.txt"),
        "FAKE_SCONTROL_SCRIPT": str(folder / "script.sh"),
    }


def scontrol_calls(env: dict[str, str]) -> list[list[str]]:
    path = Path(env["FAKE_SCONTROL_LOG"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class StubService:
    """A stub iosets service on loopback: records each request, answers ``(status, body[, headers])``.

    The answers of ``first`` go, in order, to the first requests, then ``reply`` to every other.
    With ``hold``, it answers nothing until :meth:`close` (at most ``HOLD_SECONDS``): a service that hangs.
    """

    HOLD_SECONDS = 60.0

    def __init__(self, reply=(200, {"set": 3, "priority": 0.001, "source": "model"}), *, hold=False, first=()):
        self.requests: list[dict] = []
        self.reply = reply
        self.first = list(first)
        self.hold = hold
        self.released = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                stub.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": self.rfile.read(length),
                    }
                )
                if stub.hold:
                    stub.released.wait(stub.HOLD_SECONDS)
                status, body, *headers = stub.first.pop(0) if stub.first else stub.reply
                data = json.dumps(body).encode()
                self.send_response(status)
                for name, value in (headers[0] if headers else {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.released.set()
        self.server.shutdown()
        self.server.server_close()
