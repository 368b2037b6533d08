"""`JobIdWindow`: a posted job id may not run far ahead of the stored ones (a token cannot claim future jobs).

A job is stored once per job id (a repeated post is answered with the stored row), so a write token
that posts id 9000000 today would shadow the real job 9000000 when it ends. Scheduler ids grow: a job
id whose leading number is more than ``window`` above the newest stored one is refused (422). Ids
without a leading number (trace names) are not bounded; the first job of an empty store sets the start;
``window = 0`` turns the bound off.
"""

from __future__ import annotations

import re
import threading

from ..errors import InputError
from ._store import Store

_LEADING = re.compile(r"\d{1,18}")  # Slurm: 1234, 1234_7 (array), 1234+1 (heterogeneous)


def job_number(job_id: str) -> int | None:
    """The leading number of a job id, None without one.

    Examples
    --------
    >>> job_number("1234_7"), job_number("wrap"), job_number("77+1")
    (1234, None, 77)
    """
    match = _LEADING.match(job_id)
    return None if match is None else int(match.group())


class JobIdWindow:
    """The newest stored job number (read from the store on first use and before refusing), and the bound."""

    def __init__(self, store: Store, window: int):
        self.store = store
        self.window = window
        self._newest: int | None = None
        self._read = False
        self._lock = threading.Lock()

    def check(self, job_id: str) -> None:
        """Accept ``job_id`` (and remember it as the newest) or raise InputError naming the bound."""
        number = job_number(job_id)
        if number is None or self.window == 0:
            return
        with self._lock:
            if not self._read or not self._within(number):  # another replica may have stored newer ids
                self._newest, self._read = self.store.newest_job_number(), True
            if not self._within(number):
                raise InputError(
                    f"job_id {job_id!r}: more than {self.window} above the newest stored job id ({self._newest}):"
                    " a job id from the future? (the [service] job_id_window setting)"
                )
            self._newest = number if self._newest is None else max(self._newest, number)

    def _within(self, number: int) -> bool:
        return self._newest is None or number <= self._newest + self.window
