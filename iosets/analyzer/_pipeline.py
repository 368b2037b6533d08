"""Many logs to one jobs table: on this machine's cores or on a Dask cluster."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from ..errors import InputError
from ._darshan import read_darshan
from ._periodicity import periodicity, periodicity_from_signal

JOB_COLUMNS = {
    "job_id": pl.String,
    "user": pl.String,
    "app": pl.String,
    "nprocs": pl.Int64,
    "start": pl.Float64,
    "end": pl.Float64,
    "runtime": pl.Float64,
    "bytes_read": pl.Float64,
    "bytes_written": pl.Float64,
    "io_time": pl.Float64,
    "w_iter": pl.Float64,
    "w_iter_confidence": pl.Float64,
    "alpha_io": pl.Float64,
    "n_phases": pl.Int64,
    "source": pl.String,
    "path": pl.String,
}
"""The jobs table of DESIGN.md, plus the log each row came from."""
ERROR_COLUMNS = {"path": pl.String, "reason": pl.String}
MANIFEST_SUFFIXES = (".txt", ".lst", ".list", ".manifest")


@dataclass(frozen=True)
class Analysis:
    """Result of :func:`analyze`: one row per job, and the inputs that failed."""

    jobs: pl.DataFrame
    errors: pl.DataFrame


def expand_paths(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Darshan logs named by files, folders (searched recursively) and manifests (one path per line)."""
    found: list[Path] = []
    for entry in map(Path, paths):
        if entry.is_dir():
            found.extend(sorted(p for p in entry.rglob("*.darshan") if p.is_file()))
        elif entry.suffix in MANIFEST_SUFFIXES and entry.is_file():
            lines = [line.strip() for line in entry.read_text().splitlines()]
            found.extend(
                (entry.parent / line) if not Path(line).is_absolute() else Path(line)
                for line in lines
                if line and not line.startswith("#")
            )
        else:
            found.append(entry)  # a missing file becomes an error row, not a crash
    return found


def _rhythm(job) -> dict:
    """w_iter, its confidence, alpha_io and n_phases from the richest source of the log."""
    if job.source == "dxt" and job.ops is not None and job.ops.height:
        result = periodicity(job.ops)
    elif job.source == "heatmap" and job.heatmap is not None:
        width, read, write = job.heatmap
        result = periodicity_from_signal((np.asarray(read) + np.asarray(write)) / width, width)
    else:
        runtime = job.meta.get("runtime") or 0.0
        io_time = job.counters.get("io_time") or 0.0
        alpha = float(min(max(io_time / runtime, 0.0), 1.0)) if runtime > 0 else None
        return {"w_iter": None, "w_iter_confidence": 0.0, "alpha_io": alpha, "n_phases": None}
    return {
        "w_iter": result.w_iter if result.periodic else None,
        "w_iter_confidence": result.confidence,
        "alpha_io": result.alpha_io,
        "n_phases": result.n_phases,
    }


def analyze_log(path: str | os.PathLike) -> dict:
    """One jobs-table row for a Darshan log (raises InputError on a bad log)."""
    job = read_darshan(path)
    meta, counters = job.meta, job.counters
    return {
        "job_id": str(meta.get("job_id")),
        "user": str(meta.get("user", "")),
        "app": meta.get("app", ""),
        "nprocs": meta.get("nprocs"),
        "start": meta.get("start"),
        "end": meta.get("end"),
        "runtime": meta.get("runtime"),
        "bytes_read": counters.get("bytes_read"),
        "bytes_written": counters.get("bytes_written"),
        "io_time": counters.get("io_time"),
        **_rhythm(job),
        "source": job.source,
        "path": str(path),
    }


def _safe_analyze(path: str) -> tuple[dict | None, dict | None]:
    """(row, None) or (None, error row): a bad log never stops the batch."""
    try:
        return analyze_log(path), None
    except InputError as exc:
        return None, {"path": path, "reason": str(exc)}
    except Exception as exc:  # noqa: BLE001 - any other failure of one log is reported, not raised
        return None, {"path": path, "reason": f"{type(exc).__name__}: {exc}"}


def _frames(outcomes: Iterable[tuple[dict | None, dict | None]]) -> Analysis:
    rows, errors = [], []
    for row, error in outcomes:
        (rows if row is not None else errors).append(row if row is not None else error)
    jobs = pl.DataFrame(rows, schema=JOB_COLUMNS, orient="row") if rows else pl.DataFrame(schema=JOB_COLUMNS)
    return Analysis(
        jobs=jobs.sort("path"),
        errors=pl.DataFrame(errors, schema=ERROR_COLUMNS).sort("path"),
    )


def analyze(
    paths: Sequence[str | os.PathLike],
    *,
    workers: int | None = None,
    dask: str | None = None,
    progress: Callable[[Iterable, int], Iterable] | None = None,
) -> Analysis:
    """Analyze many Darshan logs into the jobs table.

    Parameters
    ----------
    paths : sequence of path
        Files, folders (searched recursively for ``*.darshan``) and manifests.
    workers : int, default=None
        Processes on this machine (all cores when None; 1 runs in this process).
    dask : str, default=None
        ``"local"`` for a Dask LocalCluster, or a scheduler address ``tcp://host:8786``
        (dask-jobqueue deploys one on Slurm); the same map runs on the cluster.
    progress : callable, default=None
        ``progress(iterable, total)`` wraps the stream of finished logs (a progress bar).

    Returns
    -------
    Analysis
        ``jobs`` (one row per log, DESIGN.md columns plus ``path``) and ``errors`` (``path``, ``reason``).
    """
    files = [str(p) for p in expand_paths(paths)]
    wrap = progress or (lambda iterable, total: iterable)
    if dask is not None:
        return _frames(wrap(_dask_map(files, dask), len(files)))
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(files) <= 1:
        return _frames(wrap(map(_safe_analyze, files), len(files)))
    # spawn, not fork: forking a process whose polars/numpy thread pools are running can deadlock
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_safe_analyze, f) for f in files]
        return _frames(wrap((f.result() for f in as_completed(futures)), len(files)))


def _dask_map(files: list[str], address: str):
    """The per-log map on a Dask cluster, yielding results as they finish."""
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
        futures = client.map(_safe_analyze, files, pure=False)
        for future in dask_completed(futures):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def analyze_ops(ops: pl.DataFrame, *, source: str = "ops") -> pl.DataFrame:
    """The jobs table of an ops table: one row per ``job_id``.

    Bytes are summed per direction, ``io_time`` is the requests' cumulative time
    divided by the number of ranks (Darshan's convention), and the rhythm comes
    from :func:`periodicity` on each job's requests.
    """
    if ops.is_empty():
        raise InputError("ops table: no requests")
    ends = pl.coalesce("end", "start")
    per_job = (
        ops.with_columns(ends.alias("_end"))
        .group_by("job_id", maintain_order=True)
        .agg(
            pl.col("rank").n_unique().alias("nprocs"),
            pl.col("start").min().alias("start"),
            pl.col("_end").max().alias("end"),
            pl.col("size").filter(pl.col("op") == "read").sum().cast(pl.Float64).alias("bytes_read"),
            pl.col("size").filter(pl.col("op") == "write").sum().cast(pl.Float64).alias("bytes_written"),
            ((pl.col("_end") - pl.col("start")).sum() / pl.col("rank").n_unique()).alias("io_time"),
        )
        .with_columns((pl.col("end") - pl.col("start")).alias("runtime"))
    )
    rhythms = []
    for job_id, frame in ops.partition_by("job_id", as_dict=True, maintain_order=True).items():
        result = periodicity(frame)
        rhythms.append(
            {
                "job_id": job_id[0],
                "w_iter": result.w_iter if result.periodic else None,
                "w_iter_confidence": result.confidence,
                "alpha_io": result.alpha_io,
                "n_phases": result.n_phases,
            }
        )
    rhythm = pl.DataFrame(
        rhythms, schema={k: JOB_COLUMNS[k] for k in ("job_id", "w_iter", "w_iter_confidence", "alpha_io", "n_phases")}
    )
    return (
        per_job.with_columns(pl.col("job_id").cast(pl.String))
        .join(rhythm, on="job_id", how="left")
        .with_columns(
            pl.lit("").alias("user"),
            pl.lit("").alias("app"),
            pl.lit(source).alias("source"),
            pl.lit(None, pl.String).alias("path"),
        )
        .select(list(JOB_COLUMNS))
        .cast(JOB_COLUMNS)
    )
