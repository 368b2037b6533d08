"""The "Timelines" section: exact binned bytes per set, the busiest slice, the Gantt's bars and the missing box."""

import json

import numpy as np
import polars as pl
import pytest

from iosets.replay._trace_metrics import TRACE_METRICS
from iosets.report._document import ReportInputs
from iosets.report._palette import UNSET_COLOUR, set_colour
from iosets.report._timelines import (
    GANTT_JOBS,
    SHARE_PERIODS,
    busiest_window,
    share_over_time,
    spread_bytes,
    timelines_section,
)
from iosets.schemas import JOBS, TRACE_REPLAY_PHASES


def phases_frame(rows):
    """TRACE_REPLAY_PHASES from ``(job_id, scheduler, phase, set, bytes, ready, start, end)`` rows."""
    frame = pl.DataFrame(
        rows,
        schema=["job_id", "scheduler", "phase", "set", "bytes", "ready", "start", "end"],
        orient="row",
    ).with_columns(
        pl.col("set").cast(pl.String).fill_null("job").alias("class"),
        pl.col("ready").alias("recorded_start"),
        pl.col("ready").alias("recorded_end"),
        pl.col("ready", "start", "end").cast(pl.Float64),
    )
    return TRACE_REPLAY_PHASES.validate(frame)


def inputs_of(phases):
    return ReportInputs(
        jobs=JOBS.validate(pl.DataFrame({"job_id": phases["job_id"].unique().sort()})), replay_phases=phases
    )


def test_two_phases_give_exact_bytes_per_set_and_bin():
    # set 0: 100 B over [0, 4] -> 25 B/s; set 1: 60 B over [2, 5] -> 20 B/s; bins of 1 s.
    moved = spread_bytes(
        np.array([0.0, 2.0]), np.array([4.0, 5.0]), np.array([100.0, 60.0]), np.array([0, 1]), np.arange(6.0), 2
    )
    assert moved.tolist() == [[25.0, 25.0, 25.0, 25.0, 0.0], [0.0, 0.0, 20.0, 20.0, 20.0]]


def test_partly_covered_bins_get_their_exact_part():
    # 80 B over [0.5, 2.5]: 40 B/s -> 20 B, 40 B, 20 B; an instant phase of 7 B at 2.0 lands in bin 2.
    moved = spread_bytes(
        np.array([0.5, 2.0]), np.array([2.5, 2.0]), np.array([80.0, 7.0]), np.array([0, 0]), np.arange(4.0), 1
    )
    assert moved.tolist() == [[20.0, 40.0, 27.0]]


def test_share_over_time_sums_to_one_in_busy_bins():
    phases = phases_frame(
        [
            ("a", "fcfs", 0, 0, 100, 0.0, 0.0, 4.0),
            ("b", "fcfs", 0, 1, 60, 1.0, 2.0, 5.0),
            ("c", "fcfs", 0, None, 10, 4.0, 4.0, 5.0),
        ]
    )
    edges, sets, moved = share_over_time(phases, bins=5)
    assert edges.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert sets == [0, 1, None]
    assert moved.tolist() == [[25.0, 25.0, 25.0, 25.0, 0.0], [0.0, 0.0, 20.0, 20.0, 20.0], [0.0, 0.0, 0.0, 0.0, 10.0]]
    shares = moved / moved.sum(axis=0)
    assert shares.sum(axis=0) == pytest.approx(np.ones(5))
    assert shares[:, 2].tolist() == pytest.approx([25 / 45, 20 / 45, 0.0])


def test_busiest_window_is_where_most_phases_are_active():
    # Ten bins over [0, 100]; five phases wait or work in [60, 70], one elsewhere.
    rows = [(f"j{i}", "fcfs", 0, 0, 1, 60.0, 62.0, 69.0) for i in range(5)] + [("k", "fcfs", 0, 0, 1, 0.0, 0.0, 100.0)]
    phases = phases_frame(rows)
    edges = np.linspace(0.0, 100.0, 401)
    begin, end = busiest_window(phases, edges)
    assert end - begin == pytest.approx(10.0)
    assert begin <= 60.0 and end >= 69.0


def test_gantt_draws_io_wait_and_compute_with_the_inputs_dates():
    phases = phases_frame(
        [
            ("a", "fcfs", 0, 0, 100, 0.0, 0.0, 4.0),
            ("a", "iosets-wfq", 0, 0, 100, 0.0, 0.0, 4.0),
            ("a", "iosets-wfq", 1, 0, 50, 6.0, 6.0, 8.0),
            ("b", "iosets-wfq", 0, 1, 60, 1.0, 4.0, 7.0),
        ]
    )
    section = timelines_section(inputs_of(phases))
    assert section.id == "timelines" and section.missing is None
    concurrency, gantt, shares = section.figures
    # jobs running (from each job's first phase to its last: the jobs table has no dates): a [0, 8), b [1, 7)
    assert concurrency.data[0]["x"] == [0.0, 1.0, 7.0, 8.0] and concurrency.data[0]["y"] == [1, 2, 1, 0]
    by_name = {trace["name"]: trace for trace in gantt.data}
    assert set(by_name) == {"compute", "set 0", "set 1", "set 1 waiting"}
    io0 = by_name["set 0"]
    assert io0["y"] == ["a", "a"] and io0["base"] == [0.0, 6.0] and io0["x"] == [4.0, 2.0]
    assert io0["marker"]["color"] == set_colour(0)
    wait = by_name["set 1 waiting"]
    assert wait["y"] == ["b"] and wait["base"] == [1.0] and wait["x"] == [3.0]
    assert wait["marker"]["pattern"]["shape"] == "/"
    compute = by_name["compute"]  # a's compute gap: end of phase 0 (4) to ready of phase 1 (6)
    assert compute["base"] == [4.0] and compute["x"] == [2.0]
    assert by_name["set 1"]["customdata"] == [[0, 1.0, 4.0, 7.0, 60]]  # phase, ready, start, end, bytes
    totals = section.tables[0].frame
    assert totals.rows() == [(0, 150, pytest.approx(150 / 210)), (1, 60, pytest.approx(60 / 210))]
    assert "iosets-wfq" in gantt.title and "iosets-wfq" in shares.title
    stacked = {trace["name"]: trace for trace in shares.data}
    # Bins over the busy period [1, 7] only: a's phase 0 moves 75 of its 100 B there, its phase 1 (6-8) 25 of 50,
    # b's phase 60 B; the rates times the widths give the bytes back, each bin's shares add up to 1.
    moved = [sum(pair[0] for pair in stacked[name]["customdata"]) for name in ("set 0", "set 1")]
    assert moved == [pytest.approx(75.0 + 25.0), pytest.approx(60.0)]
    pairs = zip(stacked["set 1"]["y"], stacked["set 1"]["width"], strict=True)
    rate_bytes = sum(rate * width for rate, width in pairs if rate is not None)  # None: nothing moved, no bar
    assert rate_bytes == pytest.approx(60.0)
    busy = [i for i, pair in enumerate(stacked["set 0"]["customdata"]) if pair[1] is not None]
    assert busy and all(
        stacked["set 0"]["customdata"][i][1] + stacked["set 1"]["customdata"][i][1] == pytest.approx(1.0) for i in busy
    )
    assert shares.layout["barmode"] == "stack"


def test_first_policy_is_drawn_without_iosets_wfq_and_unset_jobs_are_grey():
    phases = phases_frame([("a", "wfq", 0, None, 5, 0.0, 0.0, 1.0), ("a", "fcfs", 0, None, 5, 0.0, 0.0, 1.0)])
    section = timelines_section(inputs_of(phases))
    gantt = section.figures[1]
    assert "wfq" in gantt.title and "fcfs" not in gantt.title
    (trace,) = gantt.data
    assert trace["name"] == "no set" and trace["marker"]["color"] == UNSET_COLOUR


def test_gantt_keeps_the_jobs_with_most_phases_in_the_slice_and_says_so():
    rows = [(f"busy{i:02d}", "fcfs", k, 0, 1, float(k), float(k), k + 0.5) for i in range(GANTT_JOBS) for k in range(3)]
    rows += [(f"quiet{i}", "fcfs", 0, 1, 1, 0.0, 0.0, 0.5) for i in range(5)]
    section = timelines_section(inputs_of(phases_frame(rows)))
    gantt = section.figures[1]
    drawn = {label for trace in gantt.data for label in trace["y"]}
    assert drawn == {f"busy{i:02d}" for i in range(GANTT_JOBS)}
    assert f"{GANTT_JOBS} of the {GANTT_JOBS + 5} jobs" in gantt.note


def test_job_ids_are_escaped_in_the_plot():
    phases = phases_frame([("<b>x</b>", "fcfs", 0, 0, 5, 0.0, 0.0, 1.0)])
    gantt = timelines_section(inputs_of(phases)).figures[1]
    assert gantt.data[0]["y"] == ["&lt;b&gt;x&lt;/b&gt;"]
    assert "<b>" not in json.dumps(gantt.data)


def test_missing_replay_names_the_commands():
    section = timelines_section(ReportInputs(jobs=JOBS.validate(pl.DataFrame({"job_id": ["a"]}))))
    assert section.missing is not None
    assert "iosets ingest LOGS --site -o site.parquet" in section.missing
    assert "iosets replay-trace site.parquet" in section.missing


def test_figures_stay_small_on_a_large_replay():
    rng = np.random.default_rng(0)
    n_jobs, n_phases = 20_000, 10
    job = np.repeat(np.arange(n_jobs), n_phases)
    ready = np.cumsum(rng.exponential(100.0, job.size).reshape(n_jobs, n_phases), axis=1).ravel()
    start = ready + rng.exponential(5.0, job.size)
    end = start + rng.exponential(20.0, job.size)
    frame = pl.DataFrame(
        {
            "job_id": pl.Series(job).cast(pl.String),
            "scheduler": "iosets-wfq",
            "phase": np.tile(np.arange(n_phases), n_jobs),
            "set": job % 4,
            "bytes": rng.integers(1, 10**9, job.size),
            "ready": ready,
            "start": start,
            "end": end,
        }
    ).with_columns(pl.col("set").cast(pl.String).alias("class"), recorded_start="ready", recorded_end="ready")
    section = timelines_section(inputs_of(TRACE_REPLAY_PHASES.validate(frame)))
    size = sum(len(json.dumps({"data": f.data, "layout": f.layout})) for f in section.figures)
    assert size < 1_000_000
    totals = section.tables[0].frame
    assert totals["bytes"].sum() == frame["bytes"].sum()
    stacked = sum(sum(pair[0] for pair in trace["customdata"]) for trace in section.figures[2].data)
    periods = next(table for table in section.tables if table.id == "timelines-periods").frame
    assert 1 <= periods.height <= SHARE_PERIODS
    expected = 0.0  # each phase's bytes times the part of its [start, end] inside a drawn period
    for low, high in periods.select("start", "end").iter_rows():
        inside = (np.minimum(end, high) - np.maximum(start, low)).clip(0.0) / (end - start)
        expected += float((frame["bytes"].to_numpy() * inside).sum())
    assert stacked == pytest.approx(expected, rel=1e-9)


def test_dates_since_the_epoch_are_drawn_on_a_utc_date_axis():
    day = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
    phases = phases_frame([("a", "fcfs", 0, 0, 8, day, day + 2.0, day + 6.0)])
    section = timelines_section(inputs_of(phases))
    concurrency, gantt, shares = section.figures
    assert {figure.layout["xaxis"]["type"] for figure in section.figures} == {"date"}
    io = next(trace for trace in gantt.data if trace["name"] == "set 0")
    assert io["base"] == [(day + 2.0) * 1000] and io["x"] == [4000.0]
    assert io["customdata"] == [[0, day, day + 2.0, day + 6.0, 8]]  # the hover keeps the table's seconds
    assert gantt.note == "The whole replay: 1 job."


def test_the_policy_drawn_is_one_the_phases_hold():
    phases = phases_frame([("a", "wfq", 0, 0, 5, 0.0, 0.0, 1.0)])
    schedulers = pl.DataFrame({"scheduler": ["iosets-wfq", "wfq"]})  # iosets-wfq has no phases
    inputs = ReportInputs(jobs=inputs_of(phases).jobs, replay_phases=phases, replay_schedulers=schedulers)
    assert "under wfq" in timelines_section(inputs).figures[1].title


def test_without_a_replay_the_site_trace_is_drawn_as_recorded():
    site = pl.DataFrame(
        {
            "job_id": ["a", "a", "a", "b"],
            "phase": [0, 0, 1, 0],
            "size": [1, 2, 4, 8],
            "start": [0.0, 1.0, 5.0, 2.0],
            "end": [1.0, 2.0, 6.0, 4.0],
        }
    )
    rec = pl.DataFrame({"job_id": ["a", "b"], "set": [0, 1]})
    section = timelines_section(ReportInputs(jobs=pl.DataFrame({"job_id": ["a", "b"]}), site=site, recommendation=rec))
    assert section.missing is None and section.reading.startswith("The site's trace as recorded: 2 jobs, 3 I/O phases")
    phases = next(table for table in section.tables if table.id == "timelines-phases").frame
    assert phases.select("job_id", "phase", "set", "bytes", "ready", "start", "end", "wait").rows() == [
        ("a", 0, 0, 3, 0.0, 0.0, 2.0, 0.0),
        ("a", 1, 0, 4, 5.0, 5.0, 6.0, 0.0),
        ("b", 0, 1, 8, 2.0, 2.0, 4.0, 0.0),
    ]
    totals = next(table for table in section.tables if table.id == "timelines-sets").frame
    assert totals.select("set", "bytes").rows() == [(0, 7), (1, 8)]
    assert section.figures[1].title == "Compute and I/O phases as recorded"


def test_years_of_idle_logs_put_the_gantt_on_the_busy_period():
    # Two lone jobs in 2021 and 2023, three overlapping ones in 2025: the Gantt spans the 2025 jobs' phases only.
    y2021, y2023, y2025 = 1_620_000_000.0, 1_690_000_000.0, 1_750_000_000.0
    rows = [("old", "fcfs", 0, 0, 5, y2021, y2021, y2021 + 10.0), ("mid", "fcfs", 0, 1, 5, y2023, y2023, y2023 + 10.0)]
    rows += [
        (f"b{i}", "fcfs", k, i, 100, y2025 + i + 20 * k, y2025 + i + 20 * k, y2025 + i + 20 * k + 5)
        for i in range(3)
        for k in range(2)
    ]
    section = timelines_section(inputs_of(phases_frame(rows)))
    concurrency, gantt, shares = section.figures
    drawn = {label for trace in gantt.data for label in trace["y"]}
    assert drawn == {"b0", "b1", "b2"}
    assert gantt.layout["xaxis"]["range"] == [y2025 * 1000, (y2025 + 2 + 25) * 1000]
    assert gantt.layout["xaxis"]["type"] == "date" and max(concurrency.data[0]["y"]) == 3
    periods = next(table for table in section.tables if table.id == "timelines-periods").frame
    assert periods.select("start", "end", "most jobs at once").rows() == [(y2025 + 1, y2025 + 26, 3)]
    assert "1 busy period" in section.reading and "at least 2 jobs run" in section.reading


def test_jobs_that_never_overlap_are_said_to_and_drawn_one_period_at_a_time():
    rows = [("a", "fcfs", 0, 0, 5, 0.0, 0.0, 10.0), ("b", "fcfs", 0, 0, 50, 100.0, 100.0, 200.0)]
    section = timelines_section(inputs_of(phases_frame(rows)))
    gantt = section.figures[1]
    assert gantt.layout["xaxis"]["range"] == [100.0, 200.0]  # the period with the most phase time: b's
    assert "No two jobs of the replay ever run at once" in section.reading
    assert "period of activity" in gantt.note


def test_the_replay_metrics_over_busy_periods_are_tabled_with_their_kinds():
    phases = phases_frame([("a", "fcfs", 0, 0, 5, 0.0, 0.0, 1.0)])
    schedulers = pl.DataFrame(
        {
            "scheduler": ["fcfs"],
            "busy_periods": [2],
            "busy_seconds": [30.0],
            **{f"busy_{name}": [0.5] for name in TRACE_METRICS},
        }
    )
    inputs = ReportInputs(jobs=inputs_of(phases).jobs, replay_phases=phases, replay_schedulers=schedulers)
    table = next(table for table in timelines_section(inputs).tables if table.id == "timelines-busy-metrics")
    assert table.frame.columns == ["scheduler", "busy_periods", "busy_seconds", *TRACE_METRICS]
    assert table.formats["utilization"] == "share" and table.formats["max_stretch"] == "ratio"
    without = ReportInputs(jobs=inputs_of(phases).jobs, replay_phases=phases)
    older = ReportInputs(  # a replay written before the busy metrics, its optional columns read as nulls
        jobs=inputs_of(phases).jobs,
        replay_phases=phases,
        replay_schedulers=schedulers.with_columns(pl.lit(None, dtype=pl.Int64).alias("busy_periods")),
    )
    for inputs in (without, older):
        assert all(table.id != "timelines-busy-metrics" for table in timelines_section(inputs).tables)


def test_one_job_is_said_to_have_nothing_to_share():
    section = timelines_section(inputs_of(phases_frame([("a", "fcfs", 0, 0, 5, 0.0, 0.0, 1.0)])))
    assert "The replay holds one job: there is nothing to share" in section.reading
    assert "1 jobs" not in section.reading and "1 I/O phase," in section.reading
