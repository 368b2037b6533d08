"""The fork server: a process that has imported the analyzer once and forks worker processes on request.

Run as ``python -m iosets.analyzer._forkserver FD`` by :mod:`iosets.analyzer._pool`, which talks
to it over the Unix socket ``FD`` with fixed-size messages:

* ``S`` + threads: fork a worker (Polars may use ``threads`` threads in it); the reply carries
  the worker's pid and, as an attached descriptor, the caller's end of the worker's socket;
* ``W`` + pid: wait for that worker to end; the reply carries its wait status, the number of
  tasks it started and the last stage it recorded (:mod:`iosets.analyzer._stage`).

A worker runs the tasks it receives, ``(function, argument)``, one at a time, and answers each
with ``(ok, value or exception, retire)``; it exits after a task that left darshan-util in a
state it does not trust, or that ran out of memory: each worker's data memory is limited
(:mod:`._memory`, ``RLIMIT_DATA``), so that a trace that slips past every check costs an error.
The server ignores Ctrl-C (its caller stops it) and, when its socket closes (the caller exited
or was killed), kills its workers and exits; a worker dies with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import pickle
import signal
import socket
import struct
import sys
from multiprocessing.connection import Connection

from . import _memory, _stage

REQUEST = struct.Struct("<cq")
REPLY = struct.Struct(f"<qqq{_stage.STAGE_BYTES}s")  # pid, wait status, tasks started, last stage
_PR_SET_PDEATHSIG = 1


def recv_exactly(sock: socket.socket, size: int) -> bytes:
    """``size`` bytes from a stream socket; fewer only when it closed."""
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _die_with_parent() -> None:
    """Linux: be killed when the fork server dies, even while stuck in C code."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _pickled_reply(ok: bool, value, retire: bool) -> tuple[bytes, bool]:
    """The reply to a task, pickled, and whether to retire.

    A value or exception that does not pickle becomes a RuntimeError; one too large for the worker's memory
    limit, a MemoryError that retires the worker.
    """
    try:
        return pickle.dumps((ok, value, retire)), retire
    except MemoryError:
        return pickle.dumps((False, MemoryError(_memory.out_of_memory()), True)), True
    except Exception as exc:  # noqa: BLE001 - any pickling failure
        what = f"{type(value).__name__}: {value}" if not ok else f"its result does not pickle ({exc!r})"
        return pickle.dumps((False, RuntimeError(what), retire)), retire


def serve(conn: Connection) -> None:
    """Run tasks until the caller closes the connection or a task leaves this process unsafe."""
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):
            return
        _stage.start_task()
        try:
            fn, arg, folder = pickle.loads(message)
            if folder != os.getcwd():  # the caller's current folder, so that relative paths name what it meant
                os.chdir(folder)
            ok, value = True, fn(arg)
        except MemoryError:  # past the worker's limit: what it holds may be half-built, it retires
            ok, value = False, MemoryError(_memory.out_of_memory())
            _stage.mark_unsafe()
        except Exception as exc:  # noqa: BLE001 - handed back to the caller, who raises it
            ok, value = False, exc
        _stage.note_stage(_stage.IDLE)
        reply, retire = _pickled_reply(ok, value, _stage.is_unsafe())
        conn.send_bytes(reply)
        if retire:
            return


def _worker(sock: socket.socket, board, threads: int, memory: int) -> None:
    """The body of a forked worker (``memory``: its data memory limit, bytes)."""
    _die_with_parent()
    _memory.limit_memory(memory)
    os.environ["POLARS_MAX_THREADS"] = str(threads)  # read when Polars first starts its thread pool
    _stage.attach(board)
    serve(Connection(sock.detach()))


def _fork(ctl: socket.socket, boards: dict, threads: int, memory: int) -> tuple[int, int]:
    """Fork a worker; returns its pid and the caller's end of its socket."""
    mine, theirs = socket.socketpair()
    board = _stage.new_board()
    pid = os.fork()
    if pid == 0:  # the worker
        code = 0
        try:
            ctl.close()
            mine.close()
            for other in boards.values():
                other.close()
            _worker(theirs, board, threads, memory)
        except BaseException:  # noqa: BLE001 - a worker never returns into the server's loop
            code = 1
        finally:
            os._exit(code)
    theirs.close()
    boards[pid] = board
    return pid, mine.detach()


def _preload() -> None:
    """Import what workers run, once, so that a fork starts ready."""
    from . import _worker  # noqa: F401  (numpy, Polars, the ingesters)

    with contextlib.suppress(Exception):  # without pydarshan, reads fail in the workers with a clear error
        from darshan.backend import cffi_backend  # noqa: F401


def main(fd: int) -> int:
    """Serve spawn and wait requests on socket ``fd`` until it closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the caller decides
    faulthandler.disable()  # a contained crash is reported by the caller, not dumped on its terminal
    _preload()
    ctl = socket.socket(fileno=fd)
    boards: dict = {}
    memory = _memory.worker_memory()
    try:
        while True:
            request = recv_exactly(ctl, REQUEST.size)
            if len(request) < REQUEST.size:
                return 0
            command, arg = REQUEST.unpack(request)
            if command == b"S":
                pid, conn_fd = _fork(ctl, boards, int(arg), memory)
                socket.send_fds(ctl, [REPLY.pack(pid, 0, 0, b"")], [conn_fd])
                os.close(conn_fd)
            else:
                _, status = os.waitpid(int(arg), 0)
                board = boards.pop(int(arg), None)
                started, stage = _stage.read_board(board) if board is not None else (0, "")
                ctl.sendall(REPLY.pack(int(arg), status, started, stage.encode()))
    finally:
        for pid in boards:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


if __name__ == "__main__":
    code = main(int(sys.argv[1]))
    os._exit(code)  # no interpreter teardown (Polars, pandas): the caller may be waiting for the group to end
