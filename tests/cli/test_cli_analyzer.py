"""`iosets analyze` and `iosets ingest`: written tables, and messages printed as they are."""

import os
import shutil
import subprocess
import sys

import polars as pl
import pytest
from typer.testing import CliRunner

from iosets.analyzer import read_blocktrace
from iosets.cli import app
from iosets.datasets import load_darshan_examples, load_sample_traces
from iosets.errors import InputError

runner = CliRunner()
MALFORMED = "job_id,rank,op,offset,size,start\na,0,read,0,10,0.0\nb,0,rd,0,10,1.0\nc,1,write,5,5,2.0\n"


def test_analyze_writes_jobs_and_errors(tmp_path):
    examples = load_darshan_examples().paths
    folder = tmp_path / "logs"
    folder.mkdir()
    for name, path in examples.items():
        shutil.copy(path, folder / name)
    (folder / "broken.darshan").write_text("not a log")
    out = tmp_path / "jobs.parquet"
    result = runner.invoke(app, ["analyze", str(folder), "-o", str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert pl.read_parquet(out).height == len(examples)
    errors = pl.read_parquet(tmp_path / "jobs.errors.parquet")
    assert errors["path"].to_list() == [str(folder / "broken.darshan")]
    assert result.stderr.splitlines() == [  # no progress bar on a stream that is not a terminal
        f"wrote {out}: {len(examples)} jobs",
        "  0 periodic; not periodic: no_timeline 3, irregular 1, few_phases 1, io_bound 1",
        f"warning: 1 logs failed, listed in {tmp_path / 'jobs.errors.parquet'}:",
        f"  {errors['reason'][0]}",
    ]


def test_ingest_then_analyze_ops_finds_the_sample_writer(tmp_path):
    sample = load_sample_traces().paths["msr"]
    ops_path, jobs_path = tmp_path / "ops.parquet", tmp_path / "jobs.csv"
    ingested = runner.invoke(app, ["ingest", str(sample), "-o", str(ops_path)])
    assert ingested.exit_code == 0 and ingested.stderr == f"wrote {ops_path}: 320 requests\n"
    result = runner.invoke(app, ["analyze", "--requests", str(ops_path), "-o", str(jobs_path)])
    assert result.exit_code == 0, result.output
    assert result.stderr == f"wrote {jobs_path}: 2 jobs from {ops_path}\n  1 periodic; not periodic: irregular 1\n"
    writer = pl.read_csv(jobs_path).filter(pl.col("job_id") == "hm_1").row(0, named=True)
    assert writer["w_iter"] == pytest.approx(5.0, rel=0.01)  # 8 x 64 KiB every 5 s


def test_the_former_spellings_still_work_for_one_release_with_a_note(tmp_path):
    sample = load_sample_traces().paths["msr"]
    ops_path, jobs_path, rec_path = tmp_path / "ops.parquet", tmp_path / "jobs.csv", tmp_path / "rec.csv"
    assert runner.invoke(app, ["ingest", str(sample), "-o", str(ops_path)]).exit_code == 0
    result = runner.invoke(app, ["analyze", "--ops", str(ops_path), "-o", str(jobs_path)])
    assert result.exit_code == 0 and result.stderr.startswith(
        "note: --ops is now --requests; the old spelling goes in the next release\n"
        f"wrote {jobs_path}: 2 jobs from {ops_path}\n"
    )
    result = runner.invoke(app, ["recommend", str(jobs_path), "--policy", "set-2", "-o", str(rec_path)])
    assert result.exit_code == 0 and "note: --policy is now --mapping" in result.stderr
    assert pl.read_csv(rec_path).filter(pl.col("job_id") == "hm_1")["set"].to_list() == [2]  # round(log2 5) = 2
    both = runner.invoke(app, ["recommend", str(jobs_path), "--policy", "set-2", "--mapping", "set-10"])
    assert both.exit_code == 1 and both.stderr == "error: give --mapping once (--policy is its former spelling)\n"


def test_analyze_without_inputs_fails_clearly():
    result = runner.invoke(app, ["analyze"])
    assert result.exit_code == 1
    assert result.stderr == "error: give Darshan logs or folders, --manifest FILE, or --requests FILE\n"


def _messages(trace):
    """What the analyzer says of ``trace``: its error, and the messages of the lines it skips."""
    with pytest.raises(InputError) as raised:
        read_blocktrace(trace)
    with pytest.warns(UserWarning, match="skipped 1 malformed lines"):
        return str(raised.value), read_blocktrace(trace, errors="skip", return_report=True)[1].messages


def test_ingest_skip_malformed_lists_the_lines_and_keeps_the_rest(tmp_path):
    trace = tmp_path / "ops.csv"
    trace.write_text(MALFORMED)
    out = tmp_path / "ops.parquet"
    strict = runner.invoke(app, ["ingest", str(trace), "-o", str(out)])
    assert (
        strict.exit_code == 1 and "line 3: " in strict.stderr and "expected 'read'|'write', got 'rd'" in strict.stderr
    )
    assert not out.exists()
    result = runner.invoke(app, ["ingest", str(trace), "-o", str(out), "--skip-malformed"])
    assert result.exit_code == 0, result.output
    assert "skipped 1 malformed lines" in result.stderr and "line 3" in result.stderr
    assert pl.read_parquet(out)["job_id"].to_list() == ["a", "c"]


@pytest.fixture
def long_folder(tmp_path):
    """A folder whose path is far longer than any terminal is wide."""
    folder = tmp_path.joinpath(*[f"a-rather-long-folder-name-{i}" for i in range(8)])
    folder.mkdir(parents=True)
    assert len(str(folder)) > 240
    return folder


def test_messages_with_a_long_path_are_one_line_each(long_folder):
    trace, out = long_folder / "ops.csv", long_folder / "ops.parquet"
    trace.write_text(MALFORMED)
    error, skipped = _messages(trace)
    assert str(trace) in error and len(skipped) == 1
    strict = runner.invoke(app, ["ingest", str(trace), "-o", str(out)])
    assert strict.exit_code == 1
    assert strict.stderr == f"error: {error}\n"
    result = runner.invoke(app, ["ingest", str(trace), "-o", str(out), "--skip-malformed"])
    assert result.exit_code == 0, result.output
    assert result.stderr == f"skipped 1 malformed lines:\n  {skipped[0]}\nwrote {out}: 2 requests\n"


def test_a_pipe_gets_unwrapped_lines_too(long_folder):
    trace, out = long_folder / "ops.csv", long_folder / "ops.parquet"
    trace.write_text(MALFORMED)
    code = "import sys; from iosets.cli import app; app(sys.argv[1:], prog_name='iosets')"
    done = subprocess.run(
        [sys.executable, "-c", code, "ingest", str(trace), "-o", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert done.returncode == 1
    assert done.stderr == f"error: {_messages(trace)[0]}\n"


def test_markup_in_paths_and_reasons_is_printed_verbatim(tmp_path):
    trace, out = tmp_path / "ops.csv", tmp_path / "[i]ops[/i].parquet"
    trace.write_text("job_id,rank,op,offset,size,start\na,0,read,0,10,0.0\nb,0,[/]x,0,10,1.0\n")
    error, skipped = _messages(trace)
    assert error.endswith("got '[/]x'") and skipped[0].endswith("got '[/]x'")
    strict = runner.invoke(app, ["ingest", str(trace), "-o", str(out)])
    assert strict.exit_code == 1 and strict.stderr == f"error: {error}\n"
    result = runner.invoke(app, ["ingest", str(trace), "-o", str(out), "--skip-malformed"])
    assert result.exit_code == 0, result.output
    assert result.stderr == f"skipped 1 malformed lines:\n  {skipped[0]}\nwrote {out}: 1 requests\n"
    missing = tmp_path / "x[bold red]y.json"
    replayed = runner.invoke(app, ["replay", str(missing)])
    assert replayed.exit_code == 1 and replayed.stderr.startswith(f"error: {missing}: no such file")


def test_markup_in_a_failed_log_name_is_printed_verbatim(tmp_path):
    log = tmp_path / "[bold]job[red].darshan"
    log.write_text("")
    out = tmp_path / "jobs.csv"
    result = runner.invoke(app, ["analyze", str(log), "-o", str(out), "--workers", "1"])
    assert result.exit_code == 2, result.output  # no job analysed
    reason = pl.read_csv(tmp_path / "jobs.errors.csv")["reason"][0]
    assert reason.startswith(str(log))
    assert result.stderr.splitlines()[-2] == f"  {reason}"
