"""Set mappings: SET-b (seed 004, section IV-C) and a data-driven Gaussian-mixture mapping."""

import numpy as np

from .._validation import check_count, check_positive
from ..errors import InputError


def _check_w_iter(w_iter) -> np.ndarray:
    """``w_iter`` as a float array, every value > 0."""
    w = np.asarray(w_iter, dtype=np.float64)
    if np.any(~(w > 0)):
        bad = np.flatnonzero(~(w > 0))[0]
        raise InputError(f"w_iter must be > 0, got {float(w.flat[bad])!r} at index {bad}")
    return w


def _check_base(base: float) -> float:
    check_positive(base, "base")
    if base == 1:
        raise InputError("base must differ from 1")
    return float(base)


def map_sets(w_iter, *, base: float = 10.0) -> np.ndarray:
    """SET-b mapping: the set of a job is round(log_b w_iter), halves rounded up.

    Examples
    --------
    >>> map_sets([3.16, 4, 31, 32, 316, 317]).tolist()
    [0, 1, 1, 2, 2, 3]
    """
    base = _check_base(base)
    w = _check_w_iter(w_iter)
    return np.floor(np.log(w) / np.log(base) + 0.5).astype(np.int64)


def set_priorities(sets, *, base: float = 10.0) -> np.ndarray:
    """Priority of each set: base ** -set (SET-10: S1 -> 0.1, S2 -> 0.01)."""
    base = _check_base(base)
    return np.power(base, -np.asarray(sets, dtype=np.float64))


def cluster_sets(w_iter, *, max_sets: int = 8, random_state: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sets from a Gaussian mixture of log10 w_iter whose number of components minimises BIC.

    Sets are numbered 0, 1, ... by increasing mean w_iter; the priority of a set is
    10 ** -(its mean log10 w_iter), so that a cluster centred on a power of ten gets
    SET-10's priority. Returns ``(sets, priority_of_set)``.

    Examples
    --------
    >>> sets, prio = cluster_sets([1, 1.2, 0.9, 1000, 1100, 950])
    >>> sets.tolist(), prio.round(3).tolist()
    ([0, 0, 0, 1, 1, 1], [0.975, 0.001])
    """
    from sklearn.mixture import GaussianMixture

    max_sets = check_count(max_sets, "max_sets", minimum=1)
    x = np.log10(_check_w_iter(w_iter)).reshape(-1, 1)
    if x.shape[0] == 0:
        return np.empty(0, np.int64), np.empty(0)
    n_max = min(max_sets, np.unique(x).size)
    best, best_bic = None, np.inf
    for k in range(1, n_max + 1):
        model = GaussianMixture(n_components=k, random_state=random_state, reg_covar=1e-4).fit(x)
        bic = model.bic(x)
        if bic < best_bic:
            best, best_bic = model, bic
    labels = best.predict(x)
    used = np.unique(labels)
    means = best.means_[used, 0]
    rank = np.empty(best.n_components, np.int64)
    rank[used[np.argsort(means)]] = np.arange(used.size)
    return rank[labels], np.power(10.0, -np.sort(means))
