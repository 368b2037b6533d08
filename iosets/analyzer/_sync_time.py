"""Sync time: what a job spends in fsync, fdatasync and MPI_File_sync, which DXT does not trace.

DXT traces a job's write calls (``pwrite``, ``MPI_File_write_at``...), not its sync calls, yet a
buffered checkpoint spends much of its I/O time flushing. Darshan's counters hold them
(darshan-runtime 3.5, ``darshan-posix.c`` and ``darshan-mpiio.c``): a POSIX record counts its
``fsync`` / ``fdatasync`` calls (``POSIX_FSYNCS``, ``POSIX_FDSYNCS``), an MPI-IO record its
``MPI_File_sync`` calls (``MPIIO_SYNCS``), and both add the calls' time to the record's
``<P>_F_WRITE_TIME`` under the timer rule of its writes (``DARSHAN_TIMER_INC_NO_OVERLAP``: a call
adds ``end - max(start, the latest end of the record's earlier writes and syncs)``).

**How much.** DXT records each write with the timestamps the counter adds, in the order it adds
them. So a record with sync calls has spent in them its ``F_WRITE_TIME`` minus the timer rule run
over its DXT write segments in record order; for a record shared by every rank (rank -1, whose
times Darshan summed over ranks), minus the sum of the ranks' segments' times. MPI_File_sync calls
fsync underneath, so a file's sync time counts once: from the layer, MPI-IO or POSIX, whose records
give it more (the stacking rule of :mod:`._ingest._darshan_counters`). A record without DXT
write segments, and every record of a log whose DXT trace is partial, gets none: nothing says
when its syncs happened.

**Where.** A sync makes the writes before it durable, so a record's sync time goes to the ends of
the runs where the record's writes are, split in proportion to their bytes (the buffered data each
flushed). A run is a stretch of the rank's activity: its DXT segments of every module, read or
write, back-to-back ones (at most :data:`BACK_TO_BACK` apart) as one, as the rhythm's whole
operations. A rank's sync time at a run starts at the run's end and stops at the rank's next run,
so that it never overlaps the rank's next I/O; what does not fit goes on at the end of that next run.

A shared record's time is split over the phases of its file (the ranks' runs that overlap) by
their bytes. One flush makes a shared file durable for every rank, so in each phase the ranks' sync
calls end together, at the date ``T`` where ``sum(max(0, T - end_r))`` over the ranks' last runs
of the phase is the phase's sync time.

The pieces are requests of 0 bytes (:func:`sync_requests`) that join the DXT requests before the
job's activity runs are found: alpha_io counts them, bytes do not change.
"""

from __future__ import annotations

import polars as pl

from ._ingest import DarshanJob
from ._periodicity import BACK_TO_BACK

__all__ = ["SYNC_LAYERS", "sync_requests", "sync_times"]

SYNC_LAYERS = {"MPI-IO": "DXT_MPIIO", "POSIX": "DXT_POSIX"}
"""Counter modules whose records count sync calls, and the DXT module of their write segments."""

_TIMES = pl.Schema({"file": pl.String, "rank": pl.Int64, "module": pl.String, "seconds": pl.Float64})
_REQUESTS = pl.Schema({"rank": pl.Int64, "size": pl.Int64, "start": pl.Float64, "end": pl.Float64})


def _timed_writes(dxt: pl.DataFrame) -> pl.DataFrame:
    """Per file and rank, the time Darshan's timer rule gives a DXT module's write segments (in record order)."""
    latest = pl.col("end").cum_max().shift(1).over("file", "rank")
    return (
        dxt.filter(pl.col("op") == "write")
        .select(
            "file", "rank", (pl.col("end") - pl.max_horizontal("start", latest.fill_null(pl.col("start")))).alias("t")
        )
        .group_by("file", "rank")
        .agg(pl.col("t").sum().alias("timed"))
    )


def sync_times(job: DarshanJob) -> pl.DataFrame:
    """Sync time of each file and rank with sync calls (see the module doc), and the DXT module that places it.

    Returns
    -------
    polars.DataFrame
        ``file``, ``rank`` (-1: a record shared by every rank), ``module`` (``DXT_MPIIO`` or
        ``DXT_POSIX``) and ``seconds`` (> 0); one layer per file.
    """
    syncs = job.syncs
    if syncs is None or syncs.is_empty() or job.partial_dxt:
        return pl.DataFrame(schema=_TIMES)
    frames = []
    for layer, module in SYNC_LAYERS.items():
        records = syncs.filter(pl.col("module") == layer)
        if module not in job.dxt or records.is_empty():
            continue
        timed = _timed_writes(job.dxt[module])
        own = records.filter(pl.col("rank") >= 0).join(timed, on=["file", "rank"])
        shared = records.filter(pl.col("rank") < 0).join(timed.group_by("file").agg(pl.col("timed").sum()), on="file")
        frames += [
            part.select(
                "file",
                "rank",
                pl.lit(module).alias("module"),
                (pl.col("write_time") - pl.col("timed")).alias("seconds"),
            )
            for part in (own, shared)
        ]
    table = (
        pl.concat(frames, how="vertical_relaxed").filter(pl.col("seconds") > 0)
        if frames
        else pl.DataFrame(schema=_TIMES)
    )
    best = (
        table.group_by("file", "module")
        .agg(pl.col("seconds").sum())
        .sort(["file", "seconds", "module"], descending=[False, True, False])
        .unique("file", keep="first")
        .select("file", "module")
    )
    return table.join(best, on=["file", "module"]).sort("file", "rank").cast(_TIMES)


def _rank_runs(job: DarshanJob) -> pl.DataFrame:
    """Each rank's activity runs (all DXT modules): ``run``, ``rank``, ``start``, ``end``, ``next`` (next run start)."""
    segments = pl.concat([frame.select("rank", "start", "end") for frame in job.dxt.values()]).sort("rank", "start")
    reach = pl.col("end").cum_max().shift(1).over("rank")
    return (
        segments.with_columns((reach.is_null() | (pl.col("start") > reach + BACK_TO_BACK)).cum_sum().alias("run"))
        .group_by("run")
        .agg(pl.col("rank").first(), pl.col("start").min(), pl.col("end").max())
        .sort("rank", "start")
        .with_columns(pl.col("start").shift(-1).over("rank").alias("next"))
    )


def sync_requests(job: DarshanJob) -> pl.DataFrame:
    """The job's sync time as requests of 0 bytes placed after the writes they made durable (see the module doc).

    Returns
    -------
    polars.DataFrame
        ``rank``, ``size`` (0), ``start`` and ``end`` (s, on the clock of the log's DXT segments); empty
        when the log has no sync time.
    """
    times = sync_times(job)
    if times.is_empty():
        return pl.DataFrame(schema=_REQUESTS)
    runs = _rank_runs(job)
    written = _written_in_runs(job, times, runs)
    per_run = pl.concat(
        [_own_sync(written.filter(pl.col("owner") >= 0)), _shared_sync(written.filter(pl.col("owner") < 0))]
    )
    per_run = per_run.group_by("run").agg(pl.col("sync").sum())
    return _placed(runs.join(per_run, on="run", how="left").with_columns(pl.col("sync").fill_null(0.0)))


def _written_in_runs(job: DarshanJob, times: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Per synced record and rank run, the bytes its writes put there.

    Columns ``file``, ``owner`` (the record's rank, -1 shared), ``run``, ``rank``, ``seconds`` (the record's
    sync time), ``run_start`` and ``end`` (the run's), ``bytes`` and ``n`` (write segments).
    """
    segments = []
    for module in times.get_column("module").unique().to_list():
        writes = job.dxt[module].filter(pl.col("op") == "write").select("file", "rank", "size", "start")
        amounts = times.filter(pl.col("module") == module).rename({"rank": "owner"}).drop("module")
        own = amounts.filter(pl.col("owner") >= 0)
        segments += [
            own.join(writes, left_on=["file", "owner"], right_on=["file", "rank"]).with_columns(rank=pl.col("owner")),
            amounts.filter(pl.col("owner") < 0).join(writes, on="file"),
        ]
    starts = runs.select("run", "rank", pl.col("start").alias("run_start"), pl.col("end")).sort("run_start")
    in_run = (
        pl.concat(segments, how="diagonal_relaxed")
        .sort("start")
        .join_asof(starts, left_on="start", right_on="run_start", by="rank", check_sortedness=False)
    )
    return in_run.group_by("file", "owner", "run").agg(
        pl.col("rank").first(),
        pl.col("seconds").first(),
        pl.col("run_start").first(),
        pl.col("end").first(),
        pl.col("size").sum().alias("bytes"),
        pl.len().alias("n"),
    )


def _byte_share() -> pl.Expr:
    """A run's share of its record's sync time: its bytes over the record's (its segments' count without bytes)."""
    total = pl.col("bytes").sum().over("file", "owner")
    count = pl.col("n") / pl.col("n").sum().over("file", "owner")
    return pl.col("seconds") * pl.when(total > 0).then(pl.col("bytes") / total).otherwise(count)


def _own_sync(written: pl.DataFrame) -> pl.DataFrame:
    """A rank's record: each run gets its byte share of the record's sync time (``run``, ``sync``)."""
    return written.select("run", _byte_share().alias("sync"))


def _shared_sync(written: pl.DataFrame) -> pl.DataFrame:
    """A shared record: each phase gets its byte share, and its ranks' syncs end together (``run``, ``sync``).

    The ranks' runs that overlap make one phase of the file. One flush makes the shared file durable for
    every rank, so their sync calls end at one date ``T``: the level at which ``sum(max(0, T - end_r))``
    over the phase's ranks equals the phase's sync time (filled from the earliest run end up).
    """
    reach = pl.col("end").cum_max().shift(1).over("file")
    phases = (
        written.sort("file", "run_start")
        .with_columns(
            (reach.is_null() | (pl.col("run_start") > reach)).cum_sum().alias("phase"), _byte_share().alias("share")
        )
        .sort("phase", "end")
        .group_by("phase", "rank", maintain_order=True)  # a rank's syncs follow its last run of the phase
        .agg(pl.col("run").last(), pl.col("end").last(), pl.col("share").sum())
        .sort("phase", "end")
    )
    after = pl.col("end").shift(-1).over("phase")
    level = (pl.col("share").sum().over("phase") + pl.col("end").cum_sum().over("phase")) / pl.int_range(
        1, pl.len() + 1
    ).over("phase")
    return (
        phases.with_columns(level.alias("level"), (after.is_null() | (level <= after)).alias("fits"))
        .with_columns(pl.col("level").filter(pl.col("fits")).first().over("phase").alias("ends"))
        .select("run", (pl.col("ends") - pl.col("end")).clip(lower_bound=0.0).alias("sync"))
    )


def _placed(runs: pl.DataFrame) -> pl.DataFrame:
    """Sync requests from each run's sync time: from the run's end until the rank's next run, the rest carried on.

    What does not fit before the next run goes on at the end of that run (a queue's backlog: ``carry_k =
    max(0, carry_(k-1) + sync_k - room_k)``, Lindley's recursion, solved as ``S_k - min(0, min_(j<=k) S_j)``
    with ``S`` the running sum of ``sync - room`` over the rank's runs).
    """
    room = (pl.col("next") - pl.col("end")).fill_null(float(runs.get_column("sync").sum()) + 1.0)
    carry = pl.col("backlog") - pl.min_horizontal(pl.col("backlog").cum_min().over("rank"), 0.0)
    placed = pl.col("sync") + pl.col("carry").shift(1).over("rank").fill_null(0.0) - pl.col("carry")
    return (
        runs.sort("rank", "start")
        .with_columns((pl.col("sync") - room).cum_sum().over("rank").alias("backlog"))
        .with_columns(carry.alias("carry"))
        .with_columns(placed.alias("placed"))
        .filter(pl.col("placed") > 0)
        .select(
            "rank",
            pl.lit(0, pl.Int64).alias("size"),
            pl.col("end").alias("start"),
            (pl.col("end") + pl.col("placed")).alias("end"),
        )
        .cast(_REQUESTS)
    )
