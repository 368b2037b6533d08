"""Worker processes that a crash or a hang in darshan-util cannot take down with the caller.

:class:`Pool` owns its workers (forked by the fork server, :mod:`._forkclient`) and their
connections. A worker that dies ends only the task it was running: that task gets a
:class:`Reply` whose ``died`` says how ("darshan-util crashed: signal 11 (SIGSEGV) while
reading DXT_POSIX"), the tasks queued behind it go to the other workers, and a new worker
takes its place; a task that runs longer than ``timeout`` is killed the same way.
:func:`run_isolated` runs one task in this process's own persistent worker.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any

from ..errors import InputError
from ._forkclient import ForkServer, Worker, fork_server

DEFAULT_TIMEOUT = 60.0
"""Seconds one trace may take in a worker before the worker is killed."""

_DEPTH = 2  # tasks sent to a worker ahead: it never waits for the caller between two tasks
_MAX_IDLE_DEATHS = 3  # workers in a row that die before starting a task: something else is broken

Task = tuple[Callable[[Any], Any], Any]


@dataclass(frozen=True)
class Reply:
    """How a task ended: its ``value``, the exception it raised, or why its worker died."""

    value: Any = None
    error: BaseException | None = None
    died: str | None = None


@dataclass
class _Slot:
    """A worker, the tasks it was sent (first: the one it runs), when that one started, and how many it answered."""

    worker: Worker
    tasks: deque = field(default_factory=deque)
    since: float = 0.0
    answered: int = 0
    closed: bool = False  # a send failed: it exited; its answers, if any, are still to be read


def _signal_name(number: int) -> str:
    try:
        return f"signal {number} ({signal.Signals(number).name})"
    except ValueError:
        return f"signal {number}"


def describe_end(status: int, stage: str, timeout: float | None) -> str:
    """Why a worker's task did not return, from its wait status and last stage (``timeout``: it overran)."""
    who, where = ("darshan-util", f" while {stage}") if stage else ("the worker process", "")
    if timeout is not None:
        return f"{who} did not finish within {timeout:g} s{where}"
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        return f"{who} crashed: {_signal_name(-code)}{where}"
    return f"{who} exited with status {code}{where}"


class Pool:
    """``size`` worker processes that run tasks and survive each other's deaths.

    Use as a context manager: leaving it (normally, on an error or on Ctrl-C) kills the workers.
    """

    def __init__(self, size: int) -> None:
        self._server: ForkServer = fork_server()
        self._threads = max(1, (os.cpu_count() or 1) // size)
        self._slots: list[_Slot] = []
        self._idle_deaths = 0
        try:
            for _ in range(size):
                self._slots.append(_Slot(self._server.spawn(self._threads)))
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Pool:
        return self

    def usable(self) -> bool:
        """True while the pool has workers (not closed) and its fork server lives."""
        return bool(self._slots) and self._server.alive()

    def __exit__(self, *exc_info) -> None:
        self.close()

    def pids(self) -> list[int]:
        """The process ids of the workers (a worker replaced after a death has a new one)."""
        return [slot.worker.pid for slot in self._slots]

    def run(self, tasks: Iterable[Task], *, timeout: float = DEFAULT_TIMEOUT) -> Iterator[tuple[int, Reply]]:
        """``(index, reply)`` of each task, in the order they end."""
        pending: deque = deque(enumerate(tasks))
        try:
            while pending or any(slot.tasks for slot in self._slots):
                yield from self._feed(pending)
                now = time.monotonic()
                busy = [slot for slot in self._slots if slot.tasks]
                left = min((slot.since + timeout - now for slot in busy), default=timeout)
                ready = wait([slot.worker.conn for slot in busy], timeout=max(left, 0.0))
                for slot in busy:
                    if slot.worker.conn in ready:
                        yield from self._receive(slot, pending)
                    elif time.monotonic() - slot.since > timeout:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(slot.worker.pid, signal.SIGKILL)
                        yield from self._replace(slot, pending, timeout)
        except BaseException:
            self.close()  # workers in the middle of a task cannot be reused
            raise

    def _feed(self, pending: deque) -> Iterator[tuple[int, Reply]]:
        """Send each worker tasks until it has ``_DEPTH``; an idle worker found dead is replaced."""
        for slot in self._slots:
            while pending and len(slot.tasks) < _DEPTH and not slot.closed:
                index, task = pending[0]
                try:
                    slot.worker.conn.send((*task, os.getcwd()))  # relative paths mean the caller's folder
                except OSError:  # it exited (retired or died): what it answered before is read first
                    slot.closed = True
                    if not slot.tasks:
                        yield from self._replace(slot, pending, None)
                    break
                pending.popleft()
                if not slot.tasks:
                    slot.since = time.monotonic()
                slot.tasks.append((index, task))

    def _receive(self, slot: _Slot, pending: deque) -> Iterator[tuple[int, Reply]]:
        try:
            ok, value, retire = slot.worker.conn.recv()
        except (EOFError, OSError):
            yield from self._replace(slot, pending, None)
            return
        index, _ = slot.tasks.popleft()
        slot.since = time.monotonic()
        slot.answered += 1
        yield index, (Reply(value=value) if ok else Reply(error=value))
        if retire:
            yield from self._replace(slot, pending, None)

    def _replace(self, slot: _Slot, pending: deque, timeout: float | None) -> Iterator[tuple[int, Reply]]:
        """The worker ended: the task it had started (if any) ended with it, the others go back to the queue."""
        slot.worker.conn.close()
        status, started, stage = self._server.wait(slot.worker.pid)
        tasks, slot.tasks = slot.tasks, deque()
        culprit = tasks.popleft() if tasks and started > slot.answered else None
        self._idle_deaths = 0 if culprit or started else self._idle_deaths + 1
        if self._idle_deaths > _MAX_IDLE_DEATHS:
            raise RuntimeError(f"analysis workers die before their first task ({describe_end(status, stage, None)})")
        slot.worker, slot.answered, slot.closed = self._server.spawn(self._threads), 0, False
        pending.extendleft(reversed(tasks))
        if culprit is not None:
            yield culprit[0], Reply(died=describe_end(status, stage, timeout))

    def close(self) -> None:
        """Kill the workers and reap them."""
        slots, self._slots = self._slots, []
        for slot in slots:
            with contextlib.suppress(ProcessLookupError):
                os.kill(slot.worker.pid, signal.SIGKILL)
            slot.worker.conn.close()
        if self._server.alive():
            for slot in slots:
                with contextlib.suppress(Exception):
                    self._server.wait(slot.worker.pid)


_shared: Pool | None = None
_shared_lock = threading.Lock()


def run_isolated(fn: Callable[[Any], Any], arg: Any, *, name: str, timeout: float = DEFAULT_TIMEOUT) -> Any:
    """``fn(arg)`` in this process's own worker (kept for the next call); its exception is raised here.

    A crash or an overrun raises InputError ``"{name}: darshan-util crashed: ..."``, and so does a task
    that passed the worker's memory limit (:mod:`._memory`).
    """
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.usable():  # first call, or closed by an interrupted run
            _shared = Pool(1)
        [(_, reply)] = list(_shared.run([(fn, arg)], timeout=timeout))
    if reply.died is not None:
        raise InputError(f"{name}: {reply.died}")
    if isinstance(reply.error, MemoryError):
        raise InputError(f"{name}: {reply.error}")
    if reply.error is not None:
        raise reply.error
    return reply.value
