"""Section "Timelines": jobs running over time, a Gantt of the busiest period, bandwidth per set over busy periods."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import polars as pl

from ..replay import TRACE_METRICS
from ._busy import BUSY_JOBS, active_periods, bounded_steps, concurrency, job_intervals, overlapped_share
from ._document import Figure, ReportInputs, Section, Table
from ._format import counted, epoch_date, format_seconds, format_share
from ._palette import ACCENT_COLOUR, UNSET_COLOUR, set_colour
from ._plots import (
    bytes_axis,
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
"""Width of the Gantt's slice, in ``SHARE_BINS`` bins over its period (a tenth of the period)."""

SHARE_PERIODS = 50
"""Most periods drawn in the bandwidth plot (those with the most phase time)."""

BANDWIDTH_BINS = 200
"""About how many bins the bandwidth plot has (stacked bars: a bar is an SVG path per set and bin)."""

CONCURRENCY_POINTS = 2000
"""Most steps of the concurrency plot (more are binned, each bin drawn at its peak)."""

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


def period_edges(periods: pl.DataFrame, *, bins: int = SHARE_BINS) -> tuple[np.ndarray, np.ndarray]:
    """Bin edges over the busiest ``SHARE_PERIODS`` periods (by phase time), about ``bins`` bins shared among them
    in proportion to their lengths (one at least each), and which bins lie inside a period (the others: gaps).

    Examples
    --------
    >>> periods = pl.DataFrame({"start": [0.0, 10.0], "end": [4.0, 12.0], "phase_seconds": [1.0, 1.0]})
    >>> edges, inside = period_edges(periods, bins=3)
    >>> edges.tolist(), inside.tolist()
    ([0.0, 2.0, 4.0, 10.0, 12.0], [True, True, False, True])
    """
    kept = periods.sort("phase_seconds", descending=True).head(SHARE_PERIODS).sort("start")
    starts, ends = kept["start"].to_numpy(), kept["end"].to_numpy()
    lengths = ends - starts  # > 0: a busy period is a run of steps, each of some width
    total = float(lengths.sum())
    counts = np.maximum(1, np.round(bins * lengths / total)).astype(np.int64)
    edges: list[np.ndarray] = []
    inside: list[np.ndarray] = []
    for begin, end, count in zip(starts, ends, counts, strict=True):  # periods are disjoint, in date order
        if edges:
            inside.append(np.array([False]))  # the gap from the previous period's end to this one's start
        edges.append(np.linspace(begin, end, count + 1))
        inside.append(np.ones(count, bool))
    return np.concatenate(edges), np.concatenate(inside)


def share_over_time(
    phases: pl.DataFrame, *, bins: int = SHARE_BINS, edges: np.ndarray | None = None
) -> tuple[np.ndarray, list[int | None], np.ndarray]:
    """Bytes per set and time bin, each phase's bytes spread evenly over its [start, end].

    Parameters
    ----------
    phases : polars.DataFrame
        One replay's phases (TRACE_REPLAY_PHASES): ``set``, ``bytes``, ``start``, ``end``.
    bins : int, default=400
        Bins over [first start, last end] (one when the span has no width), when ``edges`` is None.
    edges : numpy.ndarray, default=None
        The bins' edges (increasing); the parts of phases outside [edges[0], edges[-1]] are left out, with
        their share of the phase's bytes.

    Returns
    -------
    edges : numpy.ndarray
        The edges.
    sets : list of int or None
        The sets, in row order of ``moved`` (None: jobs without a set, last).
    moved : numpy.ndarray
        Shape ``(len(sets), len(edges) - 1)``: bytes each set moved in each bin.
    """
    start, end = phases["start"].to_numpy(), phases["end"].to_numpy()
    size = phases["bytes"].cast(pl.Float64).to_numpy()
    if edges is None:
        begin, finish = float(start.min()), float(end.max())
        edges = np.linspace(begin, finish, bins + 1) if finish > begin else np.array([begin, begin + 1.0])
    else:
        low, high = np.clip(start, edges[0], edges[-1]), np.clip(end, edges[0], edges[-1])
        length = end - start
        with np.errstate(divide="ignore", invalid="ignore"):
            kept = np.where(length > 0, (high - low) / length, (start >= edges[0]) & (start <= edges[-1]))
        start, end, size = low, high, size * kept
    sets = phases["set"].unique().sort(nulls_last=True).to_list()
    index = phases.select(pl.col("set").rank("dense").fill_null(len(sets)).cast(pl.Int64) - 1).to_series()
    moved = spread_bytes(start, end, size, index.to_numpy(), edges, len(sets))
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


def phase_periods(phases: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The busy periods of a replay's jobs, each job running from its first phase's ready date to its last end.

    Returns the periods (as :func:`._busy.busy_periods`, with ``phase_seconds``: the phases' time, waits included,
    inside each) and the least concurrency that defines them (1 when no two jobs overlap).

    Examples
    --------
    >>> phases = pl.DataFrame({"job_id": ["a", "b", "c"], "ready": [0.0, 1.0, 9.0], "start": [0.0, 1.0, 9.0],
    ...     "end": [2.0, 3.0, 10.0]})
    >>> periods, min_jobs = phase_periods(phases)
    >>> periods.select("start", "end", "phase_seconds").rows(), min_jobs
    ([(1.0, 2.0, 2.0)], 2)
    >>> _time_before(phases, np.array([1.5, 100.0])).tolist()  # a 1.5 s, b 0.5 s; all 5 s
    [2.0, 5.0]
    """
    lives = phases.group_by("job_id").agg(pl.col("ready").min().alias("start"), pl.col("end").max())
    periods, min_jobs = active_periods(*job_intervals(lives))
    before = _time_before(phases, np.concatenate((periods["start"].to_numpy(), periods["end"].to_numpy())))
    inside = before[periods.height :] - before[: periods.height]
    return periods.with_columns(phase_seconds=pl.Series(inside, dtype=pl.Float64)), min_jobs


def _time_before(phases: pl.DataFrame, dates: np.ndarray) -> np.ndarray:
    """The phases' seconds (from ready to end) before each of ``dates``: the sum of ``clip(t - ready, 0, end -
    ready)``, i.e. the seconds since the readies passed minus those since the ends passed (sorted prefix sums)."""

    def since(values: np.ndarray) -> np.ndarray:
        ordered = np.sort(values)
        prefix = np.concatenate(([0.0], np.cumsum(ordered)))
        count = np.searchsorted(ordered, dates, side="right")
        return count * dates - prefix[count]

    return since(phases["ready"].to_numpy()) - since(phases["end"].to_numpy())


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


def gantt_window(phases: pl.DataFrame, periods: pl.DataFrame) -> tuple[float, float, bool]:
    """Where the Gantt looks: the period holding the most phase time; when more than ``GANTT_JOBS`` jobs have
    phases in it, its slice of ``WINDOW_BINS`` of ``SHARE_BINS`` bins where the most phases wait or do I/O
    (then the flag is True).

    Examples
    --------
    >>> phases = pl.DataFrame({"job_id": ["a", "b", "c", "d"], "ready": [0.0, 1.0, 100.0, 100.0],
    ...     "start": [0.0, 1.0, 100.0, 100.0], "end": [2.0, 3.0, 150.0, 160.0]})
    >>> gantt_window(phases, phase_periods(phases)[0])
    (100.0, 150.0, False)
    """
    begin, end = periods.sort("phase_seconds", "start", descending=[True, False]).select("start", "end").row(0)
    inside = phases.filter((pl.col("ready") <= end) & (pl.col("end") >= begin))
    if inside["job_id"].n_unique() <= GANTT_JOBS:
        return float(begin), float(end), False
    return *busiest_window(inside, np.linspace(begin, end, SHARE_BINS + 1)), True


def time_axis(first: float) -> tuple[float, dict[str, Any]]:
    """Scale from seconds to the axis' unit, and the axis: dates (UTC; Plotly reads ms since the epoch) for
    dates since the epoch, else seconds since the trace's start.

    Examples
    --------
    >>> time_axis(1.7e9)[0], time_axis(1.7e9)[1]["type"], time_axis(12.0)[0]
    (1000.0, 'date', 1.0)
    """
    if epoch_date(first) is not None:
        return 1000.0, {"type": "date", "title": {"text": "date (UTC)"}, "automargin": True}
    return 1.0, number_axis("time since the trace's start (s)")


def timelines_section(inputs: ReportInputs) -> Section:
    """Build the "Timelines" section: the jobs running over time, a replay's busiest period as a Gantt, and each
    set's bandwidth over the busy periods.

    Parameters
    ----------
    inputs : ReportInputs
        Reads the jobs' ``start`` and ``end`` (concurrency) and ``replay_phases`` (TRACE_REPLAY_PHASES), the replay
        of iosets-wfq when it holds one, else of the first scheduler given; without a replay, the site trace's
        phases as recorded; ``replay_schedulers`` for the metrics over busy periods.

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
    periods, min_jobs = phase_periods(mine)
    n_replayed = mine["job_id"].n_unique()
    span = (float(mine["ready"].min()), float(mine["end"].max()))  # type: ignore[arg-type]
    begin, end, sliced = gantt_window(mine, periods) if periods.height else (*span, False)
    shown, n_jobs = _slice(mine, begin, end)
    window = _fitted(shown, (begin, end), sliced=sliced)
    whole = not sliced and shown["job_id"].n_unique() == n_replayed
    edges, inside = (
        period_edges(periods, bins=BANDWIDTH_BINS) if periods.height else (np.linspace(*span, BANDWIDTH_BINS + 1), None)
    )
    edges, sets, moved = share_over_time(mine, edges=edges) if span[1] > span[0] else share_over_time(mine, bins=1)
    figures = [
        _concurrency_figure(inputs.jobs, mine),
        _gantt_figure(shown, scheduler, window, n_jobs, whole=whole, sliced=sliced, min_jobs=min_jobs),
        _share_figure(edges, inside, sets, moved, scheduler),
    ]
    totals = (
        mine.group_by("set")
        .agg(pl.col("bytes").sum())
        .sort("set", nulls_last=True)
        .with_columns(share=pl.col("bytes") / pl.when(pl.col("bytes").sum() > 0).then(pl.col("bytes").sum()))
    )
    tables = [
        Table(
            "timelines-sets",
            f"Bytes per set over the replay ({scheduler})",
            totals,
            formats={"bytes": "bytes", "share": "share"},
            note="What the bandwidth plot spreads over time: each set's bytes and share of all bytes.",
        ),
        Table(
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
                (pl.col("end") - pl.col("start")).alias("duration"),
                (pl.col("start") - window[0]).alias("start in the Gantt"),
            ),
            formats={
                "bytes": "bytes",
                "ready": "date",
                "start": "date",
                "end": "date",
                "wait": "seconds",
                "start in the Gantt": "seconds",
                "duration": "seconds",
            },
            interactive=True,
        ),
    ]
    extra = [
        _periods_table(periods, min_jobs) if periods.height else None,
        _busy_metrics_table(inputs.replay_schedulers),
    ]
    tables[1:1] = [table for table in extra if table is not None]
    reading = _reading(mine, scheduler, order, window, (n_replayed, n_jobs), shown, whole=whole)
    reading += " " + _periods_reading(inputs.jobs, periods, min_jobs, span, n_replayed)
    return Section(SECTION_ID, TITLE, reading=reading, figures=tuple(figures), tables=tuple(tables))


def _fitted(shown: pl.DataFrame, window: tuple[float, float], *, sliced: bool) -> tuple[float, float]:
    """The Gantt's range: the bars drawn (waits, I/O and the compute gaps between them) whole, or, for a slice,
    the slice narrowed to them (no empty margin)."""
    if shown.height == 0:
        return window
    first = float(shown.select(pl.min_horizontal("previous", "ready").min()).item())
    last = float(shown["end"].max())  # type: ignore[arg-type]
    if not sliced:
        return (first, last) if last > first else window
    begin, end = max(window[0], first), min(window[1], last)
    return (begin, end) if end > begin else window


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
    shown: pl.DataFrame,
    scheduler: str,
    window: tuple[float, float],
    n_jobs: int,
    *,
    whole: bool,
    sliced: bool,
    min_jobs: int,
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
    period = "busy period" if min_jobs == BUSY_JOBS else "period of activity"
    if whole:
        note = f"The whole replay: {counted(n_jobs, 'job')}."
    elif not sliced:
        note = f"The {period} with the most phase time, {_span(begin, end)}: {counted(n_jobs, 'job')} active in it,"
        note += " their phases there drawn whole."
    else:
        note = f"The slice {_span(begin, end)} of the {period} with the most phase time, a tenth of it where the most"
        note += f" phases wait or do I/O; {len(rows_order)} of the {counted(n_jobs, 'job')} active in it, those with"
        note += " the most phases there."
        if n_jobs <= len(rows_order):
            note = note.split(";")[0] + f"; all {counted(n_jobs, 'job')} active in it."
    return Figure(
        "timelines-gantt",
        "Compute and I/O phases " + ("as recorded" if scheduler == RECORDED else f"under {scheduler}"),
        data,
        layout,
        note=note,
    )


def _span(begin: float, end: float) -> str:
    """A slice in words: UTC dates for dates since the epoch, else seconds since the trace's start; its length.

    Examples
    --------
    >>> _span(1.7e9, 1.7e9 + 90.0), _span(2.0, 5.0)
    ('2023-11-14 22:13:20 to 22:14:50 UTC (1.50 min)', '2.00 s to 5.00 s (3.00 s)')
    """
    first, last = epoch_date(begin, "%Y-%m-%d %H:%M:%S"), epoch_date(end, "%Y-%m-%d %H:%M:%S")
    length = format_seconds(end - begin)
    if first is None or last is None:
        return f"{format_seconds(begin)} to {format_seconds(end)} ({length})"
    if last[:10] == first[:10]:
        last = last[11:]
    return f"{first} to {last} UTC ({length})"


def _date_or_seconds(seconds: float) -> str:
    """A date since the epoch to the second (UTC), else seconds since the trace's start.

    Examples
    --------
    >>> _date_or_seconds(1.7e9), _date_or_seconds(3.0)
    ('2023-11-14 22:13:20 UTC', '3.00 s')
    """
    date = epoch_date(seconds, "%Y-%m-%d %H:%M:%S")
    return format_seconds(seconds) if date is None else f"{date} UTC"


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


def _share_figure(
    edges: np.ndarray, inside: np.ndarray | None, sets: list[int | None], moved: np.ndarray, scheduler: str
) -> Figure:
    """Each set's bandwidth per bin, stacked bars over the busy periods (``inside``: the bins drawn), so that a
    bin where little moves stays low (idle shows); the gaps between periods are cut from a date axis."""
    scale, axis = time_axis(float(edges[0]))
    drawn = np.ones(edges.size - 1, bool) if inside is None else inside
    widths = np.diff(edges)
    rates = moved / widths
    total = moved.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(total > 0, moved / total, np.nan)
    where = "%{x}" if scale != 1.0 else "%{x:.6g} s"
    centres = ((edges[:-1] + edges[1:]) / 2)[drawn] * scale
    data = [
        {
            "type": "bar",
            "name": set_label(set_id),
            "x": json_values(centres),
            "y": json_values(np.where(moved[i] > 0, rates[i], np.nan)[drawn]),  # no empty bar to draw
            "width": json_values(widths[drawn] * scale),
            "customdata": [
                list(pair) for pair in zip(json_values(moved[i][drawn]), json_values(shares[i][drawn]), strict=True)
            ],
            "marker": {"color": set_colour(set_id) if set_id is not None else UNSET_COLOUR, "line": {"width": 0}},
            "hovertemplate": f"{set_label(set_id)}<br>{where}<br>%{{y:.4s}}B/s<br>%{{customdata[0]:.4s}}B, "
            "%{customdata[1]:.1%} of the bin's bytes<extra></extra>",
        }
        for i, set_id in enumerate(sets)
    ]
    gaps = np.flatnonzero(~drawn)
    breaks = [{"bounds": [_iso(edges[i]), _iso(edges[i + 1])]} for i in gaps] if scale != 1.0 else []
    layout = figure_layout(
        xaxis={**axis, "rangebreaks": breaks} if breaks else axis,
        yaxis=bytes_axis("bandwidth") | {"ticksuffix": "B/s", "rangemode": "tozero"},
        barmode="stack",
        bargap=0,
    )
    n_periods = 1 + gaps.size
    note = f"{int(drawn.sum())} bins"
    if inside is not None:
        note += f" over {counted(n_periods, 'period')} of the table below (those with the most phase time, at most"
        note += f" {SHARE_PERIODS}); the gaps between them are cut from the axis" if breaks else f" {SHARE_PERIODS})"
    else:
        note += f" of {format_seconds(float(widths[0]))}"
    note += ". Each phase's bytes are spread evenly over its [start, end]; a low bin is a bin where the device idled."
    return Figure("timelines-shares", f"Bandwidth per set over time ({scheduler})", data, layout, note=note)


def _iso(seconds: float) -> str:
    """A date since the epoch as Plotly reads it on a date axis (UTC, microseconds).

    Examples
    --------
    >>> _iso(1.7e9 + 0.25)
    '2023-11-14 22:13:20.250000'
    """
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _concurrency_figure(jobs: pl.DataFrame, phases: pl.DataFrame) -> Figure:
    """Jobs running over time, a step line: from the jobs table's start and end, else from the replayed phases."""
    starts, ends = job_intervals(jobs) if {"start", "end"} <= set(jobs.columns) else (np.empty(0), np.empty(0))
    source = "the jobs table's start and end"
    if not (ends > starts).any():
        lives = phases.group_by("job_id").agg(pl.col("ready").min().alias("start"), pl.col("end").max())
        starts, ends = job_intervals(lives)
        source = "each job's first phase to its last (the jobs table has no dates)"
    dates, running = concurrency(starts, ends)
    dates, running, binned = bounded_steps(dates, running, points=CONCURRENCY_POINTS)
    scale, axis = time_axis(float(dates[0]) if dates.size else 0.0)
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "jobs running",
            "x": json_values(dates * scale),
            "y": json_values(running),
            "line": {"shape": "hv", "color": ACCENT_COLOUR, "width": 1},
            "fill": "tozeroy",
            "hovertemplate": ("%{x}" if scale != 1.0 else "%{x:.6g} s") + "<br>%{y} jobs running<extra></extra>",
        }
    ]
    layout = figure_layout(xaxis=axis, yaxis=number_axis("jobs running") | {"rangemode": "tozero"}, legend=False)
    note = f"From {source}; a busy period is where the line is at {BUSY_JOBS} or more."
    if binned:
        note += f" {CONCURRENCY_POINTS} bins, each drawn at the most jobs running in it."
    return Figure("timelines-concurrency", "Jobs running over time", data, layout, note=note)


def _periods_table(periods: pl.DataFrame, min_jobs: int) -> Table:
    """The periods with the most phase time (at most ``SHARE_PERIODS``), in date order."""
    kept = periods.sort("phase_seconds", descending=True).head(SHARE_PERIODS).sort("start")
    frame = kept.select(
        "start",
        "end",
        (pl.col("end") - pl.col("start")).alias("length"),
        pl.col("peak").alias("most jobs at once"),
        pl.col("job_seconds").alias("job time"),
        pl.col("phase_seconds").alias("phase time"),
    )
    what = "busy periods (at least two jobs running)" if min_jobs == BUSY_JOBS else "periods of activity (no overlap)"
    note = f"The replay's {what}, each job from its first phase's ready date to its last phase's end"
    note += (
        f"; {kept.height} of {periods.height}, those with the most phase time." if kept.height < periods.height else "."
    )
    return Table(
        "timelines-periods",
        f"The replay's {what}",
        frame,
        formats={
            "start": "date",
            "end": "date",
            "length": "seconds",
            "most jobs at once": "count",
            "job time": "seconds",
            "phase time": "seconds",
        },
        note=note,
    )


def _busy_metrics_table(schedulers: pl.DataFrame | None) -> Table | None:
    """Each scheduler's metrics over the busy periods (the replay's ``busy_*`` columns), when the replay has them."""
    if schedulers is None or "busy_periods" not in schedulers.columns or schedulers["busy_periods"].is_null().all():
        return None  # a replay written before the busy metrics
    columns = [f"busy_{name}" for name in TRACE_METRICS if f"busy_{name}" in schedulers.columns]
    frame = schedulers.select("scheduler", "busy_periods", "busy_seconds", *columns).rename(
        {column: column.removeprefix("busy_") for column in columns}
    )
    return Table(
        "timelines-busy-metrics",
        "Metrics over the busy periods",
        frame,
        formats={
            "busy_periods": "count",
            "busy_seconds": "seconds",
            "utilization": "share",
            "utilization_bound": "share",
            "io_slowdown": "ratio",
            "max_stretch": "ratio",
            "mean_stretch": "ratio",
            "p99_stretch": "ratio",
            "throughput": "rate",
        },
        note=(
            "The replay's metrics over the busy periods of the trace as recorded: the maximal stretches during which"
            " at least two jobs run, each job from its start to its last request's end, the same for every"
            " scheduler. Each job's time, compute and bytes are summed over them (the stretches: the jobs that run in"
            " one): where the jobs compete and a scheduler can change something. The Schedulers section has the"
            " metrics over the whole replay, idle time included."
        ),
    )


def _periods_reading(
    jobs: pl.DataFrame, periods: pl.DataFrame, min_jobs: int, span: tuple[float, float], n_jobs: int
) -> str:
    """The rule of the busy periods, how much of the replay (of ``n_jobs`` jobs) and of the jobs' time they hold."""
    share = overlapped_share(jobs) if {"start", "end"} <= set(jobs.columns) else None
    text = (
        f"A busy period is a maximal stretch of time during which at least {BUSY_JOBS} jobs run (in the replay, each"
        " job from its first phase's ready date to its last phase's end); the Gantt draws the one with the most"
        " phase time, the bandwidth plot the busiest ones."
    )
    if min_jobs == BUSY_JOBS:
        covered = float((periods["end"] - periods["start"]).sum())
        text += (
            f" The replay has {counted(periods.height, 'busy period')}: {format_seconds(covered)} in all, between its"
            f" first phase ({_date_or_seconds(span[0])}) and its last ({_date_or_seconds(span[1])})."
        )
    elif n_jobs == 1:
        text += " The replay holds one job: there is nothing to share, the plots show its run."
    else:
        text += " No two jobs of the replay ever run at once: no scheduler can change anything; the plots show the"
        text += " periods during which one job runs instead."
    if share is not None and (jobs["end"] > jobs["start"]).any():
        text += f" As recorded, the jobs spent {format_share(share)} of their time running beside another job."
    return text


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
    """What the plots show, with the replay's counts; ``counts``: jobs replayed, jobs active in the Gantt's window."""
    waited = phases.filter(pl.col("start") > pl.col("ready"))
    wait = float(waited.select((pl.col("start") - pl.col("ready")).sum()).item())
    others = [name for name in order if name != scheduler]
    also = f" (also replayed: {', '.join(others)})" if others else ""
    n_phases = counted(phases.height, "I/O phase")
    if scheduler == RECORDED:
        text = (
            f"The site's trace as recorded: {counted(counts[0], 'job')}, {n_phases} (no replay given: "
            f"`{REPLAY_COMMAND}` shows what each scheduler would change, waits included). "
        )
    else:
        text = (
            f"The trace replay under {scheduler}{also}: {counted(counts[0], 'job')}, {n_phases}, {waited.height} of"
            f" which waited for their turn ({format_seconds(wait)} of waiting in all). "
        )
    text += (
        "The first plot counts the jobs running over time. "
        + ("The Gantt shows the whole replay: " if whole else f"The Gantt shows {_span(*window)}: ")
        + "rows are jobs, coloured bars their I/O phases (by set), light hatched bars the time a phase was ready but"
        " waited, thin grey bars compute. The last plot stacks each set's bandwidth over the busy periods: a set"
        " whose bandwidth drops while others are busy is the one made to wait, and a low bin is idle time."
    )
    drawn = shown["job_id"].n_unique()
    if counts[1] > drawn:
        text += f" Only {drawn} of the {counts[1]} jobs active there are drawn: those with most phases in it."
    return text
