"""An arbiter in this process: its listening sockets, the C event loop, a clean stop."""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import socket
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from .._validation import check_choice, check_positive
from ..errors import InputError
from . import _core
from ._admission import ARBITER_POLICIES
from ._client import parse_address

BACKLOG = 4096
"""Connections the kernel queues before the arbiter accepts them (capped by net.core.somaxconn)."""


@dataclass(frozen=True)
class ArbiterSummary:
    """What an arbiter did until it stopped (:meth:`Arbiter.serve`)."""

    connections: int
    """Connections accepted."""
    jobs: int
    """Jobs seen: HELLOs answered OK."""
    grants: int
    """Phases granted: GRANT lines sent."""
    errors: int
    """ERR lines sent."""
    dropped: int
    """Connections closed because their client read none of its lines."""

    def __str__(self) -> str:
        return (
            f"{_count(self.jobs, 'job')} seen, {_count(self.grants, 'phase')} granted "
            f"({_count(self.connections, 'connection')}, {_count(self.errors, 'protocol error')}, "
            f"{self.dropped} dropped for not reading)"
        )


def _count(n: int, noun: str) -> str:
    """``"1 job"``, ``"2 jobs"``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


class Arbiter:
    """The IO-SETS arbiter of ``iosets arbiter``, in this process.

    It listens as soon as it is made (so a bad or busy address fails here), serves in
    :meth:`serve` (blocking, without the GIL) or :meth:`start` (a background thread), and stops
    at :meth:`stop`, from any thread, or when a byte is written to :attr:`wakeup_fd` (the daemon
    gives it to :func:`signal.set_wakeup_fd`, so SIGINT and SIGTERM stop it cleanly).

    Parameters
    ----------
    listen : str or sequence of str
        ``unix:PATH`` or ``tcp:HOST:PORT`` (port 0: a free one, see :attr:`addresses`). A unix socket
        file left by a stopped arbiter is replaced; one that something listens on is an error.
    policy : str, default="set-10"
        One of :data:`ARBITER_POLICIES`.
    bandwidth : float
        B in bytes/s: the rates granted are shares of it.
    allow_remote : bool, default=False
        Listen on a tcp address that is not a loopback one. The protocol has no authentication:
        anyone who can connect can hold a set, so only a trusted network should reach it.

    Examples
    --------
    >>> from iosets.arbiter import Client
    >>> with Arbiter("tcp:127.0.0.1:0", bandwidth=1e9).start() as arbiter:
    ...     with Client(arbiter.addresses[0], "job-1", set=0, priority=1.0) as client:
    ...         rate = client.begin(4e9)
    ...         client.end()
    >>> rate, arbiter.summary.grants
    (1000000000.0, 1)
    """

    def __init__(
        self, listen: str | Sequence[str], *, policy: str = "set-10", bandwidth: float, allow_remote: bool = False
    ) -> None:
        self.policy = check_choice(policy, "policy", ARBITER_POLICIES)
        self.bandwidth = check_positive(bandwidth, "bandwidth")
        wanted = [listen] if isinstance(listen, str) else list(listen)
        if not wanted:
            raise InputError("listen: expected at least one address (unix:PATH or tcp:HOST:PORT)")
        self.summary: ArbiterSummary | None = None
        """The counts of :meth:`serve`, once it returned."""
        self._sockets: list[socket.socket] = []
        self._unix_files: list[tuple[str, int]] = []  # (path, inode) of the socket files made here
        self._thread: threading.Thread | None = None
        self._served = False
        self._stop_read, self._stop_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            self.addresses = [self._listen(address, allow_remote) for address in wanted]
            """The addresses listened on, a tcp port 0 replaced by the port given."""
        except BaseException:
            self.close()
            raise

    @property
    def wakeup_fd(self) -> int:
        """A descriptor whose writing stops :meth:`serve` (for :func:`signal.set_wakeup_fd`)."""
        return self._stop_write

    def serve(self) -> ArbiterSummary:
        """Serve until :meth:`stop` (blocking; the GIL is released); the counts of what was done."""
        if self._served:
            raise RuntimeError("an Arbiter serves once; make a new one")
        self._served = True
        counts = _core.serve(
            listen_fds=[sock.fileno() for sock in self._sockets],
            stop_fd=self._stop_read,
            policy=self.policy,
            bandwidth=self.bandwidth,
        )
        self.summary = ArbiterSummary(**counts)
        return self.summary

    def start(self) -> Arbiter:
        """Serve in a background thread; returns the arbiter (``with Arbiter(...).start() as a:``)."""
        self._thread = threading.Thread(target=self.serve, name="iosets-arbiter", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask :meth:`serve` to return (every connection is closed); safe from any thread."""
        with contextlib.suppress(BlockingIOError):  # the pipe is full: a stop is already pending
            os.write(self._stop_write, b"s")

    def close(self) -> None:
        """Stop, wait for the serving thread, close the sockets and remove the unix socket files made here."""
        if self._stop_write >= 0:
            self.stop()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        for sock in self._sockets:
            sock.close()
        self._sockets.clear()
        for path, inode in self._unix_files:
            try:
                if os.lstat(path).st_ino == inode:
                    os.unlink(path)
            except FileNotFoundError:
                pass
        self._unix_files.clear()
        for fd in (self._stop_read, self._stop_write):
            if fd >= 0:
                os.close(fd)
        self._stop_read = self._stop_write = -1

    def __enter__(self) -> Arbiter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ listening

    def _listen(self, address: str, allow_remote: bool) -> str:
        """Listen on ``address``; the address as listened on."""
        try:
            family, target = parse_address(address)
        except ValueError as error:
            raise InputError(str(error)) from None
        sock = socket.socket(family, socket.SOCK_STREAM)
        self._sockets.append(sock)
        if isinstance(target, str):
            self._bind_unix(sock, target)
            return f"unix:{target}"
        host, port = target
        try:
            resolved = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)[0][4]
        except socket.gaierror as error:
            raise InputError(f"{address}: cannot resolve {host!r}: {error.strerror}") from None
        if not allow_remote and not ipaddress.ip_address(resolved[0]).is_loopback:
            raise InputError(
                f"{address}: {host} is not a loopback address, and the arbiter's protocol has no authentication; "
                "listen there only on a trusted network, with --allow-remote"
            )
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart binds while old connections linger
        try:
            sock.bind(resolved)
            sock.listen(BACKLOG)
        except OSError as error:
            raise InputError(f"{address}: cannot listen: {error.strerror}") from None
        bound = sock.getsockname()
        return f"tcp:[{bound[0]}]:{bound[1]}" if family == socket.AF_INET6 else f"tcp:{bound[0]}:{bound[1]}"

    def _bind_unix(self, sock: socket.socket, path: str) -> None:
        try:
            sock.bind(path)
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                raise InputError(f"unix:{path}: cannot listen: {error.strerror}") from None
            _remove_stale_socket(path)
            sock.bind(path)
        sock.listen(BACKLOG)
        self._unix_files.append((path, os.lstat(path).st_ino))


def _remove_stale_socket(path: str) -> None:
    """Remove the socket file ``path`` if nothing listens on it; else an InputError naming it."""
    if not stat.S_ISSOCK(os.lstat(path).st_mode):
        raise InputError(f"unix:{path}: the file exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
    except ConnectionRefusedError:  # a stopped arbiter's file: nobody listens
        os.unlink(path)
        return
    except FileNotFoundError:
        return
    except OSError:
        pass  # a full backlog or a slow listener: something is there
    finally:
        probe.close()
    raise InputError(f"unix:{path}: something already listens on this socket (another arbiter?); stop it first")
