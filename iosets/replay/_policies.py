"""Policies of the IO-SETS paper as set and priority assignments for a workload."""

import numpy as np

from .._validation import check_choice
from ..errors import InputError
from ..recommender import map_sets, set_priorities
from ..workload import Workload

POLICIES = (
    "exclusive-fcfs",
    "fair-share",
    "set-10",
    "set-fairshare",
    "share-priority",
    "clairvoyant",
    "explicit",
)
"""Policy names accepted by :func:`assign_policy` and :func:`replay_phases`."""


def assign_policy(workload: Workload, policy: str) -> tuple[np.ndarray, np.ndarray]:
    """Sets (int64) and priorities (float64) per job under ``policy``.

    ``exclusive-fcfs``: one set; ``fair-share``: a set per job, equal priority;
    ``set-10``: set round(log10 w_iter), priority 10^-set; ``set-fairshare``: SET-10's
    sets, equal priority; ``share-priority``: a set per job, SET-10's priority;
    ``clairvoyant``: a set per generator profile, priority 1 / (profile's mean w_iter),
    which equals SET-10's for profiles centred on powers of ten; ``explicit``: the
    workload's own ``set`` and ``priority`` columns.
    """
    check_choice(policy, "policy", POLICIES)
    n = workload.n_jobs
    if policy == "explicit":
        return _explicit(workload)
    if policy == "exclusive-fcfs":
        return np.zeros(n, np.int64), np.ones(n)
    if policy == "fair-share":
        return np.arange(n, dtype=np.int64), np.ones(n)
    if policy == "clairvoyant":
        return _clairvoyant(workload)
    sets = map_sets(_w_iter(workload))
    if policy == "set-10":
        return sets, set_priorities(sets)
    if policy == "set-fairshare":
        return sets, np.ones(n)
    return np.arange(n, dtype=np.int64), set_priorities(sets)  # share-priority


def _w_iter(workload: Workload) -> np.ndarray:
    w = workload.characteristic_times()
    # a job without phases never asks for I/O: any positive value will do
    return np.where(np.isnan(w), 1.0, w)


def _explicit(workload: Workload) -> tuple[np.ndarray, np.ndarray]:
    sets, priorities = workload.optional["set"], workload.optional["priority"]
    for column, values in (("set", sets), ("priority", priorities)):
        missing = np.flatnonzero(np.isnan(values))
        if missing.size:
            raise InputError(f"policy 'explicit': job {workload.ids[missing[0]]!r} has no {column}")
    return sets.astype(np.int64), priorities


def _clairvoyant(workload: Workload) -> tuple[np.ndarray, np.ndarray]:
    profile = workload.optional["profile"]
    missing = np.flatnonzero(np.isnan(profile))
    if missing.size:
        job = workload.ids[missing[0]]
        raise InputError(f"policy 'clairvoyant' needs the generator's profiles; job {job!r} has none")
    sets = profile.astype(np.int64)
    _, inverse = np.unique(sets, return_inverse=True)
    w = _w_iter(workload)
    mean_w = np.bincount(inverse, weights=w) / np.bincount(inverse)
    return sets, 1.0 / mean_w[inverse]
