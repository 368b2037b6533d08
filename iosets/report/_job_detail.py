"""Each job's detail, one job at a time (as darshan's job summary, Drishti and DXT Explorer show it): its module
split, request sizes, I/O over time, the evidence behind its set and Drishti-style flags, each with its rule.

The analyzer writes the numbers beside the jobs table (``.modules``, ``.detail``, ``.sizes``, ``.activity``);
:func:`job_details` turns those of the jobs the table shows first into one small JSON object per job, every
number already formatted (:mod:`._format`), which ``templates/job_detail.js`` draws when a row is opened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from ..analyzer import ACTIVITY_BINS
from ..schemas import NOT_PERIODIC_MEANINGS
from ._document import ReportInputs
from ._format import counted, format_bytes, format_count, format_number, format_seconds, format_share
from ._palette import READ_COLOUR, WRITE_COLOUR

MAX_DETAILS = 500
"""Jobs whose detail the page holds at most: the first rows of the jobs table (the page stays light)."""

SIZE_BUCKET_LABELS = {
    "0_100": "0-100 B",
    "100_1K": "101 B-1 KiB",
    "1K_10K": "1-10 KiB",
    "10K_100K": "10-100 KiB",
    "100K_1M": "100 KiB-1 MiB",
    "1M_4M": "1-4 MiB",
    "4M_10M": "4-10 MiB",
    "10M_100M": "10-100 MiB",
    "100M_1G": "100 MiB-1 GiB",
    "1G_PLUS": "> 1 GiB",
}
"""Darshan's size buckets in words (a 1 MiB request is in ``100K_1M``: the upper bound belongs to the bucket)."""


@dataclass(frozen=True)
class Rule:
    """A Drishti-style flag: its name, the rule in words, and its thresholds."""

    name: str
    rule: str
    share: float
    at_least: int = 0


SMALL_REQUESTS = Rule(
    "Small requests",
    "more than 10 % of the requests are of at most 100 KiB, and more than 1,000 of them (Drishti's thresholds; "
    "Drishti counts up to 1 MB, but Darshan's 100 KiB-1 MiB bucket holds the 1 MiB requests too)",
    0.10,
    1000,
)
RANDOM_ACCESS = Rule(
    "Random access",
    "more than 20 % of the POSIX requests are not at a higher offset than the previous one of their file "
    "(Darshan's POSIX_SEQ_READS/WRITES), and more than 1,000 of them (Drishti's thresholds)",
    0.20,
    1000,
)
METADATA_HEAVY = Rule(
    "Metadata-heavy",
    "metadata (open, stat, seek, close...) takes more than 30 % of the job's I/O time, summed over ranks",
    0.30,
)
UNBALANCED_RANKS = Rule(
    "Unbalanced ranks",
    "(slowest - fastest) / slowest rank is above 15 % in I/O time or 30 % in bytes, from Darshan's "
    "fastest/slowest rank counters (Drishti's straggler and size thresholds; Drishti divides by a shared file's "
    "total over its ranks instead, which flags less)",
    0.15,
)
UNBALANCED_BYTES = 0.30
"""The bytes threshold of :data:`UNBALANCED_RANKS`."""
RULES = (SMALL_REQUESTS, RANDOM_ACCESS, METADATA_HEAVY, UNBALANCED_RANKS)


def job_flags(detail: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each Drishti-style flag of one job's :data:`~iosets.schemas.JOB_DETAIL` row: raised or not, measured value,
    rule; ``raised`` None when the job's trace does not measure it.

    Examples
    --------
    >>> flags = job_flags({"requests": 2000, "small_requests": 2000, "sequential": None, "accesses": None,
    ...                    "meta_time": None, "io_time": 1.0, "slowest_rank_time": None, "fastest_rank_time": None,
    ...                    "slowest_rank_bytes": None, "fastest_rank_bytes": None})
    >>> [(f["name"], f["raised"]) for f in flags][:2]
    [('Small requests', True), ('Random access', None)]
    """
    d = detail or {}
    out = []
    requests, small = d.get("requests"), d.get("small_requests")
    out.append(_share_flag(SMALL_REQUESTS, small, requests, "no request sizes in the trace"))
    accesses, sequential = d.get("accesses"), d.get("sequential")
    scattered = None if not accesses or sequential is None else max(accesses - sequential, 0)
    out.append(_share_flag(RANDOM_ACCESS, scattered, accesses, "no POSIX requests with offsets"))
    meta, io_time = d.get("meta_time"), d.get("io_time")
    if meta is not None and io_time:
        share = meta / io_time
        text = f"{format_share(share)} ({format_seconds(meta)} of {format_seconds(io_time)})"
        out.append(_flag(METADATA_HEAVY, share > METADATA_HEAVY.share, text))
    else:
        out.append(_flag(METADATA_HEAVY, None, "no metadata time in the trace"))
    out.append(_balance(d))
    return out


def _balance(d: dict[str, Any]) -> dict[str, Any]:
    """The unbalanced-ranks flag: the time and bytes spread between the slowest and the fastest rank."""
    slow_t, fast_t = d.get("slowest_rank_time"), d.get("fastest_rank_time")
    slow_b, fast_b = d.get("slowest_rank_bytes"), d.get("fastest_rank_bytes")
    if slow_t is None or fast_t is None or slow_b is None or fast_b is None:
        return _flag(UNBALANCED_RANKS, None, "one process (no rank to compare)")
    time_gap = (slow_t - fast_t) / slow_t if slow_t > 0 else 0.0
    bytes_gap = (slow_b - fast_b) / slow_b if slow_b > 0 else 0.0
    text = (
        f"time {format_share(time_gap)} ({format_seconds(fast_t)} to {format_seconds(slow_t)}), "
        f"bytes {format_share(bytes_gap)} ({format_bytes(fast_b)} to {format_bytes(slow_b)})"
    )
    return _flag(UNBALANCED_RANKS, time_gap > UNBALANCED_RANKS.share or bytes_gap > UNBALANCED_BYTES, text)


def _share_flag(rule: Rule, part: int | None, requests: int | None, unmeasured: str) -> dict[str, Any]:
    """A flag raised when ``part`` of ``requests`` passes both the rule's share and its count."""
    if not requests or part is None:
        return _flag(rule, None, unmeasured)
    share = part / requests
    measured = f"{format_share(share)} ({format_count(part)} of {counted(requests, 'request')})"
    return _flag(rule, share > rule.share and part > rule.at_least, measured)


def _flag(rule: Rule, raised: bool | None, measured: str) -> dict[str, Any]:
    return {"name": rule.name, "raised": raised, "measured": measured, "rule": rule.rule}


def job_details(inputs: ReportInputs, job_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The detail of each of ``job_ids`` (the first :data:`MAX_DETAILS`), as the page's script draws it.

    Returns
    -------
    dict
        Job id -> ``{"job_id", "title", "evidence": [[label, text]], "flags": [...], "modules": {"columns",
        "rows"} or None, "sizes": figure or None, "activity": figure or None, "notes": [text]}``; every number
        formatted, every text from the logs left as text for the script to set as text (never as HTML).
    """
    wanted = list(job_ids)[:MAX_DETAILS]
    keep = pl.col("job_id").is_in(wanted)
    jobs = {row["job_id"]: row for row in inputs.jobs.filter(keep).iter_rows(named=True)}
    rec = {}
    if inputs.recommendation is not None:
        rec = {row["job_id"]: row for row in inputs.recommendation.filter(keep).iter_rows(named=True)}
    details = _by_job(inputs.job_detail, keep, single=True)
    modules = _by_job(inputs.modules, keep)
    sizes = _by_job(inputs.job_sizes, keep)
    activity = _by_job(inputs.job_activity, keep)
    out = {}
    for job_id in wanted:
        job = jobs.get(job_id)
        if job is None:
            continue
        detail = details.get(job_id)
        out[job_id] = {
            "job_id": job_id,
            "title": _title(job),
            "evidence": _evidence(job, rec.get(job_id)),
            "flags": job_flags(detail),
            "modules": _modules(modules.get(job_id)),
            "sizes": _sizes_figure(sizes.get(job_id)),
            "activity": _activity_figure(activity.get(job_id), detail),
            "notes": _notes(inputs, detail),
        }
    return out


def _by_job(frame: pl.DataFrame | None, keep: pl.Expr, *, single: bool = False) -> dict[str, Any]:
    """A companion table's rows of the wanted jobs, by job id (one row, or a frame each)."""
    if frame is None:
        return {}
    part = frame.filter(keep)
    if single:
        return {row["job_id"]: row for row in part.iter_rows(named=True)}
    return {str(key[0]): group for key, group in part.partition_by("job_id", as_dict=True).items()}


def _title(job: dict[str, Any]) -> str:
    who = ", ".join(f"{name} {job[name]}" for name in ("app", "user") if job.get(name))
    return f"Job {job['job_id']}" + (f" ({who})" if who else "")


def _evidence(job: dict[str, Any], rec: dict[str, Any] | None) -> list[list[str]]:
    """The rhythm's evidence and, with a recommendation, why the job got its set."""
    code = job.get("not_periodic")
    rows = [
        ["w_iter", format_seconds(job.get("w_iter")) if job.get("w_iter") is not None else "none"],
        ["confidence", format_number(job.get("w_iter_confidence"))],
        ["alpha_io", format_share(job.get("alpha_io"))],
        ["I/O phases", format_count(job.get("n_phases"))],
        ["source", job.get("source") or "-"],
        ["rhythm from", job.get("rhythm_from") or "-"],
        ["resolution", format_seconds(job.get("resolution"))],
        ["not periodic", f"{code}: the job {NOT_PERIODIC_MEANINGS[code]}" if code else "-"],
        ["explanation", job.get("explanation") or "-"],
    ]
    if rec is not None and rec.get("set") is not None:
        rows.append(["set", _recommendation_reason(job, rec)])
    return rows


def _recommendation_reason(job: dict[str, Any], rec: dict[str, Any]) -> str:
    """Why the job is in its set, from its recommendation row and its evidence."""
    head = f"set {rec['set']} (priority {format_number(rec.get('priority'))})"
    if rec.get("conservative"):
        code = job.get("not_periodic")
        why = (
            f"it is not periodic ({code})"
            if code
            else f"its confidence {format_number(job.get('w_iter_confidence'))} is too low"
        )
        return f"{head}: a conservative set, because its evidence is thin: {why}"
    return f"{head}: from its w_iter of {format_seconds(job.get('w_iter'))}"


def _modules(frame: pl.DataFrame | None) -> dict[str, Any] | None:
    """The module split: each module's bytes, operations and I/O time over the job's logs."""
    if frame is None or frame.is_empty():
        return None
    per = frame.group_by("module", maintain_order=True).agg(
        pl.col("bytes_read", "bytes_written", "reads", "writes", "io_time").sum(), pl.col("counted").any()
    )
    rows = [
        [
            row["module"],
            format_bytes(row["bytes_read"]),
            format_bytes(row["bytes_written"]),
            format_count(row["reads"]),
            format_count(row["writes"]),
            format_seconds(row["io_time"]),
            "yes" if row["counted"] else "no",
        ]
        for row in per.iter_rows(named=True)
    ]
    columns = ["module", "read", "written", "reads", "writes", "I/O time (all ranks)", "in the totals"]
    return {"columns": columns, "rows": rows}


def _sizes_figure(frame: pl.DataFrame | None) -> dict[str, Any] | None:
    """Requests per size bucket, read and written, of the module the flags read (POSIX, else the others)."""
    if frame is None or frame.is_empty():
        return None
    modules = frame["module"].unique().to_list()
    module = next(m for m in ("POSIX", "requests", "MPI-IO", *modules) if m in modules)
    part = frame.filter(pl.col("module") == module)
    labels = list(SIZE_BUCKET_LABELS.values())
    traces = []
    for op, colour in (("read", READ_COLOUR), ("write", WRITE_COLOUR)):
        counts = dict(part.filter(pl.col("op") == op).select("bucket", "requests").iter_rows())
        if counts:
            y = [counts.get(bucket, 0) for bucket in SIZE_BUCKET_LABELS]
            traces.append({"type": "bar", "name": op, "x": labels, "y": y, "marker": {"color": colour}})
    layout = {
        "title": {"text": f"Requests by size ({module})", "x": 0, "xanchor": "left"},
        "barmode": "group",
        "height": 260,
        "margin": {"l": 56, "r": 12, "t": 48, "b": 72},
        "xaxis": {"title": {"text": "request size"}, "type": "category"},
        "yaxis": {"title": {"text": "requests"}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
    }
    return {"data": traces, "layout": layout}


def _activity_figure(frame: pl.DataFrame | None, detail: dict[str, Any] | None) -> dict[str, Any] | None:
    """Bytes read and written over the job's run (its activity bins)."""
    if frame is None or frame.is_empty() or detail is None or not detail.get("activity_bin"):
        return None
    width = float(detail["activity_bin"])
    middles = ((frame["start"] + frame["end"]) / 2).round(6).to_list()
    traces = [
        {
            "type": "bar",
            "name": name,
            "x": middles,
            "y": frame[column].round(0).to_list(),
            "width": width,
            "marker": {"color": colour},
        }
        for name, column, colour in (("read", "bytes_read", READ_COLOUR), ("written", "bytes_written", WRITE_COLOUR))
        if frame[column].sum() > 0
    ]
    layout = {
        "title": {"text": "I/O over time", "x": 0, "xanchor": "left"},
        "barmode": "stack",
        "bargap": 0,
        "height": 260,
        "margin": {"l": 56, "r": 12, "t": 48, "b": 48},
        "xaxis": {
            "title": {"text": f"time since the job's start (s; bins of {format_seconds(width)})"},
            "range": [0, width * ACTIVITY_BINS],
        },
        "yaxis": {"title": {"text": "bytes"}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
    }
    return {"data": traces, "layout": layout}


def _notes(inputs: ReportInputs, detail: dict[str, Any] | None) -> list[str]:
    """What the detail lacks and why."""
    if inputs.job_detail is None:
        return [
            "No detail table beside the jobs table: run `iosets analyze LOGS -o jobs.parquet` with this version "
            "and pass that jobs table, to see this job's request sizes, I/O over time and flags."
        ]
    if detail is None:
        return ["The analyzer wrote no detail for this job."]
    notes = []
    if detail.get("activity_bin") is None:
        notes.append("Counters only: no DXT or HEATMAP timeline says when the job did its I/O.")
    if detail.get("detail_from") == "counters":
        notes.append("Sizes, access order, metadata time and ranks from the Darshan counters of every log.")
    return notes
