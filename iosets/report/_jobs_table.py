"""The report's per-job table: each job's rhythm, set and explanation, and its stretch under each replayed scheduler."""

from __future__ import annotations

import polars as pl

from ._document import ReportInputs, Section, Table

MAX_ROWS = 5_000
"""Jobs shown at most: those that moved the most bytes (the page stays light on a large site)."""

FORMATS = {
    "priority": "priority",
    "w_iter": "{:.2f}",
    "alpha_io": "{:.4f}",
    "confidence": "{:.2f}",
    "bytes": "{:,.0f}",
}
"""Display format of each numeric column (the cells keep the exact value)."""

STRETCH_FORMAT = "{:.3f}"


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
    )
    return Section(id="jobs", title="Jobs", reading=_reading(inputs, schedulers), tables=(table,))


def _bytes() -> pl.Expr:
    """Bytes read + written; null when neither is known."""
    read, written = pl.col("bytes_read"), pl.col("bytes_written")
    both_null = read.is_null() & written.is_null()
    return pl.when(both_null).then(None).otherwise(read.fill_null(0.0) + written.fill_null(0.0))


def _note(shown: int, total: int) -> str:
    """What the table holds when it is cut."""
    if shown == total:
        return ""
    return (
        f"The {shown:,} jobs that moved the most bytes, of {total:,}; the others are left out to keep the page light."
    )


def _reading(inputs: ReportInputs, schedulers: list[str]) -> str:
    """The section's paragraph: what each column means and what the inputs add."""
    parts = [
        "One row per job, largest byte count first. Click a column's name to sort by it and type in the box to "
        "keep the rows that contain the text. w_iter is the time between the starts of two I/O phases (s), "
        "alpha_io the fraction of the run spent in I/O, confidence how much the analyzer trusts w_iter; "
        "not_periodic says why a job has no w_iter, and explanation says it in a sentence."
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
