"""Standard-library client of ``iosets arbiter`` (wire protocol v1, docs/guides/arbiter.md).

It imports nothing from iosets nor from outside the standard library, so that a copy of this one
file (with ``_pacer.py`` for pacing) works in a job where iosets is not installed.

A job opens one client (its launcher or rank 0 does), calls :meth:`Client.begin` before each I/O
phase and :meth:`Client.end` after it. The arbiter is never allowed to hold the job: connecting
and HELLO take at most ``connect_timeout``, a grant at most ``timeout``; past either, or when the
arbiter is unreachable, refuses the job or goes away, :meth:`~Client.begin` returns ``None`` (the
phase runs unscheduled), one line says so on stderr, and the next :meth:`~Client.begin` connects
again (so a restarted arbiter is found again). Not thread-safe: one thread talks to the arbiter.
"""

from __future__ import annotations

import contextlib
import math
import re
import socket
import sys
import time
from typing import TextIO

PROTOCOL = 1
JOB_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def parse_address(address: str) -> tuple[int, str | tuple[str, int]]:
    """``(socket family, socket address)`` of ``unix:PATH`` or ``tcp:HOST:PORT`` (``tcp:[::1]:PORT`` for IPv6).

    Examples
    --------
    >>> parse_address("tcp:127.0.0.1:7000")[1]
    ('127.0.0.1', 7000)
    >>> parse_address("unix:/run/iosets/arbiter.sock")[1]
    '/run/iosets/arbiter.sock'
    """
    kind, _, rest = address.partition(":")
    if kind == "unix" and rest:
        return socket.AF_UNIX, rest
    host, _, port = rest.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if kind == "tcp" and host and port.isdigit() and int(port) < 65536:
        return (socket.AF_INET6 if ":" in host else socket.AF_INET), (host, int(port))
    raise ValueError(f"arbiter address must be unix:PATH or tcp:HOST:PORT, got {address!r}")


class _Lost(Exception):
    """The connection closed or failed (the reason in the message)."""


class _Unreachable(_Lost):
    """No connection could be made, or HELLO was not answered."""


class _Refused(Exception):
    """The arbiter answered ERR (its reason in the message)."""


class Client:
    """One job's connection to the arbiter: ``begin`` before an I/O phase, ``end`` after it.

    Parameters
    ----------
    address : str
        ``unix:PATH`` or ``tcp:HOST:PORT``.
    job_id : str
        The job's id, 1 to 64 of ``A-Z a-z 0-9 _ . -``; one connection per job id at a time.
    set : int, default=0
        The job's set (>= 0), from its recommendation; the arbiter's policy decides whether it counts.
    priority : float, default=1.0
        The job's priority (> 0), from its recommendation (SET-10: ``10**-set``).
    timeout : float, default=30.0
        Seconds :meth:`begin` waits for a grant before the phase runs unscheduled.
    connect_timeout : float, default=5.0
        Seconds to connect and be answered HELLO.
    stderr : file, default=None
        Where the one line about running unscheduled goes (``sys.stderr`` when None).

    Examples
    --------
    >>> client = Client("unix:/nonexistent/arbiter.sock", "job-7", set=1, priority=0.1)
    >>> client.rate is None  # no phase granted
    True
    """

    def __init__(
        self,
        address: str,
        job_id: str,
        set: int = 0,  # noqa: A002 - the protocol's word
        priority: float = 1.0,
        *,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        stderr: TextIO | None = None,
    ) -> None:
        self.family, self.target = parse_address(address)
        if not isinstance(job_id, str) or not JOB_ID.fullmatch(job_id):
            raise ValueError(f"job_id must be 1 to 64 of A-Z a-z 0-9 _ . -, got {job_id!r}")
        if isinstance(set, bool) or not isinstance(set, int) or set < 0:
            raise ValueError(f"set must be an integer >= 0, got {set!r}")
        for name, value in (("priority", priority), ("timeout", timeout), ("connect_timeout", connect_timeout)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not (0 < value < math.inf):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        self.address, self.job_id, self.set, self.priority = address, job_id, set, float(priority)
        self.timeout, self.connect_timeout = float(timeout), float(connect_timeout)
        self.bandwidth: float | None = None
        """B as the arbiter announced it (OK line), once connected."""
        self._stderr = stderr
        self._sock: socket.socket | None = None
        self._pending = b""
        self._rate: float | None = None
        self._open = False  # between begin and end
        self._said = False  # the unscheduled line was printed since the last grant

    # ------------------------------------------------------------------ the job's calls

    def begin(self, nbytes: float) -> float | None:
        """Ask to begin an I/O phase of ``nbytes`` bytes; block until granted.

        Returns
        -------
        float or None
            The granted rate (bytes/s, the job's share of B), or None when the phase runs unscheduled
            (no grant within ``timeout``, the arbiter unreachable, gone or refusing the job).
        """
        if isinstance(nbytes, bool) or not isinstance(nbytes, int | float) or not (0 <= nbytes < math.inf):
            raise ValueError(f"nbytes must be a finite number >= 0, got {nbytes!r}")
        if self._open:
            raise RuntimeError("begin: a phase is already open; call end() first")
        self._open = True
        deadline = time.monotonic() + self.timeout
        line = f"BEGIN {nbytes!r}\n".encode()
        reused = self._sock is not None
        try:
            try:
                return self._request(line, deadline, connect=not reused)
            except _Lost:
                if not reused:
                    raise
                return self._request(line, deadline, connect=True)  # the old one was a stopped arbiter's
        except _Refused as refused:
            reason = f"{self.address} refused job {self.job_id} ({refused})"
        except TimeoutError:
            reason = f"no grant from {self.address} within {self.timeout:g} s"
        except _Unreachable as unreachable:
            reason = f"cannot reach {self.address} ({unreachable})"
        except _Lost as lost:
            reason = f"lost {self.address} ({lost})"
        self._unscheduled(reason)
        return None

    @property
    def rate(self) -> float | None:
        """The rate granted to the open phase, updated by the arbiter's RATE lines; None when unscheduled or idle."""
        if self._rate is not None and self._sock is not None:
            try:
                self._read_available()
            except (_Lost, _Refused) as lost:
                self._unscheduled(f"lost {self.address} ({lost})")
        return self._rate

    def end(self) -> None:
        """The I/O phase ended: the job's set may admit its next job."""
        if not self._open:
            raise RuntimeError("end: no phase is open; call begin() first")
        self._open = False
        if self._rate is not None and self._sock is not None:
            try:
                self._send(b"END\n")
            except _Lost:
                self._close_socket()  # noticed again, and said, at the next begin
        self._rate = None

    def close(self) -> None:
        """Leave the arbiter (an open phase ends with the connection)."""
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.sendall(b"BYE\n")
        self._close_socket()
        self._open, self._rate = False, None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the connection

    def _request(self, line: bytes, deadline: float, *, connect: bool) -> float:
        """Send BEGIN (connecting first if asked) and wait for its grant."""
        if connect:
            self._connect()
        self._send(line)
        self._rate = self._await_grant(deadline)
        self._said = False
        return self._rate

    def _connect(self) -> None:
        """Connect and say HELLO within ``connect_timeout``; _Unreachable or _Refused."""
        sock = socket.socket(self.family, socket.SOCK_STREAM)
        sock.settimeout(self.connect_timeout)
        try:
            sock.connect(self.target)
            if self.family != socket.AF_UNIX:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as error:
            sock.close()
            raise _Unreachable(error.strerror or type(error).__name__) from None
        self._sock, self._pending = sock, b""
        deadline = time.monotonic() + self.connect_timeout
        try:
            self._send(f"HELLO {PROTOCOL} {self.job_id} {self.set} {self.priority!r}\n".encode())
            word, value = self._next_line(deadline)
        except TimeoutError:
            self._close_socket()
            raise _Unreachable(f"no answer to HELLO within {self.connect_timeout:g} s") from None
        except _Lost as lost:
            raise _Unreachable(str(lost)) from None
        if word != "OK":
            self._close_socket()
            raise _Refused(value if word == "ERR" else f"unexpected answer {word!r}")
        self.bandwidth = float(value)

    def _await_grant(self, deadline: float) -> float:
        """The rate of the GRANT line; TimeoutError past ``deadline`` (the request is withdrawn by closing)."""
        try:
            while True:
                word, value = self._next_line(deadline)
                if word == "GRANT":
                    return float(value)
                if word == "ERR":
                    self._close_socket()
                    raise _Refused(value)
        except TimeoutError:
            self._close_socket()
            raise

    def _next_line(self, deadline: float) -> tuple[str, str]:
        """The next line as (word, rest); TimeoutError past ``deadline``, _Lost when the connection ends."""
        assert self._sock is not None
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self._sock.settimeout(left)
            self._receive()
        line, self._pending = self._pending.split(b"\n", 1)
        word, _, value = line.decode("ascii", "replace").strip().partition(" ")
        return word, value

    def _read_available(self) -> None:
        """Apply the lines that arrived (RATE) without blocking."""
        assert self._sock is not None
        self._sock.settimeout(0.0)
        try:
            while True:
                self._receive()
        except BlockingIOError:
            pass
        while b"\n" in self._pending:
            line, self._pending = self._pending.split(b"\n", 1)
            word, _, value = line.decode("ascii", "replace").strip().partition(" ")
            if word == "RATE" and self._rate is not None:
                self._rate = float(value)
            elif word == "ERR":
                raise _Refused(value)

    def _receive(self) -> None:
        """Append what the socket has (blocking as its timeout says); _Lost when the connection ends."""
        assert self._sock is not None
        try:
            data = self._sock.recv(4096)
        except (BlockingIOError, TimeoutError):
            raise
        except OSError as error:
            self._close_socket()
            raise _Lost(error.strerror or type(error).__name__) from None
        if not data:
            self._close_socket()
            raise _Lost("connection closed")
        self._pending += data

    def _send(self, data: bytes) -> None:
        assert self._sock is not None
        try:
            self._sock.settimeout(self.connect_timeout)
            self._sock.sendall(data)
        except OSError as error:
            self._close_socket()
            raise _Lost(error.strerror or type(error).__name__) from None

    def _close_socket(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock, self._pending = None, b""

    def _unscheduled(self, reason: str) -> None:
        """The phase runs unscheduled: one line on stderr until a grant comes again."""
        self._close_socket()
        self._rate = None
        if not self._said:
            self._said = True
            print(f"iosets-arbiter: {reason}: proceeding unscheduled", file=self._stderr or sys.stderr, flush=True)
