"""Section "What each scheduler would do": the tuning ranking, the trace replay per scheduler, who gains, who pays."""

from __future__ import annotations

import html
from typing import Any

import polars as pl

from ._document import Figure, ReportInputs, Section, Table
from ._format import counted
from ._palette import set_colour
from ._plots import (
    ECDF_POINTS,
    category_axis,
    ecdf_trace,
    escape_text,
    figure_layout,
    json_values,
    number_axis,
)

SECTION_ID = "scheduler"
TITLE = "What each scheduler would do"

BASELINE_POLICY = "fcfs"
"""The scheduler others are compared with, when the replay holds it (else the first scheduler given)."""

SCHEDULER_PALETTE = ("#3b4252", "#bf616a", "#5e81ac", "#a3be8c", "#d08770", "#b48ead", "#88c0d0")
"""Colours of the schedulers in the order given (cycled); distinct from the sets' colours."""

TOP_JOBS = 10
"""Jobs listed among the biggest gains, and among the biggest losses, per scheduler."""

NOTABLE_CHANGE = 0.10
"""A runtime change the reading counts (10 %)."""

INGEST_COMMAND = "iosets ingest LOGS --site -o site.parquet"
REPLAY_COMMAND = "iosets replay-trace site.parquet --rec rec.parquet --compare fcfs,wfq,iosets-wfq -o perjob.parquet"
TUNE_COMMAND = "iosets tune JOBS -o ranking.parquet"

_METRICS = (
    ("utilization", "Utilization"),
    ("io_slowdown", "IO-slowdown"),
    ("max_stretch", "Max Stretch"),
    ("mean_stretch", "mean stretch"),
    ("p99_stretch", "p99 stretch"),
    ("throughput", "throughput (B/s)"),
)
_PATTERNS = ("", "/", "x", ".", "\\", "+", "-", "|")


def scheduler_order(inputs: ReportInputs) -> list[str]:
    """The replay's schedulers in the order given (the per-scheduler table's, then the per-job and per-phase ones)."""
    order: list[str] = []
    for frame in (inputs.replay_schedulers, inputs.replay_jobs, inputs.replay_phases):
        if frame is not None:
            order += [p for p in frame["scheduler"].unique(maintain_order=True).to_list() if p not in order]
    return order


def scheduler_colour(order: list[str], scheduler: str) -> str:
    """The colour of ``scheduler`` in every plot of the report."""
    return SCHEDULER_PALETTE[order.index(scheduler) % len(SCHEDULER_PALETTE)]


def baseline_scheduler(order: list[str]) -> str:
    """fcfs when the replay holds it, else the first scheduler given."""
    return BASELINE_POLICY if BASELINE_POLICY in order else order[0]


def job_sets(inputs: ReportInputs) -> pl.DataFrame:
    """Each job's set (``job_id``, ``set``): the recommendation's, else the replay's, else the jobs table's."""
    phases = inputs.replay_phases
    first_phases = None if phases is None else phases.filter(pl.col("phase") == 0)  # one row per job and scheduler
    for frame in (inputs.recommendation, first_phases, inputs.jobs):
        if frame is not None and "set" in frame.columns:
            return frame.select(pl.col("job_id").cast(pl.String), pl.col("set").cast(pl.Int64)).unique(
                "job_id", keep="first", maintain_order=True
            )
    return pl.DataFrame(schema={"job_id": pl.String, "set": pl.Int64})


def plain_label(text: str) -> str:
    """Text from a file as a Plotly label (Plotly reads ``<b>``, ``<br>`` in names and hover text as markup)."""
    return html.escape(text, quote=False)


def set_label(set_id: int | None) -> str:
    """How a set is named in legends and axes."""
    return "no set" if set_id is None else f"set {set_id}"


def scheduler_section(inputs: ReportInputs) -> Section:
    """Build the "What each scheduler would do" section from the tuning ranking and the trace replay.

    Parameters
    ----------
    inputs : ReportInputs
        Reads ``tune`` (TUNE_RANKING), ``replay_schedulers`` (TRACE_REPLAY_SCHEDULERS), ``replay_jobs``
        (TRACE_REPLAY_JOBS) and the jobs' sets (``recommendation``, else ``replay_phases``).

    Returns
    -------
    Section
        Id ``"scheduler"``; a missing box naming the commands when neither the replay nor the tuning is given.

    Examples
    --------
    >>> import polars as pl
    >>> from iosets.report._inputs import read_inputs
    >>> section = scheduler_section(read_inputs(pl.DataFrame({"job_id": ["a"]})))
    >>> section.missing.startswith("No trace replay and no tuning given")
    True
    """
    has_replay = inputs.replay_schedulers is not None or inputs.replay_jobs is not None
    if inputs.tune is None and not has_replay:
        return Section(
            SECTION_ID,
            TITLE,
            reading="This section compares the schedulers on the site's own jobs; it needs a trace replay or a tuning.",
            missing=(
                "No trace replay and no tuning given. Replay the site's traces under each scheduler: "
                f"`{INGEST_COMMAND}`, "
                f"then `{REPLAY_COMMAND}`, and give `--replay perjob.parquet` to `iosets report`; rank the candidate "
                f"mappings with `{TUNE_COMMAND}` and give `--tune ranking.parquet`."
            ),
        )
    readings: list[str] = []
    figures: list[Figure] = []
    tables: list[Table] = []
    if inputs.tune is not None:
        tables.append(_tune_table(inputs.tune))
        readings.append(_tune_reading(inputs.tune))
    else:
        readings.append(f"No tuning given: `{TUNE_COMMAND}` ranks the candidate mappings.")
    if has_replay:
        order = scheduler_order(inputs)
        if inputs.replay_schedulers is not None:
            figures.append(_comparison_figure(inputs.replay_schedulers, order))
            tables.append(_comparison_table(inputs.replay_schedulers, order))
        if inputs.replay_jobs is not None:
            replay_figures, replay_tables, reading = _per_job_parts(inputs, order)
            figures += replay_figures
            tables += replay_tables
            readings.append(reading)
    else:
        readings.append(
            f"No trace replay given: `{INGEST_COMMAND}`, then `{REPLAY_COMMAND}` predict what each scheduler would do "
            "to each job (give `--replay perjob.parquet`)."
        )
    return Section(SECTION_ID, TITLE, reading="\n\n".join(readings), figures=tuple(figures), tables=tuple(tables))


# ------------------------------------------------------------------------------------------- tuning


def _tune_table(tune: pl.DataFrame) -> Table:
    columns = ["rank", "mapping", "n_sets", "utilization", "io_slowdown", "max_stretch"]
    if "idealised_rank" in tune.columns and tune["idealised_rank"].is_not_null().any():
        columns.append("idealised_rank")
    return Table(
        "scheduler-tune",
        "Candidate mappings ranked by the tuning (best first)",
        tune.sort("rank").select(columns),
        formats={"utilization": "{:.3f}", "io_slowdown": "{:.3f}", "max_stretch": "{:.3f}"},
        note="Ranked by utilization, then Max Stretch.",
    )


def _tune_reading(tune: pl.DataFrame) -> str:
    if tune.height == 0:
        return "The tuning ranked no mapping."
    best = tune.sort("rank").row(0, named=True)
    text = (
        f"The tuning ranks {best['mapping']} first ({counted(best['n_sets'], 'set')}; "
        f"utilization {_num(best['utilization'])}, Max Stretch {_num(best['max_stretch'])}) "
        f"among {tune.height} candidate mappings."
    )
    if "idealised_rank" in tune.columns and tune["idealised_rank"].is_not_null().any():
        compared = tune.filter(pl.col("idealised_rank").is_not_null())
        moved = compared.filter(pl.col("idealised_rank") != pl.col("rank")).height
        text += (
            f" On idealised periodic jobs the ranking differs for {moved} of {compared.height} mappings"
            f" ({best['mapping']} ranks {_num(best['idealised_rank'], '{}')} there)."
        )
    return text


# ------------------------------------------------------------------------------------------- replay


def _ordered(frame: pl.DataFrame, order: list[str]) -> pl.DataFrame:
    """``frame`` with its schedulers in ``order``."""
    rank = pl.DataFrame({"scheduler": order, "_order": list(range(len(order)))})
    return frame.join(rank, on="scheduler", how="left").sort("_order", maintain_order=True).drop("_order")


def _comparison_table(schedulers: pl.DataFrame, order: list[str]) -> Table:
    columns = ["scheduler", "utilization", "utilization_bound", "io_slowdown", "max_stretch", "mean_stretch"]
    columns += ["p99_stretch", "throughput", "window_start", "window_end"]
    formats = {name: "{:.3f}" for name in columns[1:7]} | {"throughput": "{:.4g}", "window_start": "{:.6g}"}
    return Table(
        "scheduler-compare",
        "Trace replay: the platform's metrics per scheduler",
        _ordered(schedulers, order).select(columns),
        formats=formats | {"window_end": "{:.6g}"},
        note="Metrics over [window_start, window_end] (s); throughput in bytes/s. A blank cell is undefined.",
    )


def _comparison_figure(schedulers: pl.DataFrame, order: list[str]) -> Figure:
    """One small bar panel per metric (schedulers side by side), Utilization's upper bound as a bar-wide mark."""
    schedulers = _ordered(schedulers, order)
    colours = [scheduler_colour(order, name) for name in schedulers["scheduler"].to_list()]
    names = [plain_label(name) for name in schedulers["scheduler"].to_list()]
    data: list[dict[str, Any]] = []
    layout: dict[str, Any] = {"showlegend": False, "height": 520, "margin": {"l": 60, "r": 20, "t": 40, "b": 40}}
    annotations = []
    for i, (column, label) in enumerate(_METRICS):
        suffix = "" if i == 0 else str(i + 1)
        row, col = divmod(i, 3)
        x_domain = [col / 3 + 0.04, (col + 1) / 3 - 0.02]
        y_domain = [0.55, 0.93] if row == 0 else [0.0, 0.38]
        layout[f"xaxis{suffix}"] = {"domain": x_domain, "anchor": f"y{suffix}", "type": "category"}
        layout[f"yaxis{suffix}"] = {"domain": y_domain, "anchor": f"x{suffix}", "rangemode": "tozero"}
        if column == "throughput":
            layout[f"yaxis{suffix}"].update(exponentformat="SI", ticksuffix="B/s")
        annotations.append(
            {
                "text": f"<b>{label}</b>",
                "xref": "paper",
                "yref": "paper",
                "x": sum(x_domain) / 2,
                "y": y_domain[1] + 0.02,
                "xanchor": "center",
                "yanchor": "bottom",
                "showarrow": False,
            }
        )
        data.append(
            {
                "type": "bar",
                "x": names,
                "y": json_values(schedulers[column]),
                "marker": {"color": colours},
                "xaxis": f"x{suffix}",
                "yaxis": f"y{suffix}",
                "name": label,
                "hovertemplate": f"%{{x}}<br>{label} %{{y:.4g}}<extra></extra>",
            }
        )
        if column == "utilization":
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "x": names,
                    "y": json_values(schedulers["utilization_bound"]),
                    "marker": {"symbol": "line-ew-open", "size": 36, "color": "#000000", "line": {"width": 3}},
                    "xaxis": "x",
                    "yaxis": "y",
                    "name": "upper bound",
                    "hovertemplate": "%{x}<br>upper bound %{y:.4g}<extra></extra>",
                }
            )
    layout["annotations"] = annotations
    return Figure(
        "scheduler-compare-plot",
        "The platform's metrics per scheduler",
        data,
        layout,
        note="Black marks on Utilization: its upper bound (no job ever waiting). Higher utilization and lower "
        "IO-slowdown and stretch are better.",
    )


def _per_job_parts(inputs: ReportInputs, order: list[str]) -> tuple[list[Figure], list[Table], str]:
    """Stretch distributions, who gains and who pays, per set; and the reading of the per-job numbers."""
    assert inputs.replay_jobs is not None
    jobs = inputs.replay_jobs.select("job_id", "scheduler", "runtime", "stretch")
    stretch = _stretch_figure(jobs, order)
    figures = [stretch] if stretch.data else []  # no job with a finite stretch: nothing to draw
    baseline = baseline_scheduler(order)
    others = [scheduler for scheduler in order if scheduler != baseline]
    changes = _changes(jobs, baseline, job_sets(inputs))
    tables: list[Table] = []
    if others:
        extremes = _extremes(changes)
        per_set = _per_set(changes, order)
        tables += [
            Table(
                "scheduler-extremes",
                f"The {TOP_JOBS} biggest gains and losses per scheduler, against {baseline}",
                extremes,
                formats={
                    "baseline_runtime": "{:.6g}",
                    "runtime": "{:.6g}",
                    "change": "{:+.6g}",
                    "relative_change": "{:+.2%}",
                },
                note="change = runtime - baseline_runtime (s); relative_change = runtime / baseline_runtime - 1.",
                interactive=True,
            ),
            Table(
                "scheduler-sets",
                f"Mean runtime change per set, against {baseline}",
                per_set,
                formats={"mean_change": "{:+.6g}", "mean_relative_change": "{:+.2%}"},
                note=f"longer, shorter: jobs whose runtime changes by more than {NOTABLE_CHANGE:.0%}.",
            ),
        ]
        figures += [_extremes_figure(extremes, scheduler, baseline) for scheduler in others]
        figures.append(_per_set_figure(per_set, order, baseline))
    return figures, tables, _replay_reading(inputs, jobs, changes, order, baseline)


def _stretch_figure(jobs: pl.DataFrame, order: list[str]) -> Figure:
    """Per scheduler, the ECDF of the jobs' stretch, reduced to at most 200 points."""
    finite = jobs.filter(pl.col("stretch").is_finite())
    groups = {key[0]: group["stretch"] for key, group in finite.partition_by("scheduler", as_dict=True).items()}
    traces = [
        ecdf_trace(groups[scheduler], name=plain_label(scheduler), colour=scheduler_colour(order, scheduler))
        for scheduler in order
        if scheduler in groups
    ]
    largest = max((values.len() for values in groups.values()), default=0)
    high = max((float(values.max()) for values in groups.values()), default=1.0)  # type: ignore[arg-type]
    layout = figure_layout(
        xaxis=number_axis("stretch (runtime / alone runtime)", log=high > 20),
        yaxis=number_axis("fraction of jobs at or below"),
    )
    note = "One line per scheduler: the fraction of jobs whose stretch is at most x; further left is better."
    if largest > ECDF_POINTS:
        note += f" Lines go through at most {ECDF_POINTS} evenly spaced order statistics of each scheduler's stretches."
    return Figure("scheduler-stretch", "Per-job stretch per scheduler (ECDF)", traces, layout, note=note)


def _changes(jobs: pl.DataFrame, baseline: str, sets: pl.DataFrame) -> pl.DataFrame:
    """Per job and scheduler other than ``baseline``: its runtimes, change and relative change, and set."""
    base = jobs.filter(pl.col("scheduler") == baseline).select("job_id", pl.col("runtime").alias("baseline_runtime"))
    return (
        jobs.filter(pl.col("scheduler") != baseline)
        .join(base, on="job_id")
        .join(sets, on="job_id", how="left")
        .select(
            "scheduler",
            "job_id",
            "set",
            "baseline_runtime",
            "runtime",
            (pl.col("runtime") - pl.col("baseline_runtime")).alias("change"),
            (pl.when(pl.col("baseline_runtime") > 0).then(pl.col("runtime") / pl.col("baseline_runtime") - 1)).alias(
                "relative_change"
            ),
        )
    )


def _extremes(changes: pl.DataFrame) -> pl.DataFrame:
    """Per scheduler, the ``TOP_JOBS`` jobs that gain most, then those that lose most (relative change)."""
    known = changes.filter(pl.col("relative_change").is_not_null())
    gains = known.filter(pl.col("relative_change") < 0).sort("relative_change", "job_id")
    losses = known.filter(pl.col("relative_change") > 0).sort("relative_change", "job_id", descending=[True, False])
    return pl.concat(
        [
            gains.group_by("scheduler", maintain_order=True).head(TOP_JOBS).with_columns(side=pl.lit("gain")),
            losses.group_by("scheduler", maintain_order=True).head(TOP_JOBS).with_columns(side=pl.lit("loss")),
        ]
    ).select("scheduler", "side", "job_id", "set", "baseline_runtime", "runtime", "change", "relative_change")


def _extremes_figure(extremes: pl.DataFrame, scheduler: str, baseline: str) -> Figure:
    """Horizontal bars of the biggest gains and losses of one scheduler, coloured by set."""
    rows = extremes.filter(pl.col("scheduler") == scheduler).sort("relative_change", "job_id", descending=[True, False])
    labels = rows.select(escape_text(pl.col("job_id"))).to_series()
    hover = rows.select(
        pl.format(
            "{}<br>{}<br>{} s under {}, {} s under {}<br>change {} s",
            escape_text(pl.col("job_id")),
            _set_label_expr(pl.col("set")),
            pl.col("baseline_runtime").round_sig_figs(6),
            pl.lit(plain_label(baseline)),
            pl.col("runtime").round_sig_figs(6),
            pl.lit(plain_label(scheduler)),
            pl.col("change").round_sig_figs(6),
        )
    ).to_series()
    colours = [set_colour(s) for s in rows["set"].to_list()]
    trace = {
        "type": "bar",
        "orientation": "h",
        "x": json_values(rows["relative_change"] * 100),
        "y": labels.to_list(),
        "marker": {"color": colours},
        "hovertext": hover.to_list(),
        "hoverinfo": "text+x",
        "name": plain_label(scheduler),
    }
    layout = figure_layout(
        xaxis={**number_axis(f"runtime change against {plain_label(baseline)} (%)"), "ticksuffix": " %"},
        yaxis={**category_axis("job"), "autorange": "reversed"},
        legend=False,
        height=max(240, 60 + 18 * rows.height),
    )
    return Figure(
        f"scheduler-extremes-{_slug(scheduler)}",
        f"Who gains and who pays under {scheduler}",
        [trace],
        layout,
        note=f"The {TOP_JOBS} jobs that gain most (left) and lose most (right), bars coloured by set.",
    )


def _per_set(changes: pl.DataFrame, order: list[str]) -> pl.DataFrame:
    """Per scheduler and set: jobs, mean change (s and relative), jobs more than 10 % longer and shorter."""
    per_set = changes.group_by("scheduler", "set").agg(
        pl.len().alias("jobs"),
        pl.col("change").mean().alias("mean_change"),
        pl.col("relative_change").mean().alias("mean_relative_change"),
        (pl.col("relative_change") > NOTABLE_CHANGE).sum().alias("longer"),
        (pl.col("relative_change") < -NOTABLE_CHANGE).sum().alias("shorter"),
    )
    return _ordered(per_set.sort("set", nulls_last=True), order)


def _per_set_figure(per_set: pl.DataFrame, order: list[str], baseline: str) -> Figure:
    """Mean relative runtime change per set: bars coloured by set, one hatching per scheduler."""
    data = []
    for i, (scheduler,) in enumerate(per_set.select("scheduler").unique(maintain_order=True).iter_rows()):
        rows = per_set.filter(pl.col("scheduler") == scheduler)
        sets = rows["set"].to_list()
        data.append(
            {
                "type": "bar",
                "name": plain_label(scheduler),
                "x": [set_label(s) for s in sets],
                "y": json_values(rows["mean_relative_change"] * 100),
                "customdata": json_values(rows["jobs"]),
                "offsetgroup": str(i),
                "marker": {
                    "color": [set_colour(s) for s in sets],
                    "pattern": {"shape": _PATTERNS[i % len(_PATTERNS)], "fgcolor": "#ffffff"},
                    "line": {"color": scheduler_colour(order, scheduler), "width": 1.5},
                },
                "hovertemplate": f"{plain_label(scheduler)}<br>%{{x}} (%{{customdata}} jobs)"
                "<br>mean change %{y:+.2f} %<extra></extra>",
            }
        )
    layout = figure_layout(
        xaxis=category_axis("set"),
        yaxis={**number_axis(f"mean runtime change against {plain_label(baseline)} (%)"), "ticksuffix": " %"},
        barmode="group",
    )
    return Figure(
        "scheduler-sets-plot",
        "Who gains and who pays, per set",
        data,
        layout,
        note="Bars coloured by set; each scheduler has its own hatching. Below zero: the set's jobs run shorter.",
    )


def _replay_reading(
    inputs: ReportInputs, jobs: pl.DataFrame, changes: pl.DataFrame, order: list[str], baseline: str
) -> str:
    """The key numbers in words: mean stretch per scheduler, jobs that change much, the sets that gain and pay."""
    focus = (
        "iosets-wfq"
        if "iosets-wfq" in order and baseline != "iosets-wfq"
        else next((scheduler for scheduler in order if scheduler != baseline), baseline)
    )
    mean = _mean_stretch(inputs, jobs)
    n_jobs = jobs.filter(pl.col("scheduler") == baseline).height
    if focus == baseline:
        return (
            f"The replay holds one scheduler, {baseline}: mean stretch {_num(mean.get(baseline))} over {n_jobs} jobs."
        )
    mine = changes.filter(pl.col("scheduler") == focus)
    longer = mine.filter(pl.col("relative_change") > NOTABLE_CHANGE).height
    shorter = mine.filter(pl.col("relative_change") < -NOTABLE_CHANGE).height
    text = (
        f"Under {focus}, mean stretch {_num(mean.get(focus))} against {_num(mean.get(baseline))} under {baseline}; "
        f"of {mine.height} jobs, {longer} run more than {NOTABLE_CHANGE:.0%} longer and {shorter} more than "
        f"{NOTABLE_CHANGE:.0%} shorter."
    )
    sets = (
        mine.filter(pl.col("relative_change").is_not_null())
        .group_by("set")
        .agg(pl.col("relative_change").mean().alias("mean"))
    )
    if sets.height > 1:
        best, worst = sets.sort("mean", "set").row(0), sets.sort("mean", "set", descending=[True, False]).row(0)
        text += (
            f" {set_label(best[0]).capitalize()} {'gains most' if best[1] < 0 else 'fares best'} (mean runtime "
            f"change {best[1]:+.1%}), {set_label(worst[0])} {'pays most' if worst[1] > 0 else 'fares worst'} "
            f"({worst[1]:+.1%})."
        )
    if inputs.replay_schedulers is not None:
        row = inputs.replay_schedulers.filter(pl.col("scheduler") == focus)
        if row.height:
            util, bound = row["utilization"][0], row["utilization_bound"][0]
            text += f" Its utilization is {_num(util)} (upper bound {_num(bound)})."
    return text


def _mean_stretch(inputs: ReportInputs, jobs: pl.DataFrame) -> dict[str, float | None]:
    """Mean stretch per scheduler: the per-scheduler table's (its window), else the jobs' mean."""
    if inputs.replay_schedulers is not None:
        frame = inputs.replay_schedulers.select("scheduler", "mean_stretch")
    else:
        frame = jobs.filter(pl.col("stretch").is_finite()).group_by("scheduler").agg(pl.col("stretch").mean())
    return dict(frame.iter_rows())


def _set_label_expr(column: pl.Expr) -> pl.Expr:
    """:func:`set_label` as a Polars expression."""
    return pl.when(column.is_null()).then(pl.lit("no set")).otherwise(pl.format("set {}", column))


def _num(value: float | int | None, spec: str = "{:.3g}") -> str:
    """A number for the reading; "undefined" for None."""
    return "undefined" if value is None else spec.format(value)


def _slug(text: str) -> str:
    """``text`` as an HTML id fragment."""
    return "".join(c if c.isalnum() else "-" for c in text.lower())
