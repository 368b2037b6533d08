"""`GroupCommit`: posted jobs stored by one writer thread, many per transaction, each answered after its commit.

A post's row waits in a queue; the writer takes every row waiting (at most ``max_batch``), stores them
in one transaction and only then resolves each post's future, so a 201 still means the row is
committed. Under load a commit serves many posts; alone, a post is its own batch and waits for nobody.
A batch that fails is retried one row at a time, so that a bad row fails its own post only.

The writer thread runs only on CPU time the thread that started it (the event loop that answers) does
not want: see :mod:`iosets.api._cpu`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ..errors import IosetsError
from ._cpu import yield_cpu

MAX_BATCH = 256
"""The most rows one transaction stores."""

Write = Callable[[list[dict[str, Any]]], list[Any]]


class GroupCommit:
    """Queue rows for ``write`` (rows -> one result per row, in order, committed when it returns).

    Parameters
    ----------
    write : callable
        Stores a batch of rows in one transaction and returns their results in order.
    max_batch : int, default=MAX_BATCH
        The most rows handed to one ``write``.
    """

    def __init__(self, write: Write, *, max_batch: int = MAX_BATCH):
        self.write = write
        self.max_batch = max_batch
        self._waiting: list[tuple[dict[str, Any], Future]] = []
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, row: dict[str, Any]) -> Future:
        """Queue ``row``; the future's result is ``write``'s for it, set once its transaction committed."""
        future: Future = Future()
        with self._ready:
            if self._closed:
                raise IosetsError("the service is stopping: the job was not stored")
            self._waiting.append((row, future))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="iosets-writer", daemon=True)
                self._thread.start()
            self._ready.notify()
        return future

    def close(self, timeout: float = 10.0) -> None:
        """Store what is queued, then stop the writer (a later ``submit`` raises IosetsError)."""
        with self._ready:
            self._closed = True
            self._ready.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        yield_cpu()
        while True:
            with self._ready:
                while not self._waiting and not self._closed:
                    self._ready.wait()
                if not self._waiting:
                    return
                batch, self._waiting = self._waiting[: self.max_batch], self._waiting[self.max_batch :]
            self._commit(batch)

    def _commit(self, batch: list[tuple[dict[str, Any], Future]]) -> None:
        try:
            results = self.write([row for row, _ in batch])
        except Exception as exc:  # noqa: BLE001 - the error is each waiting post's answer
            if len(batch) == 1:
                batch[0][1].set_exception(exc)
                return
            for item in batch:  # which row failed: each alone
                self._commit([item])
            return
        for (_, future), result in zip(batch, results, strict=True):
            future.set_result(result)
