"""The report of a large site: build time, file size and load time in Chromium, against the issue's targets.

A generated 100 000-job site with a trace replay under three schedulers (``make_large_site``: jobs,
recommendation, the replay's four tables, a tuning ranking) is written as Parquet files, then, in
interleaved runs: ``iosets report`` builds the page in a fresh process (wall time, imports included),
and headless Chromium opens it in a new page with its own browser context (from the navigation to the page's
``data-plots-drawn`` mark, set by its script once every ``Plotly.newPlot`` has resolved: ``tests/report/browser.py``).
Targets (issues 14 and 24): build <= 10 s, file <= 20 MB, load to every plot drawn <= 5 s; each measure is printed
with its ratio to its target (<= 1: met).
Last, where the time goes: each step of the build in this process (reading, each section, rendering),
the bytes of each section in the page, and in Chromium the load time of plotly.js alone and of the
page without drawing its figures, and the time to draw each figure again.

Usage: .venv/bin/python benchmarks/report.py [--jobs N] [--runs R] [--keep FOLDER]
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iosets.datasets import make_large_site
from iosets.replay import SchedulerComparison

TARGETS = {"build": 10.0, "size": 20.0, "load": 5.0}
"""Seconds, MB (1e6 bytes), seconds."""
HARNESS = Path(__file__).resolve().parent.parent / "tests" / "report" / "browser.py"

REDRAW = """async id => {
    const div = document.getElementById(id);
    const figure = JSON.parse(document.getElementById(div.dataset.figure).textContent);
    const start = performance.now();
    await Plotly.newPlot(div, figure.data, Object.assign({}, div.layout), div._context);
    return performance.now() - start;
}"""
"""Milliseconds to draw one figure again from its embedded JSON."""
DRAW_CALL = "  drawFigures();\n"
"""The page script's call that draws every figure (``iosets/report/templates/report.js``)."""


def load_harness():
    """``tests/report/browser.py``: Chromium from PATH, driven by Playwright."""
    spec = importlib.util.spec_from_file_location("iosets_report_browser", HARNESS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def write_site(n_jobs: int, folder: Path) -> dict[str, Path]:
    """The generated site's report inputs as Parquet files; prints how long generating and writing took."""
    start = time.perf_counter()
    site = make_large_site(n_jobs, random_state=0)
    generated = time.perf_counter() - start
    paths = {
        "jobs": folder / "jobs.parquet",
        "rec": folder / "rec.parquet",
        "replay": folder / "perjob.parquet",
        "tune": folder / "tune.parquet",
    }
    site.jobs.write_parquet(paths["jobs"])
    site.recommendation.write_parquet(paths["rec"])
    site.tune.write_parquet(paths["tune"])
    site.replay_jobs.write_parquet(paths["replay"])
    for name, path in SchedulerComparison.paths(paths["replay"]).items():
        if name != "jobs":
            getattr(site, f"replay_{name}").write_parquet(path)
    written = time.perf_counter() - start - generated
    print(
        f"site: {n_jobs:,} jobs, {site.replay_phases.height:,} replayed phases "
        f"({site.replay_schedulers.height} schedulers); generated in {generated:.2f} s, written in {written:.2f} s"
    )
    return paths


def build_once(paths: dict[str, Path], output: Path) -> float:
    """Wall time of ``iosets report`` in a fresh process (s)."""
    command = [str(Path(sys.executable).with_name("iosets")), "report", str(paths["jobs"]), "-o", str(output)]
    for option in ("rec", "replay", "tune"):
        command += [f"--{option}", str(paths[option])]
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def load_once(harness, browser, output: Path, n_figures: int) -> float:
    """Seconds to open the report in a new page (its own browser context); fails on a console error or a request."""
    opened = harness.OpenedReport.open(browser, output, expected_plots=n_figures, timeout=120.0)
    opened.close()
    if opened.console_errors or opened.foreign_requests:
        raise RuntimeError(f"console errors {opened.console_errors}, foreign requests {opened.foreign_requests}")
    return opened.load_seconds


def build_steps(paths: dict[str, Path]) -> tuple[list[tuple[str, float]], dict[str, int]]:
    """Seconds of each build step in this process, and each section's figure count."""
    from iosets.report import default_builders, read_inputs, render_report

    steps = []
    start = time.perf_counter()
    inputs = read_inputs(paths["jobs"], recommendation=paths["rec"], replay=paths["replay"], tune=paths["tune"])
    steps.append(("read and validate the inputs", time.perf_counter() - start))
    sections = []
    for builder in default_builders():
        start = time.perf_counter()
        sections.append(builder(inputs))
        steps.append((f"section {sections[-1].id}", time.perf_counter() - start))
    start = time.perf_counter()
    render_report(inputs, sections)
    steps.append(("render the page", time.perf_counter() - start))
    return steps, {section.id: len(section.figures) for section in sections}


def section_sizes(page: str) -> list[tuple[str, int]]:
    """Bytes of each ``<section>`` of the page (its figures' JSON and tables), then of everything else."""
    found = list(re.finditer(r'<section id="([^"]+)"', page))
    ends = [match.start() for match in found[1:]] + [page.index("</main>")]
    sizes = [(match.group(1), end - match.start()) for match, end in zip(found, ends, strict=True)]
    return [*sizes, ("plotly.js, header, script", len(page) - sum(size for _, size in sizes))]


def opened_in(browser, page_path: Path, ready: str) -> float:
    """Seconds from navigating to ``page_path`` to ``ready`` (a JavaScript predicate) holding."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    start = time.perf_counter()
    page.goto(page_path.as_uri(), timeout=120_000)
    page.wait_for_function(ready, timeout=120_000, polling=50)
    seconds = time.perf_counter() - start
    page.close()
    return seconds


def page_costs(harness, browser, output: Path, n_figures: int) -> tuple[dict[str, float], list[tuple[str, float]]]:
    """Where the load time goes: plotly.js alone, the page without drawing its figures, each figure's drawing (ms)."""
    import plotly.offline

    page = output.read_text(encoding="utf-8")
    costs: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        bare = Path(folder) / "plotly.html"
        bare.write_text(f"<!DOCTYPE html><html><body><script>{plotly.offline.get_plotlyjs()}</script></body></html>")
        costs["plotly.js alone"] = opened_in(browser, bare, "() => window.Plotly !== undefined")
        if DRAW_CALL in page:
            undrawn = Path(folder) / "undrawn.html"
            undrawn.write_text(page.replace(DRAW_CALL, ""), encoding="utf-8")
            costs["the page, figures not drawn"] = opened_in(
                browser, undrawn, "() => document.readyState === 'complete'"
            )
    opened = harness.OpenedReport.open(browser, output, expected_plots=n_figures, timeout=120.0)
    ids = [plot["id"] for plot in opened.plots()]
    redraws = [(figure_id, opened.page.evaluate(REDRAW, figure_id)) for figure_id in ids]
    opened.close()
    return costs, redraws


def ratio(measured: float, target: float) -> str:
    """``measured / target`` (<= 1: the target is met)."""
    return f"{measured / target:.2f}x"


def spread(values: list[float], unit: str) -> str:
    """``min-max unit (median m)``."""
    return f"{min(values):.2f}-{max(values):.2f} {unit} (median {statistics.median(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000, help="Jobs of the generated site.")
    parser.add_argument("--runs", type=int, default=3, help="Interleaved build and load runs.")
    parser.add_argument("--keep", type=Path, help="Write the inputs and the report into this folder and keep them.")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    harness = load_harness()
    with tempfile.TemporaryDirectory() as temporary:
        folder = args.keep or Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        paths = write_site(args.jobs, folder)
        output = folder / "report.html"
        steps, figures = build_steps(paths)
        n_figures = sum(figures.values())
        builds, loads = [], []
        with sync_playwright() as playwright:
            browser = harness.launch_chromium(playwright)
            for _ in range(args.runs):
                builds.append(build_once(paths, output))
                loads.append(load_once(harness, browser, output, n_figures))
            costs, redraws = page_costs(harness, browser, output, n_figures)
            browser.close()
        size = output.stat().st_size / 1e6
        sizes = section_sizes(output.read_text(encoding="utf-8"))

    print(f"\n{'what':<30} {'measured':<36} {'target':<10} worst / target")
    for name, measured, worst, key, unit in (
        ("build (iosets report)", spread(builds, "s"), max(builds), "build", "s"),
        ("file size", f"{size:.2f} MB", size, "size", "MB"),
        ("load to every plot drawn", spread(loads, "s"), max(loads), "load", "s"),
    ):
        print(f"{name:<30} {measured:<36} {f'<= {TARGETS[key]:g} {unit}':<10} {ratio(worst, TARGETS[key])}")
    met = max(builds) <= TARGETS["build"] and size <= TARGETS["size"] and max(loads) <= TARGETS["load"]
    print("every target met" if met else "a target is missed: see where the time goes below")

    print("\nbuild steps in one process:")
    for step, seconds in steps:
        print(f"  {step:<32} {seconds:6.2f} s")
    print("\nweight of each part of the page:")
    for part, weight in sizes:
        print(f"  {part:<28} {figures.get(part, 0):2d} figures {weight / 1e6:6.2f} MB")
    print("\nin the page: " + "; ".join(f"{what} loads in {seconds:.2f} s" for what, seconds in costs.items()))
    print("drawing each figure again:")
    for figure_id, milliseconds in sorted(redraws, key=lambda item: -item[1]):
        print(f"  {figure_id:<32} {milliseconds:7.1f} ms")


if __name__ == "__main__":
    main()
