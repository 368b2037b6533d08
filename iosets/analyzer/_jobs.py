"""Logs into jobs: Darshan writes one log per process or per job step; a site's scheduler sees one job.

Logs with the same job id, user and recorded step whose runs ([start, start + runtime]) overlap,
or follow one another within :data:`SAME_JOB_GAP` seconds, are one job: one row, bytes and
operations summed, processes counted, the rhythm found again on the logs' merged timeline (on one
clock). A log that starts more than :data:`SAME_JOB_GAP` after every earlier log of its id has ended
opens the next run. Copies of one log (equal metadata and counters) count once. A job id that holds
several runs (job steps that did not record their step, or a job id reused) gets one row per run,
named ``<job id>.<step>``, steps numbered from 0 in start order (the recorded step when there is
one), so that job ids stay unique.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass

import polars as pl

from ._detail import Detail, detail_frames, job_detail
from ._rhythm import job_rhythm
from ._worker import DETAIL, PART, LogPart

SAME_JOB_GAP = 1.0
"""Seconds a log may start after every earlier log of its job id has ended and still belong to their job.

One second: logs before Darshan 3.4.1 (log format 3.41) have whole-second header times (their runtime is
``end - start + 1``), so two processes that touch can look up to a second apart."""
_IDENTITY = ("app", "nprocs", "start", "end", "bytes_read", "bytes_written", "reads", "writes", "io_time")
"""Two logs of one job equal in all of these are copies of one log: the second is ignored."""


def _runs(logs: list[dict]) -> list[list[dict]]:
    """Logs of one (job id, user, step) in runs: one starting SAME_JOB_GAP after every earlier end opens the next."""
    runs: list[list[dict]] = []
    reach = float("-inf")  # the latest end of the logs so far
    for row in sorted(logs, key=lambda r: (r["start"], r["path"])):
        if runs and row["start"] <= reach + SAME_JOB_GAP:
            runs[-1].append(row)
        else:
            runs.append([row])
        reach = max(reach, row["start"] + row["runtime"])
    return runs


def _distinct(logs: list[dict]) -> tuple[list[dict], int]:
    """The logs of a run without copies of one log (same metadata and counters), and how many copies went."""
    seen: dict[tuple, dict] = {}
    for row in logs:
        seen.setdefault(tuple(row[name] for name in _IDENTITY), row)
    return list(seen.values()), len(logs) - len(seen)


def _total(logs: list[dict], name: str):
    """Sum of a column over logs; None when no log has it."""
    values = [row[name] for row in logs if row[name] is not None]
    return sum(values) if values else None


def _merged(logs: list[dict], min_confidence: float) -> dict:
    """One row for the logs of one job (their first row's fields where they cannot add up)."""
    first = logs[0]
    start = min(row["start"] for row in logs)
    runtime = max(row["start"] + row["runtime"] for row in logs) - start
    nprocs = sum(row["nprocs"] for row in logs)
    parts: list[LogPart] = [row[PART] for row in logs]
    moved = sum(float(row["bytes_read"] or 0) + float(row["bytes_written"] or 0) for row in logs)
    rhythm = job_rhythm(
        [(row["start"] - start, part.timeline) for row, part in zip(logs, parts, strict=True)],
        runtime=runtime,
        total_bytes=moved,
        busy_time=max(part.busy for part in parts),
        min_confidence=min_confidence,
    )
    rhythm["explanation"] += f"; from {rhythm['rhythm_from']}, {len(logs)} logs merged"
    io_times = [(row["io_time"], row["nprocs"]) for row in logs if row["io_time"] is not None]
    sources = {row["source"] for row in logs}
    return {
        **first,
        "app": Counter(row["app"] for row in logs).most_common(1)[0][0],
        "nprocs": nprocs,
        "start": start,
        "end": max(row["end"] for row in logs),
        "runtime": runtime,
        "bytes_read": _total(logs, "bytes_read"),
        "bytes_written": _total(logs, "bytes_written"),
        "reads": _total(logs, "reads"),
        "writes": _total(logs, "writes"),
        "io_time": sum(t * n for t, n in io_times) / sum(n for _, n in io_times) if io_times else None,
        "modules": "; ".join(dict.fromkeys(row["modules"] for row in logs if row["modules"])) or None,
        **rhythm,
        "source": next((s for s in ("heatmap", "dxt", "counters") if s in sources), first["source"]),
        "partial": any(row["partial"] for row in logs),
        "n_logs": len(logs),
    }


def merge_logs(
    rows: list[dict], *, min_confidence: float = 0.5, per_log: bool = False
) -> tuple[list[dict], list[dict]]:
    """Jobs-table rows with the logs of one job merged (see the module doc), and the module totals of every log.

    Darshan rows are recognised by their ``PART`` entry, which every returned row has lost (with
    ``per_log`` that is all that changes: one row per log); other traces' rows pass as they are. The
    second list has a :data:`iosets.schemas.MODULE_TOTALS` row per log and module, with the job id
    of the row the log went into.
    """
    out: list[dict] = []
    modules: list[dict] = []
    for job in group_logs(rows, per_log=per_log):
        row = dict(job.logs[0] if len(job.logs) == 1 else _merged(job.logs, min_confidence))
        if job.copies:
            row["explanation"] += f"; {job.copies} cop{'ies' if job.copies > 1 else 'y'} of a log ignored"
        if row["job_id"] != job.job_id:  # one of several runs of a job id
            row["job_id"], row["step"] = job.job_id, job.step
        out.append(_stripped(row, job.job_id, job.logs, modules))
    return out, modules


@dataclass(frozen=True)
class JobLogs:
    """The rows (logs, or one trace's job) that make one jobs-table row, as :func:`merge_logs` merges them."""

    job_id: str
    """The row's job id (``<job id>.<step>`` when one job id holds several runs)."""
    step: str | None
    logs: list[dict]
    """The distinct logs, in the order they are merged (copies of one log left out)."""
    copies: int
    """Copies of a log left out."""


def group_logs(rows: list[dict], *, per_log: bool = False) -> list[JobLogs]:
    """The jobs :func:`merge_logs` makes of ``rows``, in its order: each one's id, step and logs (rows)."""
    groups: defaultdict[tuple, list[dict]] = defaultdict(list)
    out: list[JobLogs] = []
    for row in rows:
        if PART in row and not per_log:
            groups[(row["job_id"], row["user"], row["step"])].append(row)
        else:
            out.append(JobLogs(row["job_id"], row.get("step"), [row], 0))
    runs = {key: _runs(logs) for key, logs in groups.items()}
    runs_per_id = Counter(job_id for (job_id, _, _), key_runs in runs.items() for _ in key_runs)
    numbers = _step_numbers(runs)
    for (job_id, _, step), key_runs in runs.items():
        for run in key_runs:
            logs, copies = _distinct(run)
            run_step = logs[0]["step"]
            if runs_per_id[job_id] > 1:
                k, n = numbers[run[0]["path"]]
                run_step = str(k) if step is None else step if n == 1 else f"{step}.{k}"
            out.append(JobLogs(f"{job_id}.{run_step}" if runs_per_id[job_id] > 1 else job_id, run_step, logs, copies))
    return out


def _step_numbers(runs: dict[tuple, list[list[dict]]]) -> dict[str, tuple[int, int]]:
    """Each run's number among the runs of its job id and recorded step (every user's, in start order), and
    how many there are; by the path of the run's first log."""
    same: defaultdict[tuple, list[list[dict]]] = defaultdict(list)
    for (job_id, _, step), key_runs in runs.items():
        same[(job_id, step)].extend(key_runs)
    numbers: dict[str, tuple[int, int]] = {}
    for group in same.values():
        for k, run in enumerate(sorted(group, key=lambda r: (r[0]["start"], r[0]["path"]))):
            numbers[run[0]["path"]] = (k, len(group))
    return numbers


def _stripped(row: dict, job_id: str, logs: list[dict], modules: list[dict]) -> dict:
    """``row`` without its ``PART``; the module totals of its ``logs`` appended to ``modules`` under ``job_id``."""
    for log in logs:
        if PART in log:
            modules.extend({"job_id": job_id, "path": log["path"], **asdict(m)} for m in log[PART].modules)
    return {name: value for name, value in row.items() if name not in (PART, DETAIL)}


def merge_details(jobs: list[JobLogs]) -> dict[str, pl.DataFrame]:
    """The detail tables (``detail``, ``sizes``, ``activity``) of the jobs :func:`group_logs` made.

    A job of several logs sums its logs' counts and puts each log's I/O over time at its start after the job's.
    """
    rows: list[dict] = []
    sizes: list[dict] = []
    activity: list[dict] = []
    for job in jobs:
        darshan = [row for row in job.logs if PART in row]
        start = min((row["start"] for row in darshan), default=0.0)
        parts: list[tuple[float, Detail]] = [
            (row["start"] - start, row[PART].detail) for row in darshan if row[PART].detail is not None
        ]
        parts += [(0.0, row[DETAIL]) for row in job.logs if row.get(DETAIL) is not None]
        if not parts:
            continue
        runtime = max((row["start"] + row["runtime"] for row in darshan), default=start) - start
        row, size_rows, bins = job_detail(job.job_id, parts, runtime or None)
        rows.append(row)
        sizes += size_rows
        activity += bins
    return detail_frames(rows, sizes, activity)
