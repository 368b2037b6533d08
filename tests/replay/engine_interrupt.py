"""Ctrl-C once the main thread is inside a C call: never before it (a sleep can only guess), never after it returns.

Used in this process and, by path, in the child processes of the Ctrl-C tests.
"""

import contextlib
import os
import signal
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def interrupted_inside(function: Callable) -> Iterator[None]:
    """Send this process SIGINT as soon as the main thread runs ``function`` (a C function that releases the GIL).

    A profile hook marks the call at its ``c_call`` event, just before the C code runs, with a plain store: no signal
    handler and no other thread can run between that store and the C code. A watcher thread runs only while the main
    thread has released the GIL, so it sees the mark only once the main thread is inside ``function``, and signals
    then. Leaving the block removes the hook and stops the watcher.
    """
    inside = [False]
    done = threading.Event()

    def watch(frame, event, arg):
        if arg is function and event == "c_call":
            inside[0] = True

    def interrupt() -> None:
        while not inside[0]:
            if done.wait(0.001):
                return
        os.kill(os.getpid(), signal.SIGINT)

    watcher = threading.Thread(target=interrupt, name="interrupt-inside", daemon=True)
    sys.setprofile(watch)
    watcher.start()
    try:
        yield
    finally:
        sys.setprofile(None)
        done.set()
        watcher.join()


def interrupted_script(setup: str, call: str, function: str) -> str:
    """Python source that runs ``setup``, then ``call`` with SIGINT sent once inside ``function``, then prints done.

    ``function`` names the C function, e.g. ``"_engine.replay_trace"``; ``call`` is one line, alone on its line.
    """
    return (
        "import signal, sys\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"  # even if started ignoring it
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from engine_interrupt import interrupted_inside\n"
        "from iosets.replay import _engine\n"
        f"{textwrap.dedent(setup)}\n"
        f"with interrupted_inside({function}):\n"
        f"    {call}\n"
        "print('done', flush=True)\n"
    )
