"""Figure helpers: reductions that keep every point counted, exact ECDFs, JSON-ready values."""

import json

import numpy as np
import polars as pl
import pytest

from iosets.report._plots import (
    bar_trace,
    binned_scatter_trace,
    box_trace,
    bytes_axis,
    data_range_axis,
    decades_axis,
    ecdf,
    ecdf_trace,
    escape_text,
    fraction_axis,
    json_values,
    log_histogram_2d,
    number_axis,
    quantiles,
    reference_line,
    seconds_axis,
    stretch_axis,
)


def test_json_values_turn_nan_and_nulls_into_none():
    assert json_values(np.array([1.0, np.nan, -np.inf])) == [1.0, None, None]
    assert json_values(pl.Series([1, None, 3])) == [1, None, 3]
    assert json_values(pl.Series([0.5, None, float("nan")])) == [0.5, None, None]
    assert json.dumps(json_values(np.array([np.int64(2), np.int64(3)]))) == "[2, 3]"


def test_escape_text_keeps_markup_as_text():
    got = pl.select(escape_text(pl.lit("<script>x&y</script>"))).item()
    assert got == "&lt;script&gt;x&amp;y&lt;/script&gt;"


def test_axes_say_their_unit_and_scale():
    assert bytes_axis("bytes", log=True) == {
        "title": {"text": "bytes"},
        "type": "log",
        "automargin": True,
        "exponentformat": "SI extended",
        "ticksuffix": "B",
    }
    assert seconds_axis("w_iter")["type"] == "linear"
    assert seconds_axis("w_iter")["ticksuffix"] == " s"


def test_log_histogram_2d_counts_every_point_in_its_bin():
    # x over two decades in 2 bins (edges 1, 10, 100); y over one decade (edges 0.1, 0.316, 1)
    x = [1, 2, 9.9, 10, 50, 100, 0, None, 5]
    y = [0.1, 0.2, 0.3, 0.5, 1.0, 1.0, 0.5, 0.5, -1]
    groups = [0, 0, 1, 0, 1, 1, 0, 0, 0]
    grid = log_histogram_2d(pl.Series(x, dtype=pl.Float64), y, groups=groups, n_bins=2)
    assert grid.dropped == 3  # x = 0, x null, y < 0
    np.testing.assert_allclose(grid.x_edges, [1, 10, 100])
    np.testing.assert_allclose(grid.y_edges, [0.1, 10**-0.5, 1])
    cells = sorted(zip(grid.group.tolist(), grid.ix.tolist(), grid.iy.tolist(), grid.count.tolist(), strict=True))
    # group 0: (1, 0.1) and (2, 0.2) in bin (0, 0); (10, 0.5) in (1, 1); group 1: (9.9, 0.3) in (0, 0); two in (1, 1)
    assert cells == [(0, 0, 0, 2), (0, 1, 1, 1), (1, 0, 0, 1), (1, 1, 1, 2)]
    assert int(grid.count.sum()) == len(x) - grid.dropped
    np.testing.assert_allclose(grid.x[grid.ix == 0], 10**0.5)  # geometric centre of [1, 10]


def test_log_histogram_2d_of_one_value_spans_a_decade():
    grid = log_histogram_2d([3.0, 3.0], [0.5, 0.5], n_bins=4)
    assert grid.count.tolist() == [2]
    np.testing.assert_allclose(grid.x_edges[[0, -1]], [3 * 10**-0.5, 3 * 10**0.5])


def test_log_histogram_2d_of_many_points_sums_to_their_number():
    rng = np.random.default_rng(0)
    x, y = 10 ** rng.uniform(-1, 4, 10_000), 10 ** rng.uniform(-3, 0, 10_000)
    groups = rng.integers(0, 5, 10_000)
    grid = log_histogram_2d(x, y, groups=groups, n_bins=60)
    assert grid.dropped == 0
    assert int(grid.count.sum()) == 10_000
    assert grid.ix.max() <= 59 and grid.iy.max() <= 59
    for g in range(5):
        trace = binned_scatter_trace(grid, g, name=f"set {g}", colour="#000", x_label="w", y_label="a")
        assert sum(trace["customdata"]) == int((groups == g).sum())
        assert len(trace["x"]) == len(trace["y"]) == len(trace["marker"]["size"])


def test_ecdf_is_exact_with_ties():
    x, fraction = ecdf([3, 1, 2, 2, None, float("nan")])
    assert x.tolist() == [1.0, 2.0, 3.0]
    assert fraction.tolist() == [0.25, 0.75, 1.0]


def test_ecdf_reduced_keeps_extremes_and_exact_fractions():
    rng = np.random.default_rng(1)
    values = rng.integers(0, 5000, 100_000).astype(float)
    x, fraction = ecdf(values, max_points=200)
    assert len(x) <= 200
    assert x[0] == values.min() and x[-1] == values.max() and fraction[-1] == 1.0
    assert np.all(np.diff(x) > 0)
    brute = np.array([(values <= v).mean() for v in x[:20]])
    np.testing.assert_allclose(fraction[:20], brute)
    trace = ecdf_trace(values, name="fcfs", colour="#111")
    assert len(trace["x"]) == len(x) and trace["line"]["shape"] == "hv"


def test_ecdf_of_nothing_is_empty():
    x, fraction = ecdf([None], max_points=10)
    assert x.size == 0 and fraction.size == 0


def test_quantiles_and_box_trace():
    assert quantiles([4, 1, 3, 2], [0, 0.25, 0.5, 1]).tolist() == [1.0, 1.75, 2.5, 4.0]
    assert np.isnan(quantiles([], [0.5])).all()
    box = box_trace([1, 2, 3, 4, 10], name="wfq", colour="red")
    assert (box["lowerfence"], box["q1"], box["median"], box["q3"], box["upperfence"]) == ([1], [2], [3], [4], [10])
    assert box["mean"] == [4.0]
    assert box_trace([], name="none", colour="red")["median"] == [None]


def test_bar_trace_orientation_and_colours():
    vertical = bar_trace(["a", "b"], np.array([1.0, np.nan]), colour=["#1", "#2"], hover=["x", "y"])
    assert vertical["x"] == ["a", "b"] and vertical["y"] == [1.0, None]
    assert vertical["marker"] == {"color": ["#1", "#2"]} and vertical["hovertext"] == ["x", "y"]
    horizontal = bar_trace(pl.Series(["a"]), [5], name="n", colour="#3", horizontal=True)
    assert (horizontal["orientation"], horizontal["x"], horizontal["y"], horizontal["name"]) == ("h", [5], ["a"], "n")


def test_a_stretch_axis_starts_at_1_so_close_stretches_look_different():
    axis = stretch_axis("Max Stretch", [1.212, 1.188])
    low, high = axis["range"]
    assert low == 1.0 and high == pytest.approx(1.212 + 0.05 * 0.212)
    # on this axis a bar of 1.212 is 1.13 times as tall as one of 1.188 (from 0 it would be 1.02 times)
    assert (1.212 - low) / (1.188 - low) == pytest.approx(1.1277, abs=1e-4)
    assert stretch_axis("stretch", [0.5, 1.5])["range"] == [0.45, 1.55]  # below 1: the smallest value shows
    assert stretch_axis("stretch")["range"] == [1.0, 2.05]
    assert reference_line(1.0)["y0"] == reference_line(1.0)["y1"] == 1.0


def test_a_fraction_axis_never_passes_1():
    assert fraction_axis("share")["range"] == [0, 1]
    log = fraction_axis("alpha_io", pl.Series([0.0004, 0.2, None, 0.0]), log=True)
    assert (log["type"], log["range"]) == ("log", [-4, 0])
    assert fraction_axis("alpha_io", [0.5], log=True)["range"] == [-1, 0]  # one decade at least
    assert fraction_axis("alpha_io", [], log=True)["range"] == [-3, 0]


def test_a_decades_axis_spans_whole_powers_of_ten():
    axis = decades_axis("w_iter", [7.81, 7.85, 7.89], kind="seconds")
    assert (axis["type"], axis["range"], axis["ticksuffix"]) == ("log", [0, 1], " s")
    wide = decades_axis("runtime", [0.002, 20.0, np.nan, -1.0])
    assert (wide["range"], wide["dtick"], "dtick" in axis) == ([-3, 2], 1, False)
    assert decades_axis("runtime", [10.0, 100.0])["range"] == [1, 2]  # powers of ten are their own bounds
    assert decades_axis("bytes", [], kind="bytes")["range"] == [0, 1]
    with pytest.raises(ValueError, match="kind: expected one of number, seconds, bytes, got 'days'"):
        decades_axis("x", [1.0], kind="days")


def test_a_data_range_axis_is_the_datas_span_whatever_the_shapes():
    assert data_range_axis(number_axis("ratio"), [0.9, 1.0, 1.1])["range"] == [0.896, 1.104]
    assert data_range_axis(number_axis("ratio", log=True), [0.1, 10.0, 0.0])["range"] == [-1.04, 1.04]
    assert data_range_axis(number_axis("x"), [3.0])["range"] == [2.94, 3.06]
    assert "range" not in data_range_axis(number_axis("x"), [np.nan])
