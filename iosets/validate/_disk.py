"""Bounded disk use: the space a run needs, checked before it starts, and a run folder removed at the end."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..errors import InputError

ALIGN = 4096
"""The program rounds each process's share of a phase up to this (periodic.c)."""
MARGIN = 256 * 2**20
"""Free space left to the file system's other users on top of the run's files (bytes)."""


def process_share(io_bytes: np.ndarray, processes: int) -> np.ndarray:
    """Bytes each of ``processes`` processes writes for phases of ``io_bytes`` (periodic.c's ``share_of``)."""
    return np.ceil(np.ceil(np.asarray(io_bytes, dtype=np.float64) / processes) / ALIGN) * ALIGN


def run_bytes(io_bytes: np.ndarray, phase_job: np.ndarray, n_jobs: int, processes: int) -> int:
    """Disk space of a run: each process of each job holds its share of the job's largest phase."""
    largest = np.zeros(n_jobs)
    np.maximum.at(largest, phase_job, process_share(io_bytes, processes))
    return int(largest.sum()) * processes


def check_free_space(folder: str | os.PathLike, needed: int, *, what: str) -> None:
    """Raise InputError with the numbers when ``folder`` has less than ``needed`` bytes plus :data:`MARGIN` free."""
    free = shutil.disk_usage(folder).free
    if free < needed + MARGIN:
        raise InputError(
            f"{folder} has {_gb(free)} GB free; {what} needs {_gb(needed)} GB (one phase per process on disk) "
            f"plus {_gb(MARGIN)} GB left free: free some space, use another --dir, or fewer or smaller phases"
        )


def _gb(n: float) -> str:
    return f"{n / 1e9:.2f}"


@contextlib.contextmanager
def run_folder(parent: str | os.PathLike) -> Iterator[Path]:
    """A new folder ``iosets-validate-<pid>`` in ``parent`` for the run's files, removed at the end (Ctrl-C too)."""
    parent = Path(parent)
    if not parent.is_dir():
        raise InputError(f"--dir: {parent} is not a folder")
    folder = parent / f"iosets-validate-{os.getpid()}"
    try:
        folder.mkdir()
    except OSError as exc:
        raise InputError(f"--dir: cannot create {folder} ({exc.strerror})") from None
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
