"""Jobs-table rows of one trace: all an analyze worker process runs; and the outcomes of traces run in workers.

Kept small on purpose: a worker imports this module only (numpy, polars, the ingesters and the
periodicity detector), never the pipeline, the recommender or the command line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

import numpy as np
import polars as pl

from ..errors import InputError
from ..schemas import JOBS
from ._ingest import DarshanJob, ingest, read_darshan, sniff_format
from ._periodicity import Periodicity, periodicity, periodicity_from_signal
from ._pool import DEFAULT_TIMEOUT, Pool

Outcome = tuple[list[dict], dict | None]
"""What analysing one trace gives: its jobs-table rows, or no row and an error row (``path``, ``reason``)."""

_RHYTHM_COLUMNS = ("job_id", "w_iter", "w_iter_confidence", "alpha_io", "n_phases")


def _rhythm_of(result: Periodicity) -> dict:
    """The jobs-table rhythm columns of a periodicity result (``w_iter`` null unless periodic)."""
    return {
        "w_iter": result.w_iter if result.periodic else None,
        "w_iter_confidence": result.confidence,
        "alpha_io": result.alpha_io,
        "n_phases": result.n_phases,
    }


def _rhythm(job: DarshanJob) -> dict:
    """w_iter, its confidence, alpha_io and n_phases from the richest source of the log."""
    if job.source == "dxt" and job.ops is not None and job.ops.height:
        return _rhythm_of(periodicity(job.ops))
    if job.source == "heatmap" and job.heatmap is not None:
        width, read, write = job.heatmap
        return _rhythm_of(periodicity_from_signal((np.asarray(read) + np.asarray(write)) / width, width))
    runtime = job.meta.get("runtime") or 0.0
    io_time = job.counters.get("io_time") or 0.0
    alpha = float(min(max(io_time / runtime, 0.0), 1.0)) if runtime > 0 else None
    return {"w_iter": None, "w_iter_confidence": 0.0, "alpha_io": alpha, "n_phases": None}


def analyze_log(path: str | os.PathLike, *, timeout: float = DEFAULT_TIMEOUT) -> dict:
    """One jobs-table row for a Darshan log (raises InputError on a bad log).

    darshan-util runs in a worker process (:func:`read_darshan`), ``timeout`` seconds at most.
    """
    job = read_darshan(path, timeout=timeout)
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
    rhythms = [
        {"job_id": job_id, **_rhythm_of(periodicity(frame))}
        for (job_id,), frame in ops.partition_by("job_id", as_dict=True, maintain_order=True).items()
    ]
    rhythm = pl.DataFrame(rhythms, schema={c: JOBS.polars[c] for c in _RHYTHM_COLUMNS})
    return (
        per_job.with_columns(pl.col("job_id").cast(pl.String))
        .join(rhythm, on="job_id", how="left")
        .with_columns(
            pl.lit("").alias("user"),
            pl.lit("").alias("app"),
            pl.lit(source).alias("source"),
            pl.lit(None, pl.String).alias("path"),
        )
        .select(JOBS.names)
        .cast(JOBS.polars)
    )


def analyze_path(path: str | os.PathLike, *, timeout: float = DEFAULT_TIMEOUT) -> list[dict]:
    """Jobs-table rows of one trace of any registered format (raises InputError on a bad trace).

    A Darshan log gives one row from its metadata, counters and richest time source
    (:func:`analyze_log`, ``timeout`` seconds at most); any other trace gives one row per
    ``job_id`` of its ops table (:func:`analyze_ops`), with ``path`` set.
    """
    if sniff_format(path) == "darshan":
        return [analyze_log(path, timeout=timeout)]
    return analyze_ops(ingest(path)).with_columns(pl.lit(str(path)).alias("path")).to_dicts()


def analyze_outcome(path: str, timeout: float = DEFAULT_TIMEOUT) -> Outcome:
    """:func:`analyze_path`, with any failure turned into an error row: a bad trace never stops a batch."""
    try:
        return analyze_path(path, timeout=timeout), None
    except InputError as exc:
        return [], {"path": path, "reason": str(exc)}
    except Exception as exc:  # noqa: BLE001 - any other failure of one trace is reported, not raised
        return [], {"path": path, "reason": f"{type(exc).__name__}: {exc}"}


def pooled_outcomes(pool: Pool, paths: Sequence[str], timeout: float) -> Iterator[tuple[int, Outcome]]:
    """``(index, outcome)`` of each trace, analysed in the pool's workers, as they finish.

    A trace that crashed or hung its worker gets an error row that says so.
    """
    for index, reply in pool.run(((analyze_outcome, path) for path in paths), timeout=timeout):
        path = paths[index]
        if reply.died is not None:
            yield index, ([], {"path": path, "reason": f"{path}: {reply.died}"})
        elif reply.error is not None:  # analyze_outcome catches everything: a bug if it happens
            yield index, ([], {"path": path, "reason": f"{type(reply.error).__name__}: {reply.error}"})
        else:
            yield index, reply.value


def analyze_chunk(paths: list[str], timeout: float = DEFAULT_TIMEOUT) -> list[Outcome]:
    """The outcome of each trace of a chunk, in order, in a worker process of its own (a Dask task).

    A crash on one trace costs that worker, never the process that runs the chunk.
    """
    with Pool(1) as pool:
        found = dict(pooled_outcomes(pool, paths, timeout))
    return [found[i] for i in range(len(paths))]
