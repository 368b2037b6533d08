"""The report's "Site overview": what ran, how periodic it is, and which sets it falls in."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ..schemas import JOBS, NOT_PERIODIC_CODES, NOT_PERIODIC_MEANINGS
from ._document import Figure, ReportInputs, Section, Table
from ._format import counted, epoch_date, format_bytes, format_seconds, format_share
from ._palette import ACCENT_COLOUR, READ_COLOUR, WRITE_COLOUR, set_colour
from ._plots import (
    GRID_BINS,
    bar_trace,
    binned_scatter_trace,
    bytes_axis,
    category_axis,
    decades_axis,
    epoch_dated,
    escape_text,
    figure_layout,
    fraction_axis,
    json_values,
    log_histogram_2d,
    number_axis,
    seconds_axis,
)

SCATTER_POINTS = 5000
"""Most jobs the w_iter/alpha_io plot draws one by one; beyond, it draws a log-binned 2-D histogram."""

TOP_APPS = 15
"""Apps shown in each of the top-apps plots."""

PLAFRIM_SETS = {0: 321, 1: 1866, 2: 1369, 3: 435, 4: 88, 5: 9}
"""Jobs per SET-10 set in one year of PlaFRIM traces (IO-SETS paper, section VIII: 4088 jobs)."""

_NO_SET = -(2**62)
"""Group of the jobs without a set on the binned plot (a set number no mapping gives)."""

_USED = (
    *("job_id", "user", "app", "start", "end", "runtime", "bytes_read", "bytes_written", "io_time"),
    *("w_iter", "w_iter_confidence", "alpha_io", "not_periodic", "explanation", "source"),
)
"""Columns of the jobs table this section reads (added as nulls when absent)."""


def overview_section(inputs: ReportInputs) -> Section:
    """The "Site overview" section: totals, jobs per set, w_iter vs alpha_io, sources, reasons, top apps.

    Parameters
    ----------
    inputs : ReportInputs
        ``jobs`` is read; ``recommendation``, when given, gives each job its set (joined on ``job_id``),
        otherwise SET-10's rule round(log10 w_iter) does.

    Returns
    -------
    Section
        Section ``overview``: a summary table, the jobs per set (table and bars), the w_iter vs
        alpha_io plot (one point per job, or a 60 x 60 log grid beyond 5 000 jobs), jobs per source
        and their confidence, the "not periodic" reasons, and the top 15 apps by bytes and by I/O time.
    """
    jobs, by_rule = _jobs_with_sets(inputs)
    summary = site_summary(jobs)
    per_set = jobs_per_set(jobs)
    sources = jobs_per_source(jobs)
    reasons = not_periodic_reasons(jobs)
    apps = app_totals(jobs)
    by_bytes = apps.sort(["bytes", "app"], descending=[True, False], nulls_last=True).head(TOP_APPS)
    by_time = apps.sort(["I/O time", "app"], descending=[True, False], nulls_last=True).head(TOP_APPS)
    set_rule = "SET-10's rule round(log10 w_iter)" if by_rule else "the recommendation"
    tables = (
        Table("overview-summary", "The site at a glance", summary, formats=_SUMMARY_FORMATS),
        Table(
            "overview-sets",
            f"Jobs per set ({set_rule})",
            per_set,
            formats={"share": "share", "w_iter min": "seconds", "w_iter max": "seconds"},
            note=_sets_note(per_set, by_rule),
        ),
        Table("overview-sources", "Jobs per source of the rhythm", sources),
        *([Table("overview-reasons", "Why jobs are not periodic", reasons)] if reasons.height else []),
        Table("overview-apps-bytes", f"Top {TOP_APPS} apps by bytes", by_bytes, formats=_APP_FORMATS),
        Table("overview-apps-time", f"Top {TOP_APPS} apps by I/O time", by_time, formats=_APP_FORMATS),
    )
    drawn = (
        _sets_figure(per_set, set_rule),
        w_iter_alpha_figure(jobs),
        _sources_figure(sources),
        _confidence_figure(jobs),
        _reasons_figure(reasons),
        _apps_figure("overview-apps-bytes-plot", f"Top {TOP_APPS} apps by bytes", by_bytes, by="bytes"),
        _apps_figure("overview-apps-time-plot", f"Top {TOP_APPS} apps by I/O time", by_time, by="time"),
    )
    figures = tuple(figure for figure in drawn if figure is not None)
    return Section(
        id="overview",
        title="Site overview",
        reading=_reading(summary, per_set, reasons, set_rule, jobs),
        figures=figures,
        tables=tables,
    )


# ------------------------------------------------------------------------------------------ tables


def _jobs_with_sets(inputs: ReportInputs) -> tuple[pl.DataFrame, bool]:
    """The jobs with every column this section reads (nulls when absent), a ``set`` and an ``io_seconds``.

    Returns the frame and whether the sets come from SET-10's rule (no recommendation given).
    """
    jobs = inputs.jobs
    absent = [name for name in _USED if name not in jobs.columns]
    jobs = jobs.with_columns(pl.lit(None, JOBS[name].dtype).alias(name) for name in absent)
    blank = pl.col("app").str.strip_chars() == ""
    jobs = jobs.with_columns(app=pl.when(blank).then(None).otherwise(pl.col("app")))  # "": the analyzer knew none
    runtime = pl.col("runtime").fill_null(pl.col("end") - pl.col("start"))
    jobs = jobs.with_columns(io_seconds=pl.col("io_time").fill_null(pl.col("alpha_io") * runtime))
    if inputs.recommendation is None:
        return jobs.drop("set", strict=False).with_columns(set=_set10(jobs["w_iter"])), True
    sets = inputs.recommendation.select("job_id", pl.col("set").cast(pl.Int64)).unique("job_id", keep="first")
    return jobs.drop("set", strict=False).join(sets, on="job_id", how="left"), False


def _set10(w_iter: pl.Series) -> pl.Series:
    """SET-10's set of each w_iter (the recommender's :func:`~iosets.recommender.map_sets`); null without one."""
    from ..recommender import map_sets

    known = w_iter.is_not_null().to_numpy()
    sets = np.zeros(w_iter.len(), dtype=np.int64)
    sets[known] = map_sets(w_iter.to_numpy()[known])
    return pl.Series("set", sets).set(pl.Series(~known), None)


_SUMMARY_FORMATS = {"bytes read": "bytes", "bytes written": "bytes", "periodic": "share"}
_APP_FORMATS = {"bytes read": "bytes", "bytes written": "bytes", "bytes": "bytes", "I/O time": "seconds"}


def site_summary(jobs: pl.DataFrame) -> pl.DataFrame:
    """One row: jobs, users, apps, bytes read and written, first start and last end (UTC), periodic jobs (count and
    share of the jobs, 0-1)."""
    row = jobs.select(
        pl.len().alias("jobs"),
        pl.col("user").drop_nulls().n_unique().alias("users"),
        pl.col("app").drop_nulls().n_unique().alias("apps"),
        pl.col("bytes_read").sum().alias("bytes read"),
        pl.col("bytes_written").sum().alias("bytes written"),
        pl.col("w_iter").is_not_null().sum().alias("periodic jobs"),
    ).row(0, named=True)
    span = epoch_dated(jobs).select(pl.col("start").min(), pl.max_horizontal("start", "end").max().alias("end"))
    return pl.DataFrame(
        {
            "jobs": [row["jobs"]],
            "users": [row["users"]],
            "apps": [row["apps"]],
            "bytes read": [float(row["bytes read"])],
            "bytes written": [float(row["bytes written"])],
            "first start (UTC)": [_when(span["start"].item())],
            "last end (UTC)": [_when(span["end"].item())],
            "periodic jobs": [row["periodic jobs"]],
            "periodic": [row["periodic jobs"] / row["jobs"] if row["jobs"] else None],
        },
        schema_overrides={"periodic": pl.Float64},
    )


def _when(seconds: float | None) -> str:
    """A date (UTC) when ``seconds`` count from the epoch, else how far into its trace (block traces count from their
    start); ``-`` for none."""
    if seconds is None:
        return "-"
    return epoch_date(seconds) or f"{format_seconds(seconds)} into the trace"


def jobs_per_set(jobs: pl.DataFrame) -> pl.DataFrame:
    """Jobs per set, smallest set first (jobs without a set last): count, share of all jobs (0-1), w_iter range (s)."""
    total = max(jobs.height, 1)
    return (
        jobs.group_by("set")
        .agg(
            pl.len().alias("jobs"),
            pl.col("w_iter").min().alias("w_iter min"),
            pl.col("w_iter").max().alias("w_iter max"),
        )
        .with_columns((pl.col("jobs") / total).alias("share"))
        .sort("set", nulls_last=True)
        .select("set", "jobs", "share", "w_iter min", "w_iter max")
    )


def _sets_note(per_set: pl.DataFrame, by_rule: bool) -> str:
    """What the row without a set holds (when there is one), then the paper's PlaFRIM shares to compare with."""
    unset = "jobs without a w_iter" if by_rule else "jobs absent from the recommendation"
    text = f"The row without a set number counts the {unset}. " if per_set["set"].null_count() else ""
    total = sum(PLAFRIM_SETS.values())
    shares = ", ".join(f"set {s}: {n:,} ({format_share(n / total)})" for s, n in PLAFRIM_SETS.items())
    paper = f"one year of PlaFRIM jobs under SET-10 (IO-SETS paper, section VIII, {total:,} jobs)"
    return f"{text}For comparison, {paper}: {shares}."


def jobs_per_source(jobs: pl.DataFrame) -> pl.DataFrame:
    """Jobs per ``source`` (dxt, heatmap, counters, ops; ``unknown`` for none): count, periodic, median confidence."""
    return (
        jobs.group_by(pl.col("source").fill_null("unknown"))
        .agg(
            pl.len().alias("jobs"),
            pl.col("w_iter").is_not_null().sum().alias("periodic jobs"),
            pl.col("w_iter_confidence").median().alias("median confidence"),
        )
        .sort(["jobs", "source"], descending=[True, False])
    )


def not_periodic_reasons(jobs: pl.DataFrame) -> pl.DataFrame:
    """Jobs per ``not_periodic`` code, in the analyzer's gate order, with its meaning and one job's explanation."""
    counts = (
        jobs.filter(pl.col("not_periodic").is_not_null())
        .group_by("not_periodic")
        .agg(pl.len().alias("jobs"), pl.col("explanation").drop_nulls().first().alias("for example"))
    )
    order = pl.DataFrame(
        {
            "not_periodic": list(NOT_PERIODIC_CODES),
            "meaning": [f"the job {NOT_PERIODIC_MEANINGS[code]}" for code in NOT_PERIODIC_CODES],
        }
    )
    return (
        order.join(counts, on="not_periodic", how="inner", maintain_order="left")
        .rename({"not_periodic": "code"})
        .select("code", "jobs", "meaning", "for example")
    )


def app_totals(jobs: pl.DataFrame) -> pl.DataFrame:
    """Per app (``unknown`` for none): jobs, bytes read and written, their sum, and ``I/O time`` (s).

    A job's I/O time is its ``io_time``, or ``alpha_io`` x runtime where that is missing.
    """
    return jobs.group_by(pl.col("app").fill_null("unknown")).agg(
        pl.len().alias("jobs"),
        pl.col("bytes_read").sum().alias("bytes read"),
        pl.col("bytes_written").sum().alias("bytes written"),
        (pl.col("bytes_read").fill_null(0) + pl.col("bytes_written").fill_null(0)).sum().alias("bytes"),
        pl.col("io_seconds").sum().alias("I/O time"),
    )


# ----------------------------------------------------------------------------------------- figures


def _set_label(set_id: int | None) -> str:
    return "no set" if set_id is None else f"set {set_id}"


def _sets_figure(per_set: pl.DataFrame, set_rule: str) -> Figure:
    sets = per_set["set"].to_list()
    labels = [_set_label(s) for s in sets]
    hover = [
        f"{label}: {counted(n, 'job')} ({format_share(share)})"
        for label, n, share in zip(labels, per_set["jobs"], per_set["share"], strict=True)
    ]
    trace = bar_trace(labels, per_set["jobs"], colour=[set_colour(s) for s in sets], hover=hover)
    layout = figure_layout(xaxis=category_axis(f"set ({set_rule})"), yaxis=number_axis("jobs"), legend=False)
    return Figure("overview-sets-plot", "Jobs per set", [trace], layout)


def w_iter_alpha_figure(jobs: pl.DataFrame, *, max_points: int = SCATTER_POINTS) -> Figure | None:
    """w_iter against alpha_io on log axes, coloured by set (the IO-SETS paper's Fig. 5); None without a job to draw.

    Up to ``max_points`` jobs, one marker per job with its id, app, w_iter and alpha_io in the
    hover text; beyond, one trace per set of the non-empty cells of a 60 x 60 log grid (marker
    area grows with the job count, given in the hover text), and the figure's note says so. The
    w_iter axis spans whole decades, the alpha_io axis ends at 1 (a fraction of the run).
    """
    drawn = jobs.filter((pl.col("w_iter") > 0) & (pl.col("alpha_io") > 0))
    if drawn.height == 0:
        return None
    left_out = jobs.height - drawn.height
    sets = drawn["set"].unique().sort(nulls_last=True).to_list()
    layout = figure_layout(
        xaxis=decades_axis("w_iter", drawn["w_iter"], kind="seconds"),
        yaxis=fraction_axis("alpha_io", drawn["alpha_io"], log=True),
    )
    notes = [f"{counted(left_out, 'job')} without a w_iter or with alpha_io 0 not drawn."] if left_out else []
    if drawn.height <= max_points:
        traces = [_job_points(drawn.filter(pl.col("set").eq_missing(s)), s) for s in sets]
    else:
        grid = log_histogram_2d(
            drawn["w_iter"], drawn["alpha_io"], groups=drawn["set"].fill_null(_NO_SET), n_bins=GRID_BINS
        )
        traces = [
            binned_scatter_trace(
                grid,
                _NO_SET if s is None else s,
                name=_set_label(s),
                colour=set_colour(s),
                x_label="w_iter s",
                y_label="alpha_io",
            )
            for s in sets
        ]
        notes.insert(
            0,
            f"{drawn.height:,} jobs binned on a {GRID_BINS} x {GRID_BINS} log grid: one marker per non-empty bin and"
            " set, its area growing with the bin's jobs (the hover text gives the count).",
        )
    return Figure(
        "overview-scatter", "w_iter vs alpha_io per job, coloured by set", traces, layout, note=" ".join(notes)
    )


def _job_points(jobs: pl.DataFrame, set_id: int | None) -> dict[str, Any]:
    """One marker per job of a set; the hover text gives its id, app (``customdata``), w_iter and alpha_io."""
    ids = jobs.select(escape_text(pl.col("job_id")), escape_text(pl.col("app").fill_null("unknown")))
    return {
        "type": "scatter",
        "mode": "markers",
        "name": _set_label(set_id),
        "x": json_values(jobs["w_iter"]),
        "y": json_values(jobs["alpha_io"]),
        "customdata": [list(row) for row in ids.iter_rows()],
        "marker": {"color": set_colour(set_id), "size": 6, "opacity": 0.75},
        "cliponaxis": False,  # a job at a decade's edge or at alpha_io 1 shows whole
        "hovertemplate": "%{customdata[0]}<br>app %{customdata[1]}<br>w_iter %{x:.4g} s<br>alpha_io %{y:.1%}<br>"
        + _set_label(set_id)
        + "<extra></extra>",
    }


def _sources_figure(sources: pl.DataFrame) -> Figure:
    hover = [
        f"{source}: {counted(n, 'job')}, {periodic:,} periodic, median confidence "
        + ("-" if confidence is None else f"{confidence:.2f}")
        for source, n, periodic, confidence in sources.select(
            escape_text(pl.col("source")), "jobs", "periodic jobs", "median confidence"
        ).iter_rows()
    ]
    labels = sources.select(escape_text(pl.col("source"))).to_series()
    trace = bar_trace(labels, sources["jobs"], colour=ACCENT_COLOUR, hover=hover)
    layout = figure_layout(xaxis=category_axis("source of the rhythm"), yaxis=number_axis("jobs"), legend=False)
    return Figure("overview-sources-plot", "Jobs per source", [trace], layout)


def _confidence_figure(jobs: pl.DataFrame) -> Figure | None:
    """Jobs per tenth of w_iter confidence (the last bin holds 1); None when no job has a confidence."""
    tenths = jobs.select(pl.col("w_iter_confidence").drop_nulls().mul(10).floor().clip(0, 9).cast(pl.Int64)).to_series()
    if tenths.len() == 0:
        return None
    counts = np.bincount(tenths.to_numpy(), minlength=10)
    low = np.arange(10) / 10
    hover = [f"confidence {a:.1f}-{a + 0.1:.1f}: {counted(int(n), 'job')}" for a, n in zip(low, counts, strict=True)]
    trace = bar_trace(low + 0.05, counts, colour=ACCENT_COLOUR, hover=hover)
    trace["width"] = 0.1
    xaxis = {**number_axis("w_iter confidence"), "range": [0, 1], "dtick": 0.1}
    layout = figure_layout(xaxis=xaxis, yaxis=number_axis("jobs"), legend=False, bargap=0.05)
    note = f"{counted(int(counts.sum()), 'job')} with a confidence; the last bin holds confidence 1."
    return Figure("overview-confidence", "Confidence in w_iter", [trace], layout, note=note)


def _reasons_figure(reasons: pl.DataFrame) -> Figure | None:
    """Jobs per "not periodic" code; None when every job is periodic."""
    if reasons.height == 0:
        return None
    hover = [
        f"{code}: {counted(n, 'job')}<br>{meaning}"
        for code, n, meaning in reasons.select("code", "jobs", escape_text(pl.col("meaning"))).iter_rows()
    ]
    trace = bar_trace(reasons["code"], reasons["jobs"], colour=ACCENT_COLOUR, horizontal=True, hover=hover)
    layout = figure_layout(
        xaxis=number_axis("jobs"), yaxis={**category_axis("not_periodic"), "autorange": "reversed"}, legend=False
    )
    return Figure("overview-reasons-plot", "Why jobs are not periodic", [trace], layout)


def _apps_figure(figure_id: str, title: str, apps: pl.DataFrame, *, by: str) -> Figure | None:
    """Horizontal bars of the top apps, largest on top: bytes read and written stacked, or I/O time; None when no
    app moved a byte (or spent a second in I/O)."""
    if not (apps["bytes" if by == "bytes" else "I/O time"].fill_null(0) > 0).any():
        return None
    labels = apps.select(escape_text(pl.col("app"))).to_series()
    yaxis = {**category_axis("app"), "autorange": "reversed"}
    if by == "bytes":
        traces = [
            bar_trace(
                labels,
                apps[column].fill_null(0),
                name=column,
                colour=colour,
                horizontal=True,
                hover=_app_hover(apps, column),
            )
            for column, colour in (("bytes read", READ_COLOUR), ("bytes written", WRITE_COLOUR))
        ]
        layout = figure_layout(xaxis=bytes_axis("bytes"), yaxis=yaxis, barmode="stack")
        layout["legend"]["traceorder"] = "normal"
    else:
        traces = [
            bar_trace(
                labels, apps["I/O time"], colour=ACCENT_COLOUR, horizontal=True, hover=_app_hover(apps, "I/O time")
            )
        ]
        layout = figure_layout(xaxis=seconds_axis("I/O time"), yaxis=yaxis, legend=False)
    layout["height"] = 120 + 22 * max(apps.height, 1)
    note = "" if by == "bytes" else "A job's I/O time is its io_time, or alpha_io x runtime where io_time is missing."
    return Figure(figure_id, title, traces, layout, note=note)


def _app_hover(apps: pl.DataFrame, column: str) -> list[str]:
    show = format_seconds if column == "I/O time" else format_bytes
    names = apps.select(escape_text(pl.col("app"))).to_series().to_list()
    return [
        f"{name} ({counted(n, 'job')})<br>{column}: {show(value)}"
        for name, n, value in zip(names, apps["jobs"].to_list(), apps[column].to_list(), strict=True)
    ]


# ----------------------------------------------------------------------------------------- reading


def _reading(
    summary: pl.DataFrame, per_set: pl.DataFrame, reasons: pl.DataFrame, set_rule: str, jobs: pl.DataFrame
) -> str:
    """One paragraph with the key numbers: size, span, bytes, periodic share, the largest sets and reasons; a
    sentence for each plot left out for want of data."""
    row = summary.row(0, named=True)
    if row["jobs"] == 0:
        return "The jobs table holds no job: there is nothing to show."
    periodic = row["periodic jobs"]
    first, last = row["first start (UTC)"], row["last end (UTC)"]
    if first == "-":
        span = "at dates it does not give"
    elif first.endswith("into the trace"):  # dates since the trace's start: no calendar
        span = f"from {first.removesuffix(' into the trace')} to {last}"
    else:
        span = f"from {first} to {last} (UTC)"
    text = (
        f"The site ran {counted(row['jobs'], 'job')} of {counted(row['users'], 'user')} and "
        f"{counted(row['apps'], 'app')}, {span}, reading {format_bytes(row['bytes read'])} "
        f"and writing {format_bytes(row['bytes written'])}. "
    )
    if periodic == 0:
        text += "No job does I/O in a rhythm (none has a characteristic time w_iter between two I/O phases)."
    else:
        text += (
            f"{counted(periodic, 'job')} ({format_share(row['periodic'])}) "
            f"{'does' if periodic == 1 else 'do'} I/O in a rhythm, with a characteristic time w_iter between two "
            "I/O phases."
        )
    with_set = per_set.filter(pl.col("set").is_not_null()).sort("jobs", descending=True)
    if with_set.height == 1:
        only = with_set.row(0, named=True)
        text += (
            f" By {set_rule}, every job with a set is in set {only['set']} ({format_share(only['share'])} of all jobs)."
        )
    elif with_set.height:
        top = ", ".join(
            f"set {s} ({format_share(share)})" for s, share in with_set.head(3).select("set", "share").iter_rows()
        )
        text += (
            f" By {set_rule}, the jobs fall in {counted(with_set.height, 'set')}; the largest are {top} of all jobs."
        )
    if reasons.height:
        code, count = reasons.sort("jobs", descending=True).select("code", "jobs").row(0)
        meaning = NOT_PERIODIC_MEANINGS[code]
        text += f" Of the jobs without a period, most are '{code}' ({counted(count, 'job')}: the job {meaning})."
    elif periodic == row["jobs"]:
        text += " Every job has a period, so there is no plot of why jobs are not periodic."
    else:
        text += " The jobs without a period give no reason (no not_periodic code), so there is no plot of reasons."
    if not (jobs["bytes_read"].fill_null(0) + jobs["bytes_written"].fill_null(0) > 0).any():
        text += " No job records a byte read or written: no plot of the apps by bytes."
    if not (jobs["io_seconds"].fill_null(0) > 0).any():
        text += " No job records time spent in I/O: no plot of the apps by I/O time."
    drawn = jobs.filter((pl.col("w_iter") > 0) & (pl.col("alpha_io") > 0)).height
    if drawn:
        text += (
            " The scatter plots each job's w_iter against alpha_io, the fraction of its run spent doing I/O, on"
            " log axes coloured by set (the paper's Fig. 5): jobs of one set have w_iter of the same order."
        )
    else:
        text += " No job has both a w_iter and an alpha_io above 0: there is no w_iter against alpha_io to plot."
    if jobs["w_iter_confidence"].is_null().all():
        text += " No job has a confidence in its w_iter: no confidence plot."
    return text
