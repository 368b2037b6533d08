"""Section "Request level": per-class shares over sliding windows, latency CDFs and reservations of a request replay."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ._document import Figure, ReportInputs, Section, Table
from ._format import counted
from ._palette import UNSET_COLOUR, policy_colour, set_colour
from ._plots import ECDF_POINTS, ecdf_trace, escape_text, figure_layout, json_values, number_axis, seconds_axis
from ._timelines import time_axis

SECTION_ID = "requests"
TITLE = "Request level"

REQUESTS_COMMAND = "iosets replay-requests REQUESTS --scheduler rbfq ... -o result.parquet"

SHARE_WINDOW = 300
"""Requests per sliding window (AGIOS WFQ report, section 3: windows of 300 consecutive dispatched requests)."""

WINDOW_POINTS = 400
"""Most windows drawn per scheduler (evenly spaced among all of them)."""

TOP_CLASSES = 10
"""Classes drawn on their own (those that moved the most bytes); the others are drawn together as "other"."""

OTHER = "other"
_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def sliding_shares(
    dispatch: np.ndarray, cls: np.ndarray, size: np.ndarray, n_classes: int, *, window: int, points: int
) -> tuple[np.ndarray, np.ndarray]:
    """Byte share of each class over windows of ``window`` consecutive dispatched requests, at most ``points`` of them.

    Parameters
    ----------
    dispatch : numpy.ndarray
        Each request's dispatch date (the windows follow dispatch order, ties in the order given).
    cls : numpy.ndarray of int
        Each request's class, in ``[0, n_classes)``.
    size : numpy.ndarray
        Each request's bytes.
    n_classes : int
        Classes.
    window : int
        Requests per window (all of them when there are fewer).
    points : int
        Most windows returned, evenly spaced from the first to the last.

    Returns
    -------
    ends : numpy.ndarray
        Each window's last dispatch date.
    shares : numpy.ndarray
        Shape ``(n_classes, len(ends))``; NaN in a window that moved no byte.

    Examples
    --------
    >>> ends, shares = sliding_shares(np.arange(4.0), np.array([0, 1, 1, 0]), np.ones(4), 2, window=2, points=10)
    >>> ends.tolist(), shares.tolist()
    ([1.0, 2.0, 3.0], [[0.5, 0.0, 0.5], [0.5, 1.0, 0.5]])
    """
    order = np.argsort(dispatch, kind="stable")
    n = order.size
    width = min(window, n)
    n_windows = n - width + 1
    stops = width + np.unique(np.round(np.linspace(0, n_windows - 1, min(n_windows, points))).astype(np.int64))
    checkpoints = np.unique(np.concatenate((stops - width, stops)))
    segment = np.searchsorted(checkpoints, np.arange(n), side="right")
    per_segment = np.bincount(
        segment * n_classes + cls[order], weights=size[order], minlength=(checkpoints.size + 1) * n_classes
    )
    before = np.cumsum(per_segment.reshape(-1, n_classes), axis=0)  # row t: bytes of requests before checkpoint t
    sums = before[np.searchsorted(checkpoints, stops)] - before[np.searchsorted(checkpoints, stops - width)]
    total = sums.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(total > 0, sums / total, np.nan)
    return dispatch[order][stops - 1], shares.T


def request_level_section(inputs: ReportInputs) -> Section:
    """Build the "Request level" section from a request replay.

    Parameters
    ----------
    inputs : ReportInputs
        Reads ``requests`` (REQUEST_RESULTS) and ``request_classes`` (REQUEST_CLASSES).

    Returns
    -------
    Section
        Id ``"requests"``; a missing box naming the command when no request replay is given.

    Examples
    --------
    >>> import polars as pl
    >>> from iosets.report._inputs import read_inputs
    >>> section = request_level_section(read_inputs(pl.DataFrame({"job_id": ["a"]})))
    >>> section.missing.startswith("No request replay given")
    True
    """
    results = inputs.requests
    if results is None or results.height == 0:
        return Section(
            SECTION_ID,
            TITLE,
            reading="This section shows how a scheduler shared the device among request classes, request by request.",
            missing=f"No request replay given. Run `{REQUESTS_COMMAND}` and give `--requests result.parquet`.",
        )
    schedulers = results["scheduler"].unique(maintain_order=True).to_list()
    results, labels, colours = _grouped(results, _set_classes(inputs.request_classes))
    figures = [_shares_figure(results, labels, colours, scheduler) for scheduler in schedulers]
    figures.append(_latency_figure(results, labels, colours, schedulers))
    tables: list[Table] = []
    reading = (
        f"A request replay under {', '.join(schedulers)}: {counted(results.height, 'request')} in "
        f"{counted(results['class'].n_unique(), 'class', 'classes')}. "
        f"The first plot{'s' if len(schedulers) > 1 else ''} follow"
        f"{'' if len(schedulers) > 1 else 's'} each class's share of the bytes over windows of {SHARE_WINDOW} "
        "consecutive dispatched requests (the AGIOS WFQ report's test): a well-shared device keeps each class near its "
        "weight "
        "while it is backlogged, and gives its share to the others once it is done. The latency CDFs show, per "
        "class, the fraction of requests completed within a given time after their arrival."
    )
    if inputs.request_classes is not None:
        tables.append(_classes_table(inputs.request_classes, schedulers))
        reading += " " + _reservation_reading(inputs.request_classes, schedulers)
    else:
        reading += (
            f" No per-class table given: `{REQUESTS_COMMAND}` writes it beside the results "
            "(result.classes.parquet); it holds the reservations and whether each was met."
        )
    return Section(SECTION_ID, TITLE, reading=reading, figures=tuple(figures), tables=tuple(tables))


def _set_classes(classes: pl.DataFrame | None) -> bool:
    """Whether the request classes are sets (``replay-requests --class-by set``: the classes table's ``set``)."""
    return classes is not None and "set" in classes.columns and classes["set"].null_count() < classes.height


def _grouped(results: pl.DataFrame, set_classes: bool) -> tuple[pl.DataFrame, list[str], list[str]]:
    """Requests with ``group`` (index of their class among the drawn ones), the drawn labels and colours.

    The ``TOP_CLASSES`` classes that moved most bytes are drawn each on its own (ordered by class), the
    rest as one "other" group, last. Classes that are sets take their set's colour, others neutral ones.
    """
    totals = results.group_by("class").agg(pl.col("size").sum()).sort("size", "class", descending=[True, False])
    kept = totals.head(TOP_CLASSES).sort("class")
    noun = "set" if set_classes else "class"
    labels = kept.select(escape_text(pl.format(f"{noun} {{}}", pl.col("class")))).to_series().to_list()
    if set_classes:
        colours = [set_colour(int(value)) for value in kept["class"].to_list()]
    else:
        colours = [policy_colour(i) for i in range(kept.height)]
    if totals.height > kept.height:
        labels.append(f"{OTHER} ({counted(totals.height - kept.height, noun, 'classes' if noun == 'class' else None)})")
        colours.append(UNSET_COLOUR)
    index = kept.select("class", pl.int_range(pl.len(), dtype=pl.Int64).alias("group"))
    grouped = results.join(index, on="class", how="left").with_columns(pl.col("group").fill_null(kept.height))
    return grouped, labels, colours


def _shares_figure(results: pl.DataFrame, labels: list[str], colours: list[str], scheduler: str) -> Figure:
    rows = results.filter(pl.col("scheduler") == scheduler)
    ends, shares = sliding_shares(
        rows["dispatch"].to_numpy(),
        rows["group"].to_numpy(),
        rows["size"].cast(pl.Float64).to_numpy(),
        len(labels),
        window=SHARE_WINDOW,
        points=WINDOW_POINTS,
    )
    scale, axis = time_axis(float(ends[0]))
    where = "%{x}" if scale != 1.0 else "%{x:.6g} s"
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": label,
            "x": json_values(ends * scale),
            "y": json_values(shares[i]),
            "line": {"color": colours[i]},
            "hovertemplate": f"{label}<br>window ending {where}<br>share %{{y:.1%}}<extra></extra>",
        }
        for i, label in enumerate(labels)
        if np.nan_to_num(shares[i]).any()
    ]
    width = min(SHARE_WINDOW, rows.height)
    n_windows = rows.height - width + 1
    note = f"Windows of {width} consecutive dispatched requests, placed at their last dispatch date"
    note += f"; {ends.size} of the {n_windows} windows drawn." if ends.size < n_windows else "."
    layout = figure_layout(
        xaxis={
            **axis,
            "title": {"text": "dispatch date" + (" (UTC)" if scale != 1.0 else " (s since the trace's start)")},
        },
        yaxis={**number_axis("share of the window's bytes"), "range": [0, 1]},
    )
    return Figure(
        f"requests-shares-{_slug(scheduler)}",
        f"Class shares over sliding windows ({scheduler})",
        data,
        layout,
        note=note,
    )


def _latency_figure(results: pl.DataFrame, labels: list[str], colours: list[str], schedulers: list[str]) -> Figure:
    latency = results.select("scheduler", "group", (pl.col("complete") - pl.col("arrival")).alias("latency"))
    groups = latency.partition_by("scheduler", "group", as_dict=True)
    data: list[dict[str, Any]] = []
    for s, scheduler in enumerate(schedulers):
        for i, label in enumerate(labels):
            values = groups.get((scheduler, i))
            if values is None:
                continue
            name = label if len(schedulers) == 1 else f"{label}, {scheduler}"
            trace = ecdf_trace(values["latency"], name=name, colour=colours[i])
            trace["line"]["dash"] = _DASHES[s % len(_DASHES)]
            data.append(trace)
    largest = max((frame.height for frame in groups.values()), default=0)
    positive = latency.filter(pl.col("latency") > 0)["latency"]
    spread = positive.len() > 0 and float(positive.max()) > 100 * float(positive.min())  # type: ignore[arg-type]
    layout = figure_layout(
        xaxis=seconds_axis("latency: completion - arrival", log=spread),
        yaxis=number_axis("fraction of requests at or below"),
    )
    note = "One line per class" + (", one dash per scheduler." if len(schedulers) > 1 else ".")
    if largest > ECDF_POINTS:
        note += f" Lines go through at most {ECDF_POINTS} evenly spaced order statistics of each class's latencies."
    return Figure("requests-latency", "Latency CDF per class", data, layout, note=note)


def _classes_table(classes: pl.DataFrame, schedulers: list[str]) -> Table:
    columns = ["scheduler", "class", "reservation", "throughput", "reservation_met", "share", "bytes", "requests"]
    columns += ["latency_p50", "latency_p99"]
    rank = pl.DataFrame({"scheduler": schedulers, "_order": list(range(len(schedulers)))})
    frame = classes.join(rank, on="scheduler", how="left").sort("_order", "class", nulls_last=True)
    return Table(
        "requests-classes",
        "Per class: reservation, throughput and latency",
        frame.select(columns),
        formats={
            "reservation": "rate",
            "throughput": "rate",
            "share": "share",
            "bytes": "bytes",
            "requests": "count",
            "latency_p50": "seconds",
            "latency_p99": "seconds",
        },
        note="met: served at least 99 % of the reservation.",
        interactive=classes.height > 20,
    )


def _reservation_reading(classes: pl.DataFrame, schedulers: list[str]) -> str:
    reserved = classes.filter(pl.col("reservation").is_not_null() & (pl.col("reservation") > 0))
    if reserved.height == 0:
        return "No class had a reservation."
    parts = []
    for scheduler in schedulers:
        mine = reserved.filter(pl.col("scheduler") == scheduler)
        if mine.height == 0:
            continue
        met = int(mine["reservation_met"].fill_null(False).sum())
        text = f"under {scheduler}, {met} of the {mine.height} classes with a reservation got it"
        missed = mine.filter(~pl.col("reservation_met").fill_null(False)).sort("class").head(3)
        if missed.height:
            text += (
                " ("
                + "; ".join(
                    f"class {row['class']}: {_rate(row['throughput'])} against {_rate(row['reservation'])}"
                    for row in missed.iter_rows(named=True)
                )
                + (", ..." if mine.height - met > missed.height else "")
                + ")"
            )
        parts.append(text)
    return "Reservations: " + "; ".join(parts) + "."


def _rate(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4g} B/s"


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower())
