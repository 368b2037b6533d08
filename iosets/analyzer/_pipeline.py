"""Many traces to one jobs table: in this process, on this machine's cores, or on a Dask cluster."""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from .._validation import check_count
from ..errors import InputError
from ..schemas import ANALYSIS_ERRORS, JOBS
from ._ingest import sniff_format
from ._worker import Outcome, analyze_chunk, analyze_outcome

MANIFEST_SUFFIXES = (".txt", ".lst", ".list", ".manifest")
_CHUNK = 16  # traces per task at most: fewer hand-offs, yet short tasks at the end and four per worker at least
_MIN_PARALLEL = 48  # smaller batches run in this process: starting workers would cost more than they save


@dataclass(frozen=True)
class Analysis:
    """Result of :func:`analyze`: one row per job, and the inputs that failed."""

    jobs: pl.DataFrame
    errors: pl.DataFrame


def _is_manifest(path: Path) -> bool:
    """A file with a manifest suffix that is not itself a trace (a blkparse ``.txt`` is a trace)."""
    if path.suffix not in MANIFEST_SUFFIXES or not path.is_file():
        return False
    with contextlib.suppress(InputError):
        sniff_format(path)
        return False
    return True


def expand_paths(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Traces named by files, folders (searched recursively for Darshan logs) and manifests (one path per line)."""
    found: list[Path] = []
    for entry in map(Path, paths):
        if entry.is_dir():
            found.extend(sorted(p for p in entry.rglob("*.darshan") if p.is_file()))
        elif _is_manifest(entry):
            lines = [line.strip() for line in entry.read_text().splitlines()]
            found.extend(
                (entry.parent / line) if not Path(line).is_absolute() else Path(line)
                for line in lines
                if line and not line.startswith("#")
            )
        else:
            found.append(entry)  # a missing file becomes an error row, not a crash
    return found


def _screened(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """The rows that keep the jobs schema, and an error row for each that breaks it (impossible metadata)."""
    kept, errors = [], []
    for row in rows:
        try:
            JOBS.validate(pl.DataFrame([row], schema=JOBS.polars), source=row["path"])
            kept.append(row)
        except InputError as exc:
            errors.append({"path": row["path"], "reason": str(exc)})
    return kept, errors


def _frames(outcomes: Iterable[Outcome]) -> Analysis:
    """The jobs and errors tables of the traces' outcomes, sorted by path."""
    rows: list[dict] = []
    errors: list[dict] = []
    for log_rows, error in outcomes:
        rows.extend(log_rows)
        if error is not None:
            errors.append(error)
    try:
        JOBS.validate(pl.DataFrame(rows, schema=JOBS.polars))
    except InputError:  # rare: find the bad rows one by one
        rows, broken = _screened(rows)
        errors += broken
    return Analysis(
        jobs=pl.DataFrame(rows, schema=JOBS.polars).sort("path", maintain_order=True),
        errors=pl.DataFrame(errors, schema=ANALYSIS_ERRORS.polars).sort("path", maintain_order=True),
    )


def _chunks(files: list[str], size: int) -> list[list[str]]:
    return [files[i : i + size] for i in range(0, len(files), size)]


def _pool_map(files: list[str], workers: int) -> Iterator[Outcome]:
    """The outcomes of ``files``, a chunk at a time: ``workers - 1`` worker processes and this one share the chunks.

    This process works too, from the start: a worker must first import numpy, polars and pydarshan.
    """
    todo = deque(_chunks(files, min(_CHUNK, math.ceil(len(files) / (4 * workers)))))
    helpers = workers - 1
    # spawn, not fork: forking a process whose polars/numpy thread pools are running can deadlock
    with ProcessPoolExecutor(max_workers=helpers, mp_context=multiprocessing.get_context("spawn")) as pool:
        running: set[Future] = set()
        while todo or running:
            while todo and len(running) < 2 * helpers:  # every worker busy, with its next chunk queued
                running.add(pool.submit(analyze_chunk, todo.popleft()))
            if todo:
                yield from analyze_chunk(todo.popleft())
                finished = {future for future in running if future.done()}
            else:
                finished = wait(running, return_when=FIRST_COMPLETED).done
            for future in finished:
                yield from future.result()
            running -= finished


def _dask_map(files: list[str], address: str) -> Iterator[Outcome]:
    """The outcomes of ``files`` from a Dask cluster, a chunk at a time as chunks finish."""
    try:
        from distributed import Client, LocalCluster
        from distributed import as_completed as dask_completed
    except ImportError:
        raise InputError("--dask needs Dask: pip install 'iosets[dask]'") from None

    cluster = (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        if address == "local"
        else None
    )
    client = Client(cluster if cluster is not None else address)
    try:
        futures = client.map(analyze_chunk, _chunks(files, _CHUNK), pure=False)
        for future in dask_completed(futures):
            yield from future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def analyze(
    paths: Sequence[str | os.PathLike],
    *,
    workers: int | None = None,
    dask: str | None = None,
    progress: Callable[[Iterable, int], Iterable] | None = None,
) -> Analysis:
    """Analyze many traces (Darshan logs, block traces, ops tables) into the jobs table.

    Parameters
    ----------
    paths : sequence of path
        Files of any format :func:`~iosets.analyzer.sniff_format` knows, folders
        (searched recursively for ``*.darshan``) and manifests (one path per line).
    workers : int, default=None
        Processes on this machine, this one included (all cores when None); they share the
        traces in chunks of up to 16. With 1, or fewer than 48 traces, all runs in this process.
    dask : str, default=None
        ``"local"`` for a Dask LocalCluster, or a scheduler address ``tcp://host:8786``
        (dask-jobqueue deploys one on Slurm); the same chunks run on the cluster.
    progress : callable, default=None
        ``progress(iterable, total)`` wraps the stream of finished traces (a progress bar).

    Returns
    -------
    Analysis
        ``jobs`` (:data:`iosets.schemas.JOBS`: one row per Darshan log, one per job of other
        traces, with ``path``) and ``errors`` (:data:`iosets.schemas.ANALYSIS_ERRORS`), both
        sorted by path.
    """
    if workers is not None:
        check_count(workers, "workers", minimum=1)
    files = [str(p) for p in expand_paths(paths)]
    wrap = progress or (lambda iterable, total: iterable)
    if dask is not None:
        outcomes: Iterable[Outcome] = _dask_map(files, dask)
    else:
        workers = workers or os.cpu_count() or 1
        in_process = workers == 1 or len(files) < _MIN_PARALLEL
        outcomes = map(analyze_outcome, files) if in_process else _pool_map(files, workers)
    return _frames(wrap(outcomes, len(files)))
