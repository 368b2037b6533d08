"""Many traces to one jobs table: in this process, on this machine's cores, or on a Dask cluster.

darshan-util never runs in the caller: Darshan logs are read in worker processes (:mod:`._pool`),
so that a log that crashes or hangs it becomes an error row and the batch goes on.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from .._results import Part, Tables
from .._validation import check_count, check_fraction, check_positive
from ..errors import InputError
from ..schemas import ANALYSIS_ERRORS, JOB_ACTIVITY, JOB_DETAIL, JOB_SIZES, JOBS, MODULE_TOTALS
from ._jobs import group_logs, merge_details, merge_logs
from ._pool import DEFAULT_TIMEOUT, Pool
from ._worker import Outcome, analyze_chunk, analyze_outcome, pooled_outcomes

_CHUNK = 16  # traces per Dask task
_MIN_PARALLEL = 48  # smaller batches run in this process (Darshan logs in its one persistent reader process)


@dataclass(frozen=True)
class Analysis(Tables):
    """Result of :func:`analyze`: one row per job, the inputs that failed, each log's traffic per module, and
    each job's detail.

    ``write(path)`` writes the jobs table at ``path``, the failed inputs beside it as ``<stem>.errors<suffix>``,
    the module breakdown as ``<stem>.modules<suffix>`` and the jobs' detail as ``<stem>.detail<suffix>``,
    ``<stem>.sizes<suffix>`` and ``<stem>.activity<suffix>`` (each not written when empty or None, and the file
    an earlier run left removed); ``read(path)`` reads them back (a missing detail file gives None).
    """

    PARTS = (
        Part("jobs", JOBS, "jobs table", when_empty="remove"),
        Part("errors", ANALYSIS_ERRORS, "errors table", when_empty="remove"),
        Part("modules", MODULE_TOTALS, "module table", when_empty="remove"),
        Part("detail", JOB_DETAIL, "job detail table", when_empty="remove", optional=True),
        Part("sizes", JOB_SIZES, "request size table", when_empty="remove", optional=True),
        Part("activity", JOB_ACTIVITY, "activity table", when_empty="remove", optional=True),
    )

    jobs: pl.DataFrame
    """:data:`iosets.schemas.JOBS`: one row per job."""
    errors: pl.DataFrame
    """:data:`iosets.schemas.ANALYSIS_ERRORS`: the inputs that could not be analysed."""
    modules: pl.DataFrame
    """:data:`iosets.schemas.MODULE_TOTALS`: the breakdown of the jobs' bytes, operations and I/O time."""
    detail: pl.DataFrame | None = None
    """:data:`iosets.schemas.JOB_DETAIL`: each job's request sizes, access order, metadata time and rank spread."""
    sizes: pl.DataFrame | None = None
    """:data:`iosets.schemas.JOB_SIZES`: each job's requests per size bucket."""
    activity: pl.DataFrame | None = None
    """:data:`iosets.schemas.JOB_ACTIVITY`: each job's bytes read and written over its run, in 48 bins."""


def _listed(manifest: Path) -> list[Path]:
    """The paths a manifest lists: one per line, blank and ``#`` lines skipped, relative ones from its folder."""
    try:
        lines = manifest.read_text().splitlines()
    except OSError as exc:
        raise InputError(f"manifest {manifest}: {(exc.strerror or str(exc)).lower()}") from None
    except UnicodeDecodeError:
        raise InputError(f"manifest {manifest}: not a text file (one path per line)") from None
    entries = (line.strip() for line in lines)
    return [manifest.parent / entry for entry in entries if entry and not entry.startswith("#")]


def expand_paths(paths: Iterable[str | os.PathLike], manifests: Iterable[str | os.PathLike] = ()) -> list[Path]:
    """Traces named by files, folders (searched recursively for ``*.darshan``) and the lines of manifest files.

    A manifest is any text file: one path per line (a file or a folder), blank lines and lines
    starting with ``#`` skipped, relative paths resolved against the manifest's own folder. A
    missing manifest raises InputError; a missing trace stays in the list (it becomes an error row).
    """
    if isinstance(manifests, str | os.PathLike):
        raise InputError(f"manifests must be a list of paths, got the single path {str(manifests)!r}")
    entries = [Path(p) for p in paths]
    for manifest in manifests:
        entries.extend(_listed(Path(manifest)))
    found: list[Path] = []
    for entry in entries:
        if entry.is_dir():
            found.extend(sorted(p for p in entry.rglob("*.darshan") if p.is_file()))
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


def _frames(outcomes: Iterable[Outcome], min_confidence: float, per_log: bool) -> Analysis:
    """The jobs, errors and module tables of the outcomes (the logs of one job merged unless ``per_log``), by path."""
    rows: list[dict] = []
    errors: list[dict] = []
    for log_rows, error in outcomes:
        rows.extend(log_rows)
        if error is not None:
            errors.append(error)
    details = merge_details(group_logs(rows, per_log=per_log))
    rows, modules = merge_logs(rows, min_confidence=min_confidence, per_log=per_log)
    try:
        JOBS.validate(pl.DataFrame(rows, schema=JOBS.polars))
    except InputError:  # rare: find the bad rows one by one
        rows, broken = _screened(rows)
        errors += broken
        kept = {row["job_id"] for row in rows}
        modules = [m for m in modules if m["job_id"] in kept]
        details = {name: frame.filter(pl.col("job_id").is_in(list(kept))) for name, frame in details.items()}
    return Analysis(
        jobs=pl.DataFrame(rows, schema=JOBS.polars).sort("path", maintain_order=True),
        errors=pl.DataFrame(errors, schema=ANALYSIS_ERRORS.polars).sort("path", maintain_order=True),
        modules=pl.DataFrame(modules, schema=MODULE_TOTALS.polars).sort("job_id", "path", maintain_order=True),
        **details,
    )


def _chunks(files: list[str], size: int) -> list[list[str]]:
    return [files[i : i + size] for i in range(0, len(files), size)]


def _dask_map(files: list[str], address: str, timeout: float, min_confidence: float) -> Iterator[Outcome]:
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
        task = functools.partial(analyze_chunk, timeout=timeout, min_confidence=min_confidence)
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
    manifests: Sequence[str | os.PathLike] = (),
    workers: int | None = None,
    dask: str | None = None,
    progress: Callable[[Iterable, int], Iterable] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    min_confidence: float = 0.5,
    per_log: bool = False,
) -> Analysis:
    """Analyze many traces (Darshan logs, block traces, requests tables) into the jobs table.

    Parameters
    ----------
    paths : sequence of path
        Files of any format :func:`~iosets.analyzer.sniff_format` knows, and folders
        (searched recursively for ``*.darshan``).
    manifests : sequence of path, default=()
        Text files listing more traces or folders, one per line (blank lines and lines starting
        with ``#`` skipped; a relative path is relative to the manifest's folder). A missing
        manifest raises InputError; a listed file that is missing becomes an error row.
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
    min_confidence : float, default=0.5
        Confidence (0..1) a period needs; a job below it is "not periodic" (``irregular``).
    per_log : bool, default=False
        One row per Darshan log, as read; by default the logs of one job are one row
        (:func:`~iosets.analyzer.merge_logs`).

    Returns
    -------
    Analysis
        ``jobs`` (:data:`iosets.schemas.JOBS`: one row per job, its Darshan logs merged, one
        per job of other traces, with ``path``) and ``errors``
        (:data:`iosets.schemas.ANALYSIS_ERRORS`), both sorted by path, and ``modules``
        (:data:`iosets.schemas.MODULE_TOTALS`: each log's traffic per module, by job). A log
        that crashed darshan-util has an error row such as
        ``x.darshan: darshan-util crashed: signal 11 (SIGSEGV) while reading DXT_POSIX``.
    """
    if workers is not None:
        check_count(workers, "workers", minimum=1)
    check_positive(timeout, "timeout")
    check_fraction(min_confidence, "min_confidence")
    files = [str(p) for p in expand_paths(paths, manifests)]
    wrap = progress or (lambda iterable, total: iterable)
    if dask is not None:
        return _frames(wrap(_dask_map(files, dask, timeout, min_confidence), len(files)), min_confidence, per_log)
    if len(files) < _MIN_PARALLEL:
        outcomes = (analyze_outcome(path, timeout, min_confidence) for path in files)
        return _frames(wrap(outcomes, len(files)), min_confidence, per_log)
    with Pool(min(workers or os.cpu_count() or 1, len(files))) as pool:  # closed on any exit, Ctrl-C included
        outcomes = (outcome for _, outcome in pooled_outcomes(pool, files, timeout, min_confidence))
        return _frames(wrap(outcomes, len(files)), min_confidence, per_log)
