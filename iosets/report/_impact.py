"""Section "Impact by user and app": who gains and who pays under each replayed policy, against the baseline.

A job's change is its stretch under the policy over its stretch under the baseline, minus 1 (both stretches share
the job's alone runtime, so it is also its runtime's relative change). A job is better or worse when the change
passes :data:`~._baseline.NO_CHANGE`, unchanged otherwise.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ._baseline import (
    NO_CHANGE,
    NO_CHANGE_BAND,
    NO_CHANGE_TEXT,
    baseline_of,
    baseline_words,
    recommended_scheduler,
    scheduler_order,
)
from ._document import Figure, ReportInputs, Section, Table
from ._format import counted, format_change, listed
from ._plots import category_axis, figure_layout, json_values, number_axis
from ._scheduler import INGEST_COMMAND, REPLAY_COMMAND, plain_label, scheduler_colour

SECTION_ID = "impact"
TITLE = "Impact by user and app"

UNKNOWN = "(unknown)"
"""The user or app of a job the jobs table does not name."""

GROUPS = ("user", "app")
"""What the jobs are grouped by."""

FIGURE_GROUPS = 12
"""Users, and apps, the figure shows at most: those with the most jobs."""

TABLE_ROWS = 500
"""Rows per policy and grouping the table shows at most: the groups with the most jobs."""

_SYMBOLS = ("circle", "diamond", "square", "triangle-up", "x", "cross")


def job_changes(inputs: ReportInputs) -> pl.DataFrame | None:
    """Per job and replayed policy other than the baseline: ``scheduler``, ``job_id``, ``user``, ``app`` and
    ``change`` (stretch / baseline stretch - 1; null when either stretch is undefined). None without a replay."""
    jobs, baseline = inputs.replay_jobs, baseline_of(inputs)
    if jobs is None or baseline is None:
        return None
    base = jobs.filter(pl.col("scheduler") == baseline).select("job_id", pl.col("stretch").alias("base"))
    known = [name for name in GROUPS if name in inputs.jobs.columns]
    who = inputs.jobs.select(pl.col("job_id").cast(pl.String), *(pl.col(name).cast(pl.String) for name in known))
    usable = pl.col("base").is_finite() & (pl.col("base") > 0) & pl.col("stretch").is_finite()
    changes = (
        jobs.filter(pl.col("scheduler") != baseline)
        .join(base, on="job_id", how="left")
        .join(who, on="job_id", how="left")
        .select(
            "scheduler",
            "job_id",
            *(pl.col(name) if name in known else pl.lit(None, pl.String).alias(name) for name in GROUPS),
            pl.when(usable).then(pl.col("stretch") / pl.col("base") - 1).alias("change"),
        )
    )
    unnamed = {name: pl.col(name).str.strip_chars().replace("", None).fill_null(UNKNOWN) for name in GROUPS}
    return changes.with_columns(**unnamed)


def impact_table(changes: pl.DataFrame, order: list[str]) -> pl.DataFrame:
    """Per policy, grouping (user or app) and group: jobs, better, worse, unchanged, undefined, and the mean and
    p99 (linear interpolation) of the change."""
    parts = []
    for by in GROUPS:
        grouped = changes.group_by("scheduler", pl.col(by).alias("name")).agg(
            pl.len().alias("jobs"),
            (pl.col("change") < -NO_CHANGE).sum().alias("better"),
            (pl.col("change") > NO_CHANGE).sum().alias("worse"),
            (pl.col("change").abs() <= NO_CHANGE).sum().alias("unchanged"),
            pl.col("change").is_null().sum().alias("undefined"),
            pl.col("change").mean().alias("mean_change"),
            pl.col("change").quantile(0.99, interpolation="linear").alias("p99_change"),
        )
        parts.append(grouped.with_columns(by=pl.lit(by)))
    rank = pl.DataFrame({"scheduler": order, "_order": list(range(len(order)))})
    columns = ["scheduler", "by", "name", "jobs", "better", "worse", "unchanged", "undefined"]
    return (
        pl.concat(parts)
        .join(rank, on="scheduler", how="left")
        .sort(["_order", "by", "jobs", "name"], descending=[False, True, True, False])
        .select(*columns, "mean_change", "p99_change")
    )


def impact_section(inputs: ReportInputs) -> Section:
    """Build the "Impact by user and app" section from the trace replay's per-job table and the jobs table.

    Parameters
    ----------
    inputs : ReportInputs
        Reads ``replay_jobs`` (each job's stretch per scheduler), ``jobs`` (``user``, ``app``) and ``baseline``.

    Returns
    -------
    Section
        Id ``"impact"``: per policy against the baseline, per user and per app, the jobs better, worse and
        unchanged and the mean and p99 of their change (an interactive table), the mean change of the groups with
        the most jobs (a figure); a missing box naming the commands without a replay.

    Examples
    --------
    >>> import polars as pl
    >>> from iosets.report._inputs import read_inputs
    >>> impact_section(read_inputs(pl.DataFrame({"job_id": ["a"]}))).missing.startswith("No trace replay given")
    True
    """
    changes = job_changes(inputs)
    if changes is None:
        return Section(
            SECTION_ID,
            TITLE,
            reading="This section shows who gains and who pays, per user and per app, under each replayed policy; "
            "it needs a trace replay.",
            missing=f"No trace replay given. Run `{INGEST_COMMAND}`, then `{REPLAY_COMMAND}`, and give "
            "`--replay perjob.parquet` to `iosets report`.",
        )
    order, baseline = scheduler_order(inputs), baseline_of(inputs)
    if changes.height == 0:
        return Section(
            SECTION_ID,
            TITLE,
            reading=f"The replay holds one scheduler, {baseline}: there is no other policy to compare with it. "
            f"Replay with `--compare {baseline},wfq,iosets-wfq` to see who gains and who pays.",
        )
    table = impact_table(changes, order)
    figure = _figure(table, order, baseline)
    shown = table.group_by("scheduler", "by", maintain_order=True).head(TABLE_ROWS)
    note = (
        f"change = stretch under the policy / stretch under {baseline} - 1 (the job's runtime change); better, worse: "
        f"beyond {NO_CHANGE_BAND}; undefined: a stretch the replay could not give."
    )
    if shown.height < table.height:
        note += f" Per policy and grouping, the {TABLE_ROWS} groups with the most jobs."
    return Section(
        SECTION_ID,
        TITLE,
        reading=_reading(inputs, changes, table, order),
        figures=() if figure is None else (figure,),
        tables=(
            Table(
                "impact-table",
                f"Who gains and who pays, per user and per app, against {baseline}",
                shown,
                formats={"mean_change": "change", "p99_change": "change", "jobs": "count"},
                note=note,
                interactive=True,
            ),
        ),
    )


def _focus(inputs: ReportInputs, order: list[str], baseline: str | None) -> str:
    """The policy the reading details: the recommended scheduler, else the first other than the baseline."""
    return recommended_scheduler(inputs) or next(name for name in order if name != baseline)


def _reading(inputs: ReportInputs, changes: pl.DataFrame, table: pl.DataFrame, order: list[str]) -> str:
    """The focus policy's jobs better, worse and unchanged, who gains and who pays by user and app; the others in
    one sentence each."""
    baseline = baseline_of(inputs)
    focus = _focus(inputs, order, baseline)
    mine = changes.filter(pl.col("scheduler") == focus)
    text = (
        f"Against {baseline_words(inputs)}, under {focus}: {_counts(mine)}. A job's change is its stretch under "
        f"{focus} over its stretch under {baseline}, minus 1; unchanged: {NO_CHANGE_TEXT}."
    )
    for by in GROUPS:
        text += " " + _who(table.filter((pl.col("scheduler") == focus) & (pl.col("by") == by)), by)
    others = [name for name in order if name not in (baseline, focus)]
    for other in others:
        text += f"\n\nUnder {other}: {_counts(changes.filter(pl.col('scheduler') == other))}."
    return text


def _counts(jobs: pl.DataFrame) -> str:
    """``of 4 jobs, 2 better, 1 worse, 1 unchanged``; one job in words of its own."""
    change = jobs["change"]
    if jobs.height == 1:
        value = change[0]
        if value is None:
            return "its one job has no stretch to compare"
        state = "better" if value < -NO_CHANGE else "worse" if value > NO_CHANGE else "unchanged"
        return f"its one job is {state} ({format_change(value)})"
    better = int((change < -NO_CHANGE).sum())
    worse = int((change > NO_CHANGE).sum())
    same = int((change.abs() <= NO_CHANGE).sum())
    text = f"of {counted(jobs.height, 'job')}, {better:,} better, {worse:,} worse, {same:,} unchanged"
    undefined = change.null_count()
    return text + (f", {undefined:,} without a stretch to compare" if undefined else "")


def _who(groups: pl.DataFrame, by: str) -> str:
    """Which user (app) gains most and which pays most, with its job count; right for no name and for one."""
    named = groups.filter(pl.col("name") != UNKNOWN)
    if named.height == 0:
        return f"The jobs table names no {by}: the {by}s cannot be told apart."
    if groups.height == 1:
        row = groups.row(0, named=True)
        whose = "The only job belongs to" if row["jobs"] == 1 else f"All {counted(row['jobs'], 'job')} belong to"
        return f"{whose} one {by}, {row['name']}: mean change {format_change(row['mean_change'])}."
    known = groups.filter(pl.col("mean_change").is_not_null())
    if known.height == 0:
        return f"No {by} has a job with a stretch to compare."
    gains = known.sort("mean_change", "name").row(0, named=True)
    pays = known.sort("mean_change", "name", descending=[True, False]).row(0, named=True)
    text = f"By {by} ({counted(groups.height, by)}): "
    parts = []
    if gains["mean_change"] < -NO_CHANGE:
        parts.append(f"{gains['name']} gains most ({_group_numbers(gains)})")
    else:
        parts.append(f"no {by} gains beyond {NO_CHANGE_BAND} on average")
    if pays["mean_change"] > NO_CHANGE:
        parts.append(f"{pays['name']} pays most ({_group_numbers(pays)})")
    else:
        parts.append(f"no {by} pays beyond {NO_CHANGE_BAND} on average")
    return text + listed(parts) + "."


def _group_numbers(row: dict[str, Any]) -> str:
    """``mean -3.0 %, p99 +1.0 %, 2 jobs``."""
    return (
        f"mean {format_change(row['mean_change'])}, p99 {format_change(row['p99_change'])}, "
        f"{counted(row['jobs'], 'job')}"
    )


def _figure(table: pl.DataFrame, order: list[str], baseline: str | None) -> Figure | None:
    """Per policy, the mean change of the named users and apps with the most jobs (at most :data:`FIGURE_GROUPS`
    each); None when the jobs table names none (the reading says so)."""
    named = table.filter(pl.col("name") != UNKNOWN)
    if named.height == 0:
        return None
    top = (
        named.group_by("by", "name")
        .agg(pl.col("jobs").max())
        .sort(["by", "jobs", "name"], descending=[True, True, False])
        .group_by("by", maintain_order=True)
        .head(FIGURE_GROUPS)
        .with_columns(label=pl.format("{} {}", pl.col("by"), pl.col("name")))
    )
    labels = [plain_label(label) for label in top["label"].to_list()]
    data = []
    for i, scheduler in enumerate(name for name in order if name != baseline):
        rows = top.select("by", "name", "label").join(
            table.filter(pl.col("scheduler") == scheduler), on=["by", "name"], how="left", maintain_order="left"
        )
        hover = [
            f"{plain_label(label)}<br>{plain_label(scheduler)}: mean {format_change(mean)}, {counted(jobs or 0, 'job')}"
            f" ({better or 0} better, {worse or 0} worse)"
            for label, mean, jobs, better, worse in rows.select(
                "label", "mean_change", "jobs", "better", "worse"
            ).iter_rows()
        ]
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": plain_label(scheduler),
                "x": json_values(rows["mean_change"] * 100),
                "y": labels,
                "marker": {"color": scheduler_colour(order, scheduler), "size": 10, "symbol": _SYMBOLS[i % 6]},
                "hovertext": hover,
                "hoverinfo": "text",
            }
        )
    band = {
        "type": "rect",
        "xref": "x",
        "yref": "paper",
        "x0": -100 * NO_CHANGE,
        "x1": 100 * NO_CHANGE,
        "y0": 0,
        "y1": 1,
        "fillcolor": "rgba(160, 160, 160, 0.2)",
        "line": {"width": 0},
        "layer": "below",
    }
    layout = figure_layout(
        xaxis={**number_axis(f"mean stretch change against {plain_label(str(baseline))} (%)"), "ticksuffix": " %"},
        yaxis={**category_axis(""), "autorange": "reversed"},
        height=max(240, 80 + 24 * len(labels)),
        shapes=[band],
    )
    note = f"Left of 0 the group's jobs run shorter. Shaded: no change ({NO_CHANGE_TEXT})."
    if named.height < table.height:
        unnamed = sorted(set(table.filter(pl.col("name") == UNKNOWN)["by"].to_list()), reverse=True)
        note += f" Jobs whose {' or '.join(unnamed)} is not named are in the table only."
    if named.select("by", "name").unique().height > top.height:
        note += f" The {FIGURE_GROUPS} users and the {FIGURE_GROUPS} apps with the most jobs; the table lists them all."
    return Figure("impact-plot", "Mean stretch change per user and per app", data, layout, note=note)
