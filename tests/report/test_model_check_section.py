"""The "Model check" section: the AloneKnown replay (tests/conftest.py) read back from the page, numbers by hand."""

import polars as pl
import pytest
from reading import read_page

from iosets.replay import compare_schedulers
from iosets.replay._model_check import UNTRUSTED
from iosets.report import build_report
from iosets.report._inputs import read_inputs
from iosets.report._model_check import model_check_section

JOBS = pl.DataFrame({"job_id": ["a", "b", "c", "d", "e"]})


@pytest.fixture
def comparison(alone_known):
    return compare_schedulers(alone_known.site, alone_known.rec, ["fcfs", "wfq"], device=alone_known.device)


def test_the_section_gives_the_ratios_median_p90_and_the_warning(comparison):
    page = read_page(build_report(JOBS, replay=comparison).html)
    section = page.sections["model-check"]
    assert section["title"] == "Model check" and section["missing"] is None
    reading = " ".join(section["readings"])
    assert "Over 4 jobs, |alone / recorded - 1| has median 37.5 % and p90 85 %; the threshold on the p90 is 25 %." in (
        reading
    )
    assert "Left out: 1 job with no recorded time (every request at one date)." in reading
    assert f"Verdict: p90 of |alone / recorded - 1| is 85 %, above 25 %: {UNTRUSTED}." in reading
    assert "fcfs's rows are read" in reading
    (summary,) = page.tables["model-check-summary"].records()
    assert (summary["jobs"], summary["median"], summary["threshold"], summary["trusted"]) == (
        "4",
        "0.375",
        "0.25",
        "no",
    )
    assert float(summary["p90"]) == pytest.approx(0.85, rel=1e-12)
    rows = [(row["job_id"], row["alone_ratio"]) for row in page.tables["model-check-jobs"].records()]
    assert rows == [("c", "2.0"), ("b", "0.5"), ("d", "1.25"), ("a", "1.0"), ("e", "")]  # farthest first
    figure = page.figure("model-check-ratio")
    (trace,) = figure["data"]
    assert (trace["x"], trace["y"]) == ([0.5, 1.0, 1.25, 2.0], [0.25, 0.5, 0.75, 1.0])
    band = figure["layout"]["shapes"][0]
    assert (band["x0"], band["x1"]) == (0.75, 1.25)


def test_a_replay_that_reproduces_its_jobs_gives_the_trusted_verdict(alone_known):
    kept = alone_known.site.filter(pl.col("job_id").is_in(["a", "d"]))  # ratios 1 and 1.25: p90 22.5 %
    replay = compare_schedulers(kept, alone_known.rec, ["fcfs"], device=alone_known.device)
    section = model_check_section(read_inputs(JOBS, replay=replay))
    assert "median 12.5 % and p90 22.5 %" in section.reading
    assert "Verdict: at least nine jobs in ten are within the threshold" in section.reading
    assert UNTRUSTED not in section.reading
    assert section.tables[0].frame.row(0) == (2, 0.125, pytest.approx(0.225), 0.25, "yes")


def test_job_ids_from_files_are_escaped(comparison):
    odd = comparison.jobs.with_columns(pl.col("job_id").replace({"c": "<b>c</b>"}))
    html = build_report(JOBS, replay={"jobs": odd}).html
    start = html.index('<section id="model-check"')
    section = html[start : html.index("</section>", start)]
    assert "<b>c</b>" not in section and "&lt;b&gt;c&lt;/b&gt;" in section


def test_without_a_trace_replay_the_section_names_the_commands():
    section = model_check_section(read_inputs(JOBS))
    assert section.missing.startswith("No trace replay given. Run `iosets replay-trace site.parquet --rec rec.parquet")
    assert section.figures == () and section.tables == ()
