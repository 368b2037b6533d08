"""Headless Chromium for the report: Debian's ``chromium`` driven by Playwright, and what to read off a page.

Playwright's own browser download is not used: :func:`launch_chromium` starts the ``chromium`` found on
PATH (``apt-get install chromium``). :class:`OpenedReport` opens a report as ``file://`` in its own browser
context, records every console error and page error, blocks and records every request but the file's own and
every new window (the page's ``popup`` event and the context's ``page`` event) from the start of the
navigation, waits until the page marks every Plotly plot drawn (``data-plots-drawn``, set by the page's
script), and reads the plots, sections, mode bars, keyboard path and layout back. Shared by ``tests/report``
(through its ``conftest.py``) and ``benchmarks/report.py``. Run as a script, it makes the README's screenshot
(docs/report.png)::

    python tests/report/browser.py demo-report.html docs/report.png overview scheduler
"""

from __future__ import annotations

import io
import itertools
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REQUIRE_VARIABLE = "IOSETS_REQUIRE_CHROMIUM"
"""Set to 1 (CI) to make a missing chromium or Playwright a failure instead of a skip."""

MISSING_CHROMIUM = (
    "chromium not on PATH: apt-get install chromium (Debian's browser; Playwright's download is not used)"
)

SERVED_URL = "http://report.test/report.html"
"""Where :meth:`OpenedReport.open` serves a report with a Content-Security-Policy header (the browser's requests for
it are answered by the test, none reaches a network)."""

FIGURE_SELECTOR = "div.plot[data-figure]"
"""The report's figure containers (``iosets/report/templates/report.html.j2``)."""

PLOTS_READY = """() => {
    const root = document.documentElement;
    return root.hasAttribute('data-plots-drawn') || root.hasAttribute('data-plots-failed');
}"""
"""True once the page's script has marked its plots drawn (or failed): every ``Plotly.newPlot`` has resolved."""

TOOLBAR_BUTTONS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(plot => ({
    id: plot.id,
    buttons: [...plot.querySelectorAll('.modebar-btn')].map(button => ({
        title: button.getAttribute('data-title'), tabindex: button.getAttribute('tabindex'),
    })),
}))"""
"""Per plot: its id and its mode bar buttons' titles and ``tabindex``."""

FOCUSED = """() => {
    const element = document.activeElement;
    if (!element || element === document.body) return '';
    const text = (element.getAttribute('aria-label') || element.textContent || element.value || '').trim();
    return element.tagName.toLowerCase() + (element.id ? '#' + element.id : '') + ' ' + text.slice(0, 40);
}"""
"""``tag#id text`` of the element that has the focus ('' for none)."""

OVERFLOWING = """() => {
    const width = document.documentElement.clientWidth;
    const wide = [];
    for (const element of document.querySelectorAll('body *')) {
        if (element.closest('.table-scroll, .skip-link')) continue;
        const box = element.getBoundingClientRect();
        if (box.width > 0 && box.right > width + 0.5) {
            const name = element.getAttribute('class') || '';
            wide.push(`${element.tagName.toLowerCase()}${element.id ? '#' + element.id : ''}.${name}: ${box.right}`);
        }
    }
    return {width, scrollWidth: document.documentElement.scrollWidth, wide};
}"""
"""The viewport's width, the page's scroll width and each element that reaches past the viewport's right edge,
tables' scrolling boxes left out."""

SCROLL_BOXES = """() => [...document.querySelectorAll('.table-scroll')].map(box => {
    box.scrollLeft = box.scrollWidth;
    const last = box.querySelector('thead th:last-child').getBoundingClientRect();
    const edge = box.getBoundingClientRect();
    const shown = {id: box.querySelector('table').id, overflow: getComputedStyle(box).overflowX,
                   fits: box.scrollWidth <= box.clientWidth, reached: last.right <= edge.right + 0.5,
                   boxRight: edge.right};
    box.scrollLeft = 0;
    return shown;
})"""
"""Per table: its scrolling box's ``overflow-x``, whether the table fits it, whether its last column is reached by
scrolling the box to its right end, and the box's right edge."""

PLOT_SUMMARIES = """() => [...document.querySelectorAll('.js-plotly-plot')].map(plot => {
    const pointsOf = trace => {
        if (Number.isFinite(trace._length)) return trace._length;
        for (const key of ['x', 'y', 'z', 'values', 'q1', 'lat']) {
            if (trace[key] && trace[key].length) return trace[key].length;
        }
        return 0;
    };
    const drawn = element => {
        if (element.tagName === 'path' && !(element.getAttribute('d') || '').replace(/[MZ0,.\\s]/g, '')) return false;
        const box = element.getBBox();
        return box.width > 0 || box.height > 0;
    };
    const painted = canvas => {
        if (!canvas.width || !canvas.height) return false;
        const copy = document.createElement('canvas');
        copy.width = canvas.width;
        copy.height = canvas.height;
        const context = copy.getContext('2d');
        context.drawImage(canvas, 0, 0);
        const pixels = context.getImageData(0, 0, copy.width, copy.height).data;
        for (let alpha = 3; alpha < pixels.length; alpha += 4) if (pixels[alpha]) return true;
        return false;
    };
    const marks = [...plot.querySelectorAll('.main-svg .trace path, .main-svg .trace image, .main-svg .hm image')];
    const canvases = [...plot.querySelectorAll('canvas')].filter(painted);
    return {
        id: plot.id,
        traces: plot._fullData.map(trace => ({type: trace.type, visible: trace.visible, points: pointsOf(trace)})),
        marks: marks.filter(drawn).length,
        canvases: canvases.length,
    };
})"""
"""Per plot: its id, its traces (type, visibility, points), its drawn SVG marks and its painted canvases."""

SECTION_SCREENS = """({ids, height}) => ids.map(id => {
    const section = document.getElementById(id);
    const top = section.getBoundingClientRect().top + window.scrollY;
    const ends = [...section.querySelectorAll('figure, .table-block')]
        .map(block => block.getBoundingClientRect().bottom + window.scrollY)
        .filter(bottom => bottom <= top + height);
    return [top, ends.length ? Math.max(...ends) + 16 : top + height];
})"""
"""Per section id: [top, bottom] of its first screen, cut after the last block that fits in ``height`` px."""


def find_chromium() -> str | None:
    """The ``chromium`` executable on PATH, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def launch_chromium(playwright: Any) -> Any:
    """Start a headless Chromium from PATH with Playwright (``--no-sandbox`` when root: the sandbox refuses root)."""
    executable = find_chromium()
    if executable is None:
        raise FileNotFoundError(MISSING_CHROMIUM)
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    return playwright.chromium.launch(executable_path=executable, args=args, headless=True)


def pixel_variance(png: bytes) -> float:
    """Variance of the grey levels (0-255) of a PNG screenshot: 0 for a blank (uniform) image."""
    from PIL import Image, ImageStat

    with Image.open(io.BytesIO(png)) as image:
        return float(ImageStat.Stat(image.convert("L")).var[0])


@dataclass
class OpenedReport:
    """A report opened in a page: what the page logged and requested since the navigation started.

    Attributes
    ----------
    page : playwright.sync_api.Page
        The page.
    path : Path
        The report file.
    url : str
        Where the page was opened: the file's ``file://`` URL, or :data:`SERVED_URL` when served.
    console_errors : list of str
        Console messages of type ``error`` and uncaught page errors.
    requests : list of str
        URL of every request the page made, the report's own included (any other one is blocked).
    popups : list of str
        URL of every window the page opened (none opens: a test asserts it).
    load_seconds : float
        From the navigation to every plot drawn (the page's ``data-plots-drawn`` mark).
    """

    page: Any
    path: Path
    url: str
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    popups: list[str] = field(default_factory=list)
    load_seconds: float = float("nan")

    @classmethod
    def open(
        cls,
        browser: Any,
        path: Path,
        *,
        expected_plots: int | None = None,
        width: int = 1400,
        timeout: float = 60.0,
        served_csp: str | None = None,
        init_script: str | None = None,
    ):
        """Open ``path`` in a new context's page ``width`` px wide; wait until the page marks its plots drawn.

        ``served_csp``: serve the file at :data:`SERVED_URL` with this Content-Security-Policy header (as the
        service does) instead of opening it as a file. ``init_script`` runs in the page before its own scripts.
        Raises RuntimeError when the page marks a plot failed, or draws another number than ``expected_plots``.
        """
        context = browser.new_context(viewport={"width": width, "height": 900}, accept_downloads=True)
        page = context.new_page()
        path = Path(path)
        own = path.resolve().as_uri() if served_csp is None else SERVED_URL
        opened = cls(page=page, path=path, url=own)
        page.on("console", lambda message: message.type == "error" and opened.console_errors.append(message.text))
        page.on("pageerror", lambda error: opened.console_errors.append(f"page error: {error}"))
        page.on("request", lambda request: opened.requests.append(request.url))
        windows: list[Any] = []

        def record_window(other: Any) -> None:  # a popup fires both events: it is recorded once
            if other is not page and all(other is not seen for seen in windows):
                windows.append(other)
                opened.popups.append(other.url)

        page.on("popup", record_window)
        context.on("page", record_window)

        def answer(route: Any) -> None:
            if route.request.url != own:
                route.abort()
            elif served_csp is None:
                route.continue_()
            else:
                body = path.read_bytes()
                headers = {"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": served_csp}
                route.fulfill(status=200, headers=headers, body=body)

        context.route("**/*", answer)
        if init_script is not None:
            page.add_init_script(init_script)
        start = time.perf_counter()
        page.goto(own, timeout=timeout * 1000)
        page.wait_for_function(PLOTS_READY, timeout=timeout * 1000, polling=50)
        opened.load_seconds = time.perf_counter() - start
        failed = page.evaluate("() => document.documentElement.getAttribute('data-plots-failed')")
        drawn = page.evaluate("() => Number(document.documentElement.getAttribute('data-plots-drawn'))")
        if failed is not None or (expected_plots is not None and drawn != expected_plots):
            raise RuntimeError(f"{path}: plots failed ({failed}) or {drawn} drawn, {expected_plots} expected")
        return opened

    @property
    def foreign_requests(self) -> list[str]:
        """Requests for anything other than the report itself."""
        return [url for url in self.requests if url != self.url]

    def plots(self) -> list[dict[str, Any]]:
        """Each plot's id, traces (``type``, ``visible``, ``points``), drawn SVG ``marks`` and painted ``canvases``."""
        return self.page.evaluate(PLOT_SUMMARIES)

    def section_ids(self) -> list[str]:
        """Ids of the page's ``<section>`` elements, in order."""
        return self.page.evaluate("() => [...document.querySelectorAll('section[id]')].map(s => s.id)")

    def screenshot_variance(self, selector: str) -> float:
        """Pixel variance of a screenshot of the element ``selector``."""
        return pixel_variance(self.page.locator(selector).first.screenshot())

    def first_screens(self, sections: list[str], *, height: int = 1000) -> bytes:
        """A PNG of the page's top and the first screen of each of ``sections``, stacked.

        Each section is cut after its last figure or table that ends within ``height`` px of its top
        (the page's header goes with the first section).
        """
        from PIL import Image

        clips = self.page.evaluate(SECTION_SCREENS, {"ids": sections, "height": height})
        clips[0][0] = 0.0
        width = self.page.viewport_size["width"]
        pieces = []
        for top, bottom in clips:
            box = {"x": 0, "y": top, "width": width, "height": bottom - top}
            pieces.append(Image.open(io.BytesIO(self.page.screenshot(full_page=True, clip=box))))
        sheet = Image.new("RGB", (width, sum(piece.height for piece in pieces)), "white")
        for piece, y in zip(pieces, itertools.accumulate([0] + [piece.height for piece in pieces]), strict=False):
            sheet.paste(piece, (0, y))
        out = io.BytesIO()
        sheet.save(out, format="PNG", optimize=True)
        return out.getvalue()

    def toolbar_buttons(self) -> list[dict[str, Any]]:
        """Per plot, its ``id`` and its mode bar ``buttons`` (``title``, ``tabindex``)."""
        return self.page.evaluate(TOOLBAR_BUTTONS)

    def click_toolbar(self, plot_id: str, index: int, *, download_timeout: float = 30.0) -> str | None:
        """Click the ``index``-th mode bar button of plot ``plot_id``; the name of the file it saved, if any.

        The camera button saves a file (plotly.js draws the plot on a canvas and clicks a ``blob:`` link); that
        download is waited for. Any other button is clicked and its redraw waited for (``plotly_afterplot`` or
        the next two frames, whichever the button causes).
        """
        plot = self.page.locator(f"#{plot_id}")
        plot.hover(position={"x": 5, "y": 5})
        button = plot.locator(".modebar-btn").nth(index)
        if button.get_attribute("data-title", timeout=5000).startswith("Download plot"):
            with self.page.expect_download(timeout=download_timeout * 1000) as download:
                button.click()
            return download.value.suggested_filename
        button.click()
        self.page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
        return None

    def keyboard_path(self, target: str, *, limit: int = 40) -> list[str]:
        """The stops from the top of the page to the element ``target`` (a CSS selector) by keyboard.

        Tab, from a page whose focus is at its start, until ``target`` has the focus; on a link to ``target``
        (``href="#<its id>"``, a skip link), Enter, counted as a stop too. At most ``limit`` stops.
        """
        self.page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
        self.page.mouse.click(1, 1)  # the focus navigation starts from the page's start again
        target_id = self.page.locator(target).first.get_attribute("id")
        stops: list[str] = []
        while len(stops) < limit:
            on_link = self.page.evaluate("id => document.activeElement.getAttribute('href') === '#' + id", target_id)
            self.page.keyboard.press("Enter" if on_link else "Tab")
            stops.append(("Enter: " if on_link else "") + self.page.evaluate(FOCUSED))
            if self.page.evaluate("id => document.activeElement.id === id", target_id):
                break
        return stops

    def overflowing(self) -> dict[str, Any]:
        """The viewport's ``width``, the page's ``scrollWidth`` and the ``wide`` elements past the viewport's right
        edge (inside tables' scrolling boxes left out)."""
        return self.page.evaluate(OVERFLOWING)

    def wait_until_nothing_overflows(self, bound_ms: int = 60_000) -> None:
        """Wait (at most ``bound_ms``) until no element is past the viewport's right edge, as :meth:`overflowing`
        sees it: plots resize after a window does, each on its own (Plotly's responsive handler is debounced)."""
        self.page.wait_for_function(f"() => ({OVERFLOWING})().wide.length === 0", timeout=bound_ms, polling=100)

    def scroll_boxes(self) -> list[dict[str, Any]]:
        """Per table (``id``): its box's ``overflow`` (x), whether the table ``fits`` and whether its last column is
        ``reached`` by scrolling the box to its right end."""
        return self.page.evaluate(SCROLL_BOXES)

    def close(self) -> None:
        """Close the page and its context."""
        self.page.context.close()


def main(argv: list[str]) -> None:
    """``browser.py REPORT.html OUT.png SECTION...``: the first screens of a report's sections as one PNG."""
    from playwright.sync_api import sync_playwright

    report, output, *sections = argv
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        opened = OpenedReport.open(browser, Path(report))
        Path(output).write_bytes(opened.first_screens(sections or ["overview"]))
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1:])
