"""Section "What each scheduler would do": the tuning ranking, the trace replay per scheduler, who gains, who pays."""

from __future__ import annotations

import html
from typing import Any

import polars as pl

from ._baseline import (
    NO_CHANGE,
    NO_CHANGE_BAND,
    NO_CHANGE_TEXT,
    baseline_of,
    baseline_words,
    judge,
    recommended_scheduler,
    relative_change,
    scheduler_order,
)
from ._document import Figure, ReportInputs, Section, Table
from ._format import counted, format_change, format_number, format_ratio, listed
from ._palette import POLICY_PALETTE, set_colour
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

SCHEDULER_PALETTE = POLICY_PALETTE
"""Colours of the schedulers in the order given (cycled): neutral, never a set's."""

TOP_JOBS = 10
"""Jobs listed among the biggest gains, and among the biggest losses, per scheduler."""

NOTABLE_CHANGE = 0.10
"""A runtime change the reading counts (10 %)."""

TUNE_TOLERANCE = 1e-4
"""Utilizations closer than this tie in the tuning (``iosets.replay.tune``'s default ``tolerance``)."""

INGEST_COMMAND = "iosets ingest LOGS --site -o site.parquet"
REPLAY_COMMAND = "iosets replay-trace site.parquet --rec rec.parquet --compare fcfs,wfq,iosets-wfq -o perjob.parquet"
TUNE_COMMAND = "iosets tune JOBS -o ranking.parquet"

COMPARED_METRICS = (
    ("utilization", "Utilization", True),
    ("io_slowdown", "IO-slowdown", False),
    ("max_stretch", "Max Stretch", False),
    ("mean_stretch", "mean stretch", False),
    ("p99_stretch", "p99 stretch", False),
)
"""The platform's metrics a policy is judged on: column, name, whether higher is better."""

_METRICS = (
    ("utilization", "Utilization"),
    ("io_slowdown", "IO-slowdown"),
    ("max_stretch", "Max Stretch"),
    ("mean_stretch", "mean stretch"),
    ("p99_stretch", "p99 stretch"),
    ("throughput", "throughput (B/s)"),
)
_FROM_ONE = ("io_slowdown", "max_stretch", "mean_stretch", "p99_stretch")
"""Metrics that are 1 at best: their bars' axis starts at 1."""
_PATTERNS = ("", "/", "x", ".", "\\", "+", "-", "|")


def scheduler_colour(order: list[str], scheduler: str) -> str:
    """The colour of ``scheduler`` in every plot of the report."""
    return SCHEDULER_PALETTE[order.index(scheduler) % len(SCHEDULER_PALETTE)]


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
    elif _tunable(inputs.jobs):
        readings.append(f"No tuning given: `{TUNE_COMMAND}` ranks the candidate mappings.")
    else:
        readings.append("No tuning: it replays the periodic jobs with an alpha_io, and this site has none.")
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


def tied_ranks(tune: pl.DataFrame) -> pl.DataFrame:
    """The ranking best first with ``tied_rank``: candidates the tuning cannot tell apart share the first one's rank.

    A candidate ties with the first of its group when their utilizations are within :data:`TUNE_TOLERANCE` (the
    tuning's own tie) and their Max Stretch and IO-slowdown within :data:`NO_CHANGE` of the group's first (or
    both undefined).
    """
    ranked = tune.sort("rank")
    tied: list[int] = []
    first: dict[str, Any] | None = None
    for row in ranked.iter_rows(named=True):
        if first is None or not _same_candidate(first, row):
            first = row
        tied.append(int(first["rank"]))
    return ranked.with_columns(pl.Series("tied_rank", tied, dtype=pl.UInt32))


def _same_candidate(first: dict[str, Any], row: dict[str, Any]) -> bool:
    """Whether ``row`` ties with ``first`` (see :func:`tied_ranks`)."""
    u, v = first["utilization"], row["utilization"]
    if (u is None) != (v is None) or (u is not None and abs(u - v) > TUNE_TOLERANCE):
        return False
    for name in ("max_stretch", "io_slowdown"):
        if first[name] is None and row[name] is None:
            continue
        change = relative_change(row[name], first[name])
        if change is None or abs(change) > NO_CHANGE:
            return False
    return True


def tuning_best(tune: pl.DataFrame) -> pl.DataFrame:
    """The candidates tied for first in the tuning (:func:`tied_ranks`), in the tuning's order."""
    return tied_ranks(tune).filter(pl.col("tied_rank") == 1)


def _tune_table(tune: pl.DataFrame) -> Table:
    columns = ["rank", "mapping", "n_sets", "utilization", "io_slowdown", "max_stretch"]
    if "idealised_rank" in tune.columns and tune["idealised_rank"].is_not_null().any():
        columns.append("idealised_rank")
    ranked = tied_ranks(tune).with_columns(pl.col("tied_rank").alias("rank"))
    return Table(
        "scheduler-tune",
        "Candidate mappings ranked by the tuning (best first; ties share a rank)",
        ranked.select(columns),
        formats={"utilization": "ratio", "io_slowdown": "ratio", "max_stretch": "ratio"},
        note=f"Ranked by utilization, then Max Stretch, then IO-slowdown. Candidates whose utilizations are within "
        f"{format_number(TUNE_TOLERANCE)} and whose Max Stretch and IO-slowdown are within "
        f"{NO_CHANGE_BAND} of each other tie: they share a rank.",
    )


def _tune_reading(tune: pl.DataFrame) -> str:
    if tune.height == 0:
        return "The tuning ranked no mapping."
    best = tuning_best(tune)
    top = best.row(0, named=True)
    numbers = f"utilization {format_ratio(top['utilization'])}, Max Stretch {format_ratio(top['max_stretch'])}"
    among = f"among {counted(tune.height, 'candidate mapping')}"
    if best.height == 1:
        text = f"The tuning ranks {top['mapping']} first ({candidate_sets(top)}; {numbers}) {among}."
    else:
        names = listed([f"{row['mapping']} ({candidate_sets(row)})" for row in best.iter_rows(named=True)])
        text = (
            f"The tuning ties {best.height} mappings for first {among}: {names} ({numbers}); it does not tell them "
            "apart."
        )
    if "idealised_rank" in tune.columns and tune["idealised_rank"].is_not_null().any():
        compared = tune.filter(pl.col("idealised_rank").is_not_null())
        moved = compared.filter(pl.col("idealised_rank") != pl.col("rank")).height
        text += (
            f" On idealised periodic jobs the ranking differs for {moved} of {counted(compared.height, 'mapping')}"
            f" ({top['mapping']} ranks {_rank(top['idealised_rank'])} there)."
        )
    return text


def candidate_sets(row: dict[str, Any]) -> str:
    """How a tuning candidate's sets read: ``"2 sets"``; FAIR-SHARE's are one class per job."""
    if row["mapping"] == "fair-share":
        return f"one class per job: {counted(row['n_sets'], 'job')}"
    return counted(row["n_sets"], "set")


def _rank(value: int | None) -> str:
    """A rank in words; "nowhere" for None (a candidate the other ranking does not hold)."""
    return "nowhere" if value is None else format_number(value)


# ------------------------------------------------------------------------------------------- replay


def _ordered(frame: pl.DataFrame, order: list[str]) -> pl.DataFrame:
    """``frame`` with its schedulers in ``order``."""
    rank = pl.DataFrame({"scheduler": order, "_order": list(range(len(order)))})
    return frame.join(rank, on="scheduler", how="left").sort("_order", maintain_order=True).drop("_order")


def _comparison_table(schedulers: pl.DataFrame, order: list[str]) -> Table:
    columns = ["scheduler", "utilization", "utilization_bound", "io_slowdown", "max_stretch", "mean_stretch"]
    columns += ["p99_stretch", "throughput", "window_start", "window_end"]
    formats = {name: "ratio" for name in columns[1:7]} | {"throughput": "rate"}
    return Table(
        "scheduler-compare",
        "Trace replay: the platform's metrics per scheduler",
        _ordered(schedulers, order).select(columns),
        formats=formats | {"window_start": "date", "window_end": "date"},
        note="Metrics over [window_start, window_end]. A blank cell is undefined.",
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
        if column in _FROM_ONE:
            del layout[f"yaxis{suffix}"]["rangemode"]
            layout[f"yaxis{suffix}"]["range"] = _from_one(schedulers[column])
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


def _from_one(values: pl.Series) -> list[float]:
    """An axis range from 1 (a stretch's best) to a little above the largest value."""
    high = values.drop_nulls().drop_nans().max()
    high = 1.0 if high is None else max(float(high), 1.0)  # type: ignore[arg-type]
    return [1.0, high + max(0.1 * (high - 1.0), 0.005)]


def _per_job_parts(inputs: ReportInputs, order: list[str]) -> tuple[list[Figure], list[Table], str]:
    """Stretch distributions, who gains and who pays, per set; and the reading of the per-job numbers."""
    assert inputs.replay_jobs is not None
    jobs = inputs.replay_jobs.select("job_id", "scheduler", "runtime", "stretch")
    stretch = _stretch_figure(jobs, order)
    figures = [stretch] if stretch.data else []  # no job with a finite stretch: nothing to draw
    baseline = baseline_of(inputs)
    assert baseline is not None  # the replay holds a scheduler
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
                    "baseline_runtime": "seconds",
                    "runtime": "seconds",
                    "change": "seconds",
                    "relative_change": "change",
                },
                note="change = runtime - baseline_runtime; relative_change = runtime / baseline_runtime - 1.",
                interactive=True,
            ),
            Table(
                "scheduler-sets",
                f"Mean runtime change per set, against {baseline}",
                per_set,
                formats={"mean_change": "seconds", "mean_relative_change": "change"},
                note=f"longer, shorter: jobs whose runtime changes by more than {_percent(NOTABLE_CHANGE)}.",
            ),
        ]
        drawn = [scheduler for scheduler in others if (extremes["scheduler"] == scheduler).any()]
        figures += [_extremes_figure(extremes, scheduler, baseline) for scheduler in drawn]  # no change: no bars
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


def _tunable(jobs: pl.DataFrame) -> bool:
    """Whether ``iosets tune`` has a job to replay: one with a w_iter and an alpha_io."""
    if "w_iter" not in jobs.columns or "alpha_io" not in jobs.columns:
        return False
    return jobs.filter(pl.col("w_iter").is_not_null() & pl.col("alpha_io").is_not_null()).height > 0


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
    """The key numbers in words: the focus scheduler against the baseline, the jobs that change much, the sets that
    gain and pay, and both sides of the comparison with every other scheduler."""
    focus = recommended_scheduler(inputs) or next((name for name in order if name != baseline), baseline)
    mean = _mean_stretch(inputs, jobs)
    n_jobs = jobs.filter(pl.col("scheduler") == baseline).height
    if focus == baseline:
        return (
            f"The replay holds one scheduler, {baseline}: mean stretch {format_ratio(mean.get(baseline))} over "
            f"{counted(n_jobs, 'job')}."
        )
    mine = changes.filter(pl.col("scheduler") == focus)
    longer = mine.filter(pl.col("relative_change") > NOTABLE_CHANGE).height
    shorter = mine.filter(pl.col("relative_change") < -NOTABLE_CHANGE).height
    notable = _percent(NOTABLE_CHANGE)
    text = (
        f"The baseline is {baseline_words(inputs)}. Under {focus}, mean stretch {format_ratio(mean.get(focus))} "
        f"against {format_ratio(mean.get(baseline))} under {baseline}; of {counted(mine.height, 'job')}, "
        f"{format_number(longer)} {_run_verb(longer)} more than {notable} longer and {format_number(shorter)} more "
        f"than {notable} shorter."
    )
    sets = (
        mine.filter(pl.col("relative_change").is_not_null())
        .group_by("set")
        .agg(pl.col("relative_change").mean().alias("mean"))
    )
    if sets.height > 1 and sets["mean"].abs().max() <= NO_CHANGE:  # type: ignore[operator]
        text += f" No set's mean runtime changes beyond {NO_CHANGE_BAND}."
    elif sets.height > 1:
        best, worst = sets.sort("mean", "set").row(0), sets.sort("mean", "set", descending=[True, False]).row(0)
        text += (
            f" {set_label(best[0]).capitalize()} {'gains most' if best[1] < 0 else 'fares best'} (mean runtime "
            f"change {format_change(best[1])}), {set_label(worst[0])} {'pays most' if worst[1] > 0 else 'fares worst'}"
            f" ({format_change(worst[1])})."
        )
    if inputs.replay_schedulers is not None:
        row = inputs.replay_schedulers.filter(pl.col("scheduler") == focus)
        if row.height:
            util, bound = row["utilization"][0], row["utilization_bound"][0]
            text += f" Its utilization is {format_ratio(util)} (upper bound {format_ratio(bound)})."
        text += " " + both_sides(inputs.replay_schedulers, focus)
    return text


def both_sides(schedulers: pl.DataFrame, focus: str) -> str:
    """Where ``focus`` is best or tied among the replayed schedulers, and who beats it where (with both values).

    A scheduler beats another on a metric when its value is better by more than :data:`NO_CHANGE` (relative).

    Examples
    --------
    >>> frame = pl.DataFrame({"scheduler": ["a", "b"], "utilization": [0.7, 0.7], "io_slowdown": [1.2, 1.5],
    ...     "max_stretch": [1.5, 1.2], "mean_stretch": [1.1, 1.3], "p99_stretch": [1.4, 1.2]})
    >>> both_sides(frame, "a")
    'a is best or tied with every other scheduler on Utilization, IO-slowdown and mean stretch; b beats it on Max \
Stretch (1.200 against 1.500) and p99 stretch (1.200 against 1.400).'
    """
    values = {row["scheduler"]: row for row in schedulers.iter_rows(named=True)}
    mine = values[focus]
    best: list[str] = []
    beaten: dict[str, list[str]] = {}
    for column, label, higher_is_better in COMPARED_METRICS:
        winners = []
        for other, row in values.items():
            if other == focus:
                continue
            if judge(relative_change(row[column], mine[column]), higher_is_better=higher_is_better) == "better":
                winners.append(other)
                beaten.setdefault(other, []).append(
                    f"{label} ({format_ratio(row[column])} against {format_ratio(mine[column])})"
                )
        if not winners and mine[column] is not None:
            best.append(label)
    if len(values) == 1:
        return ""
    parts = []
    if best:
        parts.append(f"{focus} is best or tied with every other scheduler on {listed(best)}")
    for other, where in beaten.items():
        parts.append(f"{other} beats it on {listed(where)}")
    if not parts:
        return f"No metric tells {focus} from the other schedulers ({NO_CHANGE_TEXT})."
    if not best:
        parts[0] = parts[0].replace(" beats it on ", f" beats {focus} on ", 1)
    return "; ".join(parts) + "."


def _mean_stretch(inputs: ReportInputs, jobs: pl.DataFrame) -> dict[str, float | None]:
    """Mean stretch per scheduler: the per-scheduler table's (its window), else the jobs' mean."""
    if inputs.replay_schedulers is not None:
        frame = inputs.replay_schedulers.select("scheduler", "mean_stretch")
    else:
        frame = jobs.filter(pl.col("stretch").is_finite()).group_by("scheduler").agg(pl.col("stretch").mean())
    return dict(frame.iter_rows())


def _run_verb(n: int) -> str:
    """ "runs" for one job, "run" for several."""
    return "runs" if n == 1 else "run"


def _percent(value: float) -> str:
    """A fraction as a round per cent for the readings (``"10 %"``)."""
    return f"{format_number(100 * value)} %"


def _set_label_expr(column: pl.Expr) -> pl.Expr:
    """:func:`set_label` as a Polars expression."""
    return pl.when(column.is_null()).then(pl.lit("no set")).otherwise(pl.format("set {}", column))


def _slug(text: str) -> str:
    """``text`` as an HTML id fragment."""
    return "".join(c if c.isalnum() else "-" for c in text.lower())
