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
