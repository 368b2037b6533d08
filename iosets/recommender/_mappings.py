"""Set mappings: SET-b (IO-SETS paper, section IV-C), a Gaussian-mixture mapping, and the rule a fit learns."""

import re
import warnings
from dataclasses import dataclass, replace
from numbers import Integral
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from .._validation import check_positive
from ..errors import InputError
from ._clusters import fit_clusters
from ._params import check_fraction

MAPPINGS = ("set-10", "set-b", "gmm")
"""Set mappings: SET-10, SET-b (``base=`` or ``set-<b>``, e.g. ``set-2``), Gaussian mixture over log w_iter."""

TUNE_BASES = (2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0)
"""Bases of the SET-b mappings a tuning tries by default (``iosets.replay.tune``)."""

PRIORITY_RANGE = (1e-150, 1e150)
"""Priorities a mapping may give (about 1 / w_iter): the ratio of any two, a weight, stays a finite float64."""

_SET_B = re.compile(r"set-(\d+(?:\.\d+)?)")
_Name = TypeVar("_Name", str, None)


def _check_w_iter(w_iter) -> np.ndarray:
    """``w_iter`` as a float array, every value finite and > 0."""
    w = np.asarray(w_iter, dtype=np.float64)
    good = (w > 0) & np.isfinite(w)
    if not good.all():
        bad = np.flatnonzero(~good)[0]
        raise InputError(f"w_iter must be a finite number > 0, got {float(w.flat[bad])!r} at index {bad}")
    return w


def _check_base(base: float) -> float:
    """A base > 1: below 1, a higher set would get a higher priority."""
    if not check_positive(base, "base") > 1:
        raise InputError(f"base must be a finite number > 1, got {base!r}")
    return float(base)


def _check_priorities(priority: np.ndarray, sets: np.ndarray) -> np.ndarray:
    """``priority`` if every value lies in :data:`PRIORITY_RANGE`; else an InputError naming the set."""
    low, high = PRIORITY_RANGE
    bad = np.flatnonzero(~((priority >= low) & (priority <= high)))
    if bad.size:
        raise InputError(
            f"set {int(sets.flat[bad[0]])} would get priority {float(priority.flat[bad[0]]):.3g}, outside "
            f"{low:g}..{high:g} where the weights (ratios of priorities) stay finite: a w_iter of about "
            "1 / priority, or such a conservative set, is too extreme"
        )
    return priority


def map_sets(w_iter, *, base: float = 10.0) -> np.ndarray:
    """SET-b mapping: the set of a job is round(log_b w_iter), halves rounded up.

    This is the one place that computes a SET-b set; the recommender and the replay's
    SET-10 policies all call it.

    Examples
    --------
    >>> map_sets([3.16, 4, 31, 32, 316, 317]).tolist()
    [0, 1, 1, 2, 2, 3]
    """
    return _set_b(_check_w_iter(w_iter), _check_base(base))


def _set_b(w_iter: np.ndarray, base: float) -> np.ndarray:
    """:func:`map_sets` of checked values."""
    return np.floor(np.log(w_iter) / np.log(base) + 0.5).astype(np.int64)


def set_priorities(sets, *, base: float = 10.0) -> np.ndarray:
    """Priority of each set: base ** -set (SET-10: S1 -> 0.1, S2 -> 0.01), within :data:`PRIORITY_RANGE`."""
    base = _check_base(base)
    sets = np.asarray(sets)
    with np.errstate(over="ignore"):  # an overflow is inf, which the check names
        return _check_priorities(np.power(base, -sets.astype(np.float64)), sets)


def cluster_sets(w_iter, *, max_sets: int = 8, random_state: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sets from a Gaussian mixture of log10 w_iter whose number of components minimises BIC.

    Returns ``(sets, priority_of_set)`` (see :func:`fit_clusters`).

    Examples
    --------
    >>> sets, prio = cluster_sets([1, 1.2, 0.9, 1000, 1100, 950])
    >>> sets.tolist(), prio.round(3).tolist()
    ([0, 0, 0, 1, 1, 1], [0.975, 0.001])
    """
    log_w = np.log10(_check_w_iter(w_iter))
    cuts, labels, priority_of = fit_clusters(log_w, max_sets=max_sets, random_state=random_state)
    return labels[np.searchsorted(cuts, log_w)], priority_of


def mapping_base(mapping: str, base: float) -> float | None:
    """The base of a SET-b mapping name (``set-10``, ``set-b`` with ``base``, ``set-2``...), None for ``gmm``."""
    if mapping == "gmm":
        return None
    if mapping == "set-b":
        return _check_base(base)
    match = _SET_B.fullmatch(mapping) if isinstance(mapping, str) else None
    if match is None:
        raise InputError(f"unknown mapping {mapping!r}; expected one of {', '.join(MAPPINGS)} or set-<base>")
    return _check_base(float(match.group(1)))


def renamed_policy(mapping: _Name, policy: str | None) -> _Name | str:
    """``mapping``, or the mapping passed under its former keyword ``policy=`` (deprecated; the replay's word)."""
    if policy is None:
        return mapping
    warnings.warn("the recommender's policy= is now mapping=", DeprecationWarning, stacklevel=3)
    if mapping not in (None, "set-10", policy):
        raise InputError(f"give the mapping once: mapping={mapping!r} and policy={policy!r}")
    return policy


@dataclass(frozen=True, eq=False)
class SetMapping:
    """The rule a recommender learns: a job's set and priority from its w_iter and its confidence.

    SET-b (``base``) puts w_iter in set round(log_b w_iter) with priority b ** -set;
    ``gmm`` (``base`` None) puts it in set ``labels[searchsorted(cuts, log10 w_iter)]``
    with priority ``priority_of[set]``. Under both a larger set has a lower priority. A
    job on thin evidence (w_iter missing, or a confidence below ``min_confidence`` or
    NaN) goes to ``conservative_set``, or to the set of its w_iter when that one has a
    lower priority: never to a set of higher priority.
    ``lowest_priority`` is the lowest priority of the jobs it was fitted on: the
    reference of the WFQ and RBFQ weights (None if there were none).
    """

    name: str
    base: float | None
    cuts: np.ndarray
    labels: np.ndarray
    priority_of: np.ndarray
    conservative_set: int
    min_confidence: float
    lowest_priority: float | None = None

    def priorities(self, sets: npt.ArrayLike) -> np.ndarray:
        """Priority of each set, within :data:`PRIORITY_RANGE`."""
        if self.base is not None:
            return set_priorities(sets, base=self.base)
        sets = np.asarray(sets)
        return _check_priorities(self.priority_of[sets], sets)

    def classify(self, w_iter: npt.ArrayLike, confidence: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(sets, conservative)`` of jobs, ``conservative`` True on thin evidence; ``w_iter`` NaN where unknown."""
        w = np.asarray(w_iter, dtype=np.float64)
        known = w > 0
        ok = known & (np.asarray(confidence, dtype=np.float64) >= self.min_confidence)
        sets = np.full(w.shape, self.conservative_set, np.int64)
        sets[known] = self._map(w[known])
        thin = ~ok
        sets[thin] = np.maximum(sets[thin], self.conservative_set)  # a larger set has a lower priority
        return sets, thin

    def classify_one(self, w_iter: float | None, confidence: float) -> tuple[int, bool]:
        """:meth:`classify` of one job, with few arrays (a service answers one job at a time): ``(set,
        conservative)``; ``w_iter`` None or NaN where unknown."""
        known = w_iter is not None and w_iter > 0
        thin = not (known and confidence >= self.min_confidence)
        set_ = int(self._map(np.array([w_iter], dtype=np.float64))[0]) if known else self.conservative_set
        return (max(set_, self.conservative_set) if thin else set_), thin

    def _map(self, w_iter: np.ndarray) -> np.ndarray:
        """The set of each (known) w_iter under the mapping (its base was checked when it was made)."""
        if self.base is None:
            return self.labels[np.searchsorted(self.cuts, np.log10(w_iter))]
        return _set_b(_check_w_iter(w_iter), self.base)

    def assign(self, w_iter: npt.ArrayLike, confidence: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(sets, priorities, conservative)`` of jobs; ``w_iter`` NaN where unknown."""
        sets, conservative = self.classify(w_iter, confidence)
        return sets, self.priorities(sets), conservative


def fit_mapping(
    w_iter: np.ndarray,
    confidence: np.ndarray,
    *,
    mapping: str = "set-10",
    base: float = 10.0,
    min_confidence: float = 0.5,
    conservative_set: int | None = None,
    max_sets: int = 8,
    random_state: int = 0,
) -> SetMapping:
    """Learn the :class:`SetMapping` of jobs (``w_iter`` NaN where unknown) under ``mapping``.

    The conservative set defaults to one set below the lowest-priority set of the
    confidently mapped jobs (IO-SETS paper, section VII-B), so that unknown jobs never slow
    down known ones; ``gmm`` adds a set a decade below its clusters for it. A NaN
    ``confidence`` (a job found not periodic) is below any ``min_confidence``.
    """
    set_base = mapping_base(mapping, base)
    check_fraction(min_confidence, "min_confidence")
    if conservative_set is not None and (
        isinstance(conservative_set, bool) or not isinstance(conservative_set, Integral)
    ):
        raise InputError(f"conservative_set must be an integer, got {conservative_set!r}")
    w = np.asarray(w_iter, dtype=np.float64)
    ok = (w > 0) & (np.asarray(confidence, dtype=np.float64) >= min_confidence)
    cuts, labels, priority_of = np.empty(0), np.empty(0, np.int64), np.empty(0)
    if set_base is None:
        log_w = np.log10(w[ok])
        cuts, labels, priority_of = fit_clusters(log_w, max_sets=max_sets, random_state=random_state)
        priority_of = np.append(priority_of, priority_of[-1] / 10 if priority_of.size else 1.0)
        known = labels[np.searchsorted(cuts, log_w)]
    else:
        known = map_sets(w[ok], base=set_base)
    if conservative_set is None:
        conservative_set = int(known.max()) + 1 if known.size else 0
    elif set_base is None and not 0 <= conservative_set < priority_of.size:
        raise InputError(f"conservative_set {conservative_set} must lie in 0..{priority_of.size - 1} (gmm sets)")
    rule = SetMapping(mapping, set_base, cuts, labels, priority_of, int(conservative_set), float(min_confidence))
    priorities = rule.assign(w, confidence)[1]
    return replace(rule, lowest_priority=float(priorities.min()) if priorities.size else None)
