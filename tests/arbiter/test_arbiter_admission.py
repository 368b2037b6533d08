"""The arbiter's admission core on a virtual clock: hand-computed shares, each policy, faults, and a random
walk of joins, phases and departures checked against a small Python model of the rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iosets.arbiter import ARBITER_POLICIES, Admission
from iosets.arbiter import _core as core
from iosets.errors import InputError

B = 1e9


def shares(*priorities: float) -> list[float]:
    """B p_i / sum p, the sum correctly rounded."""
    total = math.fsum(priorities)
    return [B * p / total for p in priorities]


def joined(policy: str, *jobs: tuple[str, int, float]) -> Admission:
    admission = Admission(policy, bandwidth=B)
    for name, set_, priority in jobs:
        admission.join(name, set=set_, priority=priority)
    return admission


def test_three_sets_share_b_by_priority_and_are_told_when_it_changes():
    adm = joined("set-10", ("a", 0, 1.0), ("b", 1, 0.1), ("c", 2, 0.01), ("a2", 0, 1.0))
    first = adm.apply(0.0, begins=[("a", 5e9), ("b", 5e9), ("c", 5e9), ("a2", 1e9)])
    assert first.grants == list(zip("abc", shares(1.0, 0.1, 0.01), strict=True))
    assert first.grants[0][1] == pytest.approx(B * 100 / 111) and first.changes == []
    assert adm.performing == 3  # a2 waits for a: one job per set
    left = adm.apply(1.0, ends=["b"])
    assert left.grants == [] and left.changes == [("a", shares(1.0, 0.01)[0]), ("c", shares(1.0, 0.01)[1])]
    # a's set admits a2 (same priority): the sum is the same, so nobody is told anything new
    handover = adm.apply(2.0, ends=["a"])
    assert handover.grants == [("a2", shares(1.0, 0.01)[0])] and handover.changes == []


def test_a_set_admits_fcfs_by_begin_order_ties_by_the_order_given():
    adm = joined("set-10", *[(name, 0, 1.0) for name in "pqrs"])
    assert adm.apply(0.0, begins=[("p", 1.0)]).grants == [("p", B)]
    adm.apply(1.0, begins=[("s", 1.0), ("q", 1.0)])
    adm.apply(2.0, begins=[("r", 1.0)])
    order = [adm.apply(3.0 + i, ends=[prev]).grants[0][0] for i, prev in enumerate("psq")]
    assert order == ["s", "q", "r"]


@pytest.mark.parametrize(
    "policy, rates",
    [
        ("set-10", [B / 1.1, B * 0.1 / 1.1]),  # sets 0 and 1 as sent: both perform, by priority
        ("exclusive-fcfs", [B]),  # one set for all: the second waits
        ("fair-share", [B / 2, B / 2]),  # a set per job, priority 1
        ("share-priority", [B / 1.1, B * 0.1 / 1.1]),  # a set per job, the priority sent
    ],
)
def test_each_policy_decides_what_the_set_and_priority_sent_count_for(policy, rates):
    # both jobs send set 0; the second its priority 0.1 and, under set-10, set 1
    adm = Admission(policy, bandwidth=B)
    adm.join("x", set=0, priority=1.0)
    adm.join("y", set=1 if policy == "set-10" else 0, priority=0.1)
    granted = adm.apply(0.0, begins=[("x", 1.0), ("y", 1.0)]).grants
    assert [rate for _, rate in granted] == pytest.approx(rates, rel=1e-15)
    assert core.POLICIES == ARBITER_POLICIES


def test_a_zero_byte_phase_is_granted_at_once_outside_its_busy_set():
    adm = joined("set-10", ("big", 0, 1.0), ("zero", 0, 0.25))
    adm.apply(0.0, begins=[("big", 1e9)])
    applied = adm.apply(1.0, begins=[("zero", 0.0)])
    assert applied.grants == [("zero", B * 0.25 / 1.25)] and applied.changes == []  # big keeps B
    assert adm.performing == 1
    assert adm.apply(1.0, ends=["zero"]) == adm.apply(1.0)  # nothing to free


def test_a_departure_frees_the_set_or_the_place_at_once():
    adm = joined("set-10", ("a", 0, 1.0), ("b", 0, 1.0), ("c", 0, 1.0), ("d", 0, 1.0))
    adm.apply(0.0, begins=[("a", 1.0), ("b", 1.0), ("c", 1.0), ("d", 1.0)])
    assert adm.apply(1.0, leaves=["b"]).grants == []  # b waited: the queue is now c, d
    assert adm.apply(2.0, leaves=["a"]).grants == [("c", B)]  # a performed: c at once
    assert adm.apply(3.0, ends=["d"]).grants == []  # an END while waiting withdraws the request
    assert adm.apply(4.0, ends=["c"]).grants == [] and adm.performing == 0
    adm.join("b", set=0, priority=1.0)  # its name (and its handle) can come back
    assert adm.apply(5.0, begins=[("b", 1.0)]).grants == [("b", B)]


def test_state_errors_name_the_job_and_the_date():
    adm = joined("set-10", ("a", 0, 1.0))
    adm.apply(0.0, begins=[("a", 1.0)])
    with pytest.raises(InputError, match=r"job 'a' at date 1\.0: a phase is already open"):
        adm.apply(1.0, begins=[("a", 1.0)])
    adm.apply(2.0, ends=["a"])
    with pytest.raises(InputError, match=r"job 'a' at date 3\.0: no phase is open"):
        adm.apply(3.0, ends=["a"])
    with pytest.raises(InputError, match="job 'zz' has not joined"):
        adm.apply(3.0, begins=[("zz", 1.0)])
    with pytest.raises(InputError, match="job 'a' has already joined"):
        adm.join("a")
    with pytest.raises(InputError, match=r"date 2\.5 comes before the last one applied, 3\.0"):
        adm.apply(2.5)
    with pytest.raises(InputError, match=r"job 'a' at date 3\.0: bytes must be a finite number >= 0, got -1\.0"):
        adm.apply(3.0, begins=[("a", -1.0)])


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Admission("set-fairshare", bandwidth=B), "unknown policy 'set-fairshare'; expected one of set-10"),
        (lambda: Admission(bandwidth=0), "bandwidth must be a finite number > 0, got 0"),
        (lambda: Admission(bandwidth=B).join("a", set=-1), "set must be an integer >= 0, got -1"),
        (lambda: Admission(bandwidth=B).join("a", priority=math.inf), "priority must be a finite number > 0"),
        (lambda: core.Admission("set-10", 1e300).join(0, 1e10), "expected set >= 0 and priority > 0 with a finite"),
        (lambda: core.Admission("nope", 1.0), "policy must be one of set-10, exclusive-fcfs, fair-share"),
        (lambda: core.Admission("set-10", 1.0).end(3), "job 3 is not a joined job"),
    ],
)
def test_bad_values_are_refused_by_name(make, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        make()


# ---------------------------------------------------------------------- a random walk against a model


class Model:
    """The admission rules in plain Python: queues per set, rates B p / fsum(p)."""

    def __init__(self, policy: str) -> None:
        self.policy = policy
        self.jobs: dict[str, dict] = {}
        self.queues: dict[object, list[str]] = {}
        self.performer: dict[object, str] = {}
        self.own = 0

    def join(self, name: str, set_: int, priority: float) -> None:
        if self.policy in ("fair-share", "share-priority"):
            self.own += 1
            key: object = ("own", self.own)
        else:
            key = 0 if self.policy == "exclusive-fcfs" else set_
        if self.policy in ("exclusive-fcfs", "fair-share"):
            priority = 1.0
        self.jobs[name] = {"set": key, "p": priority, "state": "idle", "rate": 0.0}

    def _give_up(self, name: str) -> None:
        job = self.jobs[name]
        if job["state"] == "waiting":
            self.queues[job["set"]].remove(name)
        elif job["state"] == "performing":
            del self.performer[job["set"]]
        job["state"] = "idle"

    def apply(self, ends, begins, leaves):
        for name in ends:
            self._give_up(name)
        for name in leaves:
            self._give_up(name)
            del self.jobs[name]
        passing = []
        for name, nbytes in begins:
            job = self.jobs[name]
            if nbytes == 0:
                job["state"] = "passing"
                passing.append(name)
            else:
                job["state"] = "waiting"
                self.queues.setdefault(job["set"], []).append(name)
        admitted = []
        for key, queue in self.queues.items():
            if queue and key not in self.performer:
                name = queue.pop(0)
                self.performer[key] = name
                self.jobs[name]["state"] = "performing"
                admitted.append(name)
        total = math.fsum(self.jobs[n]["p"] for n in self.performer.values())
        grants, changes = [], []
        for name in admitted:
            self.jobs[name]["rate"] = B * self.jobs[name]["p"] / total
            grants.append((name, self.jobs[name]["rate"]))
        for name in passing:
            p = self.jobs[name]["p"]
            grants.append((name, B * p / (total + p)))
        for name in self.performer.values():
            rate = B * self.jobs[name]["p"] / total
            if name not in admitted and rate != self.jobs[name]["rate"]:
                self.jobs[name]["rate"] = rate
                changes.append((name, rate))
        return sorted(grants), sorted(changes)


@pytest.mark.parametrize("policy", ARBITER_POLICIES)
def test_a_random_walk_of_joins_phases_and_departures_follows_the_rules(policy):
    rng = np.random.default_rng(list(map(ord, policy)))
    adm, model = Admission(policy, bandwidth=B), Model(policy)
    labels = [0, 1, 2, 3, 7, 99, 2**31, 2**62]  # far-apart labels: the core's hash table, its deletions
    priorities = [1.0, 0.1, 0.01, 0.001, 0.5, 1e-12]
    names = [f"j{i}" for i in range(40)]
    counts = {"grants": 0, "changes": 0, "leaves": 0}
    for step in range(3000):
        here = list(model.jobs)
        idle = [n for n in here if model.jobs[n]["state"] == "idle"]
        busy = [n for n in here if model.jobs[n]["state"] != "idle"]
        for name in rng.permutation([n for n in names if n not in model.jobs])[: int(rng.integers(0, 3))]:
            set_, priority = int(rng.choice(labels)), float(rng.choice(priorities))
            adm.join(str(name), set=set_, priority=priority)
            model.join(str(name), set_, priority)
        ends = [n for n in busy if rng.random() < 0.3]
        leaves = [n for n in here if n not in ends and rng.random() < 0.03]
        begins = [(n, float(rng.choice([0.0, 1.0, 5.0]))) for n in idle if n not in leaves and rng.random() < 0.4]
        applied = adm.apply(float(step), ends=ends, begins=begins, leaves=leaves)
        expected = model.apply(ends, begins, leaves)
        assert (sorted(applied.grants), sorted(applied.changes)) == expected, f"step {step}"
        assert adm.performing == len(model.performer)
        counts["grants"] += len(applied.grants)
        counts["changes"] += len(applied.changes)
        counts["leaves"] += len(leaves)
    if policy == "exclusive-fcfs":  # one performer at a time: its rate is always B
        assert counts.pop("changes") == 0
    assert min(counts.values()) > 50  # the walk did exercise each kind of answer
