"""Figure helpers shared by the report's sections: reductions, traces and axes as plain Plotly JSON.

Every helper returns Python lists and dicts ready for ``json.dumps`` (NaN and infinities become
None), so that a section never goes through ``plotly.graph_objects`` and stays fast on large
sites. Reductions (:func:`log_histogram_2d`, :func:`ecdf`, :func:`box_trace`) keep a figure's
size bounded whatever the number of jobs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ._format import EPOCH_FLOOR

ArrayLike = npt.ArrayLike | pl.Series

GRID_BINS = 60
"""Bins per axis of the report's log-binned 2-D histograms."""

ECDF_POINTS = 200
"""Most points an ECDF trace keeps."""


def epoch_dated(jobs: pl.DataFrame) -> pl.DataFrame:
    """The jobs dated since the epoch; every job with a start when none is (block traces count from their start)."""
    timed = jobs.filter(pl.col("start").is_not_null())
    dated = timed.filter(pl.col("start") >= EPOCH_FLOOR)
    return dated if dated.height else timed


def _floats(values: ArrayLike) -> np.ndarray:
    """``values`` as float64, NaN for nulls."""
    if isinstance(values, pl.Series):
        return values.cast(pl.Float64).fill_null(np.nan).to_numpy()
    return np.asarray(values, dtype=np.float64)


def json_values(values: ArrayLike) -> list[Any]:
    """``values`` as a JSON-ready list: Python numbers and text, None for nulls, NaN and infinities.

    Examples
    --------
    >>> json_values(np.array([1.5, np.nan, np.inf]))
    [1.5, None, None]
    >>> json_values(pl.Series(["a", None]))
    ['a', None]
    """
    if isinstance(values, pl.Series):
        if not values.dtype.is_float():
            return values.to_list()
        values = values.to_numpy()
    array = np.asarray(values)
    if array.dtype.kind != "f":
        return array.tolist()
    cells = array.astype(object)
    cells[~np.isfinite(array)] = None
    return cells.tolist()


def escape_text(text: pl.Expr) -> pl.Expr:
    """Text from files, escaped for Plotly's hover and tick labels (which read ``<b>``, ``<br>`` as markup).

    Examples
    --------
    >>> pl.select(escape_text(pl.lit("<b>a&b</b>"))).item()
    '&lt;b&gt;a&amp;b&lt;/b&gt;'
    """
    return (
        text.str.replace_all("&", "&amp;", literal=True)
        .str.replace_all("<", "&lt;", literal=True)
        .str.replace_all(">", "&gt;", literal=True)
    )


def number_axis(title: str, *, log: bool = False) -> dict[str, Any]:
    """A Plotly axis of plain numbers (``log``: logarithmic, ticks as powers of ten)."""
    axis: dict[str, Any] = {"title": {"text": title}, "type": "log" if log else "linear", "automargin": True}
    if log:
        axis["exponentformat"] = "power"
    return axis


def bytes_axis(title: str, *, log: bool = False) -> dict[str, Any]:
    """A Plotly axis of bytes with SI prefixes up to 10^30: ticks read ``10MB``, ``1GB``, ``2PB``."""
    return {**number_axis(title, log=log), "exponentformat": "SI extended", "ticksuffix": "B"}


def seconds_axis(title: str, *, log: bool = False) -> dict[str, Any]:
    """A Plotly axis of seconds: ticks end in `` s``, large ones as powers of ten (never ``3M s``)."""
    return {**number_axis(title, log=log), "exponentformat": "power", "ticksuffix": " s"}


def _finite_values(values: ArrayLike) -> np.ndarray:
    """The finite values of ``values`` (nulls, NaN and infinities left out)."""
    data = _floats(values)
    return data[np.isfinite(data)]


def _padded(low: float, high: float, pad: float) -> list[float]:
    """``[low, high]`` widened by ``pad`` of its width on each side (a point gets +-``pad``)."""
    width = (high - low) or max(abs(high), 1.0)
    return [low - pad * width, high + pad * width]


def stretch_axis(title: str, values: ArrayLike = ()) -> dict[str, Any]:
    """A linear axis of stretches (runtime over runtime alone), starting at 1 where no stretch is the reference.

    The range runs from 1 (or the smallest value, when one is below 1) to the largest value, with a
    margin above, so that 1.212 and 1.188 look as different as they are; a bar chart on it grows from 1.
    Without a value the range is 1 to 2. Draw 1 with :func:`reference_line`.

    Examples
    --------
    >>> stretch_axis("Max Stretch", [1.212, 1.188])["range"]
    [1.0, 1.2226]
    >>> stretch_axis("stretch", [0.9, 1.1])["range"]
    [0.89, 1.11]
    """
    data = _finite_values(values)
    low = min(1.0, float(data.min())) if data.size else 1.0
    high = max(float(data.max()), 1.0) if data.size else 2.0
    if high <= low:
        high = low + 1.0
    span = high - low
    start = low if low == 1.0 else low - 0.05 * span
    return {**number_axis(title), "range": [round(start, 6), round(high + 0.05 * span, 6)]}


def fraction_axis(title: str, values: ArrayLike = (), *, log: bool = False) -> dict[str, Any]:
    """An axis of fractions of a whole (alpha_io, a share of bytes or of jobs): 0 to 1, never beyond.

    Values are fractions (0.25, not 25 %). Linear: 0 to 1, ticks in per cent. ``log``: from the power of ten
    at or below the smallest value in (0, 1] (10^-1 at the highest) to 1, a tick per power of ten; without
    such a value, 10^-3 to 1.

    Examples
    --------
    >>> fraction_axis("alpha_io")["range"]
    [0, 1]
    >>> fraction_axis("alpha_io", [0.004, 0.5], log=True)["range"]
    [-3, 0]
    """
    if not log:
        return {**number_axis(title), "range": [0, 1], "tickformat": ".0%"}
    data = _finite_values(values)
    positive = data[(data > 0) & (data <= 1)]
    low = math.floor(math.log10(positive.min())) if positive.size else -3
    return {**number_axis(title, log=True), "range": [min(low, -1), 0], "dtick": 1}


def decades_axis(title: str, values: ArrayLike, *, kind: str = "number") -> dict[str, Any]:
    """A log axis over whole decades: from the power of ten at or below the smallest positive value to the one at
    or above the largest (one decade at least); a tick at each power of ten from three decades on.

    Values of 7.81 to 7.89 s give 1 s to 10 s, not an axis auto-ranged to their own width.
    ``kind`` is the unit of the ticks: ``"number"``, ``"seconds"`` or ``"bytes"``; without a positive
    value the axis spans 1 to 10.

    Examples
    --------
    >>> decades_axis("w_iter", [7.81, 7.89], kind="seconds")["range"]
    [0, 1]
    >>> decades_axis("runtime", [0.5, 2000])["range"]
    [-1, 4]
    """
    builders = {"number": number_axis, "seconds": seconds_axis, "bytes": bytes_axis}
    if kind not in builders:
        raise ValueError(f"decades_axis: kind: expected one of {', '.join(builders)}, got {kind!r}")
    low, high = decades(values)
    axis = {**builders[kind](title, log=True), "range": [low, high]}
    if high - low >= 3:  # a tick per power of ten; over one or two decades Plotly's own ticks (2, 5) say more
        axis["dtick"] = 1
    return axis


def decades(values: ArrayLike) -> tuple[int, int]:
    """The powers of ten (as exponents) around the positive finite ``values``: one decade at least; (0, 1) for none.

    Examples
    --------
    >>> decades([7.81, 7.89]), decades([10, 100]), decades([])
    ((0, 1), (1, 2), (0, 1))
    """
    data = _finite_values(values)
    data = data[data > 0]
    if not data.size:
        return 0, 1
    low, high = math.floor(math.log10(data.min())), math.ceil(math.log10(data.max()))
    return low, max(high, low + 1)


def data_range_axis(axis: dict[str, Any], values: ArrayLike) -> dict[str, Any]:
    """``axis`` ranged over the finite ``values``' true span (log axes: the positive ones), 2 % margin each side.

    For an ECDF or any axis whose shapes (a shaded band, a reference line) must not stretch it: Plotly's
    autorange counts shapes, so a band from 0.75 to 1.25 would pull an axis of values 0.9 to 1.1 with it.
    Without a value, ``axis`` is returned as it is.

    Examples
    --------
    >>> data_range_axis(number_axis("x"), [1.0, 2.0])["range"]
    [0.98, 2.02]
    >>> data_range_axis(number_axis("x", log=True), [1.0, 100.0])["range"]
    [-0.04, 2.04]
    """
    data = _finite_values(values)
    log = axis.get("type") == "log"
    if log:
        data = np.log10(data[data > 0])
    if not data.size:
        return axis
    low, high = _padded(float(data.min()), float(data.max()), 0.02)
    return {**axis, "range": [round(low, 6), round(high, 6)]}


def reference_line(value: float, *, axis: str = "y", dash: str = "dot") -> dict[str, Any]:
    """A Plotly shape: a line across the plot at ``value`` on ``axis`` (``"y"``: horizontal; ``"x"``: vertical).

    Examples
    --------
    >>> reference_line(1)["y0"], reference_line(1)["xref"]
    (1, 'paper')
    """
    line = {"type": "line", "line": {"dash": dash, "color": "#4c566a", "width": 1}, "layer": "below"}
    if axis == "y":
        return {**line, "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": value, "y1": value}
    return {**line, "xref": "x", "yref": "paper", "x0": value, "x1": value, "y0": 0, "y1": 1}


def category_axis(title: str) -> dict[str, Any]:
    """A Plotly axis of labels in the order given (sets, apps, codes), never re-sorted nor read as numbers."""
    return {"title": {"text": title}, "type": "category", "automargin": True}


def figure_layout(*, xaxis: dict[str, Any], yaxis: dict[str, Any], legend: bool = True, **extra: Any) -> dict[str, Any]:
    """The report's Plotly layout: the two axes, compact margins, a horizontal legend above the plot.

    ``extra`` entries (``barmode``, ``height``...) are added as they are.
    """
    return {
        "xaxis": xaxis,
        "yaxis": yaxis,
        "showlegend": legend,
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "hovermode": "closest",
        **extra,
    }


def bar_trace(
    labels: ArrayLike,
    values: ArrayLike,
    *,
    name: str | None = None,
    colour: str | Sequence[str] | None = None,
    horizontal: bool = False,
    hover: ArrayLike | None = None,
) -> dict[str, Any]:
    """One Plotly bar trace: a bar per label with its value.

    Parameters
    ----------
    labels, values : array-like
        Category of each bar (escape text from files first, :func:`escape_text`) and its height.
    name : str, default=None
        Legend entry.
    colour : str or sequence of str, default=None
        One colour, or one per bar.
    horizontal : bool, default=False
        Bars along x, labels on the y axis (read top to bottom in the order given).
    hover : array-like, default=None
        Hover text per bar (default: the label and the value).

    Returns
    -------
    dict
        The trace.
    """
    labels_list, values_list = json_values(labels), json_values(values)
    trace: dict[str, Any] = {"type": "bar"}
    if horizontal:
        trace.update(orientation="h", x=values_list, y=labels_list)
    else:
        trace.update(x=labels_list, y=values_list)
    if name is not None:
        trace["name"] = name
    if colour is not None:
        trace["marker"] = {"color": colour if isinstance(colour, str) else list(colour)}
    if hover is not None:
        trace.update(hovertext=json_values(hover), hoverinfo="text")
    return trace


@dataclass(frozen=True)
class LogHistogram2D:
    """Points counted on a grid of logarithmic bins, per group; only the non-empty cells are kept.

    ``x_edges`` and ``y_edges`` are the bins' edges (``n_bins + 1`` each); each cell has its
    group, its bin's geometric centre (``x``, ``y``), its bin indices (``ix``, ``iy``) and its
    point count; ``dropped`` counts the points left out (a coordinate not finite or <= 0).
    """

    x_edges: np.ndarray
    y_edges: np.ndarray
    group: np.ndarray
    ix: np.ndarray
    iy: np.ndarray
    x: np.ndarray
    y: np.ndarray
    count: np.ndarray
    dropped: int


def _log_edges(values: np.ndarray, n_bins: int) -> np.ndarray:
    """``n_bins + 1`` edges in log10 space spanning ``values`` (already log10); a single value gets a decade."""
    low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    if high <= low:
        low, high = low - 0.5, high + 0.5
    return np.linspace(low, high, n_bins + 1)


def _bin_of(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    n_bins = edges.size - 1
    scaled = (values - edges[0]) / (edges[-1] - edges[0]) * n_bins
    return np.clip(np.floor(scaled), 0, n_bins - 1).astype(np.int64)


def log_histogram_2d(
    x: ArrayLike, y: ArrayLike, *, groups: ArrayLike | None = None, n_bins: int = GRID_BINS
) -> LogHistogram2D:
    """Count points on an ``n_bins`` x ``n_bins`` grid of bins equally wide in log10 x and log10 y.

    The grid spans the points' range on each axis; every group is counted on the same grid,
    so that one Plotly trace per group overlays them (:func:`binned_scatter_trace`).

    Parameters
    ----------
    x, y : array-like
        Coordinates; a point with a coordinate that is null, not finite or <= 0 is left out.
    groups : array-like of int, default=None
        Group of each point (e.g. its set); None: one group, 0.
    n_bins : int, default=60
        Bins per axis.

    Returns
    -------
    LogHistogram2D
        The non-empty cells, by group then x bin then y bin; their counts sum to the points kept.

    Examples
    --------
    >>> grid = log_histogram_2d([1, 1, 10, 100], [0.1, 0.1, 0.5, 1.0], groups=[0, 0, 0, 1], n_bins=2)
    >>> grid.group.tolist(), grid.count.tolist(), grid.x_edges.tolist()
    ([0, 0, 1], [2, 1, 1], [1.0, 10.0, 100.0])
    """
    xs, ys = _floats(x), _floats(y)
    if groups is None:
        group_of = np.zeros(xs.size, dtype=np.int64)
    else:
        group_of = np.asarray(groups.to_numpy() if isinstance(groups, pl.Series) else groups, dtype=np.int64)
    with np.errstate(invalid="ignore"):
        kept = np.isfinite(xs) & np.isfinite(ys) & (xs > 0) & (ys > 0)
    log_x, log_y = np.log10(xs[kept]), np.log10(ys[kept])
    x_edges, y_edges = _log_edges(log_x, n_bins), _log_edges(log_y, n_bins)
    group_ids, group_index = np.unique(group_of[kept], return_inverse=True)
    flat = (group_index * n_bins + _bin_of(log_x, x_edges)) * n_bins + _bin_of(log_y, y_edges)
    counts = np.bincount(flat, minlength=max(group_ids.size, 1) * n_bins * n_bins)
    cells = np.flatnonzero(counts)
    cell_group, rest = np.divmod(cells, n_bins * n_bins)
    ix, iy = np.divmod(rest, n_bins)
    return LogHistogram2D(
        x_edges=10.0**x_edges,
        y_edges=10.0**y_edges,
        group=group_ids[cell_group] if group_ids.size else cell_group,
        ix=ix,
        iy=iy,
        x=10.0 ** ((x_edges[ix] + x_edges[ix + 1]) / 2),
        y=10.0 ** ((y_edges[iy] + y_edges[iy + 1]) / 2),
        count=counts[cells],
        dropped=int(xs.size - kept.sum()),
    )


def _sig_figs(values: np.ndarray, digits: int = 4) -> np.ndarray:
    """``values`` rounded to ``digits`` significant figures (positions on a plot: shorter JSON)."""
    return pl.Series(values, dtype=pl.Float64).round_sig_figs(digits).to_numpy()


def binned_scatter_trace(
    grid: LogHistogram2D, group: int, *, name: str, colour: str, x_label: str, y_label: str
) -> dict[str, Any]:
    """One group's non-empty cells of ``grid`` as markers at the bins' centres, area growing with the count.

    ``customdata`` holds each cell's count, which the hover text shows with the bin's centre, so
    the plot's numbers are in the page. ``name``, ``x_label`` and ``y_label`` are shown as Plotly
    markup: escape text from files (:func:`escape_text`).
    """
    mine = grid.group == group
    count = grid.count[mine]
    size = 4 + 16 * np.sqrt(count / max(int(grid.count.max(initial=1)), 1))
    return {
        "type": "scatter",
        "mode": "markers",
        "name": name,
        "x": json_values(_sig_figs(grid.x[mine])),
        "y": json_values(_sig_figs(grid.y[mine])),
        "customdata": json_values(count),
        "marker": {"color": colour, "size": json_values(size.round(1)), "opacity": 0.7, "line": {"width": 0}},
        "hovertemplate": f"{name}: %{{customdata}} jobs<br>{x_label} about %{{x:.3g}}<br>{y_label} about %{{y:.3g}}"
        "<extra></extra>",
    }


def ecdf(values: ArrayLike, *, max_points: int = ECDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The empirical CDF of ``values`` at no more than ``max_points`` distinct values.

    Nulls and non-finite values are left out. The values kept are the order statistics at
    evenly spaced ranks, smallest and largest included (all of them when there are few), and
    each comes with the exact fraction of values <= it.

    Returns
    -------
    tuple of numpy.ndarray
        ``(x, fraction)``, x increasing, the last fraction 1 (both empty without a value).

    Examples
    --------
    >>> x, f = ecdf([3, 1, 2, 2])
    >>> x.tolist(), f.tolist()
    ([1.0, 2.0, 3.0], [0.25, 0.75, 1.0])
    """
    data = _floats(values)
    data = np.sort(data[np.isfinite(data)])
    if data.size == 0:
        return data, data.copy()
    ranks = np.unique(np.round(np.linspace(0, data.size - 1, min(data.size, max_points))).astype(np.int64))
    x = np.unique(data[ranks])
    return x, np.searchsorted(data, x, side="right") / data.size


def ecdf_trace(values: ArrayLike, *, name: str, colour: str, max_points: int = ECDF_POINTS) -> dict[str, Any]:
    """A step line of :func:`ecdf` (at most ``max_points`` points), hover giving value and fraction."""
    x, fraction = ecdf(values, max_points=max_points)
    return {
        "type": "scatter",
        "mode": "lines",
        "line": {"shape": "hv", "color": colour},
        "name": name,
        "x": json_values(x),
        "y": json_values(fraction),
        "hovertemplate": f"{name}<br>%{{x:.4g}}: %{{y:.1%}} at or below<extra></extra>",
    }


def quantiles(values: ArrayLike, probabilities: Sequence[float]) -> np.ndarray:
    """Linear-interpolation quantiles of the finite values; NaN for each when there is none.

    Examples
    --------
    >>> quantiles([1, 2, 3, 4, None], [0, 0.5, 1]).tolist()
    [1.0, 2.5, 4.0]
    """
    data = _floats(values)
    data = data[np.isfinite(data)]
    if data.size == 0:
        return np.full(len(probabilities), np.nan)
    return np.quantile(data, np.asarray(probabilities, dtype=np.float64))


def box_trace(values: ArrayLike, *, name: str, colour: str) -> dict[str, Any]:
    """A Plotly box computed here from the values (box: quartiles, whiskers: min and max, dashed: mean).

    Only seven numbers reach the page, whatever the number of values.
    """
    data = _floats(values)
    data = data[np.isfinite(data)]
    low, q1, median, q3, high = quantiles(data, (0, 0.25, 0.5, 0.75, 1))
    mean = float(data.mean()) if data.size else np.nan
    return {
        "type": "box",
        "name": name,
        "x": [name],
        "q1": json_values([q1]),
        "median": json_values([median]),
        "q3": json_values([q3]),
        "lowerfence": json_values([low]),
        "upperfence": json_values([high]),
        "mean": json_values([mean]),
        "boxpoints": False,
        "marker": {"color": colour},
    }
