"""Policies as set and priority assignments."""

import numpy as np
import pytest

from iosets.datasets import make_iosets_workload
from iosets.errors import InputError
from iosets.replay import POLICIES, assign_policy, replay_phases


@pytest.fixture(scope="module")
def workload():
    return make_iosets_workload(
        [(3, 10, 0.5), (2, 100, 5), (1, 1000, 10)], horizon=3000, window=(500, 2500), random_state=2
    )


def test_each_policy_assignment(workload):
    sets, prio = assign_policy(workload, "exclusive-fcfs")
    assert sets.tolist() == [0] * 6 and prio.tolist() == [1] * 6
    sets, prio = assign_policy(workload, "fair-share")
    assert sets.tolist() == list(range(6)) and prio.tolist() == [1] * 6
    sets, prio = assign_policy(workload, "set-10")
    assert sets.tolist() == [1, 1, 1, 2, 2, 3] and prio.tolist() == pytest.approx([0.1] * 3 + [0.01] * 2 + [0.001])
    sets, prio = assign_policy(workload, "set-fairshare")
    assert sets.tolist() == [1, 1, 1, 2, 2, 3] and prio.tolist() == [1] * 6
    sets, prio = assign_policy(workload, "share-priority")
    assert sets.tolist() == list(range(6)) and prio.tolist() == pytest.approx([0.1] * 3 + [0.01] * 2 + [0.001])
    sets, prio = assign_policy(workload, "clairvoyant")
    w = workload.jobs["w_iter"].to_numpy()
    assert sets.tolist() == [0, 0, 0, 1, 1, 2]
    assert prio.tolist() == pytest.approx([1 / w[:3].mean()] * 3 + [1 / w[3:5].mean()] * 2 + [1 / w[5]])


def test_explicit_needs_sets_and_priorities(workload):
    with pytest.raises(InputError, match="policy 'explicit': job 'j0' has no set"):
        assign_policy(workload, "explicit")


def test_clairvoyant_needs_profiles(workload_of):
    with pytest.raises(InputError, match="needs the generator's profiles; job 'j0' has none"):
        assign_policy(workload_of([(0, 0, 1, [[1, 1]])]), "clairvoyant")


def test_unknown_policy_lists_the_known_ones(workload):
    with pytest.raises(InputError, match="unknown policy 'round-robin'; expected one of exclusive-fcfs"):
        replay_phases(workload, "round-robin")


def test_single_set_policy_never_overlaps_io(workload):
    t = replay_phases(workload, "exclusive-fcfs").timeline.sort("io_start")
    starts, ends = t["io_start"].to_numpy(), t["io_end"].to_numpy()
    assert np.all(starts[1:] >= ends[:-1] - 1e-9)


def test_all_policies_conserve_work(workload):
    # every phase runs: compute lasts t_cpu, and no I/O ends sooner than bytes / B
    t_cpu = workload.phases["t_cpu"].to_numpy()
    t_io = workload.phases["io_bytes"].to_numpy() / workload.bandwidth
    for policy in POLICIES[:-1]:
        t = replay_phases(workload, policy).timeline
        np.testing.assert_allclose(t["cpu_end"] - t["cpu_start"], t_cpu, rtol=1e-12)
        assert np.all(t["io_end"].to_numpy() - t["io_start"].to_numpy() >= t_io * (1 - 1e-9))
