"""Site overview: totals, jobs per set, the w_iter/alpha_io plot, sources, reasons and top apps equal the jobs table."""

import json

import numpy as np
import polars as pl
import pytest

from iosets.report._document import ReportInputs
from iosets.report._overview import _jobs_with_sets, overview_section, w_iter_alpha_figure
from iosets.report._palette import set_colour
from iosets.schemas import JOBS, NOT_PERIODIC_MEANINGS

T0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


@pytest.fixture
def jobs() -> pl.DataFrame:
    """Ten jobs; SET-10 sets 0, 0, 1, 2, 2, 2, 3, none, none, 3 (w_iter 0.5 ... 3000 s)."""
    frame = pl.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(10)],
            "user": ["u1", "u1", "u2", "u2", "u3", "u3", "u4", "u4", "u5", "u5"],
            "app": ["lammps", "lammps", "wrf", "wrf", "<script>x</script>", "namd", "namd", "hacc", "hacc", None],
            "start": [T0 + 100 * i for i in range(10)],
            "end": [T0 + 100 * i + 1000 * (i + 1) for i in range(10)],
            "bytes_read": [1e9, 1e9, 0, 3e9, 5e9, 2e9, 1e9, 1e3, 1e10, 1e8],
            "bytes_written": [2e9, 0, 4e9, 1e9, 5e9, 1e9, 1e9, 0, 1e10, 1e8],
            "io_time": [10, 20, None, 40, 5, 30, 100, None, 500, 1],
            "w_iter": [0.5, 2.0, 5.0, 40.0, 50.0, 150.0, 400.0, None, None, 3000.0],
            "w_iter_confidence": [0.9, 0.8, 0.7, 0.6, 0.95, 1.0, 0.5, None, 0.0, 0.3],
            "alpha_io": [0.1, 0.2, 0.05, 0.3, 0.01, 0.02, 0.5, None, 0.95, 0.0],
            "not_periodic": [None] * 7 + ["few_bytes", "io_bound", None],
            "explanation": [None] * 7 + ["only 1000 B of I/O", "does I/O 95% of its run", None],
            "source": ["dxt", "dxt", "heatmap", "heatmap", "dxt", "dxt", "dxt", "counters", "dxt", None],
        }
    )
    return JOBS.validate(frame)


def _table(section, table_id):
    return next(table for table in section.tables if table.id == table_id).frame


def _figure(section, figure_id):
    return next(figure for figure in section.figures if figure.id == figure_id)


def test_summary_equals_the_jobs_table(jobs):
    section = overview_section(ReportInputs(jobs=jobs))
    assert section.id == "overview" and section.missing is None
    row = _table(section, "overview-summary").row(0, named=True)
    assert row == {
        "jobs": 10,
        "users": 5,
        "apps": 5,
        "bytes read": 23_100_001_000.0,
        "bytes written": 24_100_000_000.0,
        "first start (UTC)": "2023-11-14 22:13",
        "last end (UTC)": "2023-11-15 01:15",
        "periodic jobs": 8,
        "periodic": 0.8,
    }
    assert "10 jobs of 5 users and 5 apps" in section.reading
    assert "from 2023-11-14 22:13 to 2023-11-15 01:15 (UTC)" in section.reading
    assert "reading 23.1 GB and writing 24.1 GB" in section.reading


def test_jobs_per_set_by_set10_rule(jobs):
    section = overview_section(ReportInputs(jobs=jobs))
    per_set = _table(section, "overview-sets")
    assert per_set["set"].to_list() == [0, 1, 2, 3, None]
    assert per_set["jobs"].to_list() == [2, 1, 3, 2, 2]
    assert per_set["share"].to_list() == pytest.approx([0.2, 0.1, 0.3, 0.2, 0.2])
    assert per_set["w_iter min"].to_list() == [0.5, 5.0, 40.0, 400.0, None]
    assert per_set["w_iter max"].to_list() == [2.0, 5.0, 150.0, 3000.0, None]
    assert "SET-10's rule round(log10 w_iter)" in section.reading
    note = next(table for table in section.tables if table.id == "overview-sets").note
    assert note.startswith("The row without a set number counts the jobs without a w_iter. For comparison")
    assert "set 1: 1,866 (45.6 %)" in note
    bars = _figure(section, "overview-sets-plot").data[0]
    assert bars["x"] == ["set 0", "set 1", "set 2", "set 3", "no set"]
    assert bars["y"] == [2, 1, 3, 2, 2]
    assert bars["marker"]["color"] == [set_colour(0), set_colour(1), set_colour(2), set_colour(3), set_colour(None)]


def test_jobs_per_set_from_the_recommendation(jobs):
    # sets that SET-10 would not give, and j9 absent from the recommendation
    recommendation = pl.DataFrame({"job_id": [f"j{i}" for i in range(9)], "set": [5, 5, 6, 6, 6, 7, 7, 8, 8]})
    section = overview_section(ReportInputs(jobs=jobs, recommendation=recommendation))
    per_set = _table(section, "overview-sets")
    assert per_set["set"].to_list() == [5, 6, 7, 8, None]
    assert per_set["jobs"].to_list() == [2, 3, 2, 2, 1]
    assert "By the recommendation" in section.reading
    scatter = _figure(section, "overview-scatter").data
    assert [trace["name"] for trace in scatter] == ["set 5", "set 6", "set 7"]  # j7, j8: no w_iter; j9: alpha_io 0


def test_scatter_draws_each_job_with_its_numbers(jobs):
    figure = _figure(overview_section(ReportInputs(jobs=jobs)), "overview-scatter")
    assert [trace["name"] for trace in figure.data] == ["set 0", "set 1", "set 2", "set 3"]
    assert [len(trace["x"]) for trace in figure.data] == [2, 1, 3, 1]
    set2 = figure.data[2]
    assert set2["x"] == [40.0, 50.0, 150.0] and set2["y"] == [0.3, 0.01, 0.02]
    assert set2["customdata"][1] == ["j4", "&lt;script&gt;x&lt;/script&gt;"]  # an app's text is never markup
    assert set2["marker"]["color"] == set_colour(2)
    assert figure.layout["xaxis"]["type"] == "log" and figure.layout["yaxis"]["type"] == "log"
    assert figure.note == "3 jobs without a w_iter or with alpha_io 0 not drawn."


def test_scatter_bins_beyond_its_point_limit(jobs):
    figure = w_iter_alpha_figure(_jobs_with_sets(ReportInputs(jobs=jobs))[0], max_points=6)
    assert figure.note.startswith("7 jobs binned on a 60 x 60 log grid")
    assert [sum(trace["customdata"]) for trace in figure.data] == [2, 1, 3, 1]
    assert "%{customdata} jobs" in figure.data[0]["hovertemplate"]


def test_sources_confidence_and_reasons(jobs):
    section = overview_section(ReportInputs(jobs=jobs))
    sources = _table(section, "overview-sources")
    assert sources.drop("median confidence").rows() == [
        ("dxt", 6, 5),
        ("heatmap", 2, 2),
        ("counters", 1, 0),
        ("unknown", 1, 1),
    ]
    assert sources["median confidence"].to_list() == [pytest.approx(0.85), pytest.approx(0.65), None, 0.3]
    confidence = _figure(section, "overview-confidence").data[0]
    assert confidence["y"] == [1, 0, 0, 1, 0, 1, 1, 1, 1, 3]  # confidence 1 counts in the last tenth
    assert sum(confidence["y"]) == 9
    reasons = _table(section, "overview-reasons")
    assert reasons.rows() == [
        ("few_bytes", 1, "the job " + NOT_PERIODIC_MEANINGS["few_bytes"], "only 1000 B of I/O"),
        ("io_bound", 1, "the job " + NOT_PERIODIC_MEANINGS["io_bound"], "does I/O 95% of its run"),
    ]
    bars = _figure(section, "overview-reasons-plot").data[0]
    assert (bars["y"], bars["x"]) == (["few_bytes", "io_bound"], [1, 1])


def test_top_apps_by_bytes_and_by_io_time(jobs):
    section = overview_section(ReportInputs(jobs=jobs))
    by_bytes = _table(section, "overview-apps-bytes")
    assert by_bytes["app"].to_list() == ["hacc", "<script>x</script>", "wrf", "namd", "lammps", "unknown"]
    assert by_bytes["bytes"].to_list() == [2.0000001e10, 1e10, 8e9, 5e9, 4e9, 2e8]
    by_time = _table(section, "overview-apps-time")
    # wrf: j3's io_time 40 s + j2's alpha_io x runtime = 0.05 x 3000 s
    assert by_time["app"].to_list() == ["hacc", "wrf", "namd", "lammps", "<script>x</script>", "unknown"]
    assert by_time["I/O time"].to_list() == [500.0, 190.0, 130.0, 30.0, 5.0, 1.0]
    plot = _figure(section, "overview-apps-bytes-plot")
    read, written = plot.data
    assert read["y"][1] == "&lt;script&gt;x&lt;/script&gt;"
    assert read["x"] == [1e10 + 1e3, 5e9, 3e9, 3e9, 2e9, 1e8]
    assert written["x"] == [1e10, 5e9, 5e9, 2e9, 2e9, 1e8]
    assert _figure(section, "overview-apps-time-plot").data[0]["x"] == [500.0, 190.0, 130.0, 30.0, 5.0, 1.0]


def test_many_jobs_are_binned_and_every_job_counted():
    rng = np.random.default_rng(3)
    n = 6000
    jobs = JOBS.validate(
        pl.DataFrame(
            {
                "job_id": [f"job{i}" for i in range(n)],
                "app": [f"app{i % 40}" for i in range(n)],
                "w_iter": 10 ** rng.uniform(-0.4, 4.4, n),
                "alpha_io": 10 ** rng.uniform(-3, -0.05, n),
                "bytes_read": rng.uniform(0, 1e12, n),
            }
        )
    )
    section = overview_section(ReportInputs(jobs=jobs))
    figure = _figure(section, "overview-scatter")
    assert figure.note.startswith("6,000 jobs binned on a 60 x 60 log grid")
    assert sum(sum(trace["customdata"]) for trace in figure.data) == n
    per_set = _table(section, "overview-sets")
    for trace, jobs_in_set in zip(figure.data, per_set["jobs"].to_list(), strict=True):
        assert sum(trace["customdata"]) == jobs_in_set
    assert len(json.dumps({"data": figure.data, "layout": figure.layout})) < 300_000


def test_an_empty_or_sparse_jobs_table_still_gives_a_section():
    empty = overview_section(ReportInputs(jobs=JOBS.empty()))
    assert empty.reading == "The jobs table holds no job: there is nothing to show."
    assert _table(empty, "overview-summary")["jobs"].to_list() == [0]
    sparse = overview_section(ReportInputs(jobs=pl.DataFrame({"job_id": ["a", "b"], "w_iter": [10.0, None]})))
    assert _table(sparse, "overview-sets")["jobs"].to_list() == [1, 1]
    assert _table(sparse, "overview-summary")["first start (UTC)"].to_list() == ["-"]


def test_jobs_dated_from_their_trace_start_are_left_out_of_the_span(jobs):
    block = jobs.head(2).with_columns(job_id=pl.Series(["b0", "b1"]), start=pl.Series([0.0, 5.0]), end=10.0)
    row = _table(overview_section(ReportInputs(jobs=pl.concat([jobs, block]))), "overview-summary").row(0, named=True)
    assert (row["first start (UTC)"], row["last end (UTC)"]) == ("2023-11-14 22:13", "2023-11-15 01:15")
    only_block = _table(overview_section(ReportInputs(jobs=block)), "overview-summary").row(0, named=True)
    assert (only_block["first start (UTC)"], only_block["last end (UTC)"]) == (
        "0 s into the trace",
        "10.0 s into the trace",
    )
    reading = overview_section(ReportInputs(jobs=block)).reading
    assert "from 0 s to 10.0 s into the trace, reading" in reading and "(UTC)" not in reading


def test_axes_fit_the_quantities(jobs):
    layout = _figure(overview_section(ReportInputs(jobs=jobs)), "overview-scatter").layout
    assert layout["xaxis"]["range"] == [-1, 3]  # w_iter drawn 0.5 ... 400 s: whole decades 0.1 s to 1000 s
    assert layout["yaxis"]["range"] == [-2, 0]  # alpha_io 0.01 ... 0.5: a fraction, never past 1
    assert layout["yaxis"]["type"] == "log"


def test_bytes_are_drawn_in_read_and_write_colours_never_a_sets(jobs):
    from iosets.report._palette import READ_COLOUR, SET_PALETTE, WRITE_COLOUR

    section = overview_section(ReportInputs(jobs=jobs))
    read, written = _figure(section, "overview-apps-bytes-plot").data
    assert (read["marker"]["color"], written["marker"]["color"]) == (READ_COLOUR, WRITE_COLOUR)
    for figure_id in ("overview-sources-plot", "overview-confidence", "overview-reasons-plot"):
        assert _figure(section, figure_id).data[0]["marker"]["color"] not in SET_PALETTE


def test_plots_without_data_give_way_to_a_sentence():
    periodic = JOBS.validate(pl.DataFrame({"job_id": ["a"], "w_iter": [10.0], "alpha_io": [0.1]}))
    section = overview_section(ReportInputs(jobs=periodic))
    ids = [figure.id for figure in section.figures]
    assert "overview-reasons-plot" not in ids and "overview-confidence" not in ids
    assert "Every job has a period, so there is no plot of why jobs are not periodic." in section.reading
    assert "No job has a confidence in its w_iter: no confidence plot." in section.reading
    assert "1 job (100.0 %) does I/O in a rhythm" in section.reading
    assert "every job with a set is in set 1 (100.0 % of all jobs)" in section.reading
    none = JOBS.validate(pl.DataFrame({"job_id": ["a", "b"], "not_periodic": ["io_bound", "few_bytes"]}))
    section = overview_section(ReportInputs(jobs=none))
    assert "overview-scatter" not in [figure.id for figure in section.figures]
    assert "No job does I/O in a rhythm" in section.reading
    assert "there is no w_iter against alpha_io to plot" in section.reading


def test_a_blank_app_is_unknown_not_an_empty_label():
    jobs = JOBS.validate(pl.DataFrame({"job_id": ["a", "b"], "app": ["", " "], "bytes_written": [1e9, 2e9]}))
    section = overview_section(ReportInputs(jobs=jobs))
    assert _table(section, "overview-apps-bytes")["app"].to_list() == ["unknown"]
    assert _figure(section, "overview-apps-bytes-plot").data[1]["y"] == ["unknown"]
    assert _table(section, "overview-summary")["apps"].item() == 0


def test_apps_plots_need_bytes_or_io_time():
    jobs = JOBS.validate(pl.DataFrame({"job_id": ["a", "b"], "app": ["x", "y"]}))
    section = overview_section(ReportInputs(jobs=jobs))
    ids = [figure.id for figure in section.figures]
    assert "overview-apps-bytes-plot" not in ids and "overview-apps-time-plot" not in ids
    assert "No job records a byte read or written: no plot of the apps by bytes." in section.reading
    assert "No job records time spent in I/O: no plot of the apps by I/O time." in section.reading
    assert "at dates it does not give" in section.reading
