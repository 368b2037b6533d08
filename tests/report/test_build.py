"""build_report and the renderer: numbers read back from the HTML equal the frames, text stays text, no URL."""

import datetime
import math
import os
import re

import numpy as np
import polars as pl
import pytest
from markupsafe import escape
from plotly.offline import get_plotlyjs
from reading import SECTION_IDS, read_page

import iosets.report._build as build_module
from iosets import __version__
from iosets.errors import InputError
from iosets.report import Figure, Section, Table, build_report, build_sections, read_inputs, render_report
from iosets.report._jobs_table import MAX_ROWS, jobs_table_section
from iosets.report._render import CSP, PAGE_ROWS, PLOT_OPTIONS, SCRIPTS, SERVED_CSP, site_span

HOSTILE = "<script>alert('x')</script>&amp;"
JOBS = pl.DataFrame(
    {
        "job_id": ["a", "b", "c"],
        "user": ["u1", "u2", None],
        "app": ["lammps", HOSTILE, "wrf"],
        "start": [1.7e9, 1.7e9 + 60.0, 1.7e9 + 120.0],
        "end": [1.7e9 + 3600.0, 1.7e9 + 7200.0, 1.7e9 + 10800.0],
        "bytes_read": [1.5e9, None, 1.0],
        "bytes_written": [2.5e8, None, None],
        "w_iter": [12.345678, None, 1000.0],
        "w_iter_confidence": [0.9, 0.0, 0.75],
        "alpha_io": [0.1234567, 0.5, 0.01],
        "not_periodic": [None, "few_phases", None],
        "explanation": ["one phase every 12.3 s", "2 phases only", "one phase every 1000 s"],
    }
)
REC = JOBS.with_columns(
    set=pl.Series([1, 3, 3]),
    priority=pl.Series([0.1, 0.001, 0.001]),
    conservative=pl.Series([False, True, False]),
    wfq_weight=pl.Series([100, 1, 1]),
    rbfq_reservation=pl.Series([None, None, None], dtype=pl.Float64),
    rbfq_weight=pl.Series([100.0, 1.0, 1.0]),
    rbfq_limit=pl.Series([None, None, None], dtype=pl.Float64),
)
PER_JOB = pl.DataFrame(
    {
        "job_id": ["a", "c", "a", "c"],
        "scheduler": ["fcfs", "fcfs", "iosets-wfq", "iosets-wfq"],
        "recorded_runtime": [100.0, 200.0, 100.0, 200.0],
        "runtime": [125.0, 210.0, 110.0, 230.0],
        "alone_runtime": [100.0, 200.0, 100.0, 200.0],
        "stretch": [1.25, 1.05, 1.1, 1.15],
        "io_slowdown": [1.5, 1.1, 1.2, 1.3],
        "wait": [25.0, 10.0, 10.0, 30.0],
    }
)


def stand_in(inputs):
    """A section with a figure whose JSON holds what a careless input could: a closing tag, NaN, numpy values."""
    figure = Figure(
        id="stand-in-plot",
        title="Stand-in",
        data=[
            {
                "type": "bar",
                "x": np.array([1.0, 2.0, math.nan]),
                "y": pl.Series([3, 4, 5]),
                "text": ["</script><script>alert(1)</script>", "&", "<!--"],
            }
        ],
        layout={"xaxis": {"type": "log"}, "title": {"text": "a < b"}},
        note="binned",
    )
    table = Table(id="stand-in-table", title="Numbers", frame=pl.DataFrame({"x": [0.1, None], "n": [1, 2]}))
    return Section(
        id="stand-in", title="Stand-in", reading="Reads `iosets report`.", figures=(figure,), tables=(table,)
    )


@pytest.fixture(scope="module")
def full_page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    JOBS.write_parquet(folder / "jobs.parquet")
    REC.write_csv(folder / "rec.csv")
    PER_JOB.write_parquet(folder / "perjob.parquet")
    path = folder / "report.html"
    page = build_report(
        folder / "jobs.parquet", recommendation=folder / "rec.csv", replay=folder / "perjob.parquet", output=path
    ).html
    return page, path


def test_the_written_file_is_the_returned_page_with_every_section(full_page):
    page, path = full_page
    assert path.read_text(encoding="utf-8") == page
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~_umask()
    assert list(read_page(page).sections) == SECTION_IDS


def test_the_jobs_table_cells_hold_the_frames_exact_values(full_page):
    table = read_page(full_page[0]).tables["jobs-table"]
    assert table.columns == [
        "job_id",
        "user",
        "app",
        "set",
        "priority",
        "w_iter",
        "alpha_io",
        "confidence",
        "bytes",
        "not_periodic",
        "explanation",
        "stretch_fcfs",
        "stretch_iosets-wfq",
    ]
    rows = {row["job_id"]: row for row in table.records()}
    assert list(rows) == ["a", "c", "b"]  # most bytes first; b has no byte count
    assert rows["a"]["bytes"] == repr(1.5e9 + 2.5e8) and rows["c"]["bytes"] == "1.0" and rows["b"]["bytes"] == ""
    assert rows["b"]["app"] == HOSTILE  # the text as it was, not markup
    for job in JOBS.iter_rows(named=True):
        row = rows[job["job_id"]]
        assert row["w_iter"] == ("" if job["w_iter"] is None else repr(job["w_iter"]))
        assert float(row["alpha_io"]) == job["alpha_io"] and float(row["confidence"]) == job["w_iter_confidence"]
        assert row["not_periodic"] == (job["not_periodic"] or "")
    assert [rows[job]["set"] for job in "abc"] == ["1", "3", "3"]
    assert [rows[job]["priority"] for job in "abc"] == ["0.1", "0.001", "0.001"]
    assert [rows[job]["stretch_fcfs"] for job in "abc"] == ["1.25", "", "1.05"]
    assert [rows[job]["stretch_iosets-wfq"] for job in "abc"] == ["1.1", "", "1.15"]
    shown = dict(zip(table.column("job_id"), table.column("w_iter"), strict=True))
    assert shown[("a", "a")] == ("12.345678", "12.3 s")  # data-value exact, text formatted (_format's kinds)
    assert table.column("bytes")[0] == (repr(1.75e9), "1.75 GB")


def test_text_from_the_inputs_stays_text(full_page):
    page = full_page[0]
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&amp;amp;" in page
    assert read_page(page).inline_scripts == 1 + len(SCRIPTS)  # plotly.js and SCRIPTS, nothing else


def test_no_url_leaves_the_page_outside_plotlyjs(full_page):
    page = full_page[0]
    plotly_js = get_plotlyjs()
    assert page.count(plotly_js) == 1
    ours = page.replace(plotly_js, "")
    assert "http://" not in ours and "https://" not in ours and "//cdn" not in ours
    links = read_page(page).links
    assert links and all(value.startswith("#") for _, _, value in links)  # the contents' anchors only
    assert 'http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;;' in page
    assert "unsafe-eval" not in CSP and "script-src 'unsafe-inline';" in CSP


def test_the_header_names_the_span_the_inputs_and_the_version(tmp_path):
    JOBS.write_parquet(tmp_path / "jobs <1>.parquet")
    page = build_report(tmp_path / "jobs <1>.parquet", recommendation=REC).html
    assert "3 jobs, 2023-11-14 22:13 UTC to 2023-11-15 01:13 UTC (3.00 h)" in page
    assert f"<code>{tmp_path}/jobs &lt;1&gt;.parquet</code>" in page
    assert "tables given in Python:</span> recommendation</li>" in page
    assert f"iosets {__version__}" in page


def test_missing_inputs_give_sections_that_say_what_to_run():
    sections = read_page(build_report(JOBS).html).sections
    assert list(sections) == SECTION_IDS
    assert sections["overview"]["missing"] is None and sections["jobs"]["missing"] is None
    assert "iosets recommend" in sections["recommendation"]["missing"]
    assert "iosets replay-trace" in sections["scheduler"]["missing"]
    assert "iosets replay-trace" in sections["timelines"]["missing"]
    assert "iosets replay-requests" in sections["requests"]["missing"]
    assert "iosets validate" in sections["validation"]["missing"]
    assert all(section["title"] for section in sections.values())
    assert sections["overview"]["readings"] and sections["jobs"]["readings"]


def test_a_malformed_input_is_an_input_error_naming_file_and_column(tmp_path):
    REC.with_columns(pl.Series("priority", [0.1, -1.0, 0.001])).write_parquet(tmp_path / "rec.parquet")
    with pytest.raises(InputError, match=r"rec\.parquet row 1: priority: expected a number > 0, got -1\.0"):
        build_report(JOBS, recommendation=tmp_path / "rec.parquet", output=tmp_path / "report.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.parquet"]


def test_a_failed_build_leaves_no_partial_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    path = tmp_path / "report.html"
    path.write_text("the previous report", encoding="utf-8")

    def broken(inputs):
        raise RuntimeError("a section failed")

    monkeypatch.setattr(build_module, "default_builders", lambda: (stand_in, broken))
    with pytest.raises(RuntimeError, match="a section failed"):
        build_report(JOBS, output=path)
    assert path.read_text(encoding="utf-8") == "the previous report"

    def failing_write(self, *args, **kwargs):
        self.write_bytes(b"<!DOCTYPE html><html><he")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(build_module, "default_builders", lambda: (stand_in,))
    monkeypatch.setattr(type(path), "write_text", failing_write)
    with pytest.raises(OSError, match="No space left"):
        build_report(JOBS, output=path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]
    assert path.read_bytes() == b"the previous report"


def test_the_output_is_checked_before_the_work(tmp_path, monkeypatch):
    monkeypatch.setattr(build_module, "default_builders", lambda: pytest.fail("built before the check"))
    with pytest.raises(InputError, match=r"report\.txt: expected a \.html file name for the report"):
        build_report(JOBS, output=tmp_path / "report.txt")


def test_progress_sees_each_step_in_order(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(build_module, "default_builders", lambda: (stand_in, jobs_table_section))
    seen = []
    build_report(JOBS, output=tmp_path / "r.html", progress=lambda *step: seen.append(step))
    assert seen == [
        ("inputs", 0, 5),
        ("stand_in", 1, 5),
        ("jobs_table", 2, 5),
        ("rendering", 3, 5),
        (f"writing {tmp_path / 'r.html'}", 4, 5),
        ("done", 5, 5),
    ]
    build_report(JOBS, progress=True)
    assert capsys.readouterr().err.splitlines() == [
        "report [0/4] inputs",
        "report [1/4] stand_in",
        "report [2/4] jobs_table",
        "report [3/4] rendering",
        "report [4/4] done",
    ]


def test_a_figure_reads_back_as_its_data_and_no_text_closes_its_script():
    inputs = read_inputs(JOBS)
    page = render_report(inputs, build_sections(inputs, builders=[stand_in]))
    read = read_page(page)
    assert read.figure("stand-in-plot") == {
        "data": [
            {
                "type": "bar",
                "x": [1.0, 2.0, None],  # NaN is a gap
                "y": [3, 4, 5],
                "text": ["</script><script>alert(1)</script>", "&", "<!--"],
            }
        ],
        "layout": {"xaxis": {"type": "log"}, "title": {"text": "a < b"}},
    }
    script = read.scripts["stand-in-plot-json"]
    assert "<" not in script and ">" not in script and "&" not in script
    assert read.tables["stand-in-table"].rows == [[("0.1", "0.1"), ("1", "1")], [("", ""), ("2", "2")]]
    assert read.sections["stand-in"]["readings"] == ["Reads iosets report."]
    assert "Reads <code>iosets report</code>." in page


def test_ids_used_twice_map_traces_and_webgl_traces_are_refused():
    inputs = read_inputs(JOBS)
    section = stand_in(inputs)
    with pytest.raises(ValueError, match="id 'stand-in' is used twice"):
        render_report(inputs, [section, section])
    geo = Section("geo", "Geo", "", figures=(Figure("map", "Map", [{"type": "scattergeo", "lat": [0], "lon": [0]}]),))
    with pytest.raises(ValueError, match="figure 'map': scattergeo traces fetch map data from the net"):
        render_report(inputs, [geo])
    gl = Section("gl", "GL", "", figures=(Figure("many", "Many", [{"type": "scattergl", "x": [0], "y": [0]}]),))
    with pytest.raises(ValueError, match="figure 'many': scattergl traces draw with WebGL"):
        render_report(inputs, [gl])
    rows = Table(id="t", title="T", frame=pl.DataFrame({"n": [1]}), interactive=True)
    clash = Section("s", "S", "", figures=(Figure("t-filter", "Clash", [{"type": "bar", "y": [1]}]),), tables=(rows,))
    with pytest.raises(ValueError, match="id 't-filter' is used twice"):
        render_report(inputs, [clash])


def test_a_large_site_keeps_the_jobs_that_moved_the_most_bytes():
    n_jobs = MAX_ROWS + 3
    jobs = pl.DataFrame({"job_id": [f"j{i}" for i in range(n_jobs)], "bytes_read": [float(i) for i in range(n_jobs)]})
    section = jobs_table_section(read_inputs(jobs))
    (table,) = section.tables
    assert table.interactive and table.frame.height == MAX_ROWS
    assert table.frame["bytes"].to_list() == [float(i) for i in range(n_jobs - 1, 2, -1)]  # j0, j1, j2 left out
    assert table.note == (
        "The 5,000 jobs that moved the most bytes, of 5,003; the others are left out to keep the page light. "
        "The first 500 rows (in this order) have their detail; the others do not."
    )
    assert "stretch" not in " ".join(table.frame.columns) and "set" not in table.frame.columns
    assert "--rec rec.parquet" in section.reading and "--replay perjob.parquet" in section.reading


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_an_interactive_table_shows_its_first_page_and_hides_the_rest_in_the_page():
    inputs = read_inputs(JOBS)
    frame = pl.DataFrame({"n": list(range(PAGE_ROWS + 50))})
    table = Table(id="many", title="Many", frame=frame, interactive=True)
    page = render_report(inputs, [Section("s", "S", "Rows.", tables=(table,))])
    assert page.count("<tr hidden>") == 50 and page.count("<tr>") == PAGE_ROWS + 1  # + the header row
    assert f"{PAGE_ROWS} of {PAGE_ROWS + 50} rows</span>" in page
    assert [int(value) for value, _ in read_page(page).tables["many"].column("n")] == list(range(PAGE_ROWS + 50))


@pytest.mark.parametrize(
    ("starts", "ends", "span"),
    [
        (
            [0.0, 1.6e9, 1.6e9 + 10],
            [5.0, 1.6e9 + 100, None],
            "3 jobs, 2020-09-13 12:26 UTC to 2020-09-13 12:28 UTC "
            "(1.67 min); 1 job dated from its trace's start is left out",
        ),
        ([0.0, 10.0, None], [5.0, 300.0, None], "3 jobs, 0 s to 300 s (5.00 min)"),
        ([None, None, None], [None, None, None], "3 jobs; the jobs table has no start dates"),
    ],
)
def test_the_span_counts_dates_since_the_epoch_apart_from_dates_since_a_trace_start(starts, ends, span):
    jobs = pl.DataFrame(
        {"job_id": ["a", "b", "c"], "start": starts, "end": ends},
        schema_overrides={"start": pl.Float64, "end": pl.Float64},
    )
    assert site_span(read_inputs(jobs)) == span


def test_the_same_inputs_and_date_give_the_same_page():
    made = datetime.datetime(2026, 1, 2, 3, 4, tzinfo=datetime.UTC)
    pages = [render_report(read_inputs(JOBS), [stand_in(None)], made=made) for _ in range(2)]
    assert pages[0] == pages[1]
    assert f"iosets {__version__}, 2026-01-02 03:04 UTC" in pages[0]


def test_every_table_has_its_title_as_caption_and_every_figure_its_title_as_label(full_page):
    page = full_page[0]
    sections = build_sections(read_inputs(JOBS, recommendation=REC, replay=PER_JOB))
    tables = [table for section in sections for table in section.tables]
    figures = [figure for section in sections for figure in section.figures]
    assert tables and figures
    for table in tables:
        caption = f'<caption class="visually-hidden">{escape(table.title)}</caption>'
        assert re.search(f'<table id="{table.id}"[^>]*>\\s*{re.escape(caption)}', page), table.id
    for figure in figures:
        div = f'<div id="{figure.id}" class="plot" data-figure="{figure.id}-json"'
        assert f'{div} role="img" aria-label="{escape(figure.title)}">' in page
    assert page.count("<caption") == page.count("<table ") == len(tables)


def test_the_skip_link_comes_first_and_leads_to_the_jobs_filter_or_else_to_the_sections(full_page):
    page = full_page[0]
    body = page[page.index("<body>") + len("<body>") :].lstrip()
    assert body.startswith('<a class="skip-link" href="#jobs-table-filter">')
    assert '<input type="search" id="jobs-table-filter" class="table-filter" data-table="jobs-table"' in page
    without = render_report(read_inputs(JOBS), [stand_in(None)])
    assert '<a class="skip-link" href="#main">' in without and '<main id="main" tabindex="-1">' in without


def test_row_counts_and_long_headers_go_through_the_formatter():
    frame = pl.DataFrame({"stretch_iosets-wfq": list(range(1500))})
    table = Table(id="many", title="Many", frame=frame, interactive=True)
    page = render_report(read_inputs(JOBS), [Section("s", "S", "Rows.", tables=(table,))])
    assert f"{PAGE_ROWS} of 1,500 rows</span>" in page
    assert ">stretch_<wbr>iosets-wfq</th>" in page and 'title="Sort by stretch_iosets-wfq"' in page
    one = Table(id="one", title="One", frame=pl.DataFrame({"n": [1]}), interactive=True)
    assert "1 of 1 row</span>" in render_report(read_inputs(JOBS), [Section("s", "S", "Row.", tables=(one,))])


def test_the_mode_bar_keeps_no_button_that_leaves_the_page_and_the_served_policy_forbids_windows():
    config = PLOT_OPTIONS["config"]
    assert config["displaylogo"] is False and config["showSendToCloud"] is False
    assert {"sendChartToCloud", "select2d", "lasso2d"} <= set(config["modeBarButtonsToRemove"])
    assert SERVED_CSP.startswith(CSP + "; ")
    sandbox = SERVED_CSP.split("; ")[-1].split()
    assert sandbox[0] == "sandbox" and sorted(sandbox[1:]) == ["allow-downloads", "allow-scripts"]
    assert "sandbox" not in CSP  # browsers ignore it in a <meta> and log an error
