"""What the validate tests share: the compiled benchmark program, the C client as a shared library, and a scripted
arbiter (a Unix-socket server in a thread that plays one script per connection)."""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from iosets.validate import build_periodic
from iosets.validate._build import CFLAGS, CLIENT_DIR

BOUND = 30.0
"""Seconds any wait of these tests may last before it fails (a guard, never expected)."""
FAKE_ARBITER = Path(__file__).with_name("fake_arbiter.py")


def _compiler() -> str:
    compiler = os.environ.get("CC") or "cc"
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler})")
    return compiler


@pytest.fixture(scope="session")
def program_cache(tmp_path_factory) -> Path:
    """A cache folder (``$XDG_CACHE_HOME``) holding the compiled benchmark program."""
    _compiler()
    cache = tmp_path_factory.mktemp("xdg-cache")
    build_periodic(cache / "iosets")
    return cache


@pytest.fixture
def periodic(program_cache, monkeypatch) -> Path:
    """The benchmark program; ``iosets validate`` finds the same one (``XDG_CACHE_HOME`` points at its cache)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(program_cache))
    return build_periodic()


@pytest.fixture(scope="session")
def client(tmp_path_factory) -> ctypes.CDLL:
    """The C client compiled as a shared library, its functions typed for ctypes."""
    library = tmp_path_factory.mktemp("client") / "libiosets_arbiter.so"
    source = CLIENT_DIR / "iosets_arbiter.c"
    subprocess.run([_compiler(), *CFLAGS, "-shared", "-fPIC", str(source), "-o", str(library), "-lm"], check=True)
    lib = ctypes.CDLL(str(library))
    lib.iosets_arbiter_open.restype = ctypes.c_void_p
    lib.iosets_arbiter_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_double]
    lib.iosets_arbiter_open.argtypes += [ctypes.c_double]
    lib.iosets_arbiter_begin.restype = ctypes.c_double
    lib.iosets_arbiter_begin.argtypes = [ctypes.c_void_p, ctypes.c_double]
    lib.iosets_arbiter_rate.restype = ctypes.c_double
    lib.iosets_arbiter_rate.argtypes = [ctypes.c_void_p]
    lib.iosets_arbiter_end.argtypes = [ctypes.c_void_p]
    lib.iosets_arbiter_close.argtypes = [ctypes.c_void_p]
    lib.iosets_arbiter_pace.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return lib


class Peer:
    """The arbiter's side of one connection: ``line()`` reads a line (without its newline, '' at the end),
    ``send(text)`` writes one."""

    def __init__(self, conn: socket.socket):
        conn.settimeout(BOUND)
        self.conn = conn
        self.reader = conn.makefile("r", encoding="ascii", newline="\n")

    def line(self) -> str:
        return self.reader.readline().removesuffix("\n")

    def send(self, text: str) -> None:
        self.conn.sendall(f"{text}\n".encode())


class ScriptedArbiter:
    """A Unix-socket server in a thread: the n-th connection is played by ``scripts[n]`` (a function of a
    :class:`Peer`), then closed. ``join()`` waits for the scripts and raises the first failure."""

    def __init__(self, path: Path | None, scripts: list[Callable[[Peer], None]]):
        self.path, self.scripts = path, scripts
        if path is None:  # loopback tcp on a free port
            self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.server.bind(("127.0.0.1", 0))
        else:
            self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.server.bind(str(path))
        self.server.listen(8)
        self.server.settimeout(BOUND)
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def address(self) -> bytes:
        if self.path is None:
            host, port = self.server.getsockname()
            return f"tcp:{host}:{port}".encode()
        return f"unix:{self.path}".encode()

    def _serve(self) -> None:
        for script in self.scripts:
            try:
                conn, _ = self.server.accept()
                with conn:
                    script(Peer(conn))
            except BaseException as exc:  # reported by join()
                self.errors.append(exc)
                return

    def join(self) -> None:
        self.thread.join(BOUND)
        self.server.close()
        assert not self.thread.is_alive(), "the scripted arbiter is still waiting"
        if self.errors:
            raise self.errors[0]


@pytest.fixture
def scripted_arbiter():
    """``scripted_arbiter(script, ..., tcp=False)``: a :class:`ScriptedArbiter` on a Unix socket in a short temporary
    folder, or on loopback tcp."""
    folder = Path(tempfile.mkdtemp(prefix="arb-"))  # a socket's path has at most 107 bytes
    made: list[ScriptedArbiter] = []

    def make(*scripts: Callable[[Peer], None], tcp: bool = False) -> ScriptedArbiter:
        made.append(ScriptedArbiter(None if tcp else folder / f"a{len(made)}.sock", list(scripts)))
        return made[-1]

    yield make
    for arbiter in made:
        arbiter.server.close()
    shutil.rmtree(folder)


@pytest.fixture
def fake_arbiter_command(monkeypatch):
    """``iosets validate`` starts tests/validate/fake_arbiter.py instead of ``iosets arbiter``."""
    import iosets.validate._arbiter as arbiter

    def command(listen: str, policy: str, bandwidth: float) -> list[str]:
        arguments = ["--listen", listen, "--policy", policy, "--bandwidth", repr(float(bandwidth))]
        return [sys.executable, str(FAKE_ARBITER), *arguments]

    monkeypatch.setattr(arbiter, "arbiter_command", command)
