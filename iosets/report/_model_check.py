"""Section "Model check": each job of the trace replay replayed alone against the runtime its trace recorded.

A contention prediction is a ratio of two replayed runtimes; it is worth something only if the device model
gives each job back its recorded runtime when the job runs alone (:mod:`iosets.replay._model_check`). The
section grades that (:func:`model_check_grade`, which the verdict reads too), draws each job's recorded against
replayed-alone runtime, says what to run when the grade is not good, and points to the phase engine's check
against real runs (``iosets validate``) when one is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ..replay import UNTRUSTED, ModelCheck, model_check
from ._document import Figure, ReportInputs, Section, Table
from ._format import counted, format_share
from ._palette import ACCENT_COLOUR
from ._plots import (
    GRID_BINS,
    binned_scatter_trace,
    data_range_axis,
    decades,
    decades_axis,
    ecdf_trace,
    escape_text,
    figure_layout,
    json_values,
    log_histogram_2d,
    number_axis,
    reference_line,
)
from ._scheduler import REPLAY_COMMAND
from ._validation import SECTION_ID as VALIDATION_ID
from ._validation import TITLE as VALIDATION_TITLE
from ._validation import VALIDATE_COMMAND

SECTION_ID = "model-check"
TITLE = "Model check"

MAX_ROWS = 1_000
"""Jobs the per-job table shows at most: those farthest from their recorded runtime."""

SCATTER_POINTS = 5_000
"""Most jobs the runtime plot draws one by one; beyond, it draws a log-binned 2-D histogram."""

CALIBRATE_COMMAND = "iosets calibrate site.parquet -o dev.json"
"""Fits the device on the site trace (docs/guides/replay.md, "The device it replays on")."""

CALIBRATED_REPLAY_COMMAND = f"{REPLAY_COMMAND} --device dev.json"
"""The trace replay again, on the calibrated device."""

GRADES = {
    "good": "at least nine jobs in ten run alone within the threshold of their recorded runtime",
    "fair": "half the jobs run alone within the threshold of their recorded runtime, but not nine in ten",
    "poor": "fewer than half the jobs run alone within the threshold of their recorded runtime",
    "unchecked": "no job recorded a runtime above 0, so none can be checked",
}
"""Each grade word and what it means."""

BAND_COLOUR = "rgba(76, 86, 106, 0.12)"
"""The shade of the ratios within the threshold of 1."""


@dataclass(frozen=True)
class ModelCheckGrade:
    """How well the trace replay's device reproduces each job alone: the numbers and one word.

    Attributes
    ----------
    grade : str
        ``"good"`` (p90 <= threshold: the replay is trusted), ``"fair"`` (median <= threshold < p90), ``"poor"``
        (median > threshold) or ``"unchecked"`` (no job recorded a runtime above 0); see :data:`GRADES`.
    median, p90 : float or None
        Median and 90th percentile of ``|alone / recorded - 1|`` over the jobs checked (fractions: 0.25 is 25 %).
    threshold : float
        The p90 at or below which the replay is trusted.
    n_jobs, n_unchecked : int
        Jobs checked, and jobs left out (no recorded time).
    scheduler : str
        The scheduler whose rows were read (the alone replay is the same under every scheduler).
    """

    grade: str
    median: float | None
    p90: float | None
    threshold: float
    n_jobs: int
    n_unchecked: int
    scheduler: str

    @property
    def meaning(self) -> str:
        """What the grade says, in words."""
        return GRADES[self.grade]


def model_check_grade(inputs: ReportInputs) -> ModelCheckGrade | None:
    """The model check's grade of the trace replay given to the report; None without a trace replay.

    Parameters
    ----------
    inputs : ReportInputs
        Reads ``replay_jobs``: the first scheduler's rows.

    Returns
    -------
    ModelCheckGrade or None
        Median, p90, threshold and the grade word (:data:`GRADES`).

    Examples
    --------
    >>> import polars as pl
    >>> replay = pl.DataFrame({"job_id": ["a", "b", "c"], "scheduler": "fcfs", "recorded_runtime": [4.0, 4.0, 4.0],
    ...     "alone_runtime": [4.0, 5.0, 8.0]})
    >>> grade = model_check_grade(ReportInputs(jobs=pl.DataFrame({"job_id": ["a"]}), replay_jobs=replay))
    >>> grade.grade, grade.median, round(grade.p90, 6), grade.threshold
    ('fair', 0.25, 0.85, 0.25)
    """
    checked = _checked(inputs)
    return None if checked is None else _grade(*checked)


def _checked(inputs: ReportInputs) -> tuple[ModelCheck, str] | None:
    """The model check of the first scheduler's rows of the trace replay, and that scheduler."""
    jobs = inputs.replay_jobs
    if jobs is None or jobs.height == 0:
        return None
    first = str(jobs["scheduler"][0])
    return model_check(jobs.filter(pl.col("scheduler") == first)), first


def _grade(check: ModelCheck, scheduler: str) -> ModelCheckGrade:
    if check.median is None or check.p90 is None:
        word = "unchecked"
    elif check.trusted:
        word = "good"
    else:
        word = "fair" if check.median <= check.threshold else "poor"
    return ModelCheckGrade(
        word, check.median, check.p90, check.threshold, check.n_jobs, check.jobs.height - check.n_jobs, scheduler
    )


def model_check_section(inputs: ReportInputs) -> Section:
    """Build the "Model check" section from the trace replay's per-job table.

    Parameters
    ----------
    inputs : ReportInputs
        Reads ``replay_jobs`` (TRACE_REPLAY_JOBS): the first scheduler's rows (the alone replay is the same
        under every scheduler); ``validation``, when given, is summed up with a pointer to its section.

    Returns
    -------
    Section
        Id ``"model-check"``: the grade in words with what to run, each job's recorded against replayed-alone
        runtime on log-log axes with the identity line, the ECDF of their ratio with the threshold's band, the
        median and p90 and the jobs farthest from 1; a missing box naming the commands when no trace replay is
        given.

    Examples
    --------
    >>> import polars as pl
    >>> from iosets.report._inputs import read_inputs
    >>> section = model_check_section(read_inputs(pl.DataFrame({"job_id": ["a"]})))
    >>> section.missing.startswith("No trace replay given")
    True
    """
    checked = _checked(inputs)
    if checked is None:
        return Section(
            SECTION_ID,
            TITLE,
            reading="This section checks that the trace replay's device model reproduces each job alone, before "
            "its contention predictions are read; it needs a trace replay. " + _validation_sentence(inputs),
            missing=f"No trace replay given. Run `{REPLAY_COMMAND}` and give `--replay perjob.parquet` to "
            '`iosets report` (to `iosets serve`: `replay = "perjob.parquet"` in its `[service]` table).',
        )
    check, scheduler = checked
    grade = _grade(check, scheduler)
    figures = tuple(figure for figure in (_runtime_figure(check), _ratio_figure(check)) if figure is not None)
    return Section(
        SECTION_ID,
        TITLE,
        reading=_reading(grade, inputs),
        figures=figures,
        tables=(_summary_table(grade), _jobs_table(check)),
    )


# ------------------------------------------------------------------------------------------- reading


def _reading(grade: ModelCheckGrade, inputs: ReportInputs) -> str:
    """What is compared, the numbers, the grade and what to do, then the check against real runs."""
    what = (
        "Before reading what the trace replay predicts under contention, check its device model on each job "
        "alone: every job is replayed alone on the device and its runtime compared with the one its trace "
        "recorded, both from its first request to its last request's end (alone / recorded = 1: a perfect "
        f"reproduction). The alone replay is the same under every scheduler: {grade.scheduler}'s rows are read."
    )
    if grade.n_jobs:
        what += (
            f" Over {counted(grade.n_jobs, 'job')}, |alone / recorded - 1| has median {format_share(grade.median)} "
            f"and p90 {format_share(grade.p90)}; the threshold on the p90 is {format_share(grade.threshold)}."
        )
    if grade.n_unchecked:
        what += f" Left out: {counted(grade.n_unchecked, 'job')} with no recorded time (every request at one date)."
    verdict = f"Grade: {grade.grade} ({grade.meaning})."
    if grade.grade == "good":
        verdict += " The contention predictions rest on a device model that reproduces these jobs."
    else:
        if grade.p90 is not None:
            verdict += (
                f" The p90 of |alone / recorded - 1| is {format_share(grade.p90)}, above "
                f"{format_share(grade.threshold)}: {UNTRUSTED}."
            )
        else:
            verdict += f" Hence {UNTRUSTED}."
        verdict += (
            f" What to do: fit the device on the site trace, `{CALIBRATE_COMMAND}` (it prints each parameter, how it "
            f"was set and the held-out error), then replay on it, `{CALIBRATED_REPLAY_COMMAND}`, and build the "
            "report again (the replay guide, 'The device it replays on', says more)."
        )
        if grade.n_jobs:
            verdict += " The jobs farthest from 1 are listed first below."
    return "\n\n".join((what, verdict, _validation_sentence(inputs)))


def _validation_sentence(inputs: ReportInputs) -> str:
    """The phase engine against real runs: the validate section's verdict in one sentence, or how to get one."""
    validation = inputs.validation
    if validation is None:
        return (
            "The phase engine itself can be checked against real runs on this storage, as the IO-SETS paper did "
            f"(Fig. 4): `{VALIDATE_COMMAND}`, then give `--validation validation.json` to `iosets report`; the "
            f"section [{VALIDATION_TITLE}](#{VALIDATION_ID}) then shows them."
        )
    outcomes = validation.policies
    meet = [policy for policy, outcome in outcomes.items() if outcome.meets_criterion()]
    return (
        f"Against real runs (`iosets validate`, {counted(validation.workload.n_jobs, 'job')}), "
        f"{len(meet)} of the {counted(len(outcomes), 'policy', 'policies')} validated "
        f"{'meets' if len(meet) == 1 else 'meet'} the IO-SETS paper's criterion: see the section "
        f"[{VALIDATION_TITLE}](#{VALIDATION_ID}) below (its Fig. 4-like plots)."
    )


# ------------------------------------------------------------------------------------------- figures


def _runtime_figure(check: ModelCheck, *, max_points: int = SCATTER_POINTS) -> Figure | None:
    """Each job's recorded runtime (x) against its replayed-alone runtime (y) on log-log axes over the same whole
    decades, with the identity line and the threshold's lines; None when no job has both runtimes above 0."""
    jobs = check.jobs.filter((pl.col("recorded_runtime") > 0) & (pl.col("alone_runtime") > 0))
    if jobs.height == 0:
        return None
    low, high = decades(pl.concat([jobs["recorded_runtime"], jobs["alone_runtime"]]))
    axis_values = [10.0**low, 10.0**high]
    notes = []
    if jobs.height <= max_points:
        ids = jobs.select(escape_text(pl.col("job_id"))).to_series()
        points: dict[str, Any] = {
            "type": "scatter",
            "mode": "markers",
            "name": "jobs",
            "x": json_values(jobs["recorded_runtime"]),
            "y": json_values(jobs["alone_runtime"]),
            "customdata": json_values(ids),
            "marker": {"color": ACCENT_COLOUR, "size": 6, "opacity": 0.7},
            "cliponaxis": False,  # a job at a decade's edge shows whole
            "hovertemplate": "%{customdata}<br>recorded %{x:.4g} s<br>alone %{y:.4g} s<extra></extra>",
        }
    else:
        grid = log_histogram_2d(jobs["recorded_runtime"], jobs["alone_runtime"], n_bins=GRID_BINS)
        points = binned_scatter_trace(
            grid, 0, name="jobs", colour=ACCENT_COLOUR, x_label="recorded s", y_label="alone s"
        )
        notes.append(
            f"{jobs.height:,} jobs binned on a {GRID_BINS} x {GRID_BINS} log grid: one marker per non-empty bin, its "
            "area growing with the bin's jobs (the hover text gives the count)."
        )
    threshold = check.threshold
    lines = [
        _line(axis_values, 1.0, "alone = recorded", "solid"),
        _line(axis_values, 1 + threshold, f"alone = recorded x {1 + threshold:g}", "dot"),
    ]
    if threshold < 1:
        lines.append(_line(axis_values, 1 - threshold, f"alone = recorded x {1 - threshold:g}", "dot"))
    left_out = check.jobs.height - jobs.height
    if left_out:
        notes.append(f"{counted(left_out, 'job')} with a runtime of 0 not drawn (no place on log axes).")
    notes.insert(
        0,
        f"Solid: the identity (alone = recorded); dotted: within {format_share(threshold)} of it. Below the "
        "identity the model runs a job faster than the storage did, above it slower.",
    )
    layout = figure_layout(
        xaxis=decades_axis("recorded runtime", axis_values, kind="seconds"),
        yaxis=decades_axis("replayed alone", axis_values, kind="seconds"),
    )
    return Figure(
        "model-check-runtimes",
        "Each job: recorded runtime against replayed-alone runtime",
        [*lines, points],
        layout,
        note=" ".join(notes),
    )


def _line(span: list[float], factor: float, name: str, dash: str) -> dict[str, Any]:
    """The line alone = factor x recorded across ``span`` (a straight line on log-log axes)."""
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": span,
        "y": [factor * value for value in span],
        "line": {"color": "#4c566a", "width": 1, "dash": dash},
        "hoverinfo": "skip",
    }


def _ratio_figure(check: ModelCheck) -> Figure | None:
    """The ECDF of the jobs' alone / recorded ratio over the ratios' own span, the band within the threshold of 1
    shaded; None when no job has a ratio."""
    ratios = check.jobs["alone_ratio"].drop_nulls().to_numpy()
    if ratios.size == 0:
        return None
    log = bool(ratios.min() > 0 and ratios.max() / ratios.min() > 20)
    trace = ecdf_trace(ratios, name="jobs", colour=ACCENT_COLOUR)
    low, high = max(1 - check.threshold, 0.0), 1 + check.threshold
    band = {
        "type": "rect",
        "xref": "x",
        "yref": "paper",
        "x0": low,
        "x1": high,
        "y0": 0,
        "y1": 1,
        "fillcolor": BAND_COLOUR,
        "line": {"width": 0},
        "layer": "below",
    }
    xaxis = data_range_axis(number_axis("alone / recorded runtime", log=log), ratios)
    if log:
        xaxis["exponentformat"] = "none"
    layout = figure_layout(
        xaxis=xaxis,
        yaxis={**number_axis("fraction of jobs at or below"), "range": [0, 1.02], "tickformat": ".0%"},
        legend=False,
        shapes=[band, reference_line(1.0, axis="x")],
    )
    return Figure(
        "model-check-ratio",
        "Each job alone: replayed runtime over recorded runtime (ECDF)",
        [trace],
        layout,
        note=f"Shaded: within {format_share(check.threshold)} of the recorded runtime; dotted: a ratio of one. Left "
        "of it the model runs the job faster than the storage did, right of it slower. The axis spans the ratios "
        f"found, {np.min(ratios):.3f} to {np.max(ratios):.3f}.",
    )


# ------------------------------------------------------------------------------------------- tables


def _summary_table(grade: ModelCheckGrade) -> Table:
    frame = pl.DataFrame(
        {
            "jobs": [grade.n_jobs],
            "median": [grade.median],
            "p90": [grade.p90],
            "threshold": [grade.threshold],
            "trusted": ["yes" if grade.grade == "good" else "no"],
            "grade": [grade.grade],
        },
        schema_overrides={"median": pl.Float64, "p90": pl.Float64},
    )
    return Table(
        "model-check-summary",
        "Distance of alone / recorded from 1 over the jobs",
        frame,
        formats={"median": "share", "p90": "share", "threshold": "share"},
        note="median and p90 of |alone / recorded - 1|; trusted: p90 at most the threshold; grade: good (trusted), "
        "fair (the median within the threshold), poor (the median above it), unchecked (no job to check).",
    )


def _jobs_table(check: ModelCheck) -> Table:
    distance = (pl.col("alone_ratio") - 1).abs()
    ordered = check.jobs.sort(distance, "job_id", descending=[True, False], nulls_last=True)
    note = "alone_ratio = alone_runtime / recorded_runtime; blank: the job recorded no time."
    if ordered.height > MAX_ROWS:
        note += f" The {MAX_ROWS:,} jobs farthest from 1 of {ordered.height:,}."
    return Table(
        "model-check-jobs",
        "Each job alone, farthest from its recorded runtime first",
        ordered.head(MAX_ROWS),
        formats={"recorded_runtime": "seconds", "alone_runtime": "seconds", "alone_ratio": "ratio"},
        note=note,
        interactive=True,
    )
