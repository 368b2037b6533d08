"""`LogReaders`: the worker processes that analyse uploaded Darshan logs, one upload each at a time.

A log is read in a worker process (darshan-util's crash, overrun or memory limit kills only that
worker, :mod:`iosets.analyzer._pool`). With ``size`` workers, an upload that takes long (a
decompression bomb stopped at its inflation cap, a log at the read timeout) holds one of them: the
next uploads go to the others, and wait only when all ``size`` are busy.
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Any

from ..errors import InputError
from ._pool import DEFAULT_TIMEOUT, Pool
from ._worker import analyze_log


class LogReaders:
    """``size`` one-worker pools handed to one upload at a time (started on first use, closed by :meth:`close`).

    Parameters
    ----------
    size : int
        Logs analysed at once.
    timeout : float, default=60
        Seconds one log may take before its worker is killed (the upload answers 422 naming the stage).
    """

    def __init__(self, size: int, *, timeout: float = DEFAULT_TIMEOUT):
        self.size = size
        self.timeout = timeout
        self._idle: queue.Queue[Pool | None] = queue.Queue()
        for _ in range(size):
            self._idle.put(None)  # a slot whose pool starts on first use
        self._busy: dict[int, Pool] = {}
        self._started: list[Pool] = []
        self._lock = threading.Lock()
        self._closed = False

    def analyze(self, path: Path, name: str) -> dict[str, Any]:
        """The jobs-table row of the log at ``path``; InputError names the log as ``name``, never as ``path``."""
        pool = self._idle.get()
        try:
            if pool is None or not pool.usable():
                pool = Pool(1)
                with self._lock:
                    self._started.append(pool)
            with self._lock:
                self._busy[id(pool)] = pool
            try:
                [(_, reply)] = list(pool.run([(analyze_log, str(path))], timeout=self.timeout))
            finally:
                with self._lock:
                    self._busy.pop(id(pool), None)
        finally:
            self._idle.put(pool)
            if self._closed:
                self.close()
        if reply.died is not None:
            raise InputError(f"{name}: {reply.died}")
        if isinstance(reply.error, MemoryError):
            raise InputError(f"{name}: {reply.error}")
        if isinstance(reply.error, InputError):
            raise InputError(str(reply.error).replace(str(path), name)) from None
        if reply.error is not None:
            raise reply.error
        return reply.value

    def busy(self) -> list[int]:
        """The process ids of the workers analysing a log now."""
        with self._lock:
            return [pid for pool in self._busy.values() for pid in pool.pids()]

    def pids(self) -> list[int]:
        """The process ids of the workers started so far, busy or idle."""
        with self._lock:
            return [pid for pool in self._started if pool.usable() for pid in pool.pids()]

    def close(self) -> None:
        """Kill the idle workers now, the busy ones when their log is read."""
        self._closed = True
        while True:
            try:
                pool = self._idle.get_nowait()
            except queue.Empty:
                return
            if pool is not None:
                pool.close()
