"""A service that settles its heap after each refit (``iosets serve``'s) keeps its memory bounded.

``gc.freeze`` keeps frozen objects out of every later collection; one that becomes garbage inside a
reference cycle is then never freed. The state a refit replaces must die by reference counting alone,
so the frozen count stays where the first refits left it however many refits follow, and an evidence
a rebuild replaces is freed.
"""

import gc
import weakref

import pytest

from iosets.api import Settings
from iosets.api._refit import fit_snapshot_pickled, load_snapshot
from iosets.api._service import Service
from iosets.datasets import make_job_history


@pytest.fixture
def settling(tmp_path):
    service = Service(Settings(data_dir=str(tmp_path), write_rate=1e9), settle_heap=True)
    yield service
    service.stop()
    gc.unfreeze()  # the test process's objects, frozen with the service's


def test_refits_replace_the_frozen_state_instead_of_adding_to_it(settling):
    for row in make_job_history(200, n_apps=6, n_users=4, random_state=3).drop("source").to_dicts():
        settling.add_job(row)
    for _ in range(3):  # then each state holds the same parts (a model answering unseen apps among them)
        settling._refit(use_model=True)
    first = weakref.ref(settling._state)
    frozen = gc.get_freeze_count()
    assert frozen > 0
    for _ in range(4):
        settling._refit(use_model=True)
    assert first() is None  # the replaced state was freed, frozen as it was
    assert gc.get_freeze_count() - frozen < 100  # 4 replaced states kept frozen: about 1 800 objects here


def test_a_rebuild_frees_the_evidence_it_replaces(settling):
    for row in make_job_history(100, n_apps=4, n_users=3, random_state=4).drop("source").to_dicts():
        settling.add_job(row)
    settling._refit(use_model=False)
    replaced = weakref.ref(settling._evidence)
    settling._evidence, settling._recording = None, []  # as at another replica's jobs: rebuilt by the next refit
    settling._refit(use_model=False)
    assert settling._evidence is not None and replaced() is None


def reachable(root) -> list:
    """The objects the collector tracks that ``root`` reaches, itself included."""
    seen, todo = {id(root): root}, [root]
    while todo:
        for child in gc.get_referents(todo.pop()):
            if gc.is_tracked(child) and id(child) not in seen:
                seen[id(child)] = child
                todo.append(child)
    return list(seen.values())


def test_a_refit_result_is_read_without_a_collection_and_frozen_whole(tmp_path):
    """``load_snapshot`` reads a refit's result with the collector paused (no collection runs meanwhile,
    though reading it allocates far more than a young generation holds) and, for ``iosets serve``, freezes
    all of it, so that no later collection scans it. The collector is on again after."""
    service = Service(Settings(data_dir=str(tmp_path), write_rate=1e9))
    try:
        for row in make_job_history(300, n_apps=8, n_users=5, random_state=5).drop("source").to_dicts():
            service.add_job(row)
        policy = service.current_policy()
        pickled = fit_snapshot_pickled(service.settings.store_url, policy, use_model=True, rebuild=True)
    finally:
        service.stop()
    collections = []
    gc.callbacks.append(record := lambda phase, info: collections.append((phase, info["generation"])))
    try:
        snapshot = load_snapshot(pickled, freeze=True)
        held = reachable(snapshot)
        scanned = {id(obj) for obj in gc.get_objects()}  # every generation but the frozen one
    finally:
        gc.callbacks.remove(record)
        gc.unfreeze()
    assert gc.isenabled()
    assert collections == [("start", 1), ("stop", 1)]  # the young garbage before the read; none within it
    assert len(held) > 700  # more than one young generation's worth of allocations
    assert not any(id(obj) in scanned for obj in held)
    read = load_snapshot(pickled, freeze=False)
    assert snapshot.n_stored == read.n_stored == 300 and snapshot.evidence.n_jobs == read.evidence.n_jobs == 300
    assert snapshot.known is not None and snapshot.known.sets_.equals(read.known.sets_)
