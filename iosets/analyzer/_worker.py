"""Jobs-table rows of one trace: all an analyze worker process runs; and the outcomes of traces run in workers.

Kept small on purpose: a worker imports this module only (numpy, polars, the ingesters and the
periodicity detector), never the pipeline, the recommender or the command line.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import polars as pl

from ..errors import InputError
from ..schemas import JOBS
from ._detail import Detail, log_detail, requests_detail
from ._ingest import DarshanJob, ModuleTotals, ingest, read_darshan, sniff_format
from ._memory import out_of_memory
from ._periodicity import Periodicity, periodicity
from ._pool import DEFAULT_TIMEOUT, Pool
from ._rhythm import Timeline, job_rhythm, log_timeline

Outcome = tuple[list[dict], dict | None]
"""What analysing one trace gives: its jobs-table rows, or no row and an error row (``path``, ``reason``).

A Darshan log's row also holds, under ``PART``, the :class:`LogPart` that merging it with the other logs of
its job needs (:func:`iosets.analyzer._jobs.merge_logs` takes it out)."""

PART = "_part"
DETAIL = "_detail"
"""Key of the :class:`~iosets.analyzer._detail.Detail` of a row of another trace than a Darshan log."""
T = TypeVar("T")

_RHYTHM_COLUMNS = ("job_id", "w_iter", "w_iter_confidence", "alpha_io", "n_phases", "not_periodic", "explanation")


@dataclass(frozen=True)
class LogPart:
    """What merging a log into its job needs beyond its row."""

    timeline: Timeline | None
    busy: float
    """The slowest process's I/O time (s, counters)."""
    modules: tuple[ModuleTotals, ...]
    """Each module's traffic (the breakdown behind the row's totals)."""
    detail: Detail | None = None
    """Its request sizes, access order, metadata time, rank spread and I/O over time (the job detail)."""


def _rhythm_of(result: Periodicity) -> dict:
    """The jobs-table rhythm columns of a periodicity result (``w_iter`` null unless periodic)."""
    return {
        "w_iter": result.w_iter,
        "w_iter_confidence": result.confidence,
        "alpha_io": result.alpha_io,
        "n_phases": result.n_phases,
        "not_periodic": result.reason,
        "explanation": result.explanation,
    }


def _source_note(job: DarshanJob, rhythm_from: str) -> str:
    """Where the rhythm came from, and what a partial DXT trace changed."""
    if not job.partial_dxt:
        return f"; from {rhythm_from}"
    if job.source == "heatmap":
        return f"; from {rhythm_from}: the DXT trace is partial (Darshan ran out of DXT memory)"
    return f"; from {rhythm_from}, a partial trace that covers the run's start only"


def log_row(job: DarshanJob, path: str, min_confidence: float) -> dict:
    """A log's jobs-table row, with its :class:`LogPart` under ``PART``."""
    meta, counters = job.meta, job.counters
    timeline = log_timeline(job)
    busy = float(counters.get("slowest_io_time") or 0.0)
    moved = float(counters.get("bytes_read") or 0) + float(counters.get("bytes_written") or 0)
    rhythm = job_rhythm(
        [(0.0, timeline)], runtime=meta["runtime"], total_bytes=moved, busy_time=busy, min_confidence=min_confidence
    )
    rhythm["explanation"] += _source_note(job, rhythm["rhythm_from"])
    return {
        "job_id": str(meta["job_id"]),
        "user": str(meta.get("user", "")),
        "app": meta.get("app", ""),
        "nprocs": meta.get("nprocs"),
        "nodes": None,  # a Darshan log does not record it
        "start": meta.get("start"),
        "end": meta.get("end"),
        "runtime": meta.get("runtime"),
        "bytes_read": counters.get("bytes_read"),
        "bytes_written": counters.get("bytes_written"),
        "io_time": counters.get("io_time"),
        "reads": counters.get("reads"),
        "writes": counters.get("writes"),
        "modules": counters.get("modules"),
        **rhythm,
        "source": job.source,
        "partial": job.partial_dxt,
        "n_logs": 1,
        "step": meta.get("step"),
        "path": path,
        PART: LogPart(timeline, busy, job.modules, log_detail(job)),
    }


def analyze_log(path: str | os.PathLike, *, timeout: float = DEFAULT_TIMEOUT, min_confidence: float = 0.5) -> dict:
    """One jobs-table row for a Darshan log (raises InputError on a bad log).

    darshan-util runs in a worker process (:func:`read_darshan`), ``timeout`` seconds at most;
    ``min_confidence`` (0..1) is the confidence a period needs.
    """
    row = log_row(read_darshan(path, timeout=timeout), str(path), min_confidence)
    del row[PART]
    return row


def analyze_requests(ops: pl.DataFrame, *, source: str = "ops", min_confidence: float = 0.5) -> pl.DataFrame:
    """The jobs table of a requests table: one row per ``job_id``.

    Bytes and operations are counted per direction, ``io_time`` is the requests' cumulative time
    divided by the number of ranks (Darshan's convention), and the rhythm comes from
    :func:`periodicity` on each job's requests (``min_confidence`` the confidence a period needs).
    """
    if ops.is_empty():
        raise InputError("requests table: no requests")
    ends = pl.coalesce("end", "start")
    is_read, is_write = pl.col("op") == "read", pl.col("op") == "write"
    per_job = (
        ops.with_columns(ends.alias("_end"))
        .group_by("job_id", maintain_order=True)
        .agg(
            pl.col("rank").n_unique().alias("nprocs"),
            pl.col("start").min().alias("start"),
            pl.col("_end").max().alias("end"),
            pl.col("size").filter(is_read).sum().cast(pl.Float64).alias("bytes_read"),
            pl.col("size").filter(is_write).sum().cast(pl.Float64).alias("bytes_written"),
            ((pl.col("_end") - pl.col("start")).sum() / pl.col("rank").n_unique()).alias("io_time"),
            is_read.sum().cast(pl.Int64).alias("reads"),
            is_write.sum().cast(pl.Int64).alias("writes"),
        )
        .with_columns((pl.col("end") - pl.col("start")).alias("runtime"))
    )
    rhythms = [
        {"job_id": job_id, **_rhythm_of(periodicity(frame, min_confidence=min_confidence))}
        for (job_id,), frame in ops.partition_by("job_id", as_dict=True, maintain_order=True).items()
    ]
    rhythm = pl.DataFrame(rhythms, schema={c: JOBS.polars[c] for c in _RHYTHM_COLUMNS})
    return (
        per_job.with_columns(pl.col("job_id").cast(pl.String))
        .join(rhythm, on="job_id", how="left")
        .with_columns(
            pl.lit("").alias("user"),
            pl.lit("").alias("app"),
            pl.lit(None, pl.Int64).alias("nodes"),
            pl.lit(None, pl.String).alias("modules"),
            pl.lit(source).alias("source"),
            pl.lit("ops").alias("rhythm_from"),
            pl.lit(None, pl.Float64).alias("resolution"),
            pl.lit(False).alias("partial"),
            pl.lit(None, pl.Int64).alias("n_logs"),
            pl.lit(None, pl.String).alias("step"),
            pl.lit(None, pl.String).alias("path"),
        )
        .select(JOBS.names)
        .cast(JOBS.polars)
    )


def analyze_path(
    path: str | os.PathLike, *, timeout: float = DEFAULT_TIMEOUT, min_confidence: float = 0.5
) -> list[dict]:
    """Jobs-table rows of one trace of any registered format (raises InputError on a bad trace).

    A Darshan log gives one row from its metadata, counters and richest time source, with its
    :class:`LogPart` under ``PART`` (``timeout`` seconds at most); any other trace gives one row
    per ``job_id`` of its requests table (:func:`analyze_requests`), with ``path`` set and its
    detail under ``DETAIL``.
    """
    if sniff_format(path) == "darshan":
        return [log_row(read_darshan(path, timeout=timeout), str(path), min_confidence)]
    ops = ingest(path)
    jobs = analyze_requests(ops, min_confidence=min_confidence)
    details = {
        str(job_id): requests_detail(frame)
        for (job_id,), frame in ops.partition_by("job_id", as_dict=True, maintain_order=True).items()
    }
    rows = jobs.with_columns(pl.lit(str(path)).alias("path")).to_dicts()
    return [{**row, DETAIL: details.get(row["job_id"])} for row in rows]


def error_row(path: str, exc: BaseException) -> dict:
    """The error row of a trace that failed: an InputError's message, or any other exception's type and message."""
    if isinstance(exc, MemoryError):  # its message names the worker's limit (:mod:`._forkserver`)
        reason = f"{path}: {exc}"
    else:
        reason = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
    return {"path": path, "reason": reason}


def analyze_outcome(path: str, timeout: float = DEFAULT_TIMEOUT, min_confidence: float = 0.5) -> Outcome:
    """:func:`analyze_path`, with any failure turned into an error row: a bad trace never stops a batch."""
    try:
        return analyze_path(path, timeout=timeout, min_confidence=min_confidence), None
    except MemoryError:  # past the worker's limit (:mod:`._memory`); what it allocated is let go
        return [], {"path": path, "reason": f"{path}: {out_of_memory()}"}
    except Exception as exc:  # noqa: BLE001 - any failure of one trace is reported, not raised
        return [], error_row(path, exc)


def pooled_replies(
    pool: Pool, task: Callable[[str], T], paths: Sequence[str], timeout: float, failed: Callable[[dict], T]
) -> Iterator[tuple[int, T]]:
    """``(index, task(path))`` of each trace, run in the pool's workers, as they finish.

    A trace that crashed or hung its worker, or whose task raised, gets ``failed(error row)``.
    """
    for index, reply in pool.run(((task, path) for path in paths), timeout=timeout):
        path = paths[index]
        if reply.died is not None:
            yield index, failed({"path": path, "reason": f"{path}: {reply.died}"})
        elif reply.error is not None:  # the tasks catch everything: a bug if it happens
            yield index, failed(error_row(path, reply.error))
        else:
            yield index, reply.value


def pooled_outcomes(
    pool: Pool, paths: Sequence[str], timeout: float, min_confidence: float = 0.5
) -> Iterator[tuple[int, Outcome]]:
    """``(index, outcome)`` of each trace, analysed in the pool's workers, as they finish."""
    task = functools.partial(analyze_outcome, timeout=timeout, min_confidence=min_confidence)
    return pooled_replies(pool, task, paths, timeout, lambda error: ([], error))


def analyze_chunk(paths: list[str], timeout: float = DEFAULT_TIMEOUT, min_confidence: float = 0.5) -> list[Outcome]:
    """The outcome of each trace of a chunk, in order, in a worker process of its own (a Dask task).

    A crash on one trace costs that worker, never the process that runs the chunk.
    """
    with Pool(1) as pool:
        found = dict(pooled_outcomes(pool, paths, timeout, min_confidence))
    return [found[i] for i in range(len(paths))]
