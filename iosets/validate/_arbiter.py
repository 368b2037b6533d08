"""The arbiter daemon for a run: ``iosets arbiter`` started on a private Unix socket, stopped at the end.

Every policy but ``system`` runs through the arbiter (docs/guides/arbiter.md); this module is the only
place that knows how to start it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import IosetsError

READY_BOUND = 30.0
"""Seconds the daemon has to accept connections."""


def arbiter_command(listen: str, policy: str, bandwidth: float) -> list[str]:
    """The command line of the daemon (``python -m iosets.cli arbiter``: the running interpreter's iosets)."""
    arguments = ["--listen", listen, "--policy", policy, "--bandwidth", repr(float(bandwidth))]
    return [sys.executable, "-m", "iosets.cli", "arbiter", *arguments]


@contextlib.contextmanager
def running_arbiter(policy: str, bandwidth: float) -> Iterator[str]:
    """Start the arbiter under ``policy`` sharing ``bandwidth`` bytes/s; yield its address once it accepts."""
    with tempfile.TemporaryDirectory(prefix="iosets-arbiter-") as folder:  # short: a socket path has 107 bytes
        path = Path(folder) / "arbiter.sock"
        log_path = Path(folder) / "arbiter.log"
        with log_path.open("wb") as log:
            daemon = subprocess.Popen(
                arbiter_command(f"unix:{path}", policy, bandwidth),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        try:
            _wait_ready(daemon, path, log_path)
            yield f"unix:{path}"
        finally:
            if daemon.poll() is None:
                os.killpg(daemon.pid, signal.SIGTERM)
                try:
                    daemon.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(daemon.pid, signal.SIGKILL)
                    daemon.wait()


def _wait_ready(daemon: subprocess.Popen, path: Path, log: Path) -> None:
    """Return once the daemon accepts a connection on ``path``; an error with its output if it ends or is late."""
    deadline = time.monotonic() + READY_BOUND
    while True:
        if daemon.poll() is not None:
            output = log.read_text(errors="replace").strip()[-2000:]
            raise IosetsError(f"the arbiter ended with status {daemon.returncode} before accepting jobs: {output}")
        if path.exists():
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                try:
                    probe.connect(str(path))
                    return
                except OSError:
                    pass
        if time.monotonic() > deadline:
            raise IosetsError(f"the arbiter did not accept connections on {path} within {READY_BOUND:g} s")
        time.sleep(0.05)
