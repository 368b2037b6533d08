"""Section "Model check": each job of the trace replay replayed alone against the runtime its trace recorded.

A contention prediction is a ratio of two replayed runtimes; it is worth something only if the device model
gives each job back its recorded runtime when the job runs alone (:mod:`iosets.replay._model_check`).
"""

from __future__ import annotations

import polars as pl

from ..replay import ModelCheck, model_check
from ._document import Figure, ReportInputs, Section, Table
from ._format import counted
from ._plots import ecdf_trace, figure_layout, number_axis
from ._scheduler import REPLAY_COMMAND

SECTION_ID = "model-check"
TITLE = "Model check"

MAX_ROWS = 1_000
"""Jobs the per-job table shows at most: those farthest from their recorded runtime."""

CALIBRATE_COMMAND = "iosets calibrate site.parquet -o dev.json"

RATIO_COLOUR = "#3b4252"
BAND_COLOUR = "rgba(163, 190, 140, 0.25)"
"""The shade of the ratios within the threshold of 1."""


def model_check_section(inputs: ReportInputs) -> Section:
    """Build the "Model check" section from the trace replay's per-job table.

    Parameters
    ----------
    inputs : ReportInputs
        Reads ``replay_jobs`` (TRACE_REPLAY_JOBS): the first scheduler's rows (the alone replay is the same
        under every scheduler).

    Returns
    -------
    Section
        Id ``"model-check"``: the verdict in words, the ECDF of the jobs' alone / recorded ratio with the
        threshold's band, the median and p90 and the jobs farthest from 1; a missing box naming the commands
        when no trace replay is given.

    Examples
    --------
    >>> import polars as pl
    >>> from iosets.report._inputs import read_inputs
    >>> section = model_check_section(read_inputs(pl.DataFrame({"job_id": ["a"]})))
    >>> section.missing.startswith("No trace replay given")
    True
    """
    jobs = inputs.replay_jobs
    if jobs is None:
        return Section(
            SECTION_ID,
            TITLE,
            reading="This section checks that the trace replay's device model reproduces each job alone, before "
            "its contention predictions are read; it needs a trace replay.",
            missing=f"No trace replay given. Run `{REPLAY_COMMAND}` and give `--replay perjob.parquet` to "
            '`iosets report` (to `iosets serve`: `replay = "perjob.parquet"` in its `[service]` table).',
        )
    first = str(jobs["scheduler"][0]) if jobs.height else None
    check = model_check(jobs.filter(pl.col("scheduler") == first))
    figure = _ratio_figure(check)
    return Section(
        SECTION_ID,
        TITLE,
        reading=_reading(check, first),
        figures=(figure,) if figure.data[0]["x"] else (),
        tables=(_summary_table(check), _jobs_table(check)),
    )


def _reading(check: ModelCheck, scheduler: str | None) -> str:
    """What is compared, the numbers, and the verdict (the check's warning word for word when untrusted)."""
    what = (
        "Before reading what the trace replay predicts under contention, check its device model on each job "
        "alone: every job is replayed alone on the device and its runtime compared with the one its trace "
        "recorded, both from its first request to its last request's end (alone / recorded: 1 is a perfect "
        "reproduction)."
    )
    if scheduler is not None:
        what += f" The alone replay is the same under every scheduler: {scheduler}'s rows are read."
    unchecked = check.jobs.height - check.n_jobs
    if check.n_jobs:
        what += (
            f" Over {counted(check.n_jobs, 'job')}, |alone / recorded - 1| has median {_percent(check.median)} "
            f"and p90 {_percent(check.p90)}; the threshold on the p90 is {_percent(check.threshold)}."
        )
    if unchecked:
        what += f" Left out: {counted(unchecked, 'job')} with no recorded time (every request at one date)."
    if check.trusted:
        verdict = (
            "Verdict: at least nine jobs in ten are within the threshold of their recorded runtime alone; the "
            "contention predictions rest on a device model that reproduces these jobs."
        )
    else:
        verdict = (
            f"Verdict: {check.warning}. Calibrate the device on these traces (`{CALIBRATE_COMMAND}`) and replay "
            "with `--device dev.json`; the jobs farthest from 1 are listed first below."
        )
    return f"{what}\n\n{verdict}"


def _ratio_figure(check: ModelCheck) -> Figure:
    """The ECDF of the jobs' alone / recorded ratio, the band within the threshold of 1 shaded."""
    ratios = check.jobs["alone_ratio"].drop_nulls().to_numpy()
    log = bool(ratios.size and ratios.min() > 0 and ratios.max() / ratios.min() > 20)
    trace = ecdf_trace(ratios, name="jobs", colour=RATIO_COLOUR)
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
    one = {"type": "line", "xref": "x", "yref": "paper", "x0": 1, "x1": 1, "y0": 0, "y1": 1, "line": {"dash": "dot"}}
    layout = figure_layout(
        xaxis=number_axis("alone / recorded runtime", log=log),
        yaxis=number_axis("fraction of jobs at or below"),
        legend=False,
        shapes=[band, one],
    )
    return Figure(
        "model-check-ratio",
        "Each job alone: replayed runtime over recorded runtime (ECDF)",
        [trace],
        layout,
        note=f"Shaded: within {_percent(check.threshold)} of the recorded runtime; dotted: 1. Left of 1 the model "
        "runs the job faster than the storage did, right of it slower.",
    )


def _summary_table(check: ModelCheck) -> Table:
    frame = pl.DataFrame(
        {
            "jobs": [check.n_jobs],
            "median": [check.median],
            "p90": [check.p90],
            "threshold": [check.threshold],
            "trusted": ["yes" if check.trusted else "no"],
        },
        schema_overrides={"median": pl.Float64, "p90": pl.Float64},
    )
    return Table(
        "model-check-summary",
        "Distance of alone / recorded from 1 over the jobs",
        frame,
        formats={"median": "{:.1%}", "p90": "{:.1%}", "threshold": "{:.0%}"},
        note="median and p90 of |alone / recorded - 1|; trusted: p90 at most the threshold.",
    )


def _jobs_table(check: ModelCheck) -> Table:
    distance = (pl.col("alone_ratio") - 1).abs()
    ordered = check.jobs.sort(distance, "job_id", descending=[True, False], nulls_last=True)
    note = "alone_ratio = alone_runtime / recorded_runtime (s); blank: the job recorded no time."
    if ordered.height > MAX_ROWS:
        note += f" The {MAX_ROWS} jobs farthest from 1 of {ordered.height}."
    return Table(
        "model-check-jobs",
        "Each job alone, farthest from its recorded runtime first",
        ordered.head(MAX_ROWS),
        formats={"recorded_runtime": "{:.6g}", "alone_runtime": "{:.6g}", "alone_ratio": "{:.3f}"},
        note=note,
        interactive=True,
    )


def _percent(value: float | None) -> str:
    """A fraction in per cent as the readings write it (``"4.9 %"``); "undefined" for None."""
    return "undefined" if value is None else f"{value * 100:.3g} %"
