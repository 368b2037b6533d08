"""The report of a generated site, with every input, opened in a real headless Chromium.

Checked in the page: no console error and no request but the file itself, every section present,
every figure drawn with data, no blank section, and the per-job table sorts and filters. With every request
but the file's blocked and every new window recorded: every mode bar button of every figure clicked opens no
window and asks for nothing (the camera saves a PNG); the keyboard reaches the jobs table's filter from the top
in at most 10 stops; tables have captions and figures labels; at 400 px nothing but a table's scrolling box is
wider than the screen.
"""

from __future__ import annotations

import io

import polars as pl
import pytest
from reading import SECTION_IDS

from iosets.report import SERVED_CSP, build_report, build_sections, read_inputs

pytestmark = pytest.mark.slow  # 10-25 s (replays, build, browser); keeps Chromium out of `make test-asan` too

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


MAX_TAB_STOPS = 10
"""Keyboard stops from the top of the page to the jobs table's filter (issue 24)."""
NARROW = 400
"""A phone's width (px)."""


def test_the_page_logs_no_error_and_requests_nothing_but_itself(opened):
    assert opened.console_errors == []
    assert opened.requests == [opened.path.resolve().as_uri()]
    assert opened.foreign_requests == []
    assert opened.popups == []


def test_every_toolbar_button_of_every_figure_stays_inside_the_page(opened, sections):
    figures = [figure.id for section in sections for figure in section.figures]
    toolbars = opened.toolbar_buttons()
    assert sorted(plot["id"] for plot in toolbars) == sorted(figures)
    saved = []
    for plot in toolbars:
        titles = [button["title"] for button in plot["buttons"]]
        assert "Download plot as a PNG" in titles and "Reset axes" in titles, (plot["id"], titles)
        assert not {"Share chart...", "Box Select", "Lasso Select"} & set(titles), (plot["id"], titles)
        for index in range(len(titles)):
            saved.append(opened.click_toolbar(plot["id"], index))
    assert [name for name in saved if name is not None] == [f"{plot['id']}.png" for plot in toolbars]
    assert opened.popups == []
    assert opened.foreign_requests == []
    assert opened.console_errors == []
    after = opened.toolbar_buttons()  # zooms and resets redrew the plots: the buttons are still out of the Tab order
    assert {button["tabindex"] for plot in after for button in plot["buttons"]} == {"-1"}


def test_a_figure_drawn_later_by_another_script_gets_the_same_mode_bar(opened):
    buttons = opened.page.evaluate(
        """async () => {
            const div = document.createElement('div');
            div.id = 'later-probe';
            document.querySelector('main').append(div);
            await window.iosetsReport.drawFigure(div, {data: [{type: 'bar', x: ['a', 'b'], y: [1, 2]}], layout: {}});
            return [...div.querySelectorAll('.modebar-btn')].map(b => [b.getAttribute('data-title'), b.tabIndex]);
        }"""
    )
    opened.page.evaluate("() => document.getElementById('later-probe').remove()")
    assert buttons and all(tabindex == -1 for _, tabindex in buttons)
    assert "Share chart..." not in [title for title, _ in buttons] and ["Download plot as a PNG", -1] in buttons


def test_the_page_opens_no_window_and_follows_no_link_out(opened):
    assert opened.page.evaluate("() => window.open('about:blank', '_blank')") is None
    opened.page.evaluate(
        "() => { const a = document.createElement('a'); a.id = 'out-probe'; a.href = 'https://example.com/';"
        " a.target = '_blank'; a.textContent = 'out'; document.body.prepend(a); }"
    )
    try:
        opened.page.locator("#out-probe").click()
        opened.page.locator("#out-probe").click(button="middle")
    finally:
        opened.page.evaluate("() => document.getElementById('out-probe').remove()")
    assert opened.popups == [] and opened.foreign_requests == []
    assert opened.page.url == opened.path.resolve().as_uri()


def test_the_harness_sees_a_window_and_a_request_when_a_page_makes_them(harness, chromium, tmp_path):
    page = tmp_path / "leaky.html"
    page.write_text(
        "<!DOCTYPE html><html><body><button id='b' onclick=\"window.open('about:blank')\">open</button>"
        "<img src='http://example.invalid/x.png'>"
        "<script>document.documentElement.setAttribute('data-plots-drawn', '0')</script></body></html>",
        encoding="utf-8",
    )
    leaky = harness.OpenedReport.open(chromium, page, expected_plots=0)
    try:
        with leaky.page.expect_popup():
            leaky.page.locator("#b").click()
        assert len(leaky.popups) == 1
        assert leaky.foreign_requests == ["http://example.invalid/x.png"]
    finally:
        leaky.close()


def test_served_with_the_services_policy_the_page_draws_saves_and_opens_no_window(harness, chromium, opened):
    served = harness.OpenedReport.open(
        chromium,
        opened.path,
        served_csp=SERVED_CSP,
        init_script="window.browserOpen = window.open;",  # the browser's own, before the page refuses it
    )
    try:
        assert served.console_errors == [] and served.foreign_requests == []
        assert served.page.evaluate("() => self.origin") == "null"  # sandboxed: an opaque origin
        first = served.toolbar_buttons()[0]
        camera = [button["title"] for button in first["buttons"]].index("Download plot as a PNG")
        assert served.click_toolbar(first["id"], camera) == f"{first['id']}.png"
        assert served.console_errors == []
        assert served.page.evaluate("() => window.browserOpen('about:blank')") is None  # the sandbox refuses it
        assert served.popups == []
        assert len(served.console_errors) == 1 and "sandboxed" in served.console_errors[0]  # the browser says why
    finally:
        served.close()


def test_the_keyboard_reaches_the_jobs_filter_from_the_top_in_few_stops(opened):
    stops = opened.keyboard_path("#jobs-table-filter")
    assert stops[0].startswith("a ") and "jobs table" in stops[0]  # the skip link is the first stop
    assert stops[-1].startswith("Enter: input#jobs-table-filter")
    assert len(stops) <= MAX_TAB_STOPS, stops


def test_tables_have_captions_and_figures_labels(opened, sections):
    captions = opened.page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('table')].map(t => [t.id, t.caption?.textContent]))"
    )
    assert captions == {table.id: table.title for section in sections for table in section.tables}
    labels = opened.page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('div.plot')]"
        ".map(d => [d.id, [d.getAttribute('role'), d.getAttribute('aria-label')]]))"
    )
    assert labels == {figure.id: ["img", figure.title] for section in sections for figure in section.figures}


def test_wide_tables_scroll_inside_their_box_to_their_last_column(opened):
    boxes = opened.scroll_boxes()
    assert boxes and all(box["overflow"] == "auto" and box["reached"] for box in boxes), boxes
    assert opened.overflowing()["wide"] == []


NARROWEST_CELL = """() => Math.min(...[...document.querySelectorAll('.js-plotly-plot')].flatMap(plot =>
    Object.keys(plot._fullLayout).filter(key => /^xaxis\\d*$/.test(key))
        .map(key => plot._fullLayout[key].domain[1] - plot._fullLayout[key].domain[0])))"""
"""The narrowest x axis of the page's plots, as a fraction of its plot's width."""


def test_a_grid_of_subplots_is_stacked_on_a_narrow_window_and_back_on_a_wide_one(opened):
    wide = opened.page.viewport_size
    assert opened.page.evaluate(NARROWEST_CELL) < 0.5  # the scheduler's metrics: a grid of 3 columns
    try:
        opened.page.set_viewport_size({"width": NARROW, "height": wide["height"]})
        opened.page.wait_for_function(f"() => ({NARROWEST_CELL})() > 0.5", timeout=60_000, polling=100)
        opened.wait_until_nothing_overflows()  # the other plots resize on their own (Plotly's responsive handler)
        assert opened.overflowing()["wide"] == []
    finally:
        opened.page.set_viewport_size(wide)
    opened.page.wait_for_function(f"() => ({NARROWEST_CELL})() < 0.5", timeout=60_000, polling=100)
    buttons = opened.toolbar_buttons()  # redrawn twice: still out of the Tab order
    assert {button["tabindex"] for plot in buttons for button in plot["buttons"]} == {"-1"}
    assert opened.console_errors == []


def test_at_400_px_nothing_is_wider_than_the_screen(harness, chromium, site_inputs, sections, tmp_path):
    path = tmp_path / "report.html"
    build_report(**site_inputs, output=path)
    narrow = harness.OpenedReport.open(chromium, path, width=NARROW)
    try:
        layout = narrow.overflowing()
        assert layout["width"] == NARROW and layout["scrollWidth"] == NARROW, layout
        assert layout["wide"] == []
        assert narrow.console_errors == [] and narrow.foreign_requests == []
        assert narrow.page.evaluate(NARROWEST_CELL) > 0.5  # grids of subplots drawn one cell under the other
    finally:
        narrow.close()


def test_every_section_is_present_and_filled(opened, sections):
    assert opened.section_ids() == SECTION_IDS
    assert [section.id for section in sections] == SECTION_IDS
    assert [section.id for section in sections if section.missing is not None] == []
    missing = opened.page.evaluate("() => [...document.querySelectorAll('section.is-missing')].map(s => s.id)")
    assert missing == []


def test_every_figure_is_drawn_with_data(opened, sections):
    plots = {plot["id"]: plot for plot in opened.plots()}
    expected = [figure.id for section in sections for figure in section.figures]
    assert sorted(plots) == sorted(expected)
    assert len(expected) >= len(SECTION_IDS) - 1  # the jobs section is a table; every other one draws
    for figure_id, plot in plots.items():
        with_points = [trace for trace in plot["traces"] if trace["points"] >= 1]
        assert with_points, f"{figure_id}: no trace with a point: {plot['traces']}"
        assert plot["marks"] + plot["canvases"] >= 1, f"{figure_id}: nothing drawn"


def test_no_section_and_no_figure_is_blank(opened, sections):
    for section in SECTION_IDS:
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
