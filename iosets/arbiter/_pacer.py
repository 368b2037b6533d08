"""A token bucket that paces a writer to the rate the arbiter granted (standard library only)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable


class Pacer:
    """Paces requests to ``rate`` bytes/s: call :meth:`wait` before each request.

    A request of n bytes may start once the bytes before it are paid for at the rate, i.e. the
    bytes started by time t never exceed ``rate * t`` plus one request plus ``burst``; idle time
    earns at most ``burst`` bytes of credit. Setting :attr:`rate` (a RATE line changed the job's
    share) re-prices the bytes not yet paid for at the new rate. A rate of None paces nothing
    (the phase runs unscheduled).

    Parameters
    ----------
    rate : float or None
        Bytes/s (> 0), or None for no pacing.
    burst : float, default=0.0
        Bytes of credit that idle time may earn.
    clock, sleep : callable, default=time.monotonic, time.sleep
        The clock (s) and the sleep; tests pass a virtual pair.

    Examples
    --------
    >>> now = [0.0]
    >>> pacer = Pacer(100.0, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    >>> pacer.wait(50), pacer.wait(50), pacer.wait(100)   # seconds slept before each request
    (0.0, 0.5, 0.5)
    """

    def __init__(
        self,
        rate: float | None,
        *,
        burst: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        if not (0 <= burst < math.inf):
            raise ValueError(f"burst must be a finite number >= 0 (bytes), got {burst!r}")
        self.burst = float(burst)
        self._clock, self._sleep = clock, sleep
        self._rate: float | None = None
        self._due = clock()  # when every byte admitted so far is paid for
        self.rate = rate

    @property
    def rate(self) -> float | None:
        """Bytes/s, or None for no pacing."""
        return self._rate

    @rate.setter
    def rate(self, rate: float | None) -> None:
        if rate is not None and not (0 < rate < math.inf):
            raise ValueError(f"rate must be a finite number > 0 (bytes/s) or None, got {rate!r}")
        now = self._clock()
        if self._rate is None or rate is None:
            self._due = now
        elif rate != self._rate:
            unpaid = max(self._due - now, 0.0) * self._rate
            self._due = now + unpaid / rate
        self._rate = None if rate is None else float(rate)

    def wait(self, nbytes: float) -> float:
        """Sleep until a request of ``nbytes`` may start; the seconds slept."""
        if self._rate is None:
            return 0.0
        now = self._clock()
        start = max(self._due, now - self.burst / self._rate)
        self._due = start + nbytes / self._rate
        delay = start - now
        if delay <= 0:
            return 0.0
        self._sleep(delay)
        return delay
