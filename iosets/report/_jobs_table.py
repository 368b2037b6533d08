"""The report's per-job table: each job's rhythm, set and explanation, and its stretch under each replayed scheduler."""

from __future__ import annotations

import polars as pl

from ._document import ReportInputs, Section, Table
from ._job_detail import MAX_DETAILS, job_details

MAX_ROWS = 5_000
"""Jobs shown at most: those that moved the most bytes (the page stays light on a large site)."""

FORMATS = {
    "priority": "priority",
    "w_iter": "seconds",
    "alpha_io": "share",
    "confidence": "number",
    "bytes": "bytes",
}
"""Display kind of each numeric column (:mod:`._format`; the cells keep the exact value)."""

STRETCH_FORMAT = "ratio"


def jobs_table_section(inputs: ReportInputs) -> Section:
    """One row per job, sortable and filterable: rhythm, set, priority, bytes, explanation, stretch per scheduler.

    Parameters
    ----------
    inputs : ReportInputs
        The jobs table; the recommendation adds ``set`` and ``priority``, a trace replay one ``stretch_<scheduler>``
        column per scheduler (runtime under the scheduler / runtime alone).

    Returns
    -------
    Section
        Id ``jobs``: one interactive table of at most :data:`MAX_ROWS` jobs, those that moved the most bytes
        (ties by job id), largest first; its note says how many of how many when some are left out.

    Examples
    --------
    >>> import polars as pl
    >>> from iosets.report._inputs import read_inputs
    >>> section = jobs_table_section(read_inputs(pl.DataFrame({"job_id": ["a"], "bytes_read": [5.0]})))
    >>> section.tables[0].frame.select("job_id", "bytes").row(0)
    ('a', 5.0)
    """
    jobs = inputs.jobs
    frame = jobs.select(
        "job_id",
        "user",
        "app",
        "w_iter",
        "alpha_io",
        pl.col("w_iter_confidence").alias("confidence"),
        _bytes().alias("bytes"),
        "not_periodic",
        "explanation",
    )
    if inputs.recommendation is not None:
        rec = inputs.recommendation.select("job_id", "set", "priority")
        frame = frame.join(rec, on="job_id", how="left").select(
            "job_id", "user", "app", "set", "priority", pl.exclude("job_id", "user", "app", "set", "priority")
        )
    schedulers: list[str] = []
    if inputs.replay_jobs is not None:
        schedulers = inputs.replay_jobs["scheduler"].unique(maintain_order=True).to_list()
        stretch = inputs.replay_jobs.pivot(on="scheduler", index="job_id", values="stretch", aggregate_function="first")
        stretch = stretch.rename({scheduler: f"stretch_{scheduler}" for scheduler in schedulers})
        frame = frame.join(stretch, on="job_id", how="left")
    shown = frame.sort(["bytes", "job_id"], descending=[True, False], nulls_last=True).head(MAX_ROWS)
    formats = FORMATS | {f"stretch_{scheduler}": STRETCH_FORMAT for scheduler in schedulers}
    table = Table(
        id="jobs-table",
        title="Every job",
        frame=shown,
        formats=formats,
        note=_note(shown.height, jobs.height),
        interactive=True,
        details=job_details(inputs, shown["job_id"].to_list()),
    )
    return Section(id="jobs", title="Jobs", reading=_reading(inputs, schedulers), tables=(table,))


def _bytes() -> pl.Expr:
    """Bytes read + written; null when neither is known."""
    read, written = pl.col("bytes_read"), pl.col("bytes_written")
    both_null = read.is_null() & written.is_null()
    return pl.when(both_null).then(None).otherwise(read.fill_null(0.0) + written.fill_null(0.0))


def _note(shown: int, total: int) -> str:
    """What the table holds when it is cut."""
    parts = []
    if shown < total:
        parts.append(
            f"The {shown:,} jobs that moved the most bytes, of {total:,}; the others are left out to keep the page "
            "light."
        )
    if shown > MAX_DETAILS:
        parts.append(f"The first {MAX_DETAILS:,} rows (in this order) have their detail; the others do not.")
    return " ".join(parts)


def _reading(inputs: ReportInputs, schedulers: list[str]) -> str:
    """The section's paragraph: what each column means and what the inputs add."""
    parts = [
        "One row per job, largest byte count first. Click a column's name to sort by it and type in the box to "
        "keep the rows that contain the text. w_iter is the time between the starts of two I/O phases (s), "
        "alpha_io the fraction of the run spent in I/O, confidence how much the analyzer trusts w_iter; "
        "not_periodic says why a job has no w_iter, and explanation says it in a sentence. A row's Details "
        "button (or a click on the row) opens the job's detail under the table: the evidence behind its rhythm "
        "and set, Drishti-style flags each with its rule and threshold (small requests, random access, "
        "metadata-heavy, unbalanced ranks), its split over Darshan's modules, its requests by size and its I/O "
        "over time, from the analyzer's tables beside the jobs table."
    ]
    if inputs.recommendation is not None:
        parts.append("set and priority are the recommendation's (a smaller set has a higher priority).")
    else:
        parts.append("Pass a recommendation (`--rec rec.parquet`) to add each job's set and priority.")
    if schedulers:
        parts.append(
            "stretch_<scheduler> is the job's runtime under that scheduler over its runtime alone in the trace replay "
            f"({', '.join(schedulers)}); 1 means the job never waited."
        )
    else:
        parts.append("Pass a trace replay (`--replay perjob.parquet`) to add each job's stretch under each scheduler.")
    return " ".join(parts)
