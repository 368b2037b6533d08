"""The caller's side of the fork server: start it once per process, ask it for workers, learn how they ended."""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from ._forkserver import REPLY, REQUEST, recv_exactly
from ._memory import worker_memory

_SERVER_ENV = {
    "OPENBLAS_NUM_THREADS": "1",  # workers are processes: no BLAS thread pools to fork
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "LIBC_FATAL_STDERR_": "1",  # glibc's abort messages to stderr (captured during reads), not to the terminal
}


def _server_env() -> dict[str, str]:
    """This process's environment, with the iosets it runs first on the path and one-thread numeric libraries."""
    root = str(Path(__file__).resolve().parents[2])  # the folder that holds this iosets package
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, **_SERVER_ENV, "PYTHONPATH": path}


@dataclass
class Worker:
    """A forked worker: its pid and the connection its tasks go through."""

    pid: int
    conn: Connection


class ForkServer:
    """One fork server process; requests are serialized, so threads may share it."""

    def __init__(self) -> None:
        worker_memory()  # a bad IOSETS_WORKER_MEMORY_MB is refused here, in the caller, with its reason
        mine, theirs = socket.socketpair()
        self._sock = mine
        self._lock = threading.Lock()
        self.owner = os.getpid()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "iosets.analyzer._forkserver", str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=_server_env(),
        )
        theirs.close()

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None and self._sock.fileno() >= 0

    def _ask(self, command: bytes, arg: int, *, fds: bool) -> tuple[tuple, list[int]]:
        with self._lock:
            try:
                self._sock.sendall(REQUEST.pack(command, arg))
                if fds:
                    data, got, _, _ = socket.recv_fds(self._sock, REPLY.size, 1)
                else:
                    data, got = b"", []
                data += recv_exactly(self._sock, REPLY.size - len(data))
            except BaseException:
                self.close()  # a request cut in the middle (Ctrl-C): the protocol is lost
                raise
        if len(data) < REPLY.size:
            self.close()
            raise RuntimeError(f"the analyzer's fork server exited (status {self.process.poll()})")
        return REPLY.unpack(data), got

    def spawn(self, threads: int) -> Worker:
        """A new worker process (Polars may use ``threads`` threads in it)."""
        (pid, _, _, _), fds = self._ask(b"S", threads, fds=True)
        return Worker(pid, Connection(fds[0]))

    def wait(self, pid: int) -> tuple[int, int, str]:
        """Wait for a worker to end: its wait status, the tasks it started and the last stage it recorded."""
        (_, status, started, stage), _ = self._ask(b"W", pid, fds=False)
        return status, started, stage.split(b"\0", 1)[0].decode("utf-8", "replace")

    def close(self) -> None:
        """Stop the server; it kills its workers (it exits on its own when the socket closes)."""
        self._sock.close()
        try:
            self.process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_server: ForkServer | None = None
_server_lock = threading.Lock()


def fork_server() -> ForkServer:
    """This process's fork server, started on first use (and again if it died)."""
    global _server
    with _server_lock:
        if _server is None or not _server.alive():
            if _server is not None and _server.owner == os.getpid():
                with contextlib.suppress(Exception):
                    _server.close()
            _server = ForkServer()
        return _server


@atexit.register
def _stop_server() -> None:
    if _server is not None and _server.owner == os.getpid():
        _server.close()
