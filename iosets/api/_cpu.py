"""`yield_cpu`: the service's background work (the writer thread, the refit worker) runs on CPU time its
answers do not want.

On a 2-core machine at 1 000 000 stored jobs, with 8 clients posting 150 jobs/s and answers asked at
200/s, a scheduler trace (``sched_switch`` and ``sched_wakeup`` on the monotonic clock, each answer's send
and receive on the same clock) showed where the answers' tail was: the event loop's thread, runnable,
waited up to 4.8 ms while the writer (niced 10) or the refit worker ran on its core. The fair scheduler
(EEVDF) gives a niced task its share in slices, and one that got the core keeps it to the next tick
(4 ms at 250 Hz): in 5 s, 135 ms of the loop's waits over 0.5 ms went to the writer and the worker.
Under ``SCHED_IDLE`` a task is preempted whenever a normal one wants its core: 9 ms did (the rest: the
clients' wake-ups on the loop's core, the core idle while a wake-up reached it), and the answers' p99
went from 5.5 to 3.5 ms in that pair of runs. Posts stay far above their target: 604-745 jobs/s from 8
clients at 1 000 000 stored jobs (460-780 with the writer niced), a commit using CPU the answers leave.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

IDLE_NICENESS = 10
"""How much the calling thread is niced where ``SCHED_IDLE`` is refused or missing."""


def yield_cpu(*, whole_process: bool = False) -> None:
    """Run the calling thread, and the threads it starts after, only on CPU time no other task wants.

    On Linux (where a thread has its own nice value and policy): niced by :data:`IDLE_NICENESS`, then under
    ``SCHED_IDLE`` where allowed. Elsewhere the calling thread cannot be singled out: ``whole_process``
    (the caller is a process of its own, as the refit worker) nices the whole process; otherwise nothing.
    """
    if sys.platform != "linux":
        if whole_process:
            with contextlib.suppress(OSError):
                os.nice(IDLE_NICENESS)
        return
    thread = threading.get_native_id()
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, thread, os.getpriority(os.PRIO_PROCESS, thread) + IDLE_NICENESS)
    with contextlib.suppress(OSError):
        os.sched_setscheduler(thread, os.SCHED_IDLE, os.sched_param(0))
