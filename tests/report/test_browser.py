"""The report of a generated site, with every input, opened in a real headless Chromium.

Checked in the page: no console error and no request but the file itself, every section present,
every figure drawn with data, no blank section, and the per-job table sorts and filters.
"""

from __future__ import annotations

import io

import polars as pl
import pytest

from iosets.report import build_report, build_sections, read_inputs

pytestmark = pytest.mark.slow  # 10-25 s (replays, build, browser); keeps Chromium out of `make test-asan` too

SECTIONS = [
    "verdict",
    "overview",
    "recommendation",
    "scheduler",
    "impact",
    "model-check",
    "timelines",
    "requests",
    "validation",
    "jobs",
]
BLANK = 1.0
"""Largest grey-level variance of a screenshot counted as blank (a uniform image has 0)."""


@pytest.fixture(scope="module")
def sections(site_inputs):
    """The sections built from the site's inputs, as the page should show them."""
    return build_sections(read_inputs(**site_inputs))


@pytest.fixture(scope="module")
def opened(harness, chromium, site_inputs, sections, tmp_path_factory):
    """The site's report, written to a file and opened in Chromium with every plot drawn."""
    path = tmp_path_factory.mktemp("report") / "report.html"
    build_report(**site_inputs, output=path)
    n_figures = sum(len(section.figures) for section in sections)
    report = harness.OpenedReport.open(chromium, path, expected_plots=n_figures)
    yield report
    report.close()


def test_the_page_logs_no_error_and_requests_nothing_but_itself(opened):
    assert opened.console_errors == []
    assert opened.requests == [opened.path.resolve().as_uri()]
    assert opened.foreign_requests == []


def test_every_section_is_present_and_filled(opened, sections):
    assert opened.section_ids() == SECTIONS
    assert [section.id for section in sections] == SECTIONS
    assert [section.id for section in sections if section.missing is not None] == []
    missing = opened.page.evaluate("() => [...document.querySelectorAll('section.is-missing')].map(s => s.id)")
    assert missing == []


def test_every_figure_is_drawn_with_data(opened, sections):
    plots = {plot["id"]: plot for plot in opened.plots()}
    expected = [figure.id for section in sections for figure in section.figures]
    assert sorted(plots) == sorted(expected)
    assert len(expected) >= len(SECTIONS) - 1  # the jobs section is a table; every other one draws
    for figure_id, plot in plots.items():
        with_points = [trace for trace in plot["traces"] if trace["points"] >= 1]
        assert with_points, f"{figure_id}: no trace with a point: {plot['traces']}"
        assert plot["marks"] + plot["canvases"] >= 1, f"{figure_id}: nothing drawn"


def test_no_section_and_no_figure_is_blank(opened, sections):
    for section in SECTIONS:
        assert opened.screenshot_variance(f"section#{section}") > BLANK, section
    for figure in (figure for section in sections for figure in section.figures):
        assert opened.screenshot_variance(f"div#{figure.id}") > BLANK, figure.id


def test_a_blank_element_has_no_variance(opened):
    opened.page.evaluate(
        "() => { const d = document.createElement('div'); d.id = 'blank-probe';"
        " d.style.cssText = 'width:300px;height:200px;background:#fff'; document.body.prepend(d); }"
    )
    try:
        assert opened.screenshot_variance("#blank-probe") == 0.0
    finally:
        opened.page.evaluate("() => document.getElementById('blank-probe').remove()")


def _first_job(opened) -> str:
    return opened.page.locator("#jobs-table tbody tr:not([hidden]) td").first.inner_text()


def test_the_jobs_table_sorts_by_a_clicked_column(opened, site_inputs):
    jobs = pl.read_parquet(site_inputs["jobs"]).filter(pl.col("w_iter").is_not_null())
    shortest = jobs.sort("w_iter")["job_id"][0]
    longest = jobs.sort("w_iter", descending=True)["job_id"][0]
    header = opened.page.locator("#jobs-table thead th", has_text="w_iter").first
    header.click()
    assert _first_job(opened) == shortest
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert _first_job(opened) == longest
    assert header.get_attribute("aria-sort") == "descending"
    assert opened.console_errors == []


def test_the_jobs_table_filters_on_typed_text(opened, site_inputs):
    jobs = pl.read_parquet(site_inputs["jobs"])
    app = jobs["app"][0]
    wanted = sorted(jobs.filter(pl.col("app") == app)["job_id"])
    assert 1 < len(wanted) < jobs.height
    box = opened.page.locator("input.table-filter[data-table='jobs-table']")
    box.fill(app)
    visible = opened.page.locator("#jobs-table tbody tr:not([hidden])")
    assert sorted(visible.nth(i).locator("td").first.inner_text() for i in range(visible.count())) == wanted
    count = opened.page.locator(".table-count[data-table='jobs-table']").inner_text()
    assert count.split()[0] == str(len(wanted)) and str(jobs.height) in count, count
    box.fill("")
    assert visible.count() == jobs.height
    assert opened.console_errors == []


def test_the_replayed_policies_reach_the_page(opened, site_inputs):
    schedulers = pl.read_parquet(site_inputs["replay"])["scheduler"].unique(maintain_order=True).to_list()
    assert len(schedulers) == 3
    headers = opened.page.locator("#jobs-table thead th").all_inner_texts()
    assert [h for h in headers if h.startswith("stretch_")] == [f"stretch_{scheduler}" for scheduler in schedulers]


def test_pixel_variance_of_two_grey_levels_is_their_squared_half_gap(harness):
    from PIL import Image

    image = Image.new("L", (40, 10), 0)
    image.paste(255, (20, 0, 40, 10))
    png = io.BytesIO()
    image.save(png, format="PNG")
    assert harness.pixel_variance(png.getvalue()) == pytest.approx(127.5**2)
    blank = io.BytesIO()
    Image.new("RGB", (8, 8), (255, 255, 255)).save(blank, format="PNG")
    assert harness.pixel_variance(blank.getvalue()) == 0.0
