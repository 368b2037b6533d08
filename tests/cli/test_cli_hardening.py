"""Hostile input at the command line: one exact line on stderr and exit 1, never a traceback, a hang or a lie."""

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from iosets import read_workload
from iosets.cli import _output, app
from iosets.datasets import load_darshan_examples

runner = CliRunner()
OPS_HEADER = "job_id,rank,op,offset,size,start\n"
JOBS = "job_id,w_iter,alpha_io\na,10,0.1\nb,100,0.2\nc,1000,0.05\n"


def _fails(args: list[str], message: str) -> None:
    """``iosets ARGS`` exits 1 printing only ``error: MESSAGE`` on stderr."""
    result = runner.invoke(app, args, catch_exceptions=False)
    assert (result.exit_code, result.stderr, result.stdout) == (1, f"error: {message}\n", "")


def _run(*args: str) -> subprocess.CompletedProcess:
    """``iosets ARGS`` in its own process (a crash shows as a signal, not as a dead test run), stderr piped."""
    code = "import sys; from iosets.cli import app; app(sys.argv[1:], prog_name='iosets')"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(params=["pipe", "terminal"])
def stream(request, monkeypatch):
    """Run the test twice: stdout and stderr as pipes, then as terminals (messages go through Rich)."""
    if request.param == "terminal":
        monkeypatch.setattr(_output, "_is_terminal", lambda stderr: True)


@pytest.fixture
def a_file(tmp_path):
    """A regular file, where a folder is expected."""
    path = tmp_path / "file.txt"
    path.write_text("a file\n")
    return path


DARSHAN_REASON = (
    "x[bold]y.darshan: cannot read the POSIX module (truncated or corrupt log) [darshan-util: unable to read "
    "compressed data from file; failed to read module POSIX data from darshan log file]"
)
"""What the analyzer says of a log darshan-util cannot read: darshan-util's own words in brackets."""


# ------------------------------------------------------------------ outputs are checked before the work


@pytest.mark.parametrize(
    "args, message",
    [
        # the inputs do not exist: an error about them would mean the work started first
        (
            ["analyze", "{tmp}/logs", "-o", "{file}/out/jobs.parquet"],
            "{file}/out/jobs.parquet: cannot write the jobs table: {file} is a file, not a folder",
        ),
        (
            ["analyze", "{tmp}/logs", "-o", "{tmp}/jobs.csv"],
            "{tmp}/jobs.errors.csv: is a folder; expected a file name for the errors table",
        ),
        (
            ["analyze", "--requests", "{tmp}/ops.csv", "-o", "{tmp}/jobs.txt"],
            "{tmp}/jobs.txt: expected a .parquet or .csv file name for the jobs table",
        ),
        (
            ["ingest", "{tmp}/t.csv", "-o", "{tmp}/jobs.errors.csv"],
            "{tmp}/jobs.errors.csv: is a folder; expected a file name for the requests table",
        ),
        (
            ["recommend", "{tmp}/jobs.csv", "-o", "{file}/rec.parquet"],
            "{file}/rec.parquet: cannot write the recommendation: {file} is a file, not a folder",
        ),
        (
            ["export", "{tmp}/rec.parquet", "--format", "agios", "--out", "{file}/agios"],
            "{file}/agios: cannot write the agios export: {file} is a file, not a folder",
        ),
        (
            ["export", "{tmp}/rec.parquet", "--format", "tbf", "--out", "{file}/x/tbf.sh"],
            "{file}/x: cannot write the tbf export: {file} is a file, not a folder",
        ),
        (
            ["replay", "{tmp}/wl.json", "--timeline", "{file}/t.parquet"],
            "{file}/t.parquet: cannot write the timeline: {file} is a file, not a folder",
        ),
        (
            ["replay", "{tmp}/wl.json", "--timeline", "{tmp}/t.json"],
            "{tmp}/t.json: expected a .parquet or .csv file name for the timeline",
        ),
        (
            ["experiment", "fig42", "--out", "{file}"],
            "{file}/fig42.csv: cannot write the results: {file} is a file, not a folder",
        ),
        (
            ["generate", "--figure", "fig99", "-o", "{file}/wl.json"],
            "{file}/wl.json: cannot write the workload: {file} is a file, not a folder",
        ),
        (
            ["generate", "--figure", "fig99", "-o", "{file}/wl"],
            "{file}/wl/jobs.parquet: cannot write the workload: {file} is a file, not a folder",
        ),
    ],
)
def test_an_unwritable_output_is_refused_before_the_work(tmp_path, a_file, args, message):
    (tmp_path / "jobs.errors.csv").mkdir()  # where `analyze -o jobs.csv` would list the failed logs
    _fails([a.format(tmp=tmp_path, file=a_file) for a in args], message.format(tmp=tmp_path, file=a_file))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt", "jobs.errors.csv"]  # nothing created


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs Linux sysfs, where no one creates files")
def test_a_folder_nobody_can_write_in_is_refused_before_the_work(tmp_path):
    # root ignores permission bits and no read-only mount is at hand: sysfs refuses new files even to root
    _fails(
        ["analyze", str(tmp_path / "logs"), "-o", "/sys/jobs.parquet"],
        "/sys/jobs.parquet: cannot write the jobs table in /sys (Permission denied)",
    )


def test_analyze_takes_logs_or_an_ops_table_not_both(tmp_path):
    _fails(
        ["analyze", str(tmp_path / "a.darshan"), "--requests", str(tmp_path / "ops.csv")],
        "give Darshan logs, folders or --manifest FILE, or --requests FILE, not both",
    )


def test_recommend_for_a_new_job_refuses_an_output_it_would_not_write(tmp_path):
    args = ["recommend", "--history", "h.parquet", "--for", "app=a,user=u", "-o", str(tmp_path / "rec.parquet")]
    _fails(args, "estimating a new job takes --history H and --for app=...,user=... (and no JOBS nor -o)")


# -------------------------------------------------------------------------------------- text is text


@pytest.mark.parametrize("command", [["replay-requests", "{ops}"], ["analyze", "--requests", "{ops}", "-o", "{out}"]])
def test_an_op_that_looks_like_markup_is_one_verbatim_line(tmp_path, stream, command):
    ops = tmp_path / "ops.csv"
    ops.write_text(OPS_HEADER + "a,0,[/]x,0,10,0.0\n")
    args = [a.format(ops=ops, out=tmp_path / "jobs.csv") for a in command]
    _fails(args, f"{ops} line 2: op: expected 'read'|'write', got '[/]x'")


def test_a_file_name_with_brackets_is_read_and_named_as_it_is(tmp_path):
    jobs = tmp_path / "x[bold red]y.csv"
    jobs.write_text(JOBS)
    (tmp_path / "xby.csv").write_text("decoy,the,name,would,match,as,a,pattern\n")
    out = tmp_path / "rec[i].parquet"
    recommended = runner.invoke(app, ["recommend", str(jobs), "-o", str(out)])
    assert recommended.exit_code == 0, recommended.output
    assert recommended.stderr == f"wrote {out}\n" and pl.read_parquet(out, glob=False)["set"].to_list() == [1, 2, 3]
    tuned = runner.invoke(app, ["tune", str(jobs), "--bases", "10", "--no-gmm"])
    assert tuned.exit_code == 0, tuned.output
    assert tuned.stdout.splitlines()[:2] == ["used 3 of 3 jobs", "Mappings replayed on x[bold red]y.csv"]
    jobs.write_bytes(b"job_id,w_iter\n\xe9,1\n")
    _fails(["recommend", str(jobs)], f"{jobs}: not a readable jobs table (invalid utf-8 sequence)")


def test_an_ops_file_name_with_brackets_is_read_as_it_is(tmp_path):
    ops = tmp_path / "x[bold red]y.csv"
    ops.write_text(OPS_HEADER + "a,0,read,0,10,0.0\nb,0,write,0,10,1.0\n")
    result = runner.invoke(app, ["replay-requests", str(ops)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{ops}: fcfs, 2 requests in 2 units\n")


def test_a_block_trace_name_with_brackets_is_read_as_it_is(tmp_path):
    from iosets.datasets import load_sample_traces

    trace, out = tmp_path / "m[1].csv", tmp_path / "ops.parquet"
    trace.write_bytes(load_sample_traces().paths["msr"].read_bytes())
    result = runner.invoke(app, ["ingest", str(trace), "--format", "msr", "-o", str(out)])
    assert (result.exit_code, result.stderr) == (0, f"wrote {out}: 320 requests\n")  # not "0 requests"


def test_a_darshan_util_reason_is_printed_whole(tmp_path, monkeypatch, stream):
    import iosets.analyzer
    from iosets.analyzer import Analysis
    from iosets.errors import InputError
    from iosets.schemas import JOBS, MODULE_TOTALS

    def unreadable(path, **options):
        raise InputError(DARSHAN_REASON)

    monkeypatch.setattr(iosets.analyzer, "ingest", unreadable)
    _fails(["ingest", "x[bold]y.darshan", "-o", str(tmp_path / "ops.parquet")], DARSHAN_REASON)
    errors = pl.DataFrame({"path": ["x[bold]y.darshan"], "reason": [DARSHAN_REASON]})
    monkeypatch.setattr(
        iosets.analyzer, "analyze", lambda paths, **options: Analysis(JOBS.empty(), errors, MODULE_TOTALS.empty())
    )
    result = runner.invoke(app, ["analyze", "x[bold]y.darshan", "-o", str(tmp_path / "jobs.csv")])
    assert result.exit_code == 2, result.output  # no job analysed
    listed = tmp_path / "jobs.errors.csv"
    assert result.stderr.splitlines()[-2:] == [
        f"  {DARSHAN_REASON}",
        f"error: no job analysed: 1 of 1 logs failed (see {listed})",
    ]
    assert pl.read_csv(listed).rows() == [("x[bold]y.darshan", DARSHAN_REASON)]


def test_metrics_that_cannot_be_computed_show_as_a_dash_in_tables(tmp_path, table_rows):
    path = tmp_path / "idle.json"
    path.write_text(json.dumps({"horizon": 100.0, "window": [0.0, 10.0], "jobs": [
        {"id": "j0", "release": 0.0, "phases": [[50.0, 1e9]]},
    ]}))  # fmt: skip
    result = runner.invoke(app, ["replay", str(path), "--policy", "fair-share"])
    assert result.exit_code == 0, result.output
    # no I/O phase ends in the window: no IO-slowdown, shown as '-' (not 'nan', not 'None') and explained
    assert table_rows(result.stdout, f"{path} (2 events)") == [["fair-share", "1.0000", "-", "1.0000"]]
    assert result.stderr == "note: io_slowdown: no job completed an I/O phase inside the window [0, 10]\n"


# ---------------------------------------------------------------------------------- hostile users


@pytest.mark.parametrize("command", [["replay-requests", "{ops}"], ["analyze", "--requests", "{ops}", "-o", "{out}"]])
def test_a_non_utf8_ops_csv(tmp_path, command):
    ops = tmp_path / "ops.csv"
    ops.write_bytes(OPS_HEADER.encode() + b"\xe9t\xe9,0,read,0,10,0.0\n")
    args = [a.format(ops=ops, out=tmp_path / "jobs.csv") for a in command]
    _fails(args, f"{ops} line 2: not UTF-8 text (byte 0xe9)")


@pytest.fixture
def ops_file(tmp_path):
    path = tmp_path / "ops.csv"
    path.write_text(OPS_HEADER + "a,0,read,0,10,0.0\nb,0,write,0,10,1.0\n")
    return path


def test_a_queue_depth_beyond_a_c_int(ops_file):
    _fails(
        ["replay-requests", str(ops_file), "--device", "queue_depth=2147483648"],
        "device queue_depth must be an integer in [1, 2147483647], got 2147483648",
    )


def test_an_unknown_scheduler_parameter_is_named_with_its_scheduler(ops_file):
    args = ["replay-requests", str(ops_file), "--scheduler", "rbfq", "--param", "idle_credit=1", "--param", "colour=2"]
    _fails(args, "rbfq: unknown parameters ['colour']; expected one of cost_bytes, idle_credit, distributed")


def test_a_parameter_given_twice_is_refused(ops_file):
    args = ["replay-requests", str(ops_file), "--scheduler", "wfq", "--weight", "a=1", "--weight", "a=2"]
    _fails(args, "--weight: a given twice")


def test_a_json_nested_200000_deep(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    _fails(["replay", str(path)], f"{path}: not valid JSON (nested too deeply)")


def test_a_jobs_csv_with_text_for_w_iter(tmp_path):
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,w_iter,alpha_io\na,abc,0.1\n")
    _fails(["recommend", str(jobs)], "jobs table row 0: w_iter: expected a number, got 'abc'")
    jobs.write_text("job_id,w_iter,alpha_io\n" + "".join(f"j{i},{10 + i},0.1\n" for i in range(300)) + "z,abc,0.1\n")
    _fails(
        ["recommend", str(jobs)],
        f"{jobs}: not a readable jobs table (could not parse `abc` as dtype `i64` at column 'w_iter' "
        "(column number 2))",
    )


def test_export_of_an_empty_recommendation(tmp_path):
    jobs, rec = tmp_path / "jobs.csv", tmp_path / "rec.parquet"
    jobs.write_text("job_id,w_iter,alpha_io\n")
    assert runner.invoke(app, ["recommend", str(jobs), "-o", str(rec)]).exit_code == 0
    _fails(
        ["export", str(rec), "--format", "agios", "--out", str(tmp_path / "agios")],
        "nothing to export: the recommendation has no job",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jobs.csv", "rec.parquet"]


def test_generate_keeps_the_default_window_inside_the_horizon(tmp_path):
    path = tmp_path / "wl.json"
    result = runner.invoke(app, ["generate", "--profile", "4,10,1", "--horizon", "2000", "-o", str(path)])
    assert result.exit_code == 0, result.output
    assert read_workload(path).window == (600.0, 1400.0)


def test_generate_takes_the_window_it_is_given(tmp_path):
    path = tmp_path / "wl.json"
    args = ["generate", "--profile", "4,10,1", "--horizon", "2000", "--window", "100,1900", "-o", str(path)]
    assert runner.invoke(app, args).exit_code == 0
    assert read_workload(path).window == (100.0, 1900.0)
    _fails(
        [*args[:-2], "--window", "100", "-o", str(path)], "--window: expected T_BEGIN,T_END such as 600,1400, got '100'"
    )
    figure = ["generate", "--figure", "fig6", "--point", "20", "--horizon", "4000", "-o", str(path)]
    assert runner.invoke(app, figure).exit_code == 0  # a preset follows --horizon too (it was ignored)
    assert (read_workload(path).horizon, read_workload(path).window) == (4000.0, (1200.0, 2800.0))
    assert runner.invoke(app, [*figure, "--window", "100,3900"]).exit_code == 0
    assert read_workload(path).window == (100.0, 3900.0)


def test_a_window_without_activity_gives_null_metrics_and_says_why(tmp_path):
    path = tmp_path / "idle.json"
    path.write_text(json.dumps({"horizon": 1000.0, "window": [500.0, 600.0], "jobs": [
        {"id": "j0", "release": 0.0, "phases": [[5.0, 1e9]]},
        {"id": "j1", "release": 0.0, "phases": [[6.0, 1e9]]},
    ]}))  # fmt: skip
    result = runner.invoke(app, ["replay", str(path), "--json"])
    assert result.exit_code == 0, result.output
    idle = "no job did any work inside the window [500, 600]"
    notes = {
        "utilization": idle,
        "io_slowdown": "no job completed an I/O phase inside the window [500, 600]",
        "max_stretch": idle,
    }
    assert json.loads(result.stdout) == {"utilization": None, "io_slowdown": None, "max_stretch": None, "notes": notes}
    assert result.stderr == "".join(f"note: {name}: {why}\n" for name, why in notes.items())


def test_dask_missing_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if dask were not installed
    log = load_darshan_examples().paths["example.darshan"]
    _fails(
        ["analyze", str(log), "-o", str(tmp_path / "jobs.parquet"), "--dask", "local"],
        "--dask needs Dask: pip install 'iosets[dask]'",
    )


# ----------------------------------------------------------------------------------- Darshan crashes


def test_a_truncated_darshan_log_is_one_line_and_exit_1(tmp_path):
    data = load_darshan_examples().paths["dxt.darshan"].read_bytes()
    log = tmp_path / "dxt.darshan"
    log.write_bytes(data[: len(data) // 2])
    done = _run("ingest", str(log), "-o", str(tmp_path / "ops.parquet"))
    assert (done.returncode, done.stdout) == (1, "")
    region = "module DXT_POSIX region [offset 17944, length 81054]"
    assert done.stderr == f"error: {log}: {region} extends past the end of the file ({len(data) // 2} bytes)\n"


def test_a_log_that_crashes_darshan_util_is_one_line_and_exit_1(tmp_path, seen_crash):
    # docs/darshan-util-crashes.md, crash 3: a 3.10 log labelled 3.21; darshan-util dereferences NULL (SIGSEGV)
    data = load_darshan_examples().paths["dxt.darshan"].read_bytes()
    assert data[:4] == b"3.10"
    log = tmp_path / "crash.darshan"
    log.write_bytes(b"3.21" + data[4:])
    done = _run("ingest", str(log), "-o", str(tmp_path / "ops.parquet"))
    assert (done.returncode, done.stdout) == (1, "")  # not -11: the crash stays in the reading process
    assert seen_crash(done.stderr) == f"error: {log}: darshan-util crashed: signal 11 (SIGSEGV) while reading LUSTRE\n"
    assert not (tmp_path / "ops.parquet").exists()


def test_replay_requests_that_move_no_byte_print_null_shares_and_say_why(tmp_path):
    ops = tmp_path / "zero.csv"
    ops.write_text(OPS_HEADER + "a,0,read,0,0,0.0\nb,0,write,0,0,0.0\n")
    done = _run("replay-requests", str(ops), "--json")
    assert done.returncode == 0
    metrics = json.loads(done.stdout)
    assert [row["share"] for row in metrics["classes"]] == [None, None] and metrics["jain_index"] is None
    assert done.stderr == "note: share: no request moved a byte\nnote: jain_index: every class moved 0 bytes\n"
