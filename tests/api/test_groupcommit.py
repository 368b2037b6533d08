"""`GroupCommit`: rows that wait together share one write; each post is answered only after its write returned."""

import os
import sys
import threading

import pytest

from iosets.api._cpu import IDLE_NICENESS
from iosets.api._groupcommit import GroupCommit
from iosets.api._store import Store
from iosets.errors import IosetsError

WAIT = 30.0  # a generous bound on each wait for the writer thread


def test_posts_queued_behind_a_commit_share_the_next_one_and_are_answered_after_it():
    entered, release = threading.Event(), threading.Event()
    batches, committed = [], []

    def write(rows):
        batches.append([row["id"] for row in rows])
        entered.set()
        assert release.wait(WAIT)
        committed.extend(row["id"] for row in rows)
        return [row["id"] * 10 for row in rows]

    writer = GroupCommit(write)
    first = writer.submit({"id": 1})
    assert entered.wait(WAIT)  # the writer is inside the first commit
    queued = [writer.submit({"id": k}) for k in (2, 3, 4)]
    assert not first.done() and not any(future.done() for future in queued)  # nothing answered before its commit
    release.set()
    assert [future.result(WAIT) for future in (first, *queued)] == [10, 20, 30, 40]
    assert batches == [[1], [2, 3, 4]]
    assert committed == [1, 2, 3, 4]
    writer.close()
    with pytest.raises(IosetsError, match="stopping"):
        writer.submit({"id": 5})


def test_a_failing_batch_is_retried_row_by_row_so_a_bad_row_fails_alone():
    entered, release = threading.Event(), threading.Event()
    calls = []

    def write(rows):
        calls.append([row["id"] for row in rows])
        if rows[0]["id"] == 0:
            entered.set()
            assert release.wait(WAIT)
        if any(row["id"] == 2 for row in rows):
            raise ValueError("row 2 refused")
        return [row["id"] for row in rows]

    writer = GroupCommit(write)
    blocker = writer.submit({"id": 0})
    assert entered.wait(WAIT)
    futures = [writer.submit({"id": k}) for k in (1, 2, 3)]
    release.set()
    assert blocker.result(WAIT) == 0
    assert futures[0].result(WAIT) == 1 and futures[2].result(WAIT) == 3
    with pytest.raises(ValueError, match="row 2 refused"):
        futures[1].result(WAIT)
    assert calls == [[0], [1, 2, 3], [1], [2], [3]]
    writer.close()


def test_an_answered_row_is_in_the_store_for_any_other_connection(tmp_path):
    url = f"sqlite:///{tmp_path / 'iosets.db'}"
    store = Store(url)
    writer = GroupCommit(store.insert_jobs)
    answers = [writer.submit({"job_id": f"j{k}", "app": "A", "user": "u"}) for k in range(20)]
    answers.append(writer.submit({"job_id": "j0", "app": "B", "user": "v"}))  # a retried post
    results = [future.result(WAIT) for future in answers]
    writer.close()
    other = Store(url)
    assert other.count_jobs() == 20
    assert [new for _, new in results] == [True] * 20 + [False]
    assert results[-1][0]["app"] == "A" == other.get_job("j0")["app"]
    other.close()
    store.close()


@pytest.mark.skipif(sys.platform != "linux", reason="a nice value and a policy per thread are Linux's")
def test_the_writer_thread_runs_on_idle_cpu_time_and_its_starter_as_before():
    """Answers' event loop preempts the writer whenever it wants the core: the writer runs under SCHED_IDLE,
    niced by IDLE_NICENESS, and the thread that started it keeps its own policy and nice value."""
    seen = []

    def write(rows):
        thread = threading.get_native_id()
        seen.append((os.sched_getscheduler(thread), os.getpriority(os.PRIO_PROCESS, thread)))
        return [None for _ in rows]

    starter = threading.get_native_id()
    policy, nice = os.sched_getscheduler(starter), os.getpriority(os.PRIO_PROCESS, starter)
    writer = GroupCommit(write)
    writer.submit({"id": 1}).result(WAIT)
    writer.close()
    assert seen == [(os.SCHED_IDLE, min(nice + IDLE_NICENESS, 19))]
    assert (os.sched_getscheduler(starter), os.getpriority(os.PRIO_PROCESS, starter)) == (policy, nice)
