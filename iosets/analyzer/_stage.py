"""What a worker process is doing, and whether it may go on, where its fork server can read it.

The Darshan reader calls :func:`note_stage` before each darshan-util call ("reading DXT_POSIX");
in a worker this is a write into a small shared buffer (no system call), elsewhere it does
nothing. The buffer also counts the tasks the worker started. When darshan-util kills the
worker, the fork server reads both back, so that the caller knows which task died and where.
:func:`mark_unsafe` says that darshan-util failed in this process and may have left its memory
corrupt: the worker exits after the task.
"""

from __future__ import annotations

import mmap
import struct

STAGE_BYTES = 256
IDLE = ""
"""The stage of a worker outside darshan-util."""

_COUNT = struct.Struct("<Q")  # tasks started, then the stage text (NUL-terminated)

_board: mmap.mmap | None = None
_unsafe = False


def new_board() -> mmap.mmap:
    """A shared anonymous buffer for one worker (made by the fork server before it forks)."""
    return mmap.mmap(-1, STAGE_BYTES)


def attach(board: mmap.mmap) -> None:
    """Make this process a worker that reports its stages into ``board``."""
    global _board
    _board = board


def in_worker() -> bool:
    """True in a worker process (a crash there costs the worker, not the caller)."""
    return _board is not None


def start_task() -> None:
    """Count one more task started, at stage IDLE."""
    if _board is not None:
        _board[: _COUNT.size] = _COUNT.pack(_COUNT.unpack_from(_board)[0] + 1)
        note_stage(IDLE)


def note_stage(stage: str) -> None:
    """Record what this worker is about to do (a no-op outside workers)."""
    if _board is not None:
        raw = stage.encode("utf-8", "replace")[: STAGE_BYTES - _COUNT.size - 1]
        _board[_COUNT.size : _COUNT.size + len(raw) + 1] = raw + b"\0"


def read_board(board: mmap.mmap) -> tuple[int, str]:
    """The number of tasks a worker started and the last stage it recorded."""
    text = board[_COUNT.size : STAGE_BYTES].split(b"\0", 1)[0].decode("utf-8", "replace")
    return _COUNT.unpack_from(board)[0], text


def mark_unsafe() -> None:
    """darshan-util failed here: this worker should not read another log."""
    global _unsafe
    _unsafe = True


def is_unsafe() -> bool:
    return _unsafe
