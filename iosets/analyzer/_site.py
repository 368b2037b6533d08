"""A site trace: many jobs' requests on one clock, each request tagged with its job's I/O phase.

A Darshan log's DXT requests are dated by the log's start (epoch s) plus their DXT offset; block
traces and requests tables keep their own dates. A job read from HEATMAP bins instead of DXT gets one
request per bin with bytes and per direction, spread over the bin (rank -1, offset and file null,
``synthetic``). Job ids, merged logs and phases are the analyzer's: the jobs come from the merge of
:func:`analyze`, and each request's phase from the segmentation behind the jobs table's ``n_phases``. The
layouts of the files in the logs' LUSTRE records (stripe size and count, first OST) come along, per job.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from .._results import Part, Tables
from .._validation import check_count, check_positive
from ..errors import InputError
from ..schemas import ANALYSIS_ERRORS, JOBS, SITE_FILES, SITE_REQUESTS
from ._clocks import log_shifts
from ._ingest import DarshanJob, FileLayouts, ingest, read_darshan, sniff_format
from ._jobs import JobLogs, group_logs
from ._periodicity import phase_bounds
from ._pipeline import _MIN_PARALLEL, _frames, expand_paths
from ._pool import DEFAULT_TIMEOUT, Pool
from ._rhythm import job_phases
from ._worker import PART, Outcome, analyze_requests, error_row, log_row, pooled_replies

_SKIPPED = {"job_id": pl.String, "path": pl.String, "reason": pl.String}
"""Columns of :attr:`SiteTrace.skipped`."""
_COUNTERS_ONLY = "counters only: no DXT or HEATMAP record dates its I/O"
_EMPTY_HEATMAP = "its HEATMAP bins hold no bytes"
_MIN_CONFIDENCE = 0.5  # the jobs table's default (analyze's)
_TOLERANCE = 1e-9  # s: round-off allowed when a request's midpoint is matched to a phase
_REQUEST_COLUMNS = ("rank", "op", "offset", "size", "start", "end", "file")

SiteOutcome = tuple[Outcome, pl.DataFrame | None, FileLayouts | None]
"""A trace's outcome for :func:`analyze`, its requests (times from the log's start for a Darshan log), and the file
layouts of its LUSTRE records (None without them)."""


@dataclass(frozen=True)
class SiteTrace(Tables):
    """Result of :func:`site_trace`: the requests, their jobs, their files' layouts, what was skipped and what failed.

    ``write(path)`` writes the requests at ``path``, their jobs beside them as ``<stem>.jobs<suffix>`` (whose
    start dates let a trace replay count compute before a job's first request) and the file layouts as
    ``<stem>.files<suffix>``; ``read(path)`` reads them (``skipped`` and ``errors`` are not written: they come
    back empty; a site trace written without jobs or files gives None for them).
    """

    PARTS = (
        Part("requests", SITE_REQUESTS, "site trace", when_empty="remove"),
        Part("jobs", JOBS, "site jobs table", when_empty="remove", optional=True),
        Part("files", SITE_FILES, "file layouts", optional=True),
    )

    requests: pl.DataFrame
    """:data:`iosets.schemas.SITE_REQUESTS`, sorted by start."""
    jobs: pl.DataFrame | None
    """:data:`iosets.schemas.JOBS` rows (with ``path``) of the jobs in ``ops``, as :func:`analyze` gives them;
    None when read from a site trace written without them."""
    skipped: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_SKIPPED))
    """``job_id``, ``path``, ``reason``: each log of a job in the window whose requests are not in ``ops``, and each
    file of a kept job whose LUSTRE records give it no layout (the reason names the file and the field)."""
    errors: pl.DataFrame = field(default_factory=ANALYSIS_ERRORS.empty)
    """:data:`iosets.schemas.ANALYSIS_ERRORS`: the inputs that could not be read, as :func:`analyze` lists them."""
    files: pl.DataFrame | None = None
    """:data:`iosets.schemas.SITE_FILES`: the layouts of the kept jobs' files, from their logs' LUSTRE records; None
    when none of their logs has LUSTRE records (or when read from a site trace written without them)."""


def _heatmap_requests(width: float, read: np.ndarray, write: np.ndarray) -> pl.DataFrame | None:
    """One request per bin with bytes and per direction, over the bin (s from the log's start); None if none."""
    frames = []
    for op, moved in (("read", read), ("write", write)):
        active = np.flatnonzero(moved > 0)
        frames.append(
            pl.DataFrame(
                {
                    "op": [op] * len(active),
                    "size": moved[active].astype(np.int64),
                    "start": active * width,
                    "end": (active + 1) * width,
                },
                schema={"op": pl.String, "size": pl.Int64, "start": pl.Float64, "end": pl.Float64},
            )
        )
    bins = pl.concat(frames).sort("start", maintain_order=True)
    if bins.is_empty():
        return None
    return bins.select(
        pl.lit(-1, pl.Int64).alias("rank"),
        "op",
        pl.lit(None, pl.Int64).alias("offset"),
        "size",
        "start",
        "end",
        pl.lit(None, pl.String).alias("file"),
        pl.lit(True).alias("synthetic"),
    )


def _log_requests(job: DarshanJob) -> pl.DataFrame | None:
    """A log's requests from the source the analyzer trusts: DXT, else HEATMAP bins; None for counters only."""
    if job.source == "heatmap" and job.heatmap is not None:
        return _heatmap_requests(*job.heatmap)
    if job.requests is None:
        return None
    return job.requests.select(*_REQUEST_COLUMNS, pl.lit(False).alias("synthetic"))


def _read_trace(path: str, timeout: float = DEFAULT_TIMEOUT) -> SiteOutcome:
    """A trace's jobs-table rows (a Darshan log's with its ``PART``) and its requests; a failure is an error row."""
    try:
        if sniff_format(path) == "darshan":
            job = read_darshan(path, timeout=timeout)
            return ([log_row(job, path, _MIN_CONFIDENCE)], None), _log_requests(job), job.layouts
        ops = ingest(path)
        jobs = analyze_requests(ops, min_confidence=_MIN_CONFIDENCE).with_columns(pl.lit(path).alias("path"))
        return (jobs.to_dicts(), None), ops, None
    except Exception as exc:  # noqa: BLE001 - any failure of one trace is reported, not raised
        return ([], error_row(path, exc)), None, None


def _read_traces(files: list[str], workers: int | None, timeout: float) -> Iterator[tuple[int, SiteOutcome]]:
    """``(index, outcome)`` of each trace: in this process for a few traces, else in worker processes."""
    if len(files) < _MIN_PARALLEL:
        yield from ((i, _read_trace(path, timeout)) for i, path in enumerate(files))
        return
    task = functools.partial(_read_trace, timeout=timeout)
    with Pool(min(workers or os.cpu_count() or 1, len(files))) as pool:
        yield from pooled_replies(pool, task, files, timeout, lambda error: (([], error), None, None))


def _phase_of(mid: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pl.Series:
    """The index of the phase [start, end] that holds each midpoint (null when none does)."""
    k = np.searchsorted(starts, mid + _TOLERANCE, side="right") - 1
    inside = (k >= 0) & (mid <= ends[np.maximum(k, 0)] + _TOLERANCE)
    none = pl.repeat(None, len(k), dtype=pl.Int64, eager=True)
    return pl.Series("phase", k, dtype=pl.Int64).zip_with(pl.Series(inside), none)


def _darshan_job(job: JobLogs, requests: dict[str, pl.DataFrame | None]) -> tuple[list[pl.DataFrame], list[dict]]:
    """A merged Darshan job's requests (dated, with phases), and a skip row per log without requests."""
    start = min(log["start"] for log in job.logs)
    timelines = [(log["start"] - start, log[PART].timeline) for log in job.logs]
    bounds = job_phases(timelines)
    shifts = log_shifts(timelines)  # the logs' clocks on one, as the phases have them
    frames, skipped = [], []
    for shift, log in zip(shifts, job.logs, strict=True):
        found = requests[log["path"]]
        if found is None:
            reason = _COUNTERS_ONLY if log["source"] == "counters" else _EMPTY_HEATMAP
            skipped.append({"job_id": job.job_id, "path": log["path"], "reason": reason})
            continue
        assert bounds is not None  # a log with requests has a timeline
        mid = shift + 0.5 * (found["start"].to_numpy() + found["end"].to_numpy())
        phase = _phase_of(mid, *bounds)
        dated = (pl.col(c) + (start + shift) for c in ("start", "end"))
        frames.append(found.with_columns(*dated, phase.alias("phase"), pl.lit(job.job_id).alias("job_id")))
    return frames, skipped


def _job_layouts(job: JobLogs, layouts: dict[str, FileLayouts | None]) -> tuple[pl.DataFrame | None, list[dict]]:
    """A merged Darshan job's file layouts (None when none of its logs has LUSTRE records), and a skip row per file
    left without one (a file its logs give different layouts has none)."""
    found = [(log["path"], got) for log in job.logs if (got := layouts[log["path"]]) is not None]
    if not found:
        return None, []
    skipped = [{"job_id": job.job_id, "path": path, "reason": reason} for path, got in found for reason in got.refused]
    fields = [c for c in SITE_FILES.names if c != "job_id"]
    table = pl.concat([got.table.with_columns(pl.lit(path).alias("path")) for path, got in found])
    distinct = table.unique(subset=fields, keep="first", maintain_order=True)
    clashing = distinct["file"].is_duplicated()
    for (file,), rows in distinct.filter(clashing).group_by("file", maintain_order=True):
        first, other = rows.row(0, named=True), rows.row(1, named=True)
        column = next(c for c in fields if first[c] != other[c])
        reason = (
            f"LUSTRE records of {file} disagree on {column} with {first['path']}: {other[column]} here, "
            f"{first[column]} there; the file has no layout"
        )
        skipped.append({"job_id": job.job_id, "path": other["path"], "reason": reason})
    return distinct.filter(~clashing).with_columns(pl.lit(job.job_id).alias("job_id")).select(SITE_FILES.names), skipped


def _trace_job(job_id: str, found: pl.DataFrame) -> pl.DataFrame:
    """A block trace's (or requests table's) job: its requests (``found``) at their own dates, with phases."""
    t0, starts, ends = phase_bounds(found)
    start = found["start"].cast(pl.Float64).to_numpy()
    end = found.select(pl.coalesce("end", "start").cast(pl.Float64)).to_series().to_numpy()
    phase = _phase_of(0.5 * ((start - t0) + (end - t0)), starts, ends)
    return found.select(*_REQUEST_COLUMNS, pl.lit(False).alias("synthetic")).with_columns(
        phase.alias("phase"), pl.lit(job_id).alias("job_id")
    )


def _in_window(jobs: pl.DataFrame, window: tuple[float, float] | None) -> pl.DataFrame:
    """The jobs whose [start, end] overlaps the window (all when None; a job without dates is kept)."""
    if window is None:
        return jobs
    first, last = window
    return jobs.filter((pl.col("start").fill_null(-math.inf) <= last) & (pl.col("end").fill_null(math.inf) >= first))


def _checked_window(window) -> tuple[float, float] | None:
    if window is None:
        return None
    try:
        first, last = (float(v) for v in window)
    except (TypeError, ValueError):
        raise InputError(f"window: expected (start, end) in seconds, got {window!r}") from None
    if not (math.isfinite(first) and math.isfinite(last) and first <= last):
        raise InputError(f"window: expected finite start <= end, got ({first:g}, {last:g})")
    return first, last


def site_trace(
    paths: Sequence[str | os.PathLike],
    *,
    manifests: Sequence[str | os.PathLike] = (),
    window: tuple[float, float] | None = None,
    workers: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[Iterable, int], Iterable] | None = None,
) -> SiteTrace:
    """Many jobs' requests on one clock, each with its job's I/O phase: the input of a trace replay.

    Parameters
    ----------
    paths : sequence of path
        Darshan logs, block traces, requests tables, and folders (searched recursively for
        ``*.darshan``), as for :func:`analyze`.
    manifests : sequence of path, default=()
        Text files listing more traces or folders, one per line (as for :func:`analyze`).
    window : (float, float), default=None
        Keep the jobs whose [start, end] overlaps [window[0], window[1]], whole; dates on the
        site's clock (s since the epoch for Darshan logs). None keeps every job.
    workers : int, default=None
        Worker processes on this machine (all cores when None); fewer than 48 traces are read
        in this process (Darshan logs in one reader process), as by :func:`analyze`.
    timeout : float, default=60
        Seconds one trace may take; a trace that overruns becomes an error row.
    progress : callable, default=None
        ``progress(iterable, total)`` wraps the stream of finished traces (a progress bar).

    Returns
    -------
    SiteTrace
        ``ops`` (:data:`iosets.schemas.SITE_REQUESTS`: ``job_id``, ``rank``, ``op``, ``offset``,
        ``size``, ``file``, ``start``, ``end``, ``phase``, ``synthetic``, sorted by start),
        ``jobs`` (their rows of the jobs table), ``skipped`` (``job_id``, ``path``, ``reason``:
        logs with counters only, whose I/O has no date, and files whose LUSTRE records give them no
        layout), ``errors`` (inputs that failed) and ``files`` (:data:`iosets.schemas.SITE_FILES`:
        each file's stripe size and count, first OST and the file system's OSTs, from the LUSTRE
        records of the kept jobs' logs; None when they have none).

    Examples
    --------
    >>> from iosets.datasets import load_darshan_examples
    >>> site = site_trace([load_darshan_examples().paths["dxt.darshan"]])
    >>> site.requests.height, site.jobs["n_phases"].to_list(), site.requests["phase"].unique().sort().to_list()
    (7623, [3], [0, 1, 2])
    """
    if workers is not None:
        check_count(workers, "workers", minimum=1)
    check_positive(timeout, "timeout")
    bounds = _checked_window(window)
    files = [str(p) for p in expand_paths(paths, manifests)]
    wrap = progress or (lambda iterable, total: iterable)
    found: dict[int, SiteOutcome] = dict(wrap(_read_traces(files, workers, timeout), len(files)))
    outcomes = [found[i] for i in range(len(files))]
    analysis = _frames([outcome for outcome, _, _ in outcomes], _MIN_CONFIDENCE, per_log=False)
    requests = {path: ops for path, (_, ops, _) in zip(files, outcomes, strict=True)}
    layouts = {path: got for path, (_, _, got) in zip(files, outcomes, strict=True)}
    rows = [row for (log_rows, _), _, _ in outcomes for row in log_rows]
    groups = {(job.job_id, job.logs[0]["path"]): job for job in group_logs(rows)}
    per_job: dict[str, dict] = {}  # a trace's requests split by job, as analyze_requests splits them
    frames: list[pl.DataFrame] = []
    skipped: list[dict] = []
    job_files: dict[str, tuple[pl.DataFrame, list[dict]]] = {}  # a Darshan job's file layouts, and their skips
    for job_id, path in _in_window(analysis.jobs, bounds).select("job_id", "path").iter_rows():
        job = groups[(job_id, path)]
        if PART in job.logs[0]:
            job_frames, job_skipped = _darshan_job(job, requests)
            frames += job_frames
            skipped += job_skipped
            table, refused = _job_layouts(job, layouts)
            if table is not None:
                job_files[job_id] = (table, refused)
        else:
            if path not in per_job:
                trace_ops = requests[path]
                assert trace_ops is not None  # a trace that gave jobs gave their requests
                per_job[path] = trace_ops.partition_by("job_id", as_dict=True, maintain_order=True)
            frames.append(_trace_job(job_id, per_job[path][(job_id,)]))
    ops = pl.concat([f.select(SITE_REQUESTS.names) for f in frames]) if frames else SITE_REQUESTS.empty()
    ops = SITE_REQUESTS.validate(ops.sort("start", maintain_order=True), source="site trace")
    kept = ops["job_id"].unique().to_list()
    kept_ids = set(kept)
    with_files = [pair for job_id, pair in job_files.items() if job_id in kept_ids]
    skipped += [row for _, refused in with_files for row in refused]
    return SiteTrace(
        requests=ops,
        jobs=analysis.jobs.filter(pl.col("job_id").is_in(kept)),
        skipped=pl.DataFrame(skipped, schema=_SKIPPED),
        errors=analysis.errors,
        files=SITE_FILES.validate(pl.concat([table for table, _ in with_files]), source="file layouts")
        if with_files
        else None,
    )
