"""Fixtures of the service tests: a live ``iosets serve`` on a free loopback port, and its store options."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

READY_WITHIN = 60.0  # a start under load: imports, the store, the first fit


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def iosets_command(*args: str) -> list[str]:
    """``python -m iosets.cli ARGS`` with this interpreter."""
    return [sys.executable, "-m", "iosets.cli", *args]


def create_token(store_args: list[str], *scopes: str) -> str:
    """A token with ``scopes`` on the store, from ``iosets token create`` (its last line of output)."""
    scope_args = [arg for scope in scopes for arg in ("--scope", scope)]
    done = subprocess.run(
        iosets_command("token", "create", *scope_args, *store_args), capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()[-1]


@dataclass
class LiveServer:
    """A running ``iosets serve``: its URL, an admin token, the process, and what restarts it."""

    url: str
    token: str
    process: subprocess.Popen
    store_args: list[str]
    command: list[str] = field(repr=False)
    log: Path = field(repr=False)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def get(self, path: str, **params) -> httpx.Response:
        """``GET path?params`` with the admin token."""
        return httpx.get(self.url + path, params=params, headers=self.headers, timeout=30.0)

    def post_job(self, row: dict) -> httpx.Response:
        """``POST /v1/jobs`` of one jobs-table row with the admin token."""
        return httpx.post(self.url + "/v1/jobs", json=row, headers=self.headers, timeout=30.0)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_WITHIN
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"iosets serve exited {self.process.returncode}: {self.log.read_text()}")
            try:
                if httpx.get(self.url + "/readyz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"iosets serve not ready within {READY_WITHIN} s: {self.log.read_text()}")

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=log, start_new_session=True)
        self.wait_ready()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def restart(self) -> None:
        """Start again on the same store and port (after stop or kill)."""
        self.stop()
        self.start()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> list[str]:
    """Store options of a SQLite store in the test's folder."""
    return ["--data-dir", str(tmp_path / "store")]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator:
    """``serve(*store_args, lua_out=None, extra=())``: a started LiveServer, stopped at teardown."""
    started: list[LiveServer] = []

    def start(*store_args: str, lua_out: str | os.PathLike | None = None, extra=()) -> LiveServer:
        args = list(store_args) or ["--data-dir", str(tmp_path)]
        token = create_token(args, "admin")
        port = free_port()
        options = [*args, *(["--lua-out", str(lua_out)] if lua_out is not None else []), *extra]
        command = iosets_command("serve", "--host", "127.0.0.1", "--port", str(port), *options)
        log = tmp_path / f"serve-{port}.log"
        server = LiveServer(f"http://127.0.0.1:{port}", token, None, args, command, log)  # type: ignore[arg-type]
        started.append(server)
        server.start()
        return server

    yield start
    for server in started:
        server.stop()
