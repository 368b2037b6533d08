"""A real PostgreSQL server for the service tests, started from Debian's binaries in a temporary folder.

``initdb`` and ``pg_ctl`` refuse to run as root, so as root they run as the ``postgres`` user
(``runuser -u postgres --``) in a folder that user owns. The server listens on a free loopback port,
with its unix socket in that folder and ``trust`` authentication. Without PostgreSQL the tests that
use it are skipped with the reason, unless ``IOSETS_REQUIRE_POSTGRES=1`` (CI) makes that a failure.

Fixtures: ``postgres_server`` (the session's server), ``postgres_url`` (its database ``iosets``) and
``postgres_database`` (a fresh, empty database for one test).
"""

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

MISSING = "PostgreSQL not installed: apt-get install postgresql (initdb and pg_ctl from /usr/lib/postgresql/*/bin)"
REQUIRE_VARIABLE = "IOSETS_REQUIRE_POSTGRES"
SANITIZER_VARIABLES = ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "PYTHONMALLOC")
SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "max_connections": "200",
    "fsync": "off",  # a throwaway server: the tests kill the service, never PostgreSQL
    "full_page_writes": "off",
}


def find_bindir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with initdb and pg_ctl, else the folder of PATH's initdb."""
    found = [Path(d) for d in glob.glob("/usr/lib/postgresql/*/bin")]
    on_path = shutil.which("initdb")
    if on_path:
        found.append(Path(on_path).resolve().parent)
    usable = [d for d in found if (d / "initdb").is_file() and (d / "pg_ctl").is_file()]
    return max(usable, key=lambda d: [int(p) for p in d.parent.name.split(".") if p.isdigit()], default=None)


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class PostgresServer:
    """A running server: its binaries, its folder (data, socket, log) and its port."""

    bindir: Path
    root: Path
    port: int
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def url(self, database: str) -> str:
        """The URL of ``database`` over TCP on loopback, as ``iosets serve --database`` takes it."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Run one of the server's binaries as the postgres user; a failure raises with its output."""
        command = [*as_postgres(), str(self.bindir / program), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=postgres_environment())
        if done.returncode:
            raise RuntimeError(f"{program} {' '.join(args)} failed ({done.returncode}): {done.stderr or done.stdout}")
        return done

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database (``test_<n>`` unless named) and return its URL."""
        name = name or f"test_{next(self._names)}"
        self.run("createdb", "-h", str(self.root), "-p", str(self.port), "-U", "postgres", name)
        return self.url(name)

    def query(self, database: str, sql: str) -> str:
        """Run one SQL statement with psql on the unix socket; its rows unaligned, one a line."""
        args = ("-h", str(self.root), "-p", str(self.port), "-U", "postgres", "-d", database, "-AtX", "-c", sql)
        return self.run("psql", *args).stdout.strip()

    def stop(self) -> None:
        """Stop at once (``pg_ctl stop -m immediate``) and remove the folder."""
        subprocess.run(
            [*as_postgres(), str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "stop", "-m", "immediate"],
            capture_output=True,
            timeout=60,
            env=postgres_environment(),
        )
        shutil.rmtree(self.root, ignore_errors=True)


def postgres_environment() -> dict[str, str]:
    """This environment without the sanitizer's preload (``make test-asan``): initdb hangs under libasan."""
    return {key: value for key, value in os.environ.items() if key not in SANITIZER_VARIABLES}


def as_postgres() -> list[str]:
    """The prefix that runs a command as the postgres user when we are root (PostgreSQL refuses root)."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def start_postgres(bindir: Path, *, attempts: int = 3) -> PostgresServer:
    """initdb a cluster in a new temporary folder and start it on a free loopback port (tried ``attempts`` times).

    A port taken between choosing and binding makes ``pg_ctl start`` fail: a new port is tried.
    """
    root = Path(tempfile.mkdtemp(prefix="iosets-pg-"))
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(root, owner.pw_uid, owner.pw_gid)
    server = PostgresServer(bindir, root, 0)
    data, log = str(root / "data"), root / "server.log"
    try:
        server.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        for _ in range(attempts):
            server.port = free_port()
            settings = (f"-c {key}={value}" for key, value in SERVER_SETTINGS.items())
            options = " ".join([f"-p {server.port}", f"-k {root}", *settings])
            try:
                server.run("pg_ctl", "-D", data, "-l", str(log), "-o", options, "-w", "start")
                return server
            except RuntimeError:
                continue
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise RuntimeError(f"PostgreSQL did not start on a free port after {attempts} attempts; its log ends:\n{tail}")
    except BaseException:
        server.stop()
        raise


def missing_postgres(reason: str) -> None:
    """Skip with ``reason``; fail instead when ``IOSETS_REQUIRE_POSTGRES=1`` (CI must run these tests)."""
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail(f"{reason} ({REQUIRE_VARIABLE}=1: the PostgreSQL tests must run)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server, stopped and removed at the end."""
    bindir = find_bindir()
    if bindir is None:
        missing_postgres(MISSING)
    assert bindir is not None
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        missing_postgres("PostgreSQL refuses root and runuser is missing (util-linux)")
    server = start_postgres(bindir)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """``postgresql://postgres@127.0.0.1:PORT/iosets``: the session's database (shared by the tests that use it)."""
    return postgres_server.create_database("iosets")


@pytest.fixture
def postgres_database(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database on the session's server, for a test that counts what it stored."""
    return postgres_server.create_database()
