"""`TokenBucket`: at most ``rate`` requests per second per key, in bursts of up to ``2 x rate``."""

from __future__ import annotations

import math
import threading
import time


class TokenBucket:
    """One bucket per key (a token id), refilled at ``rate`` per second up to ``burst``.

    Examples
    --------
    >>> bucket = TokenBucket(rate=1.0, burst=2.0, clock=lambda: 0.0)
    >>> [bucket.take("t") for _ in range(3)]
    [0.0, 0.0, 1.0]
    """

    def __init__(self, rate: float, burst: float | None = None, clock=time.monotonic):
        self.rate = rate
        self.burst = 2.0 * rate if burst is None else burst
        self._clock = clock
        self._levels: dict[object, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: object) -> float:
        """Take one request from ``key``'s bucket: 0.0 if allowed, else the seconds until one is."""
        with self._lock:
            now = self._clock()
            level, then = self._levels.get(key, (self.burst, now))
            level = min(self.burst, level + (now - then) * self.rate)
            if level >= 1.0:
                self._levels[key] = (level - 1.0, now)
                return 0.0
            self._levels[key] = (level, now)
            return (1.0 - level) / self.rate


def retry_after(wait: float) -> str:
    """The ``Retry-After`` header value (whole seconds, at least 1) of a wait."""
    return str(max(1, math.ceil(wait)))
