"""The command line: exit codes, messages and written files."""

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from iosets import read_workload
from iosets.cli import app
from iosets.replay import replay_phases

runner = CliRunner()


@pytest.fixture(scope="module")
def workload_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("wl") / "fig6.json"
    result = runner.invoke(app, ["generate", "--figure", "fig6", "--point", "5", "--seed", "1", "-o", str(path)])
    assert result.exit_code == 0, result.output
    return path


def test_generate_writes_the_preset(workload_file):
    wl = read_workload(workload_file)
    assert wl.n_jobs == 60
    assert wl.jobs["profile"].value_counts().sort("profile")["count"].to_list() == [5, 20, 35]


def test_generate_from_profiles(tmp_path):
    path = tmp_path / "custom"
    result = runner.invoke(app, ["generate", "--profile", "4,10,1", "--profile", "2,100,10", "-o", str(path)])
    assert result.exit_code == 0, result.output
    assert read_workload(path).n_jobs == 6


def test_replay_json_matches_the_api(workload_file):
    result = runner.invoke(app, ["replay", str(workload_file), "--policy", "set-10", "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed == replay_phases(read_workload(workload_file), "set-10").metrics.to_dict()


def test_replay_writes_the_timeline(workload_file, tmp_path):
    out = tmp_path / "t.parquet"
    result = runner.invoke(app, ["replay", str(workload_file), "--policy", "fair-share", "--timeline", str(out)])
    assert result.exit_code == 0, result.output
    timeline = pl.read_parquet(out)
    expected = replay_phases(read_workload(workload_file), "fair-share").timeline
    assert timeline.equals(expected)


@pytest.mark.parametrize(
    "args, message",
    [
        (["replay", "WL", "--policy", "nope"], "unknown policy 'nope'"),
        (["replay", "absent.json"], "absent.json: no such file"),
        (["replay", "WL", "--timeline", "t.txt"], "expected a .parquet or .csv file name"),
        (["generate", "-o", "x.json"], "give --figure NAME or at least one --profile"),
        (["generate", "--profile", "1,2", "-o", "x.json"], "expected COUNT,MU,SIGMA"),
        (["generate", "--figure", "fig99", "-o", "x.json"], "unknown figure 'fig99'"),
        (["experiment", "fig42"], "unknown experiment 'fig42'"),
    ],
)
def test_bad_arguments_exit_1_with_a_message(workload_file, tmp_path, args, message):
    args = [str(workload_file) if a == "WL" else a for a in args]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 1
    assert message in " ".join(result.stderr.split())


def test_experiment_writes_csv_and_summary(tmp_path):
    result = runner.invoke(app, ["experiment", "fig10", "--seeds", "1", "--points", "5,5000", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    table = pl.read_csv(tmp_path / "fig10.csv")
    assert table.columns == ["experiment", "point", "seed", "policy", "utilization", "io_slowdown", "max_stretch"]
    assert table.height == 2 * 6  # two points, six policies (with clairvoyant)
    assert sorted(table["point"].unique().to_list()) == [5.0, 5000.0]
    assert "clairvoyant" in result.stdout


def test_demo_compares_policies():
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    for policy in ("exclusive-fcfs", "fair-share", "set-10"):
        assert policy in result.stdout
    assert "0.9867" in result.stdout  # the utilization bound 1 - 0.8 / 60


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("iosets ")


@pytest.fixture(scope="module")
def ops_file(tmp_path_factory):
    from iosets.datasets import make_backlogged_requests

    path = tmp_path_factory.mktemp("ops") / "ops.csv"
    make_backlogged_requests(8000, 4, random_state=0).write_csv(path)
    return path


def test_replay_requests_json_shares(ops_file):
    weights = ["--weight", "c0=1024", "--weight", "c1=2048", "--weight", "c2=4096", "--weight", "c3=8192"]
    result = runner.invoke(app, ["replay-requests", str(ops_file), "--scheduler", "wfq", *weights, "--json"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)
    assert [c["class"] for c in metrics["classes"]] == ["c0", "c1", "c2", "c3"]
    assert set(metrics) >= {"aggregate_throughput", "jain_index", "mean_aggregation_size"}
    assert set(metrics["classes"][0]) >= {
        "class",
        "bytes",
        "requests",
        "share",
        "throughput",
        "latency_p50",
        "latency_p99",
    }
    assert metrics["classes"][0]["reservation_met"] is None  # no reservation asked
    # the heavier the weight, the sooner a class is served: p50 latency falls with the weight
    p50 = [c["latency_p50"] for c in metrics["classes"]]
    assert p50 == sorted(p50, reverse=True)


def test_replay_requests_device_and_table(ops_file):
    result = runner.invoke(
        app, ["replay-requests", str(ops_file), "--device", "iops=1000", "--device", "queue_depth=2"]
    )
    assert result.exit_code == 0, result.output
    assert "aggregate" in result.stdout and "c3" in result.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--scheduler", "nope"], "unknown scheduler 'nope'"),
        (["--device", "speed=3"], "--device: expected key=value with key in queue_depth"),
        (["--weight", "c0"], "--weight: expected key=value"),
        (["--param", "x=1"], "unknown parameters ['x']"),
        (["--class-by", "colour"], "has no column 'colour'"),
    ],
)
def test_replay_requests_bad_arguments(ops_file, args, message):
    result = runner.invoke(app, ["replay-requests", str(ops_file), *args])
    assert result.exit_code == 1
    assert message in " ".join(result.stderr.split())


def test_analyze_writes_jobs_and_errors(tmp_path):
    import os
    import shutil

    import darshan

    logs = os.path.join(os.path.dirname(darshan.__file__), "examples", "example_logs")
    folder = tmp_path / "logs"
    shutil.copytree(logs, folder)
    (folder / "broken.darshan").write_text("not a log")
    out = tmp_path / "jobs.parquet"
    result = runner.invoke(app, ["analyze", str(folder), "-o", str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    jobs = pl.read_parquet(out)
    assert jobs.height == len([f for f in os.listdir(logs) if f.endswith(".darshan")])
    errors = pl.read_parquet(tmp_path / "jobs.errors.parquet")
    assert errors["path"].to_list() == [str(folder / "broken.darshan")]
    assert "1 logs failed" in result.stderr


def test_ingest_then_analyze_ops_finds_the_sample_writer(tmp_path):
    from importlib.resources import files

    sample = files("iosets.datasets.data") / "sample.msr.csv"
    ops_path, jobs_path = tmp_path / "ops.parquet", tmp_path / "jobs.csv"
    assert runner.invoke(app, ["ingest", str(sample), "-o", str(ops_path)]).exit_code == 0
    result = runner.invoke(app, ["analyze", "--ops", str(ops_path), "-o", str(jobs_path)])
    assert result.exit_code == 0, result.output
    writer = pl.read_csv(jobs_path).filter(pl.col("job_id") == "hm_1").row(0, named=True)
    assert writer["w_iter"] == pytest.approx(5.0, rel=0.01)  # 8 x 64 KiB every 5 s


def test_analyze_without_inputs_fails_clearly():
    result = runner.invoke(app, ["analyze"])
    assert result.exit_code == 1
    assert "give Darshan logs, folders or manifests, or --ops FILE" in result.stderr


def test_ingest_skip_malformed_lists_the_lines_and_keeps_the_rest(tmp_path):
    trace = tmp_path / "ops.csv"
    trace.write_text("job_id,rank,op,offset,size,start\na,0,read,0,10,0.0\nb,0,rd,zero,10,1.0\nc,1,write,5,5,2.0\n")
    out = tmp_path / "ops.parquet"
    strict = runner.invoke(app, ["ingest", str(trace), "-o", str(out)])
    assert strict.exit_code == 1 and "line 3: expected 'read'|'write', got 'rd'" in strict.stderr
    assert not out.exists()
    result = runner.invoke(app, ["ingest", str(trace), "-o", str(out), "--skip-malformed"])
    assert result.exit_code == 0, result.output
    assert "skipped 1 malformed lines" in result.stderr and "line 3" in result.stderr
    assert pl.read_parquet(out)["job_id"].to_list() == ["a", "c"]
