"""The arbiter's admission rules on a virtual clock: its C core, driven without sockets."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from .._validation import check_choice, check_count, check_positive
from ..errors import InputError
from . import _core

ARBITER_POLICIES = ("set-10", "exclusive-fcfs", "fair-share", "share-priority")
"""Policies of ``iosets arbiter``: what the set and priority a job sends count for.

``set-10``: both as sent (the job learned them from its recommendation); ``exclusive-fcfs``: every
job in one set, priority 1; ``fair-share``: a set per job, priority 1; ``share-priority``: a set
per job, the priority sent.
"""


@dataclass(frozen=True)
class Applied:
    """What one date's events did: ``grants`` and rate ``changes`` as ``(job, rate)`` pairs (bytes/s).

    A job granted at this date is in ``grants`` only; ``changes`` lists the other performing jobs
    whose rate changed, as the arbiter sends them RATE lines.
    """

    date: float
    grants: list[tuple[str, float]]
    changes: list[tuple[str, float]]


class Admission:
    """The admission core of ``iosets arbiter``, applied one date at a time.

    At most one job per set performs, FCFS within a set by BEGIN order; performing jobs share the
    bandwidth in proportion to their priorities (rate ``B p_i / sum p``). The events of one date
    apply as the phase engine orders them: completions (``ends``) and departures (``leaves``), then
    requests (``begins``, in the order given), then each free set admits its FCFS head.

    Parameters
    ----------
    policy : str, default="set-10"
        One of :data:`ARBITER_POLICIES`.
    bandwidth : float
        B in bytes/s.

    Examples
    --------
    >>> adm = Admission("set-10", bandwidth=1e9)
    >>> adm.join("a", set=0, priority=1.0); adm.join("b", set=1, priority=0.25)
    >>> adm.apply(0.0, begins=[("a", 2e9), ("b", 1e9)]).grants
    [('a', 800000000.0), ('b', 200000000.0)]
    >>> adm.apply(2.5, ends=["a"]).changes  # a moved its 2 GB at 0.8 GB/s
    [('b', 1000000000.0)]
    """

    def __init__(self, policy: str = "set-10", *, bandwidth: float) -> None:
        check_choice(policy, "policy", ARBITER_POLICIES)
        self.policy = policy
        self.bandwidth = check_positive(bandwidth, "bandwidth")
        self.date = -math.inf
        """The date of the last :meth:`apply`."""
        self._core = _core.Admission(policy, self.bandwidth)
        self._handles: dict[str, int] = {}
        self._names: dict[int, str] = {}

    @property
    def performing(self) -> int:
        """How many jobs perform now."""
        return self._core.performing

    def join(self, job: str, *, set: int = 0, priority: float = 1.0) -> None:  # noqa: A002 - the protocol's word
        """A new job (idle), with the set and priority it sends; the policy decides what they count for."""
        if job in self._handles:
            raise InputError(f"job {job!r} has already joined")
        handle = self._core.join(check_count(set, "set"), check_positive(priority, "priority"))
        self._handles[job] = handle
        self._names[handle] = job

    def apply(
        self,
        date: float,
        *,
        ends: Iterable[str] = (),
        begins: Iterable[tuple[str, float]] = (),
        leaves: Iterable[str] = (),
    ) -> Applied:
        """Apply the events of ``date``: ``ends`` and ``leaves``, then ``begins`` ``(job, bytes)``, then admission."""
        if not date >= self.date:
            raise InputError(f"date {date!r} comes before the last one applied, {self.date!r}")
        self.date = date
        for job in ends:
            self._call(self._core.end, job)
        for job in leaves:
            self._call(self._core.leave, job)
            del self._names[self._handles.pop(job)]
        for job, nbytes in begins:
            self._call(self._core.begin, job, nbytes)
        grants = [(self._names[h], rate) for h, rate in self._core.admit()]
        changes = [(self._names[h], rate) for h, rate in self._core.rates()]
        return Applied(date, grants, changes)

    def _call(self, operation, job: str, *args: float) -> None:
        """``operation(handle, *args)``, its errors naming ``job`` and the date."""
        if job not in self._handles:
            raise InputError(f"job {job!r} has not joined")
        handle = self._handles[job]
        try:
            operation(handle, *args)
        except InputError as error:
            reason = str(error).removeprefix(f"job {handle}: ")
            raise InputError(f"job {job!r} at date {self.date!r}: {reason}") from None
