"""The "Model check" section: the AloneKnown replay (tests/conftest.py) read back from the page, numbers by hand."""

import shutil

import polars as pl
import pytest
from reading import read_page
from typer.testing import CliRunner

from iosets.cli import app
from iosets.replay import compare_schedulers
from iosets.replay._model_check import UNTRUSTED
from iosets.report import build_report
from iosets.report._document import ReportInputs
from iosets.report._inputs import read_inputs
from iosets.report._model_check import (
    CALIBRATE_COMMAND,
    CALIBRATED_REPLAY_COMMAND,
    model_check_grade,
    model_check_section,
)

JOBS = pl.DataFrame({"job_id": ["a", "b", "c", "d", "e"]})


@pytest.fixture
def comparison(alone_known):
    return compare_schedulers(alone_known.site, alone_known.rec, ["fcfs", "wfq"], device=alone_known.device)


def test_the_section_gives_the_ratios_median_p90_the_grade_and_what_to_do(comparison):
    page = read_page(build_report(JOBS, replay=comparison).html)
    section = page.sections["model-check"]
    assert section["title"] == "Model check" and section["missing"] is None
    reading = " ".join(section["readings"])
    assert (
        "Over 4 jobs, |alone / recorded - 1| has median 37.5 % and p90 85.0 %; the threshold on the p90 is 25.0 %."
    ) in reading
    assert "Left out: 1 job with no recorded time (every request at one date)." in reading
    # |ratio - 1| of a, d, b, c: 0, 0.25, 0.5, 1: the median 0.375 is above the threshold: poor
    assert "Grade: poor (fewer than half the jobs run alone within the threshold" in reading
    assert f"The p90 of |alone / recorded - 1| is 85.0 %, above 25.0 %: {UNTRUSTED}." in reading
    assert f"What to do: fit the device on the site trace, {CALIBRATE_COMMAND}" in reading
    assert "fcfs's rows are read" in reading
    (summary,) = page.tables["model-check-summary"].records()
    assert (summary["jobs"], summary["median"], summary["threshold"], summary["trusted"], summary["grade"]) == (
        "4",
        "0.375",
        "0.25",
        "no",
        "poor",
    )
    assert float(summary["p90"]) == pytest.approx(0.85, rel=1e-12)
    shown = dict(
        zip(
            page.tables["model-check-summary"].columns,
            (text for _, text in page.tables["model-check-summary"].rows[0]),
            strict=True,
        )
    )
    assert (shown["median"], shown["p90"], shown["threshold"]) == ("37.5 %", "85.0 %", "25.0 %")
    table = page.tables["model-check-jobs"]
    rows = [(row["job_id"], row["alone_ratio"]) for row in table.records()]
    assert rows == [("c", "2.0"), ("b", "0.5"), ("d", "1.25"), ("a", "1.0"), ("e", "")]  # farthest first
    assert [text for _, text in table.column("recorded_runtime")] == ["1.00 s", "2.00 s", "4.00 s", "2.00 s", "0 s"]
    assert [text for _, text in table.column("alone_ratio")] == ["2.000", "0.500", "1.250", "1.000", ""]
    figure = page.figure("model-check-ratio")
    (trace,) = figure["data"]
    assert (trace["x"], trace["y"]) == ([0.5, 1.0, 1.25, 2.0], [0.25, 0.5, 0.75, 1.0])
    band = figure["layout"]["shapes"][0]
    assert (band["x0"], band["x1"]) == (0.75, 1.25)
    assert figure["layout"]["xaxis"]["range"] == [0.47, 2.03]  # the ratios' span, whatever the band's


def test_each_job_is_drawn_recorded_against_alone_with_the_identity(comparison):
    page = read_page(build_report(JOBS, replay=comparison).html)
    figure = page.figure("model-check-runtimes")
    identity, above, below, points = figure["data"]
    assert identity["x"] == identity["y"] == [1.0, 10.0]  # recorded 1 ... 4 s, alone 1 ... 5 s: one decade
    assert above["y"] == [1.25, 12.5] and below["y"] == [0.75, 7.5]
    # e recorded 0 s: no place on log axes
    assert sorted(zip(points["customdata"], points["x"], points["y"], strict=True)) == [
        ("a", 2.0, 2.0),
        ("b", 2.0, 1.0),
        ("c", 1.0, 2.0),
        ("d", 4.0, 5.0),
    ]
    layout = figure["layout"]
    assert layout["xaxis"]["type"] == layout["yaxis"]["type"] == "log"
    assert layout["xaxis"]["range"] == layout["yaxis"]["range"] == [0, 1]


def test_the_grade_the_verdict_reads(alone_known, comparison):
    grade = model_check_grade(read_inputs(JOBS, replay=comparison))
    assert (grade.grade, grade.median, grade.threshold, grade.n_jobs, grade.n_unchecked, grade.scheduler) == (
        "poor",
        0.375,
        0.25,
        4,
        1,
        "fcfs",
    )
    assert grade.p90 == pytest.approx(0.85)
    assert model_check_grade(read_inputs(JOBS)) is None
    kept = alone_known.site.filter(pl.col("job_id").is_in(["a", "d"]))  # |ratio - 1| 0 and 0.25: p90 22.5 %
    replay = compare_schedulers(kept, alone_known.rec, ["fcfs"], device=alone_known.device)
    assert model_check_grade(read_inputs(JOBS, replay=replay)).grade == "good"
    kept = alone_known.site.filter(pl.col("job_id").is_in(["a", "b", "d"]))  # 0, 0.25, 0.5: median 0.25, p90 0.45
    replay = compare_schedulers(kept, alone_known.rec, ["fcfs"], device=alone_known.device)
    assert model_check_grade(read_inputs(JOBS, replay=replay)).grade == "fair"
    only_e = alone_known.site.filter(pl.col("job_id") == "e")
    replay = compare_schedulers(only_e, alone_known.rec, ["fcfs"], device=alone_known.device)
    unchecked = model_check_section(read_inputs(JOBS, replay=replay))
    assert model_check_grade(read_inputs(JOBS, replay=replay)).grade == "unchecked"
    assert unchecked.figures == ()  # no job to draw: the reading says so instead
    assert "Grade: unchecked (no job recorded a runtime above 0, so none can be checked)." in unchecked.reading


def test_a_replay_that_reproduces_its_jobs_gives_the_good_grade(alone_known):
    kept = alone_known.site.filter(pl.col("job_id").is_in(["a", "d"]))  # ratios 1 and 1.25: p90 22.5 %
    replay = compare_schedulers(kept, alone_known.rec, ["fcfs"], device=alone_known.device)
    section = model_check_section(read_inputs(JOBS, replay=replay))
    assert "median 12.5 % and p90 22.5 %" in section.reading
    assert "Grade: good (at least nine jobs in ten run alone within the threshold" in section.reading
    assert UNTRUSTED not in section.reading and "iosets calibrate" not in section.reading
    assert section.tables[0].frame.row(0) == (2, 0.125, pytest.approx(0.225), 0.25, "yes", "good")


def test_the_advice_runs(site_inputs, tmp_path, monkeypatch):
    """The commands the section prints work as printed, from a folder holding the site trace and the recommendation."""
    for name in ("site", "recommendation"):
        shutil.copy(site_inputs[name], tmp_path / site_inputs[name].name)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for command in (CALIBRATE_COMMAND, CALIBRATED_REPLAY_COMMAND):
        words = command.split()
        assert words[0] == "iosets"
        result = runner.invoke(app, words[1:])
        assert result.exit_code == 0, f"{command}:\n{result.output}"
    section = model_check_section(read_inputs(site_inputs["jobs"], replay="perjob.parquet"))
    assert section.missing is None and section.tables[0].frame["jobs"].item() > 0


def test_validation_results_are_summed_up_and_pointed_to(site_inputs):
    inputs = read_inputs(site_inputs["jobs"], replay=site_inputs["replay"], validation=site_inputs["validation"])
    reading = model_check_section(inputs).reading
    # conftest's stand-in runs: set-10 within its tolerances, the system's fair-share 10-20 % off
    assert "Against real runs (`iosets validate`, 4 jobs), 1 of the 2 policies validated meets the IO-SETS paper's" in (
        reading
    )
    assert "see the section [Simulator against real runs](#validation) below" in reading
    page = build_report(site_inputs["jobs"], replay=site_inputs["replay"], validation=site_inputs["validation"]).html
    start = page.index('<section id="model-check"')
    assert '<a href="#validation">Simulator against real runs</a>' in page[start : page.index("</section>", start)]
    assert '<section id="validation"' in page and 'id="validation-utilization"' in page  # drawn, where it points
    without = model_check_section(ReportInputs(jobs=inputs.jobs, replay_jobs=inputs.replay_jobs)).reading
    assert "`iosets validate --dir DIR -o validation.json`, then give `--validation validation.json`" in without


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


def test_a_reading_links_only_to_the_pages_own_sections():
    from iosets.report._render import inline_code

    assert str(inline_code("see [the check](#validation), `iosets validate`")) == (
        'see <a href="#validation">the check</a>, <code>iosets validate</code>'
    )
    assert str(inline_code("[out](https://example.org) [x](#a b) [<b>](#c)")) == (
        '[out](https://example.org) [x](#a b) <a href="#c">&lt;b&gt;</a>'
    )
