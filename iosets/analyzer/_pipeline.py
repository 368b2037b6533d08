"""Many traces to one jobs table: in this process, on this machine's cores, or on a Dask cluster.

darshan-util never runs in the caller: Darshan logs are read in worker processes (:mod:`._pool`),
so that a log that crashes or hangs it becomes an error row and the batch goes on.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from .._validation import check_count, check_positive
from ..errors import InputError
from ..schemas import ANALYSIS_ERRORS, JOBS
from ._ingest import sniff_format
from ._pool import DEFAULT_TIMEOUT, Pool
from ._worker import Outcome, analyze_chunk, analyze_outcome, pooled_outcomes

MANIFEST_SUFFIXES = (".txt", ".lst", ".list", ".manifest")
_CHUNK = 16  # traces per Dask task
_MIN_PARALLEL = 48  # smaller batches run in this process (Darshan logs in its one persistent reader process)


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


def _dask_map(files: list[str], address: str, timeout: float) -> Iterator[Outcome]:
    """The outcomes of ``files`` from a Dask cluster, a chunk at a time as chunks finish (each in a worker process)."""
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
        task = functools.partial(analyze_chunk, timeout=timeout)
        futures = client.map(task, _chunks(files, _CHUNK), pure=False)
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
    timeout: float = DEFAULT_TIMEOUT,
) -> Analysis:
    """Analyze many traces (Darshan logs, block traces, ops tables) into the jobs table.

    Parameters
    ----------
    paths : sequence of path
        Files of any format :func:`~iosets.analyzer.sniff_format` knows, folders
        (searched recursively for ``*.darshan``) and manifests (one path per line).
    workers : int, default=None
        Worker processes on this machine (all cores when None); they take the traces one at a
        time. Fewer than 48 traces run in this process, their Darshan logs read by one worker.
    dask : str, default=None
        ``"local"`` for a Dask LocalCluster, or a scheduler address ``tcp://host:8786``
        (dask-jobqueue deploys one on Slurm); chunks of 16 traces run on the cluster, each in a
        worker process of its own, so that a crash costs that process, not the Dask worker.
    progress : callable, default=None
        ``progress(iterable, total)`` wraps the stream of finished traces (a progress bar).
    timeout : float, default=60
        Seconds one trace may take; a worker stuck longer is killed and the trace becomes an
        error row ("darshan-util did not finish within 60 s while reading BG/Q").

    Returns
    -------
    Analysis
        ``jobs`` (:data:`iosets.schemas.JOBS`: one row per Darshan log, one per job of other
        traces, with ``path``) and ``errors`` (:data:`iosets.schemas.ANALYSIS_ERRORS`), both
        sorted by path. A log that crashed darshan-util has an error row such as
        ``x.darshan: darshan-util crashed: signal 11 (SIGSEGV) while reading DXT_POSIX``.
    """
    if workers is not None:
        check_count(workers, "workers", minimum=1)
    check_positive(timeout, "timeout")
    files = [str(p) for p in expand_paths(paths)]
    wrap = progress or (lambda iterable, total: iterable)
    if dask is not None:
        return _frames(wrap(_dask_map(files, dask, timeout), len(files)))
    if len(files) < _MIN_PARALLEL:
        return _frames(wrap((analyze_outcome(path, timeout) for path in files), len(files)))
    with Pool(min(workers or os.cpu_count() or 1, len(files))) as pool:  # closed on any exit, Ctrl-C included
        outcomes = (outcome for _, outcome in pooled_outcomes(pool, files, timeout))
        return _frames(wrap(outcomes, len(files)))
