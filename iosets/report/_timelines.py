"""Section "Timelines": a Gantt of a replay's busiest slice and each set's share of the bandwidth over time."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ._document import Figure, ReportInputs, Section, Table
from ._format import epoch_date, format_seconds
from ._palette import UNSET_COLOUR, set_colour
from ._plots import (
    category_axis,
    escape_text,
    figure_layout,
    json_values,
    number_axis,
)
from ._scheduler import INGEST_COMMAND, REPLAY_COMMAND, scheduler_order, set_label

SECTION_ID = "timelines"
TITLE = "Timelines"

TIMELINE_POLICY = "iosets-wfq"
"""The scheduler whose replay is drawn, when the replay holds it (else the first scheduler given)."""

GANTT_JOBS = 40
"""Most jobs (rows) in the Gantt."""

SHARE_BINS = 400
"""Most time bins of the bandwidth share plot."""

WINDOW_BINS = 40
"""Width of the Gantt's slice, in share bins (a tenth of the replay)."""

_COMPUTE_COLOUR = "#9e9e9e"

RECORDED = "recorded"
"""The scheduler name of the site trace's own phases, drawn when no replay is given."""


def spread_bytes(
    start: np.ndarray, end: np.ndarray, size: np.ndarray, group: np.ndarray, edges: np.ndarray, n_groups: int
) -> np.ndarray:
    """Bytes of each interval spread evenly over [start, end], summed per group and bin.

    Parameters
    ----------
    start, end, size : numpy.ndarray
        Each interval's dates and bytes (an interval of no length puts its bytes in the bin of its date).
    group : numpy.ndarray of int
        Each interval's group, in ``[0, n_groups)``.
    edges : numpy.ndarray
        The bins' edges, increasing; intervals lie inside ``[edges[0], edges[-1]]``.
    n_groups : int
        Groups.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_groups, len(edges) - 1)``: bytes per group and bin (exact for partly covered bins).

    Examples
    --------
    >>> spread_bytes(np.array([0.0]), np.array([4.0]), np.array([100.0]), np.array([0]), np.arange(6.0), 1).tolist()
    [[25.0, 25.0, 25.0, 25.0, 0.0]]
    """
    n_bins = edges.size - 1
    first = np.clip(np.searchsorted(edges, start, side="right") - 1, 0, n_bins - 1)
    last = np.maximum(np.clip(np.searchsorted(edges, end, side="left") - 1, 0, n_bins - 1), first)
    length = end - start
    single = (first == last) | (length <= 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(single, 0.0, size / length)
    row = group * (n_bins + 1)
    head = np.where(single, size, rate * (edges[np.minimum(first + 1, n_bins)] - start))
    tail = np.where(single, 0.0, rate * (end - edges[last]))
    width = n_bins + 1
    total = np.bincount(row + first, weights=head, minlength=n_groups * width)
    total += np.bincount(row + last, weights=tail, minlength=n_groups * width)
    # Bins strictly between first and last are fully covered: a running sum of the rates.
    slope = np.bincount(row + first + 1, weights=rate, minlength=n_groups * width)
    slope -= np.bincount(row + last, weights=rate, minlength=n_groups * width)
    full = np.maximum(np.cumsum(slope.reshape(n_groups, width), axis=1)[:, :n_bins], 0.0) * np.diff(edges)
    return total.reshape(n_groups, width)[:, :n_bins] + full


def share_over_time(phases: pl.DataFrame, *, bins: int = SHARE_BINS) -> tuple[np.ndarray, list[int | None], np.ndarray]:
    """Bytes per set and time bin, each phase's bytes spread evenly over its [start, end].

    Parameters
    ----------
    phases : polars.DataFrame
        One replay's phases (TRACE_REPLAY_PHASES): ``set``, ``bytes``, ``start``, ``end``.
    bins : int, default=400
        Bins over [first start, last end] (one when the span has no width).

    Returns
    -------
    edges : numpy.ndarray
        ``bins + 1`` edges.
    sets : list of int or None
        The sets, in row order of ``moved`` (None: jobs without a set, last).
    moved : numpy.ndarray
        Shape ``(len(sets), bins)``: bytes each set moved in each bin.
    """
    begin, finish = float(phases["start"].min()), float(phases["end"].max())  # type: ignore[arg-type]
    edges = np.linspace(begin, finish, bins + 1) if finish > begin else np.array([begin, begin + 1.0])
    sets = phases["set"].unique().sort(nulls_last=True).to_list()
    index = phases.select(pl.col("set").rank("dense").fill_null(len(sets)).cast(pl.Int64) - 1).to_series()
    moved = spread_bytes(
        phases["start"].to_numpy(),
        phases["end"].to_numpy(),
        phases["bytes"].cast(pl.Float64).to_numpy(),
        index.to_numpy(),
        edges,
        len(sets),
    )
    return edges, sets, moved


def recorded_phases(site: pl.DataFrame, recommendation: pl.DataFrame | None) -> pl.DataFrame:
    """The site trace's phases as recorded, shaped as a replay's (scheduler ``recorded``; ready = start: no wait).

    Examples
    --------
    >>> site = pl.DataFrame({"job_id": ["a", "a", "a"], "phase": [0, 0, 1], "size": [1, 2, 4],
    ...     "start": [0.0, 1.0, 5.0], "end": [1.0, 2.0, 6.0]})
    >>> recorded_phases(site, None).select("phase", "bytes", "ready", "end").rows()
    [(0, 3, 0.0, 2.0), (1, 4, 5.0, 6.0)]
    """
    sets = pl.DataFrame(schema={"job_id": pl.String, "set": pl.Int64})
    if recommendation is not None:
        sets = recommendation.select("job_id", pl.col("set").cast(pl.Int64))
    return (
        site.group_by("job_id", "phase")
        .agg(pl.col("size").sum().alias("bytes"), pl.col("start").min(), pl.col("end").max())
        .join(sets, on="job_id", how="left")
        .sort("job_id", "phase")
        .with_columns(scheduler=pl.lit(RECORDED), ready=pl.col("start"))
    )


def busiest_window(phases: pl.DataFrame, edges: np.ndarray) -> tuple[float, float]:
    """The slice of ``WINDOW_BINS`` consecutive bins in which the most phases are waiting or in I/O (bin-count)."""
    n_bins = edges.size - 1
    first = np.clip(np.searchsorted(edges, phases["ready"].to_numpy(), side="right") - 1, 0, n_bins - 1)
    last = np.maximum(np.clip(np.searchsorted(edges, phases["end"].to_numpy(), side="left") - 1, 0, n_bins - 1), first)
    active = np.cumsum(np.bincount(first, minlength=n_bins + 1) - np.bincount(last + 1, minlength=n_bins + 1))
    width = min(WINDOW_BINS, n_bins)
    running = np.concatenate(([0], np.cumsum(active[:n_bins])))
    best = int(np.argmax(running[width:] - running[:-width]))
    return float(edges[best]), float(edges[best + width])


def time_axis(first: float) -> tuple[float, dict[str, Any]]:
    """Scale from seconds to the axis' unit, and the axis: dates (UTC) for dates since the epoch, else seconds."""
    if epoch_date(first) is not None:
        return 1000.0, {"type": "date", "title": {"text": "date (UTC)"}, "automargin": True}
    return 1.0, number_axis("date (s)")


def timelines_section(inputs: ReportInputs) -> Section:
    """Build the "Timelines" section: one replay's busiest slice as a Gantt, and each set's bandwidth share.

    Parameters
    ----------
    inputs : ReportInputs
        Reads ``replay_phases`` (TRACE_REPLAY_PHASES), the replay of iosets-wfq when it holds one,
        else of the first scheduler given; without a replay, the site trace's phases as recorded.

    Returns
    -------
    Section
        Id ``"timelines"``; a missing box naming the commands when neither a replay nor a site trace is given.

    Examples
    --------
    >>> import polars as pl
    >>> from iosets.report._inputs import read_inputs
    >>> timelines_section(read_inputs(pl.DataFrame({"job_id": ["a"]}))).missing.startswith("No replayed phases given")
    True
    """
    phases = inputs.replay_phases
    recorded = (phases is None or phases.height == 0) and inputs.site is not None and inputs.site.height > 0
    if recorded:
        phases = recorded_phases(inputs.site, inputs.recommendation)  # type: ignore[arg-type]
    if phases is None or phases.height == 0:
        return Section(
            SECTION_ID,
            TITLE,
            reading="This section draws when each job computed, waited and did I/O in a trace replay.",
            missing=(
                f"No replayed phases given. Replay the site's traces: `{INGEST_COMMAND}`, then `{REPLAY_COMMAND}`; "
                "the phases are written beside the per-job table (perjob.phases.parquet)."
            ),
        )
    replayed = set(phases["scheduler"].unique().to_list())
    order = [RECORDED] if recorded else [name for name in scheduler_order(inputs) if name in replayed]
    scheduler = TIMELINE_POLICY if TIMELINE_POLICY in order else order[0]
    mine = phases.filter(pl.col("scheduler") == scheduler)
    edges, sets, moved = share_over_time(mine)
    n_replayed = mine["job_id"].n_unique()
    whole = n_replayed <= GANTT_JOBS
    begin, end = (float(edges[0]), float(edges[-1])) if whole else busiest_window(mine, edges)
    shown, n_jobs = _slice(mine, begin, end)
    gantt = _gantt_figure(shown, scheduler, (begin, end), n_jobs, whole=whole)
    shares = _share_figure(edges, sets, moved, scheduler)
    totals = (
        mine.group_by("set")
        .agg(pl.col("bytes").sum())
        .sort("set", nulls_last=True)
        .with_columns(share=pl.col("bytes") / pl.when(pl.col("bytes").sum() > 0).then(pl.col("bytes").sum()))
    )
    total_table = Table(
        "timelines-sets",
        f"Bytes per set over the replay ({scheduler})",
        totals,
        formats={"bytes": "{:.6g}", "share": "{:.2%}"},
        note="What the share plot spreads over time: each set's bytes and share of all bytes.",
    )
    phase_table = Table(
        "timelines-phases",
        f"The phases drawn in the Gantt ({scheduler})",
        shown.select(
            "job_id",
            "phase",
            "set",
            "bytes",
            "ready",
            "start",
            "end",
            (pl.col("start") - pl.col("ready")).alias("wait"),
        ),
        formats={"ready": "{:.6f}", "start": "{:.6f}", "end": "{:.6f}", "wait": "{:.6g}"},
        interactive=True,
    )
    reading = _reading(mine, scheduler, order, (begin, end), (n_replayed, n_jobs), shown, whole=whole)
    return Section(SECTION_ID, TITLE, reading=reading, figures=(gantt, shares), tables=(total_table, phase_table))


def _slice(phases: pl.DataFrame, begin: float, end: float) -> tuple[pl.DataFrame, int]:
    """The ``GANTT_JOBS`` jobs with most phases overlapping [begin, end]: their phases whose compute gap, wait
    or I/O meets it, with ``previous`` (the end of the job's previous phase); and how many jobs overlap.
    """
    overlapping = phases.filter((pl.col("ready") <= end) & (pl.col("end") >= begin))
    counts = overlapping.group_by("job_id").agg(pl.len().alias("n"), pl.col("ready").min().alias("first"))
    chosen = counts.sort("n", "job_id", descending=[True, False]).head(GANTT_JOBS).select("job_id", "first")
    shown = (
        phases.join(chosen, on="job_id")
        .sort("job_id", "phase")
        .with_columns(previous=pl.col("end").shift(1).over("job_id"))
        .filter((pl.min_horizontal("previous", "ready") <= end) & (pl.col("end") >= begin))
        .sort("first", "job_id", "phase")
    )
    return shown.drop("first"), counts.height


def _gantt_figure(
    shown: pl.DataFrame, scheduler: str, window: tuple[float, float], n_jobs: int, *, whole: bool
) -> Figure:
    """Jobs as rows: I/O phases coloured by set, waits as light hatched bars, compute gaps as thin grey bars."""
    shown = shown.with_columns(label=escape_text(pl.col("job_id")))
    data: list[dict[str, Any]] = []
    begin, end = window
    scale, axis = time_axis(begin)
    gaps = shown.filter(pl.col("previous").is_not_null() & (pl.col("ready") > pl.col("previous")))
    if gaps.height:
        data.append(
            _bars(gaps, ("previous", "ready"), "compute", _COMPUTE_COLOUR, width=0.25, scale=scale)
            | {"hovertemplate": "%{y}<br>compute before phase %{customdata[0]}<extra></extra>"}
        )
    for (set_id,), rows in sorted(shown.partition_by("set", as_dict=True).items(), key=_set_key):
        colour = set_colour(set_id) if set_id is not None else UNSET_COLOUR
        name = set_label(set_id)
        data.append(_bars(rows, ("start", "end"), name, colour, width=0.7, scale=scale) | {"legendgroup": name})
        waiting = rows.filter(pl.col("start") > pl.col("ready"))
        if waiting.height:
            wait = _bars(waiting, ("ready", "start"), f"{name} waiting", colour, width=0.7, scale=scale)
            wait["marker"].update(opacity=0.45, pattern={"shape": "/", "fgcolor": colour, "bgcolor": "#ffffff"})
            data.append(wait | {"legendgroup": name})
    rows_order = shown["label"].unique(maintain_order=True).to_list()
    layout = figure_layout(
        xaxis={**axis, "range": [begin * scale, end * scale]},
        yaxis={**category_axis("job"), "categoryorder": "array", "categoryarray": rows_order, "autorange": "reversed"},
        barmode="overlay",
        height=max(260, 80 + 20 * len(rows_order)),
    )
    if whole:
        note = f"The whole replay: {n_jobs} job{'' if n_jobs == 1 else 's'}."
    else:
        note = f"The slice {_span(begin, end)}, a tenth of the replay where the most phases wait or do I/O"
        note += f"; {len(rows_order)} of the {n_jobs} jobs active in it, those with the most phases there."
        if n_jobs <= len(rows_order):
            note = note.split(";")[0] + f"; all {n_jobs} jobs active in it."
    return Figure(
        "timelines-gantt",
        "Compute and I/O phases " + ("as recorded" if scheduler == RECORDED else f"under {scheduler}"),
        data,
        layout,
        note=note,
    )


def _span(begin: float, end: float) -> str:
    """A slice in words: UTC dates for dates since the epoch, else seconds."""
    first, last = (epoch_date(t, "%Y-%m-%d %H:%M:%S") for t in (begin, end))
    if first is None or last is None:
        return f"[{begin:.6g}, {end:.6g}] s"
    return f"{first} to {last} UTC"


def _set_key(item: tuple[tuple[Any, ...], pl.DataFrame]) -> tuple[bool, int]:
    """Sets in increasing order, jobs without a set last."""
    set_id = item[0][0]
    return set_id is None, set_id or 0


def _bars(
    rows: pl.DataFrame, span: tuple[str, str], name: str, colour: str, *, width: float, scale: float
) -> dict[str, Any]:
    """Horizontal bars between the columns ``span``, one per row, in axis units (seconds x ``scale``).

    The hover gives the phase's dates (s) and bytes as in the table.
    """
    low, high = span
    return {
        "type": "bar",
        "orientation": "h",
        "name": name,
        "y": rows["label"].to_list(),
        "base": json_values(rows[low] * scale),
        "x": json_values((rows[high] - rows[low]) * scale),
        "width": width,
        "marker": {"color": colour},
        "customdata": [list(row) for row in rows.select("phase", "ready", "start", "end", "bytes").iter_rows()],
        "hovertemplate": (
            "%{y}<br>phase %{customdata[0]}<br>ready %{customdata[1]:.6f} s<br>start %{customdata[2]:.6f} s"
            "<br>end %{customdata[3]:.6f} s<br>%{customdata[4]:,} bytes<extra>" + name + "</extra>"
        ),
    }


def _share_figure(edges: np.ndarray, sets: list[int | None], moved: np.ndarray, scheduler: str) -> Figure:
    """Each set's share of the bytes moved per bin, stacked; hover gives the bytes."""
    scale, axis = time_axis(float(edges[0]))
    centres = (edges[:-1] + edges[1:]) / 2 * scale
    where = "%{x}" if scale != 1.0 else "%{x:.6g} s"
    total = moved.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(total > 0, moved / total, np.nan)
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "stackgroup": "shares",
            "name": set_label(set_id),
            "x": json_values(centres),
            "y": json_values(shares[i]),
            "customdata": json_values(moved[i]),
            "line": {"width": 0.5, "color": set_colour(set_id) if set_id is not None else UNSET_COLOUR},
            "hovertemplate": f"{set_label(set_id)}<br>{where}<br>share %{{y:.1%}}<br>%{{customdata:.4g}} bytes"
            "<extra></extra>",
        }
        for i, set_id in enumerate(sets)
    ]
    layout = figure_layout(xaxis=axis, yaxis={**number_axis("share of the bytes moved"), "range": [0, 1]})
    note = f"{edges.size - 1} bins of {format_seconds(float(edges[1] - edges[0]))}; each phase's bytes spread evenly"
    note += " over its [start, end]. Gaps: no byte moved in the bin."
    return Figure("timelines-shares", f"Bandwidth share per set over time ({scheduler})", data, layout, note=note)


def _reading(
    phases: pl.DataFrame,
    scheduler: str,
    order: list[str],
    window: tuple[float, float],
    counts: tuple[int, int],
    shown: pl.DataFrame,
    *,
    whole: bool,
) -> str:
    """What the plots show, with the replay's counts; ``counts``: jobs replayed, jobs active in the slice."""
    waited = phases.filter(pl.col("start") > pl.col("ready"))
    wait = float(waited.select((pl.col("start") - pl.col("ready")).sum()).item())
    others = [name for name in order if name != scheduler]
    also = f" (also replayed: {', '.join(others)})" if others else ""
    if scheduler == RECORDED:
        text = (
            f"The site's trace as recorded: {counts[0]} jobs, {phases.height} I/O phases (no replay given: "
            f"`{REPLAY_COMMAND}` shows what each scheduler would change, waits included). "
        )
    else:
        text = (
            f"The trace replay under {scheduler}{also}: "
            f"{counts[0]} jobs, {phases.height} I/O phases, {waited.height} of which waited for their"
            f" turn ({format_seconds(wait)} of waiting in all). "
        )
    if whole:
        text += "The Gantt shows the whole replay: "
    else:
        text += f"The Gantt shows its busiest slice, {_span(*window)}: "
    text += (
        "rows are jobs, coloured bars their I/O phases (by set), light hatched bars the time a phase was ready but"
        " waited, thin grey bars compute. Below, each set's share of the bytes moved over the whole replay: a set"
        " whose share drops while others are busy is the one made to wait."
    )
    drawn = shown["job_id"].n_unique()
    if counts[1] > drawn:
        text += f" Only {drawn} of the {counts[1]} jobs active in the slice are drawn: those with most phases in it."
    return text
