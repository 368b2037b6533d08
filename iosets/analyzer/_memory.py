"""The memory limit of the worker processes that read traces: a log that slips past every check costs an error row.

Each worker forked by :mod:`._forkserver` gets ``RLIMIT_DATA`` (its heap and private mappings, what a runaway
allocation grows; not the address space Polars and numpy reserve) set to what it holds when forked plus
:func:`worker_memory`: the budget is what it may grow by (a process under AddressSanitizer holds terabytes of
reserved shadow memory from its start). Past it, an allocation fails: Python raises MemoryError (the trace's
error row, :func:`out_of_memory`) and darshan-util
reports a read error or crashes, which its worker's death turns into an error row too.
"""

from __future__ import annotations

import os
import resource

from ..errors import InputError

__all__ = ["MEMORY_ENV", "data_size", "limit_memory", "out_of_memory", "worker_memory"]

MEMORY_ENV = "IOSETS_WORKER_MEMORY_MB"
"""Environment variable: a worker's memory limit in MiB (default: half the machine's memory, at most 8 GiB)."""
_DEFAULT_MAX = 8 << 30
_MIB = 1 << 20
_budget: int | None = None  # this process's budget, once limit_memory set it


def worker_memory() -> int:
    """Bytes of data memory a worker may use: ``IOSETS_WORKER_MEMORY_MB``, else half the machine's, at most 8 GiB.

    Raises InputError when ``IOSETS_WORKER_MEMORY_MB`` is not a whole number of MiB >= 64.
    """
    given = os.environ.get(MEMORY_ENV, "").strip()
    if given:
        if not given.isdigit() or int(given) < 64:
            raise InputError(f"{MEMORY_ENV}: expected a whole number of MiB >= 64, got {given!r}")
        return int(given) * _MIB
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return min(_DEFAULT_MAX, physical // 2)


def data_size() -> int:
    """Bytes of data memory this process holds now (``VmData``; 0 where /proc does not say)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def limit_memory(budget: int) -> None:
    """Let this process grow its data memory by ``budget`` bytes at most (``RLIMIT_DATA``; a hard limit stays)."""
    global _budget
    _budget = budget
    limit = data_size() + budget
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))


def out_of_memory() -> str:
    """Why a trace failed with MemoryError: in a worker, the budget it passed and how to raise it."""
    if _budget is None:
        return "ran out of memory"
    return f"passed the worker's memory limit ({_budget // _MIB} MiB of data; {MEMORY_ENV} sets it)"
