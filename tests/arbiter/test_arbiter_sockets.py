"""The arbiter over real sockets (unix and loopback tcp): the wire protocol's answers and errors, faults
(a disconnect frees the set, a killed arbiter lets a waiting client go, a restarted one is found again),
the Python client, and the daemon in a process of its own. Every wait is on a line, a thread or a
process, with a generous bound; nothing asserts on wall time."""

from __future__ import annotations

import io
import math
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from iosets.arbiter import Arbiter, Client, parse_address
from iosets.errors import InputError

pytestmark = pytest.mark.timing

B = 1e9
BOUND = 30.0  # s: the longest any wait here may take before the test fails


@pytest.fixture
def short_dir():
    """A folder with a short path: a unix socket's path is limited to 107 bytes."""
    folder = tempfile.mkdtemp(prefix="arb-")
    yield Path(folder)
    shutil.rmtree(folder)


@pytest.fixture(params=["unix", "tcp"])
def listen(request, short_dir):
    """An address to listen on, of each kind."""
    return f"unix:{short_dir / 'arbiter.sock'}" if request.param == "unix" else "tcp:127.0.0.1:0"


class Peer:
    """A raw protocol client: send lines, read the next one within BOUND."""

    opened: list[Peer] = []

    def __init__(self, address: str) -> None:
        family, target = parse_address(address)
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        Peer.opened.append(self)
        self.sock.settimeout(BOUND)
        self.sock.connect(target)
        self.pending = b""

    def send(self, *lines: str) -> Peer:
        self.sock.sendall("".join(f"{line}\n" for line in lines).encode())
        return self

    def line(self) -> str:
        while b"\n" not in self.pending:
            data = self.sock.recv(4096)
            if not data:
                return "<closed>"
            self.pending += data
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode()

    def hello(self, job: str, set_: int = 0, priority: float = 1.0) -> Peer:
        assert self.send(f"HELLO 1 {job} {set_} {priority!r}").line() == f"OK {B:.17g}"
        return self

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(autouse=True)
def close_peers():
    """Every raw connection a test opened is closed after it."""
    yield
    while Peer.opened:
        Peer.opened.pop().close()


@pytest.fixture
def served(listen):
    """An arbiter (set-10, B = 1e9) serving in a thread; its address."""
    with Arbiter(listen, bandwidth=B).start() as arbiter:
        yield arbiter.addresses[0]


def rate_line(word: str, *priorities: float) -> str:
    """``word`` with the rate of the first priority among ``priorities``, as the arbiter prints it."""
    return f"{word} {B * priorities[0] / math.fsum(priorities):.17g}"


# ---------------------------------------------------------------------- the protocol's answers


def test_grants_and_rate_changes_are_the_shares_of_b(served):
    a = Peer(served).hello("a", 0, 1.0)
    b = Peer(served).hello("b", 1, 0.1)
    c = Peer(served).hello("c", 2, 0.01)
    assert a.send("BEGIN 1e9").line() == "GRANT 1000000000"
    assert b.send("BEGIN 1e9").line() == rate_line("GRANT", 0.1, 1.0)
    assert a.line() == rate_line("RATE", 1.0, 0.1)
    assert c.send("BEGIN 0.5").line() == rate_line("GRANT", 0.01, 1.0, 0.1)
    assert [a.line(), b.line()] == [rate_line("RATE", 1.0, 0.1, 0.01), rate_line("RATE", 0.1, 1.0, 0.01)]
    b.send("END")
    assert [a.line(), c.line()] == [rate_line("RATE", 1.0, 0.01), rate_line("RATE", 0.01, 1.0)]


def test_a_disconnect_while_performing_frees_the_set_at_once(served):
    holder = Peer(served).hello("holder", 3, 0.001)
    waiter = Peer(served).hello("waiter", 3, 0.001)
    assert holder.send("BEGIN 100").line() == "GRANT 1000000000"
    waiter.send("BEGIN 100")
    holder.close()
    assert waiter.line() == "GRANT 1000000000"


def test_bye_leaves_and_a_waiting_job_that_leaves_frees_its_place(served):
    first, second, third = (Peer(served).hello(name) for name in ("first", "second", "third"))
    assert first.send("BEGIN 1").line() == "GRANT 1000000000"
    second.send("BEGIN 1")
    third.send("BEGIN 1")
    second.send("BYE")
    assert second.line() == "<closed>"
    first.send("END")
    assert third.line() == "GRANT 1000000000"


def test_begin_twice_and_end_without_a_phase_are_answered_and_the_connection_kept(served):
    peer = Peer(served).hello("twice")
    assert peer.send("END").line() == "ERR no phase open"
    assert peer.send("BEGIN 5", "BEGIN 5").line() == "GRANT 1000000000"
    assert peer.line() == "ERR phase already open"
    assert peer.send("END", "BEGIN 0").line() == "GRANT 1000000000"  # a zero-byte phase, granted at once


@pytest.mark.parametrize(
    "lines, answer",
    [
        (["HELLO 2 j 0 1"], "ERR unsupported protocol version '2': this arbiter speaks 1"),
        (["HELLO 1 j/k 0 1"], "ERR bad job_id 'j/k': expected 1 to 64 of A-Z a-z 0-9 _ . -"),
        ([f"HELLO 1 {'j' * 65} 0 1"], f"ERR bad job_id '{'j' * 64}': expected 1 to 64 of A-Z a-z 0-9 _ . -"),
        (["HELLO 1 j -1 1"], "ERR bad set '-1': expected an integer >= 0"),
        (["HELLO 1 j 0 0"], "ERR bad priority '0': expected a finite number > 0"),
        (["HELLO 1 j 0 inf"], "ERR bad priority 'inf': expected a finite number > 0"),
        (["HELLO 1 j 0"], "ERR expected HELLO 1 <job_id> <set> <priority>"),
        (["BEGIN 5"], "ERR expected HELLO 1 <job_id> <set> <priority>"),
        (["HELLO 1 j 0 1", "HELLO 1 j 0 1"], "ERR HELLO was already said"),
        (["HELLO 1 j 0 1", "BEGIN -3"], "ERR bad BEGIN: expected BEGIN <bytes>, a finite number >= 0"),
        (["HELLO 1 j 0 1", "JUMP"], "ERR unknown line 'JUMP': expected BEGIN <bytes>, END or BYE"),
        (["x" * 300], "ERR line too long"),
    ],
)
def test_a_protocol_error_is_answered_then_the_connection_closes(served, lines, answer):
    peer = Peer(served).send(*lines)
    got = [peer.line() for _ in lines] if lines[0].startswith("HELLO 1 j 0 1") else []
    assert got[:1] in ([], ["OK 1000000000"])
    if not got or got[-1] != answer:
        got.append(peer.line())
    assert got[-1] == answer
    assert peer.line() == "<closed>"


def test_a_line_of_256_bytes_is_read_and_one_of_257_is_too_long(served):
    peer = Peer(served).hello("edge")
    assert peer.send("BEGIN " + "0" * 248 + "1").line() == "GRANT 1000000000"  # 255 bytes and its newline
    assert Peer(served).send("BEGIN " + "0" * 250).line() == "ERR line too long"


def test_a_job_id_connected_twice_is_refused(served):
    first = Peer(served).hello("same")
    peer = Peer(served).send("HELLO 1 same 0 1")
    assert [peer.line(), peer.line()] == ["ERR job same is already connected", "<closed>"]
    first.close()
    deadline = time.monotonic() + BOUND
    while Peer(served).send("HELLO 1 same 0 1").line() != "OK 1000000000":  # free once the arbiter saw the close
        assert time.monotonic() < deadline


@pytest.mark.parametrize("policy", ["set-10", "exclusive-fcfs", "fair-share", "share-priority"])
def test_random_traffic_leaves_the_arbiter_serving(short_dir, policy):
    """Many connections send valid, repeated and garbage lines, and close, in a random order (the ASan build
    of make test-asan checks the memory); once they are closed, a new job is granted the whole bandwidth."""
    rng = random.Random(policy)
    lines = [b"BEGIN 5\n", b"END\n", b"BEGIN 0\n", b"END\nBEGIN 3\n", b"BEGIN 1\nEND\n", b"BEGIN 2\nBEGIN 2\n"]
    with Arbiter(f"unix:{short_dir / 'fuzz.sock'}", policy=policy, bandwidth=B).start() as arbiter:
        address = arbiter.addresses[0]
        peers: list[Peer] = []
        for _ in range(1500):
            if rng.random() < 0.05 or not peers:
                peers.append(
                    Peer(address).send(f"HELLO 1 j{rng.randrange(20)} {rng.randrange(4)} 0.{rng.randrange(1, 9)}")
                )
                peers[-1].sock.setblocking(False)
                continue
            peer = rng.choice(peers)
            if rng.random() < 0.04:
                peers.remove(peer)
                peer.close()
                continue
            data = rng.choice(lines)
            if rng.random() < 0.01:
                data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 600)))
            try:
                peer.sock.send(data)
                while peer.sock.recv(65536):
                    pass
            except (BlockingIOError, ConnectionError):
                pass
        for peer in peers:
            peer.close()
        deadline = time.monotonic() + BOUND
        while True:  # the closes reach the arbiter in their own time: the sets free up
            with Client(address, "newcomer", timeout=0.2, stderr=io.StringIO()) as client:
                if client.begin(1.0) == B:
                    break
            assert time.monotonic() < deadline
    assert arbiter.summary.grants > 20 and arbiter.summary.errors > 20  # the traffic did reach the core


# ---------------------------------------------------------------------- the Python client


def test_the_client_is_granted_its_share_and_follows_rate_changes(served):
    with Client(served, "py-a", set=0, priority=1.0) as a, Client(served, "py-b", set=1, priority=0.1) as b:
        assert a.begin(8e9) == B and a.rate == B and a.bandwidth == B
        assert b.begin(1e9) == pytest.approx(B / 11, rel=1e-15)
        deadline = time.monotonic() + BOUND
        while a.rate == B and time.monotonic() < deadline:  # the RATE line follows b's grant
            time.sleep(0.001)
        assert a.rate == B * 1.0 / 1.1
        b.end()
        assert b.rate is None
        a.end()


def test_a_job_that_is_not_granted_within_its_timeout_runs_unscheduled_and_says_it_once(served):
    holder = Peer(served).hello("busy")
    assert holder.send("BEGIN 1").line() == "GRANT 1000000000"
    said = io.StringIO()
    with Client(served, "late", timeout=0.5, stderr=said) as late:
        assert late.begin(1.0) is None and late.rate is None
        late.end()
        assert late.begin(1.0) is None  # still unscheduled: not said again
        late.end()
        holder.send("END")
        late.timeout = BOUND
        assert late.begin(1.0) == B  # the next begin connects again and is granted
        late.end()
    assert said.getvalue() == f"iosets-arbiter: no grant from {served} within 0.5 s: proceeding unscheduled\n"


def test_a_refused_job_runs_unscheduled(served):
    taken = Peer(served).hello("taken")
    said = io.StringIO()
    with Client(served, "taken", stderr=said) as client:
        assert client.begin(1.0) is None
    assert said.getvalue() == (
        f"iosets-arbiter: {served} refused job taken (job taken is already connected): proceeding unscheduled\n"
    )
    taken.close()


def test_an_unreachable_arbiter_costs_no_wait(short_dir):
    said = io.StringIO()
    address = f"unix:{short_dir / 'nobody.sock'}"
    with Client(address, "alone", stderr=said) as client:
        assert client.begin(1.0) is None
    assert said.getvalue() == (
        f"iosets-arbiter: cannot reach {address} (No such file or directory): proceeding unscheduled\n"
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"address": "http://x"}, "arbiter address must be unix:PATH or tcp:HOST:PORT, got 'http://x'"),
        ({"address": "tcp:host:99999"}, "arbiter address must be unix:PATH or tcp:HOST:PORT"),
        ({"job_id": "a b"}, "job_id must be 1 to 64 of A-Z a-z 0-9 _ . -, got 'a b'"),
        ({"set": -2}, "set must be an integer >= 0, got -2"),
        ({"priority": 0}, "priority must be a finite number > 0, got 0"),
        ({"timeout": math.inf}, "timeout must be a finite number > 0, got inf"),
    ],
)
def test_the_client_refuses_bad_arguments_by_name(kwargs, message):
    arguments = {"address": "tcp:127.0.0.1:1", "job_id": "j", **kwargs}
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        Client(**arguments)


def test_the_client_refuses_calls_out_of_order():
    client = Client("tcp:127.0.0.1:1", "j")
    with pytest.raises(RuntimeError, match="end: no phase is open"):
        client.end()
    with pytest.raises(ValueError, match="nbytes must be a finite number >= 0, got -1"):
        client.begin(-1)


# ---------------------------------------------------------------------- the daemon


def start_daemon(listen: str, *options: str) -> tuple[subprocess.Popen, str]:
    """``iosets arbiter`` in a process of its own; its address once it listens."""
    command = [sys.executable, "-m", "iosets.cli", "arbiter", "--listen", listen, "--bandwidth", "1e9", *options]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = process.stdout.readline()  # the daemon prints it once listening, or exits
    assert first.startswith("iosets arbiter: listening on "), process.communicate(timeout=BOUND)
    return process, first.split()[4]


class WatchedClient(Client):
    """A client that tells when it has sent its BEGIN (and so waits for the grant)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.waiting = threading.Event()

    def _send(self, data: bytes) -> None:
        super()._send(data)
        if data.startswith(b"BEGIN"):
            self.waiting.set()


def test_a_killed_arbiter_lets_a_waiting_client_go(listen):
    daemon, address = start_daemon(listen)
    try:
        holder = Peer(address).hello("holder")
        assert holder.send("BEGIN 1").line() == "GRANT 1000000000"
        said = io.StringIO()
        waiter = WatchedClient(address, "waiter", timeout=1.0, stderr=said)
        result: list[float | None] = []
        thread = threading.Thread(target=lambda: result.append(waiter.begin(1.0)))
        thread.start()
        assert waiter.waiting.wait(BOUND)
        daemon.kill()
        thread.join(BOUND)
        assert not thread.is_alive() and result == [None]
        assert said.getvalue() in (
            f"iosets-arbiter: lost {address} (connection closed): proceeding unscheduled\n",
            f"iosets-arbiter: lost {address} (Connection reset by peer): proceeding unscheduled\n",
        )
    finally:
        daemon.kill()
        daemon.communicate(timeout=BOUND)


def test_after_a_restart_on_the_same_address_the_client_reconnects_at_its_next_begin(listen):
    daemon, address = start_daemon(listen)
    said = io.StringIO()
    client = Client(address, "survivor", stderr=said)
    try:
        assert client.begin(1.0) == B
        client.end()
        daemon.kill()  # SIGKILL: a unix socket file is left behind, stale
        daemon.communicate(timeout=BOUND)
        daemon, again = start_daemon(address)  # the same path or port
        assert again == address
        assert client.begin(1.0) == B
        client.end()
        assert said.getvalue() == ""  # never unscheduled
    finally:
        client.close()
        daemon.kill()
        daemon.communicate(timeout=BOUND)


def test_a_live_unix_socket_is_not_taken_over_and_a_stale_one_is(short_dir):
    path = short_dir / "live.sock"
    busy = pytest.raises(InputError, match=f"unix:{path}: something already listens on this socket")
    with Arbiter(f"unix:{path}", bandwidth=B), busy:
        Arbiter(f"unix:{path}", bandwidth=B)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))  # a socket file nobody listens on
    stale.close()
    with Arbiter(f"unix:{path}", bandwidth=B).start() as arbiter, Client(arbiter.addresses[0], "j") as client:
        assert client.begin(1.0) == B
    path.write_text("not a socket")
    with pytest.raises(InputError, match=f"unix:{path}: the file exists and is not a socket"):
        Arbiter(f"unix:{path}", bandwidth=B)


def test_a_non_loopback_tcp_address_needs_allow_remote():
    with pytest.raises(InputError, match="tcp:0.0.0.0:0: 0.0.0.0 is not a loopback address, .* --allow-remote"):
        Arbiter("tcp:0.0.0.0:0", bandwidth=B)
