"""``iosets arbiter``: where it listens, its clean stop on a signal with what it did, its one-line refusals."""

import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from iosets.arbiter import Client
from iosets.cli import app

BOUND = 30.0  # s: the longest the daemon may take to stop


@pytest.fixture
def short_dir():
    """A folder with a short path: a unix socket's path is limited to 107 bytes."""
    folder = tempfile.mkdtemp(prefix="arb-")
    yield Path(folder)
    shutil.rmtree(folder)


@pytest.mark.timing
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_the_daemon_says_where_it_listens_stops_cleanly_on_a_signal_and_says_what_it_did(short_dir, stop):
    path = short_dir / "a.sock"
    command = [sys.executable, "-m", "iosets.cli", "arbiter", "--listen", f"unix:{path}", "--bandwidth", "1e9"]
    daemon = subprocess.Popen([*command, "--policy", "fair-share"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = daemon.stdout.readline().decode()  # printed once it listens (or the daemon exits)
    assert first == (
        f"iosets arbiter: listening on unix:{path} (policy fair-share, bandwidth 1e+09 B/s); "
        "Ctrl-C or SIGTERM stops it\n"
    )
    with Client(f"unix:{path}", "once") as client:
        assert client.begin(1.0) == 1e9
        client.end()
    daemon.send_signal(stop)
    out, err = daemon.communicate(timeout=BOUND)
    assert daemon.returncode == 0, err
    assert out.decode() == (
        "iosets arbiter: stopped: 1 job seen, 1 phase granted "
        "(1 connection, 0 protocol errors, 0 dropped for not reading)\n"
    )
    assert err == b"" and not path.exists()  # its socket file is removed


@pytest.mark.parametrize(
    "options, message",
    [
        (["--listen", "tcp:0.0.0.0:0"], "tcp:0.0.0.0:0: 0.0.0.0 is not a loopback address"),
        (["--listen", "udp:x"], "arbiter address must be unix:PATH or tcp:HOST:PORT, got 'udp:x'"),
        (["--listen", "tcp:127.0.0.1:0", "--policy", "set-fairshare"], "unknown policy 'set-fairshare'"),
        (["--listen", "tcp:127.0.0.1:0", "--bandwidth", "-1"], "bandwidth must be a finite number > 0, got -1.0"),
    ],
)
def test_the_command_refuses_bad_options_in_one_line(options, message):
    result = CliRunner().invoke(app, ["arbiter", "--bandwidth", "1e9", *options])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: {message}") and result.stderr.count("\n") == 1
