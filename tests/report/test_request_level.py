"""The "Request level" section: sliding-window shares (the AGIOS WFQ report), latency CDFs and reservations, by hand."""

import json

import numpy as np
import polars as pl
import pytest

from iosets.report._document import ReportInputs
from iosets.report._palette import policy_colour, set_colour
from iosets.report._request_level import TOP_CLASSES, request_level_section, sliding_shares
from iosets.schemas import JOBS, REQUEST_CLASSES, REQUEST_RESULTS


def results_frame(classes, sizes, dispatch, *, latency=None, scheduler="rbfq"):
    n = len(classes)
    dispatch = np.asarray(dispatch, dtype=float)
    latency = np.ones(n) if latency is None else np.asarray(latency, dtype=float)
    frame = pl.DataFrame(
        {
            "row": np.arange(n),
            "class": classes,
            "arrival": dispatch,
            "dispatch": dispatch,
            "complete": dispatch + latency,
            "unit": np.arange(n),
            "size": sizes,
            "scheduler": scheduler,
        }
    )
    return REQUEST_RESULTS.validate(frame)


def classes_frame():
    frame = pl.DataFrame(
        {
            "class": [0, 1],
            "bytes": [300.0, 100.0],
            "requests": [3, 1],
            "share": [0.75, 0.25],
            "throughput": [30.0, 5.0],
            "latency_p50": [1.0, 2.0],
            "latency_p99": [1.5, 2.0],
            "reservation": [20.0, 10.0],
            "reservation_met": [True, False],
            "scheduler": ["rbfq", "rbfq"],
        }
    )
    return REQUEST_CLASSES.validate(frame)


def inputs_of(results, classes=None):
    return ReportInputs(jobs=JOBS.validate(pl.DataFrame({"job_id": ["a"]})), requests=results, request_classes=classes)


def brute_force(cls, size, n_classes, window):
    """Seed 000's test: shares over every window of ``window`` consecutive requests (already in dispatch order)."""
    out = []
    for start in range(len(cls) - window + 1):
        sums = np.bincount(cls[start : start + window], weights=size[start : start + window], minlength=n_classes)
        out.append(sums / sums.sum())
    return np.array(out).T


def test_sliding_shares_follow_dispatch_order():
    # Dispatched out of row order: by date the classes are 0, 1, 1, 0 with sizes 1, 3, 1, 1.
    ends, shares = sliding_shares(
        np.array([3.0, 0.0, 2.0, 1.0]), np.array([0, 0, 1, 1]), np.array([1.0, 1.0, 1.0, 3.0]), 2, window=2, points=9
    )
    assert ends.tolist() == [1.0, 2.0, 3.0]
    assert shares.tolist() == [[0.25, 0.0, 0.5], [0.75, 1.0, 0.5]]


def test_sliding_shares_keep_evenly_spaced_windows_exactly():
    rng = np.random.default_rng(3)
    n, window = 2000, 300
    cls, size = rng.integers(0, 3, n), rng.integers(1, 1000, n).astype(float)
    ends, shares = sliding_shares(np.arange(float(n)), cls, size, 3, window=window, points=400)
    expected = brute_force(cls, size, 3, window)
    kept = np.unique(np.round(np.linspace(0, n - window, 400)).astype(int))
    assert shares.shape == (3, kept.size)
    assert shares == pytest.approx(expected[:, kept], abs=1e-12)
    assert ends.tolist() == (kept + window - 1).astype(float).tolist()
    assert shares.sum(axis=0) == pytest.approx(np.ones(kept.size))


def test_section_shares_latency_and_reservations_equal_the_inputs():
    # Four requests; window 300 > 4: one window of all of them: class 0 moved 300 B of 400.
    results = results_frame([0, 1, 0, 0], [100, 100, 100, 100], [0.0, 1.0, 2.0, 3.0], latency=[1.0, 2.0, 0.5, 1.5])
    section = request_level_section(inputs_of(results, classes_frame()))
    assert section.id == "requests" and section.missing is None
    shares, latency = section.figures
    by_class = {trace["name"]: trace for trace in shares.data}
    assert (
        by_class["class 0"]["y"] == [0.75] and by_class["class 1"]["y"] == [0.25] and by_class["class 0"]["x"] == [3.0]
    )
    assert by_class["class 0"]["line"]["color"] == policy_colour(0)  # classes that are not sets: neutral colours
    as_sets = classes_frame().with_columns(set=pl.col("class").cast(pl.Int64))  # replay-requests --class-by set
    shares_by_set = request_level_section(inputs_of(results, as_sets)).figures[0]
    drawn = {trace["name"]: trace["line"]["color"] for trace in shares_by_set.data}
    assert drawn == {"set 0": set_colour(0), "set 1": set_colour(1)}
    cdf = {trace["name"]: trace for trace in latency.data}
    assert cdf["class 0"]["x"] == [0.5, 1.0, 1.5] and cdf["class 0"]["y"] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert cdf["class 1"]["x"] == [2.0] and cdf["class 1"]["y"] == [1.0]
    reservations = section.tables[0].frame
    assert reservations.select("class", "reservation", "throughput", "reservation_met").rows() == [
        (0, 20.0, 30.0, True),
        (1, 10.0, 5.0, False),
    ]
    assert "under rbfq, 1 of the 2 classes with a reservation got it (class 1: 5 B/s against 10 B/s)" in section.reading


def test_small_classes_are_drawn_together():
    n_classes = TOP_CLASSES + 2
    classes = [f"c{i:02d}" for i in range(n_classes)]
    sizes = [1000 - i for i in range(n_classes)]  # c10 and c11 moved least
    results = results_frame(classes, sizes, np.arange(float(n_classes)))
    section = request_level_section(inputs_of(results))
    names = [trace["name"] for trace in section.figures[0].data]
    assert names == [f"class c{i:02d}" for i in range(TOP_CLASSES)] + ["other (2 classes)"]
    other = section.figures[0].data[-1]
    assert other["y"] == pytest.approx([(990 + 989) / sum(sizes)])
    assert "result.classes.parquet" in section.reading


def test_several_schedulers_get_one_share_plot_each_and_dashes():
    first = results_frame([0, 1], [1, 1], [0.0, 1.0], scheduler="wfq")
    second = results_frame([0, 1], [1, 3], [0.0, 1.0], scheduler="rbfq")
    section = request_level_section(inputs_of(pl.concat([first, second])))
    assert [f.id for f in section.figures] == ["requests-shares-wfq", "requests-shares-rbfq", "requests-latency"]
    assert section.figures[1].data[1]["y"] == [0.75]
    dashes = {trace["name"]: trace["line"]["dash"] for trace in section.figures[2].data}
    assert dashes == {
        "class 0, wfq": "solid",
        "class 1, wfq": "solid",
        "class 0, rbfq": "dash",
        "class 1, rbfq": "dash",
    }


def test_class_labels_are_escaped():
    section = request_level_section(inputs_of(results_frame(["<b>x</b>"], [5], [0.0])))
    text = json.dumps([f.data for f in section.figures])
    assert "<b>x" not in text and "&lt;b&gt;x&lt;/b&gt;" in text


def test_missing_request_replay_names_the_command():
    section = request_level_section(inputs_of(None))
    assert section.missing is not None
    assert "iosets replay-requests REQUESTS --scheduler rbfq ... -o result.parquet" in section.missing


def test_dispatch_dates_since_the_epoch_are_drawn_on_a_date_axis():
    day = 1_640_000_000.0  # what a real site's requests carry: "1.64B" on a number axis
    section = request_level_section(inputs_of(results_frame([0, 1], [4, 4], [day + 1.0, day + 2.0])))
    shares = section.figures[0]
    assert shares.layout["xaxis"]["type"] == "date"
    assert shares.data[0]["x"] == [(day + 2.0) * 1000]  # ms since the epoch: what Plotly's date axis reads
