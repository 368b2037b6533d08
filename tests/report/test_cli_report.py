"""``iosets report`` and the demo's report: the file written, the line printed, and the errors."""

import polars as pl
from reading import SECTION_IDS, read_page
from test_build import JOBS, PER_JOB, REC
from typer.testing import CliRunner

from iosets.cli import app

runner = CliRunner()


def test_report_writes_the_page_and_names_the_sections_shown_and_missing(tmp_path):
    JOBS.write_parquet(tmp_path / "jobs.parquet")
    REC.write_parquet(tmp_path / "rec.parquet")
    PER_JOB.write_csv(tmp_path / "perjob.csv")
    output = tmp_path / "out" / "report.html"
    result = runner.invoke(
        app,
        ["report", str(tmp_path / "jobs.parquet"), "--rec", str(tmp_path / "rec.parquet")]
        + ["--replay", str(tmp_path / "perjob.csv"), "-o", str(output)],
    )
    assert result.exit_code == 0, result.output
    size = output.stat().st_size / 1e6
    assert result.stderr == (
        f"wrote {output} ({size:.1f} MB): sections verdict, overview, recommendation, scheduler, impact, model-check, "
        "jobs; "
        "missing: timelines, requests, validation\n"
    )
    assert result.stdout == ""
    page = read_page(output.read_text(encoding="utf-8"))
    assert list(page.sections) == SECTION_IDS
    table = page.tables["jobs-table"]
    assert table.column("job_id") == [("a", "a"), ("c", "c"), ("b", "b")]
    assert table.column("stretch_fcfs") == [("1.25", "1.250"), ("1.05", "1.050"), ("", "")]


def test_a_malformed_input_is_one_error_line_naming_file_row_and_column(tmp_path):
    REC.with_columns(pl.Series("rbfq_weight", [1.0, 0.0, 1.0])).write_parquet(tmp_path / "rec.parquet")
    output = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(tmp_path / "rec.parquet"), "-o", str(output)])
    assert result.exit_code == 1
    assert result.stderr == f"error: {tmp_path / 'rec.parquet'} row 1: rbfq_weight: expected a number > 0, got 0.0\n"
    assert not output.exists()


def test_the_output_is_required_and_must_be_an_html_file(tmp_path):
    JOBS.write_parquet(tmp_path / "jobs.parquet")
    missing = runner.invoke(app, ["report", str(tmp_path / "jobs.parquet")])
    assert missing.exit_code == 2 and "Missing option '--output' / '-o'" in missing.stderr
    wrong = runner.invoke(app, ["report", str(tmp_path / "jobs.parquet"), "-o", str(tmp_path / "report.pdf")])
    assert wrong.exit_code == 1
    assert wrong.stderr == f"error: {tmp_path / 'report.pdf'}: expected a .html file name for the report\n"


def test_demo_writes_its_report_and_prints_the_path(tmp_path):
    result = runner.invoke(app, ["demo", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    path = tmp_path / "demo-report.html"
    assert result.stdout.endswith(f"wrote {path}\n")
    page = read_page(path.read_text(encoding="utf-8"))
    missing = [name for name, section in page.sections.items() if section["missing"] is not None]
    assert missing == ["validation"]  # the demo runs nothing for real on the machine's storage
    jobs = page.tables["jobs-table"]
    assert len(jobs.rows) == 12  # the demo's 6 sample-trace jobs and 6 example logs
    assert [name for name in jobs.columns if name.startswith("stretch_")] == [
        "stretch_fcfs",
        "stretch_wfq",
        "stretch_iosets-wfq",
    ]
    replayed = sorted(row["job_id"] for row in jobs.records() if row["stretch_fcfs"])
    assert replayed == ["8,0", "8,16", "hm_0", "hm_1"]  # the jobs of the blkparse and MSR samples
