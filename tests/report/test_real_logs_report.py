"""The report of real logs, built by the README's commands alone and opened in a real headless Chromium.

The logs: the LBNL samples under ``tests/data/darshan`` (2021) and the darshan-runtime runs of three writers
started together (``tests/data/darshan-runtime/contention-light/together``), years apart, so that most of the
span is idle. Checked in the page: the Gantt draws phase bars (pixels of set colours in its screenshot) on the
busy period, every timeline's axis is a date axis, and the model check shows the numbers computed here from the
replay's per-job table.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from iosets.report._palette import SET_PALETTE

pytestmark = pytest.mark.slow  # the replay of 2 LBNL logs (~100 k requests) and a browser: 20-90 s

DATA = Path(__file__).resolve().parents[1] / "data"
LOGS = (DATA / "darshan", DATA / "darshan-runtime" / "contention-light" / "together")
TIME_FIGURES = ("timelines-concurrency", "timelines-gantt", "timelines-shares")
SET_PIXELS = 200
"""Fewest pixels of a set colour in the Gantt's screenshot counted as bars drawn (one bar is thousands)."""


def _run(*args: object) -> None:
    """Run ``iosets ARGS`` in this process; fail with its output when it fails."""
    from typer.testing import CliRunner

    from iosets.cli import app

    result = CliRunner().invoke(app, [str(arg) for arg in args])
    assert result.exit_code == 0, f"iosets {' '.join(map(str, args))}:\n{result.output}"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The README's command sequence on the real logs (the README's "Real logs" block, one command each)."""
    out = tmp_path_factory.mktemp("real-logs")
    jobs, rec, site, perjob = (out / name for name in ("jobs.parquet", "rec.parquet", "site.parquet", "perjob.parquet"))
    _run("analyze", *LOGS, "-o", jobs)
    _run("recommend", jobs, "--bandwidth", "1e9", "-o", rec)
    _run("ingest", *LOGS, "--site", "-o", site)
    _run("replay-trace", site, "--rec", rec, "--compare", "fcfs,wfq,iosets-wfq", "-o", perjob)
    _run("report", jobs, "--rec", rec, "--site", site, "--replay", perjob, "-o", out / "report.html")
    return out


@pytest.fixture(scope="module")
def opened(harness, chromium, folder):
    """The real logs' report opened in Chromium with every plot drawn."""
    report = harness.OpenedReport.open(chromium, folder / "report.html")
    yield report
    report.close()


def _set_pixels(png: bytes) -> int:
    """Pixels of the screenshot whose colour is one of the set colours (within 8 levels per channel)."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        pixels = np.asarray(image.convert("RGB"), dtype=np.int16).reshape(-1, 3)
    colours = np.array([[int(c[i : i + 2], 16) for i in (1, 3, 5)] for c in SET_PALETTE], dtype=np.int16)
    near = (np.abs(pixels[:, None, :] - colours[None, :, :]).max(axis=2) <= 8).any(axis=1)
    return int(near.sum())


def test_the_logs_span_years_and_the_page_has_no_error(opened, folder):
    starts = pl.read_parquet(folder / "jobs.parquet")["start"].drop_nulls()
    assert starts.max() - starts.min() > 365 * 86400  # the case that drew a blank Gantt: mostly idle
    assert opened.console_errors == []


def test_the_gantt_draws_phase_bars_in_set_colours(opened):
    gantt = opened.page.locator("#timelines-gantt")
    assert _set_pixels(gantt.screenshot()) >= SET_PIXELS
    low, high = opened.page.evaluate(
        "() => document.getElementById('timelines-gantt')._fullLayout.xaxis.range.map(d => Date.parse(d + 'Z'))"
    )
    assert 0 < high - low < 3600 * 1000  # the busy period (seconds to minutes), not the years the logs span


def test_every_timeline_is_on_a_date_axis(opened):
    for figure in TIME_FIGURES:
        kind = opened.page.evaluate(f"() => document.getElementById('{figure}')._fullLayout.xaxis.type")
        assert kind == "date", figure


def test_the_model_check_shows_the_median_and_p90_of_the_replay(opened, folder):
    jobs = pl.read_parquet(folder / "perjob.parquet")
    first = jobs.filter(pl.col("scheduler") == jobs["scheduler"][0])
    ratio = (first["alone_runtime"] / first["recorded_runtime"]).to_numpy()
    error = np.abs(ratio[np.isfinite(ratio)] - 1)
    median, p90 = float(np.median(error)), float(np.quantile(error, 0.9))
    section = opened.page.locator("#model-check")
    assert "is-missing" not in (section.get_attribute("class") or "")
    values = [
        float(v)
        for v in section.locator("td[data-value]").evaluate_all("cells => cells.map(c => c.dataset.value)")
        if _is_number(v)
    ]
    assert any(v == pytest.approx(median, rel=1e-9) for v in values)
    assert any(v == pytest.approx(p90, rel=1e-9) for v in values)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
