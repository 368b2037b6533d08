"""Set mappings and priorities of the IO-SETS method (seed 004, section IV-C)."""

import numpy as np

from .._validation import check_positive
from ..errors import InputError


def map_sets(w_iter, *, base: float = 10.0) -> np.ndarray:
    """SET-b mapping: the set of a job is round(log_b w_iter), halves rounded up.

    Examples
    --------
    >>> map_sets([3.16, 4, 31, 32, 316, 317]).tolist()
    [0, 1, 1, 2, 2, 3]
    """
    check_positive(base, "base")
    if base == 1:
        raise InputError("base must differ from 1")
    w = np.asarray(w_iter, dtype=np.float64)
    if np.any(~(w > 0)):
        bad = np.flatnonzero(~(w > 0))[0]
        raise InputError(f"w_iter must be > 0, got {float(w.flat[bad])!r} at index {bad}")
    return np.floor(np.log(w) / np.log(base) + 0.5).astype(np.int64)


def set_priorities(sets, *, base: float = 10.0) -> np.ndarray:
    """Priority of each set: base ** -set (SET-10: S1 -> 0.1, S2 -> 0.01)."""
    check_positive(base, "base")
    return np.power(float(base), -np.asarray(sets, dtype=np.float64))
