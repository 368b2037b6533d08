"""Each job's detail in the report: the flags' rules on hand-built jobs, the detail the page embeds for real
Darshan logs, and the panel a row opens in a real Chromium (click and keyboard)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from reading import read_page

from iosets.analyzer import analyze
from iosets.analyzer._detail import requests_details
from iosets.report import build_report, read_inputs
from iosets.report._format import format_number, format_seconds
from iosets.report._job_detail import MAX_DETAILS, job_details, job_flags
from iosets.report._jobs_table import jobs_table_section

RUNTIME = Path(__file__).parents[1] / "data" / "darshan-runtime"
TRUTH = {j["name"]: j for j in json.loads((RUNTIME / "corpus" / "ground_truth.json").read_text())["jobs"]}
SMALL, LARGE = TRUTH["p07_w1_small64k"], TRUTH["p01_w0.5_a0.2"]
HOSTILE_APP = "<img src=x onerror=alert(1)>&amp;"
"""An app name as a log could hold it: the page must show it as text."""


def _flag(flags: list[dict], name: str) -> dict:
    return next(flag for flag in flags if flag["name"] == name)


def _requests(sizes: list[int], offsets: list[int], ranks: list[int] | None = None) -> pl.DataFrame:
    n = len(sizes)
    return pl.DataFrame(
        {
            "job_id": ["j"] * n,
            "rank": ranks or [0] * n,
            "op": ["write"] * n,
            "offset": offsets,
            "size": sizes,
            "start": [float(i) for i in range(n)],
            "end": [i + 0.5 for i in range(n)],
            "file": ["f"] * n,
        }
    )


def test_all_4_kib_requests_raise_the_small_requests_flag_and_1_mib_ones_do_not():
    n = 2000
    small = requests_details(_requests([4096] * n, [4096 * i for i in range(n)]))["detail"].row(0, named=True)
    flag = _flag(job_flags(small), "Small requests")
    assert flag["raised"] is True
    assert flag["measured"] == "100.0 % (2,000 of 2,000 requests)"
    large = requests_details(_requests([1 << 20] * n, [(1 << 20) * i for i in range(n)]))["detail"].row(0, named=True)
    assert _flag(job_flags(large), "Small requests")["raised"] is False
    # front to back: no random access
    assert _flag(job_flags(small), "Random access")["raised"] is False


def test_requests_that_seek_back_each_time_raise_the_random_access_flag():
    n = 2000
    detail = requests_details(_requests([4096] * n, [4096 * (n - i) for i in range(n)]))["detail"].row(0, named=True)
    flag = _flag(job_flags(detail), "Random access")
    # the first request of the file counts as sequential, the 1,999 after it each seek back
    assert flag["raised"] is True
    assert flag["measured"] == "100.0 % (1,999 of 2,000 requests)"


def test_a_flag_below_its_absolute_floor_is_not_raised():
    # every request small, but only 10 of them: Drishti's floor of 1,000 keeps the flag down
    detail = requests_details(_requests([4096] * 10, [0] * 10))["detail"].row(0, named=True)
    assert _flag(job_flags(detail), "Small requests")["raised"] is False
    assert _flag(job_flags(detail), "Random access")["raised"] is False


def test_metadata_and_rank_flags_follow_their_thresholds():
    base = {"requests": None, "small_requests": None, "sequential": None, "accesses": None}
    heavy = {**base, "meta_time": 4.0, "io_time": 10.0, "slowest_rank_time": 10.0, "fastest_rank_time": 8.0}
    heavy |= {"slowest_rank_bytes": 100.0, "fastest_rank_bytes": 100.0}
    flags = job_flags(heavy)
    assert _flag(flags, "Metadata-heavy")["raised"] is True  # 40 % > 30 %
    assert _flag(flags, "Unbalanced ranks")["raised"] is True  # (10 - 8) / 10 = 20 % > 15 % in time
    even = heavy | {"meta_time": 2.0, "fastest_rank_time": 9.0, "fastest_rank_bytes": 80.0}
    flags = job_flags(even)
    assert _flag(flags, "Metadata-heavy")["raised"] is False  # 20 %
    assert _flag(flags, "Unbalanced ranks")["raised"] is False  # 10 % in time, 20 % in bytes
    assert _flag(job_flags(even | {"fastest_rank_bytes": 60.0}), "Unbalanced ranks")["raised"] is True  # 40 % bytes
    unknown = job_flags(None)
    assert [flag["raised"] for flag in unknown] == [None] * 4
    assert all(flag["rule"] for flag in unknown)


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Path:
    """The jobs table (and its detail tables) of two real Darshan logs: 64 KiB and 1 MiB requests."""
    folder = tmp_path_factory.mktemp("real")
    logs = [RUNTIME / "corpus" / f"{name}.darshan" for name in (SMALL["name"], LARGE["name"])]
    analysis = analyze(logs)
    analysis = type(analysis)(
        **{name: analysis[name] for name in analysis}
        | {"jobs": analysis.jobs.with_columns(pl.lit(HOSTILE_APP).alias("app"))}
    )
    analysis.write(folder / "jobs.parquet")
    return folder / "jobs.parquet"


def test_the_report_reads_the_detail_tables_beside_the_jobs_table(real):
    inputs = read_inputs(real)
    assert inputs.job_detail is not None and inputs.job_detail.height == 2
    assert inputs.modules is not None and inputs.job_sizes is not None and inputs.job_activity is not None
    assert inputs.sources["job_detail"] == str(real.with_name("jobs.detail.parquet"))
    bare = pl.read_parquet(real)
    assert read_inputs(bare).job_detail is None  # a frame alone has no companions


def test_the_page_embeds_each_jobs_detail_with_the_programs_numbers(real):
    page = read_page(build_report(real).html)
    details = json.loads(page.scripts["jobs-table-details"])
    small, large = details[SMALL["job_id"]], details[LARGE["job_id"]]
    # the histogram: every one of the program's 64 KiB requests in 10-100 KiB, its 1 MiB ones in 100 KiB-1 MiB
    (writes,) = small["sizes"]["data"]
    assert writes["x"][3] == "10-100 KiB" and writes["y"][3] == SMALL["requests"] == sum(writes["y"])
    (writes,) = large["sizes"]["data"]
    assert writes["y"][4] == LARGE["requests"] == sum(writes["y"])
    # I/O over time: the bytes the program wrote, in at most 48 bins
    (written,) = small["activity"]["data"]
    assert sum(written["y"]) == pytest.approx(SMALL["bytes_written"], abs=48)
    assert len(written["x"]) <= 48
    assert _flag(small["flags"], "Small requests")["raised"] is True
    assert _flag(large["flags"], "Small requests")["raised"] is False
    assert small["modules"]["rows"][0][:3] == ["POSIX", "0 B", "336 MB"]
    evidence = dict(small["evidence"])
    assert evidence["I/O phases"] == str(SMALL["n_phases"])
    assert evidence["rhythm from"] == "DXT_POSIX"
    assert HOSTILE_APP in small["title"]  # kept as text in the JSON ...
    assert "<img" not in page.scripts["jobs-table-details"]  # ... which cannot close its script


def test_a_recommendation_adds_why_the_job_has_its_set(real):
    from iosets.recommender import recommend

    jobs = pl.read_parquet(real)
    rec = recommend(jobs)
    detail = job_details(read_inputs(real, recommendation=rec), [SMALL["job_id"]])[SMALL["job_id"]]
    row = rec.filter(pl.col("job_id") == SMALL["job_id"]).row(0, named=True)
    w_iter = jobs.filter(pl.col("job_id") == SMALL["job_id"])["w_iter"].item()
    # a periodic job: its set comes from its w_iter (SET-10: round(log10 w_iter))
    assert not row["conservative"] and row["set"] == round(math.log10(w_iter))
    assert dict(detail["evidence"])["set"] == (
        f"set {row['set']} (priority {format_number(row['priority'])}): from its w_iter of {format_seconds(w_iter)}"
    )


def test_the_detail_is_capped_to_the_first_rows():
    n = MAX_DETAILS + 5
    jobs = pl.DataFrame({"job_id": [f"j{i:04d}" for i in range(n)], "bytes_read": [float(n - i) for i in range(n)]})
    section = jobs_table_section(read_inputs(jobs))
    (table,) = section.tables
    assert table.details is not None and len(table.details) == MAX_DETAILS
    assert list(table.details) == table.frame["job_id"].head(MAX_DETAILS).to_list()
    assert f"The first {MAX_DETAILS:,} rows" in table.note


@pytest.mark.slow
def test_a_row_opens_its_jobs_detail_by_click_and_by_keyboard(harness, chromium, real, tmp_path):
    path = build_report(real, output=tmp_path / "report.html").write(tmp_path / "report.html")
    opened = harness.OpenedReport.open(chromium, path)
    page = opened.page
    try:
        row = page.locator(f"#jobs-table tbody tr[data-job='{SMALL['job_id']}']")
        # the row's first cell still reads as the job id (the button's word is drawn by CSS)
        assert row.locator("td").first.inner_text() == SMALL["job_id"]
        row.locator("td").nth(3).click()
        panel = page.locator("#jobs-table-detail")
        panel.wait_for(state="visible")
        assert panel.get_attribute("data-job") == SMALL["job_id"]
        assert panel.locator("h3").inner_text() == f"Job {SMALL['job_id']} (app {HOSTILE_APP}, user 0)"
        assert panel.locator("img").count() == 0  # the app name is text, not markup
        flag = panel.locator("tr[data-flag='Small requests']")
        assert flag.get_attribute("data-raised") == "true"
        assert flag.locator("td").nth(2).inner_text() == "100.0 % (5,120 of 5,120 requests)"
        page.wait_for_function("() => document.querySelectorAll('#jobs-table-detail .js-plotly-plot').length === 2")
        sizes = page.evaluate("() => document.getElementById('jobs-table-detail-sizes').data[0].y")
        assert sizes[3] == SMALL["requests"] and sum(sizes) == SMALL["requests"]
        written = page.evaluate("() => document.getElementById('jobs-table-detail-activity').data[0].y")
        assert sum(written) == pytest.approx(SMALL["bytes_written"], abs=48)
        # keyboard: Escape closes and gives the focus back; Enter on the other row's button opens it
        page.keyboard.press("Escape")
        assert panel.is_hidden()
        button = page.locator(f"#jobs-table tbody tr[data-job='{LARGE['job_id']}'] button.job-detail-open")
        button.focus()
        page.keyboard.press("Enter")
        panel.wait_for(state="visible")
        assert panel.get_attribute("data-job") == LARGE["job_id"]
        assert button.get_attribute("aria-expanded") == "true"
        large = panel.locator("tr[data-flag='Small requests']")
        assert large.get_attribute("data-raised") == "false"
        assert large.locator("td").nth(2).inner_text() == "0.0 % (0 of 1,600 requests)"
        assert page.evaluate("() => document.activeElement.id") == "jobs-table-detail-title"
        page.keyboard.press("Escape")
        assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == (
            f"Details of job {LARGE['job_id']}"
        )
        assert opened.console_errors == []
        assert opened.foreign_requests == []
    finally:
        opened.close()


def test_an_analysis_in_python_gives_the_report_its_detail_tables():
    analysis = analyze([RUNTIME / "corpus" / f"{SMALL['name']}.darshan"])
    inputs = read_inputs(analysis)
    assert inputs.jobs.equals(analysis.jobs)
    assert inputs.job_detail is not None and inputs.job_detail.equals(analysis.detail)
    assert inputs.job_sizes is not None and inputs.job_activity is not None and inputs.modules is not None
