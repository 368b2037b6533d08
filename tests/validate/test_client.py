"""The arbiter's C client against scripted arbiters speaking the wire protocol (docs/notes: protocol v1)."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time

import pytest

from iosets.validate._build import CFLAGS, CLIENT_DIR

from .conftest import BOUND

pytestmark = pytest.mark.timing


def hello_ok(peer, expected="HELLO 1 job-7 2 0.5"):
    assert peer.line() == expected
    peer.send("OK 1000000000")


def wait_for(condition, what: str):
    """Wait until ``condition()`` holds (the client reads what the arbiter sent); fail after BOUND seconds."""
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.001)


@pytest.mark.parametrize("tcp", [False, True], ids=["unix", "tcp"])
def test_begin_returns_the_grant_and_a_rate_line_updates_it(client, scripted_arbiter, capfd, tcp):
    send_rate = threading.Event()

    def script(peer):
        hello_ok(peer)
        assert peer.line() == "BEGIN 4096"
        peer.send("GRANT 250000000")
        assert send_rate.wait(BOUND)
        peer.send("RATE 125000000.5")
        assert peer.line() == "END"
        assert peer.line() == "BEGIN 1.5e+20"
        peer.send("RATE 7")  # sent before the END reached the arbiter: not this phase's
        peer.send("GRANT 3e8")
        assert peer.line() == "END"
        assert peer.line() == "BYE"

    arbiter = scripted_arbiter(script, tcp=tcp)
    a = client.iosets_arbiter_open(arbiter.address, b"job-7", 2, 0.5, 5.0)
    assert a
    assert client.iosets_arbiter_begin(a, 4096.0) == 2.5e8
    assert client.iosets_arbiter_rate(a) == 2.5e8
    send_rate.set()
    wait_for(lambda: client.iosets_arbiter_rate(a) != 2.5e8, "the RATE line")
    assert client.iosets_arbiter_rate(a) == 125000000.5
    client.iosets_arbiter_end(a)
    assert client.iosets_arbiter_rate(a) == 0.0
    assert client.iosets_arbiter_begin(a, 1.5e20) == 3e8
    client.iosets_arbiter_end(a)
    client.iosets_arbiter_close(a)
    arbiter.join()
    assert capfd.readouterr().err == ""


def test_an_arbiter_that_never_answers_lets_the_job_go_with_one_stderr_line(client, scripted_arbiter, capfd):
    gone = threading.Event()

    def silent(peer):
        assert peer.line().startswith("HELLO 1 j 0 1")
        assert peer.line() == ""  # the client gave up: it closed the connection
        gone.set()

    arbiter = scripted_arbiter(silent, silent)
    a = client.iosets_arbiter_open(arbiter.address, b"j", 0, 1.0, 0.2)
    assert a  # unreachable is not an error: the phases run unscheduled
    assert client.iosets_arbiter_begin(a, 1e6) == 0.0  # tried again, silently
    assert client.iosets_arbiter_rate(a) == 0.0
    client.iosets_arbiter_pace(a, 1 << 30)  # unscheduled: no sleep, however many bytes
    client.iosets_arbiter_end(a)
    client.iosets_arbiter_close(a)
    arbiter.join()
    address = arbiter.address.decode()
    assert capfd.readouterr().err == f"iosets-arbiter: no answer from {address} within 0.2 s: proceeding unscheduled\n"


def test_no_grant_within_the_timeout_then_a_reconnection_at_the_next_begin(client, scripted_arbiter, capfd):
    def never_grants(peer):
        hello_ok(peer, "HELLO 1 j 3 0.01")
        assert peer.line() == "BEGIN 10"
        assert peer.line() == ""  # the client left after its timeout (freeing its place)

    def grants(peer):
        hello_ok(peer, "HELLO 1 j 3 0.01")
        assert peer.line() == "BEGIN 20"
        peer.send("GRANT 5e7")
        assert peer.line() == "BYE"

    arbiter = scripted_arbiter(never_grants, grants)
    a = client.iosets_arbiter_open(arbiter.address, b"j", 3, 0.01, 0.2)
    assert client.iosets_arbiter_begin(a, 10.0) == 0.0
    assert client.iosets_arbiter_begin(a, 20.0) == 5e7
    client.iosets_arbiter_close(a)  # an open phase ends with the connection
    arbiter.join()
    address = arbiter.address.decode()
    assert capfd.readouterr().err == f"iosets-arbiter: no grant from {address} within 0.2 s: proceeding unscheduled\n"


def test_a_restarted_arbiter_is_reached_again_without_a_word(client, scripted_arbiter, capfd):
    def first_life(peer):
        hello_ok(peer, "HELLO 1 j 0 1")
        assert peer.line() == "BEGIN 1"
        peer.send("GRANT 1e9")
        assert peer.line() == "END"  # then the arbiter dies: the connection closes

    def second_life(peer):
        hello_ok(peer, "HELLO 1 j 0 1")
        assert peer.line() == "BEGIN 2"
        peer.send("GRANT 2e9")
        assert peer.line() == "END"

    arbiter = scripted_arbiter(first_life, second_life)
    a = client.iosets_arbiter_open(arbiter.address, b"j", 0, 1.0, 5.0)
    assert client.iosets_arbiter_begin(a, 1.0) == 1e9
    client.iosets_arbiter_end(a)
    assert client.iosets_arbiter_begin(a, 2.0) == 2e9  # the old connection is dead: a new one, in the same call
    client.iosets_arbiter_end(a)
    arbiter.join()
    client.iosets_arbiter_close(a)
    assert capfd.readouterr().err == ""


def test_a_refused_job_runs_unscheduled_and_says_why(client, scripted_arbiter, capfd):
    def refuses(peer):
        assert peer.line() == "HELLO 1 j 0 1"
        peer.send("ERR job j is already connected")

    arbiter = scripted_arbiter(refuses)
    a = client.iosets_arbiter_open(arbiter.address, b"j", 0, 1.0, 5.0)
    arbiter.join()
    client.iosets_arbiter_close(a)
    address = arbiter.address.decode()
    expected = f"iosets-arbiter: {address} refused job j: job j is already connected: proceeding unscheduled\n"
    assert capfd.readouterr().err == expected


def test_pacing_holds_the_bytes_to_the_granted_rate(client, scripted_arbiter):
    def script(peer):
        hello_ok(peer, "HELLO 1 j 0 1")
        assert peer.line() == "BEGIN 4000000"
        peer.send("GRANT 20000000")
        assert peer.line() == "END"

    arbiter = scripted_arbiter(script)
    a = client.iosets_arbiter_open(arbiter.address, b"j", 0, 1.0, 5.0)
    start = time.monotonic()
    assert client.iosets_arbiter_begin(a, 4e6) == 2e7
    for _ in range(4):
        client.iosets_arbiter_pace(a, 1_000_000)
    paced = time.monotonic() - start
    client.iosets_arbiter_end(a)
    arbiter.join()
    client.iosets_arbiter_close(a)
    assert paced >= 4e6 / 2e7  # the pacer sleeps until the bytes are due: a lower bound, never an upper one


@pytest.mark.parametrize(
    ("address", "job_id", "set_", "priority", "message"),
    [
        (b"http://x", b"j", 0, 1.0, "expected an address unix:PATH or tcp:HOST:PORT, got 'http://x'"),
        (b"tcp:host", b"j", 0, 1.0, "expected an address unix:PATH or tcp:HOST:PORT, got 'tcp:host'"),
        (b"unix:/x", b"a b", 0, 1.0, "expected a job id of 1 to 64 characters among A-Z a-z 0-9 _ . -, got 'a b'"),
        (b"unix:/x", b"j", -1, 1.0, "expected a set >= 0, got -1"),
        (b"unix:/x", b"j", 0, 0.0, "expected a finite priority > 0, got 0"),
    ],
)
def test_bad_arguments_give_no_handle_and_a_reason(client, capfd, address, job_id, set_, priority, message):
    assert client.iosets_arbiter_open(address, job_id, set_, priority, 1.0) is None
    assert capfd.readouterr().err == f"iosets-arbiter: {message}\n"


FORTRAN_PROGRAM = """
program use_arbiter
  use, intrinsic :: iso_c_binding
  use iosets_arbiter
  implicit none
  type(c_ptr) :: a
  character(len=256) :: address
  call get_command_argument(1, address)
  a = iosets_arbiter_open(trim(address)//c_null_char, "fortran-job"//c_null_char, 1_c_int, 0.1_c_double, 5.0_c_double)
  if (.not. c_associated(a)) stop 1
  print '(ES24.16)', iosets_arbiter_begin(a, 1048576.0_c_double)
  call iosets_arbiter_pace(a, 1048576_c_size_t)
  print '(ES24.16)', iosets_arbiter_rate(a)
  call iosets_arbiter_end(a)
  call iosets_arbiter_close(a)
end program use_arbiter
"""


def test_a_fortran_program_uses_the_client_through_bind_c(scripted_arbiter, tmp_path):
    if shutil.which("gfortran") is None or shutil.which("cc") is None:
        pytest.skip("needs gfortran and cc")

    def script(peer):
        assert peer.line() == "HELLO 1 fortran-job 1 0.10000000000000001"
        peer.send("OK 1e9")
        assert peer.line() == "BEGIN 1048576"
        peer.send("GRANT 90909090.5")
        assert peer.line() == "END"
        assert peer.line() == "BYE"

    (tmp_path / "main.f90").write_text(FORTRAN_PROGRAM)
    subprocess.run(
        ["cc", *CFLAGS, "-c", str(CLIENT_DIR / "iosets_arbiter.c"), "-o", "client.o"], cwd=tmp_path, check=True
    )
    module, program = str(CLIENT_DIR / "iosets_arbiter.f90"), str(tmp_path / "main.f90")
    subprocess.run(["gfortran", "-std=f2008", module, program, "client.o", "-o", "use"], cwd=tmp_path, check=True)
    arbiter = scripted_arbiter(script)
    done = subprocess.run([str(tmp_path / "use"), arbiter.address], capture_output=True, text=True, timeout=BOUND)
    arbiter.join()
    assert done.returncode == 0, done.stderr
    assert [float(line) for line in done.stdout.split()] == [90909090.5, 90909090.5]
