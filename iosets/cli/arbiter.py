"""``iosets arbiter``: the IO-SETS arbiter, a daemon that jobs tell when an I/O phase begins and ends."""

from __future__ import annotations

import resource
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from ._choices import ARBITER_POLICIES, one_of
from ._output import echo

if TYPE_CHECKING:
    from ..arbiter import Arbiter

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def arbiter(
    listen: Annotated[
        list[str],
        typer.Option(
            metavar="ADDRESS",
            help="unix:PATH or tcp:HOST:PORT (repeat the option for several; tcp port 0 picks a free port).",
            show_default=False,
        ),
    ],
    bandwidth: Annotated[
        float,
        typer.Option(help="B, the storage's bandwidth in bytes/s: a performing job is granted B p / sum of p."),
    ],
    policy: Annotated[
        str, typer.Option(help=f"What the set and priority a job sends count for. {one_of(ARBITER_POLICIES)}")
    ] = "set-10",
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote", help="Listen on a tcp address that is not loopback (the protocol has no authentication)."
        ),
    ] = False,
) -> None:
    """Run the IO-SETS arbiter: one job per set does I/O at a time, FCFS; performing jobs share B by priority."""
    from ..arbiter import Arbiter

    _raise_open_files_limit()
    server = Arbiter(listen, policy=policy, bandwidth=bandwidth, allow_remote=allow_remote)
    with server, _stopped_by_signals(server):
        _say(
            f"iosets arbiter: listening on {' '.join(server.addresses)} "
            f"(policy {policy}, bandwidth {bandwidth:g} B/s); Ctrl-C or SIGTERM stops it"
        )
        summary = server.serve()
    _say(f"iosets arbiter: stopped: {summary}")


def _say(line: str) -> None:
    """One line on stdout, flushed at once: whoever started the daemon reads where it listens from it."""
    echo(line, stderr=False)
    sys.stdout.flush()


@contextmanager
def _stopped_by_signals(server: Arbiter) -> Iterator[None]:
    """SIGINT and SIGTERM stop ``server``: Python's signal handler writes to its wakeup descriptor."""
    handlers = {number: signal.signal(number, _stop_quietly) for number in STOP_SIGNALS}
    previous = signal.set_wakeup_fd(server.wakeup_fd, warn_on_full_buffer=False)
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        for number, handler in handlers.items():
            signal.signal(number, handler)


def _stop_quietly(number: int, frame: object) -> None:
    """The arbiter stops through the wakeup descriptor: no KeyboardInterrupt."""


def _raise_open_files_limit() -> None:
    """Soft open-files limit up to the hard one: each job holds a connection (1024 is a common soft limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
