"""A refit worker never outlives its service: killed with SIGKILL, the service leaves no one to stop the worker."""

import os
import signal
import subprocess
import sys

import pytest

from iosets.api._refit import process_start

from .hookkit import WAIT, wait_for

SERVICE = """
import multiprocessing, os, sys
from concurrent.futures import ProcessPoolExecutor
from iosets.api._refit import start_worker

pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver"), initializer=start_worker,
                           initargs=(os.getpid(),))
print(pool.submit(os.getpid).result(), flush=True)
sys.stdin.read()  # until killed
"""


@pytest.mark.timing
def test_a_refit_worker_exits_once_its_service_is_killed():
    service = subprocess.Popen(
        [sys.executable, "-c", SERVICE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        worker = int(service.stdout.readline())
        assert process_start(worker) is not None and os.getpriority(os.PRIO_PROCESS, worker) >= 10  # niced, running
        assert os.sched_getscheduler(worker) == os.SCHED_IDLE  # runs only on CPU time nothing else wants
        service.send_signal(signal.SIGKILL)
        service.wait(WAIT)
        wait_for(f"the refit worker {worker} gone", lambda: process_start(worker) is None)
    finally:
        service.kill()
        service.wait(WAIT)


def test_a_process_is_named_by_its_pid_and_start():
    assert process_start(os.getpid()) == process_start(os.getpid()) is not None
    assert process_start(2**22 + 1) is None  # above the largest pid the kernel gives (pid_max <= 2^22)
