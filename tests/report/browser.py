"""Headless Chromium for the report: Debian's ``chromium`` driven by Playwright, and what to read off a page.

Playwright's own browser download is not used: :func:`launch_chromium` starts the ``chromium`` found on
PATH (``apt-get install chromium``). :class:`OpenedReport` opens a report as ``file://``, records every
console error, page error and request from the start of the navigation, waits until every Plotly plot
is drawn, and reads the plots and sections back. Shared by ``tests/report`` (through its ``conftest.py``)
and ``benchmarks/report.py``. Run as a script, it makes the README's screenshot (docs/report.png)::

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

FIGURE_SELECTOR = "div.plot[data-figure]"
"""The report's figure containers (``iosets/report/templates/report.html.j2``)."""

PLOTS_READY = """({expected, figures}) => {
    const plots = [...document.querySelectorAll('.js-plotly-plot')];
    const wanted = expected === null ? document.querySelectorAll(figures).length : expected;
    return document.readyState === 'complete' && plots.length >= wanted
        && plots.every(plot => plot._fullLayout && plot._fullData && plot.querySelector('.main-svg'));
}"""
"""True once the page has loaded and ``expected`` Plotly plots (null: one per figure of the page) have drawn."""

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
    console_errors : list of str
        Console messages of type ``error`` and uncaught page errors.
    requests : list of str
        URL of every request the page made, the report's own included.
    load_seconds : float
        From the navigation to every plot drawn.
    """

    page: Any
    path: Path
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    load_seconds: float = float("nan")

    @classmethod
    def open(
        cls, browser: Any, path: Path, *, expected_plots: int | None = None, width: int = 1400, timeout: float = 60.0
    ):
        """Open ``path`` in a new page ``width`` px wide; wait until ``expected_plots`` (default: all) are drawn."""
        page = browser.new_page(viewport={"width": width, "height": 900})
        opened = cls(page=page, path=Path(path))
        page.on("console", lambda message: message.type == "error" and opened.console_errors.append(message.text))
        page.on("pageerror", lambda error: opened.console_errors.append(f"page error: {error}"))
        page.on("request", lambda request: opened.requests.append(request.url))
        start = time.perf_counter()
        page.goto(opened.path.resolve().as_uri(), timeout=timeout * 1000)
        ready = {"expected": expected_plots, "figures": FIGURE_SELECTOR}
        page.wait_for_function(PLOTS_READY, arg=ready, timeout=timeout * 1000, polling=50)
        opened.load_seconds = time.perf_counter() - start
        return opened

    @property
    def foreign_requests(self) -> list[str]:
        """Requests for anything other than the report file itself."""
        own = self.path.resolve().as_uri()
        return [url for url in self.requests if url != own]

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

    def close(self) -> None:
        """Close the page."""
        self.page.close()


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
