"""`iosets generate`, `replay`, `replay-requests` and `experiment`: outputs equal the library's."""

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from iosets import read_workload
from iosets.cli import app
from iosets.replay import EXPERIMENT_POLICIES, replay_phases

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
    assert result.stderr.startswith(f"wrote {path}: 6 jobs, ")


def test_generate_without_point_takes_the_middle_of_the_sweep(tmp_path):
    path = tmp_path / "fig6.json"
    assert runner.invoke(app, ["generate", "--figure", "fig6", "-o", str(path)]).exit_code == 0
    # fig6 sweeps n_H = 0..40: the middle point has 20 high-frequency jobs
    assert read_workload(path).jobs["profile"].value_counts().sort("profile")["count"].to_list() == [20, 20, 20]


def test_replay_json_matches_the_api(workload_file):
    result = runner.invoke(app, ["replay", str(workload_file), "--policy", "set-10", "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed == replay_phases(read_workload(workload_file), "set-10").metrics.to_dict()


def test_replay_table_shows_the_metrics(workload_file, table_rows):
    result = runner.invoke(app, ["replay", str(workload_file), "--policy", "set-10"])
    assert result.exit_code == 0, result.output
    replayed = replay_phases(read_workload(workload_file), "set-10")
    title = f"{workload_file} ({replayed.n_events} events)"
    assert result.stdout.splitlines()[0] == title
    m = replayed.metrics
    assert table_rows(result.stdout, title) == [
        ["set-10", f"{m.utilization:.4f}", f"{m.io_slowdown:.3f}", f"{m.max_stretch:.4f}"]
    ]


def test_replay_writes_the_timeline(workload_file, tmp_path):
    out = tmp_path / "t.parquet"
    result = runner.invoke(app, ["replay", str(workload_file), "--policy", "fair-share", "--timeline", str(out)])
    assert result.exit_code == 0, result.output
    timeline = pl.read_parquet(out)
    expected = replay_phases(read_workload(workload_file), "fair-share").timeline
    assert timeline.equals(expected)


def test_replay_json_writes_null_for_metrics_that_cannot_be_computed(tmp_path):
    # the only I/O phase ends long after the window: no I/O iteration inside it, so no IO-slowdown
    path = tmp_path / "idle.json"
    workload = {"bandwidth": 1e9, "horizon": 100.0, "window": [0.0, 10.0], "jobs": [
        {"id": "j0", "release": 0.0, "set": 0, "priority": 1.0, "phases": [[50.0, 1e9]]},
        {"id": "j1", "release": 0.0, "set": 1, "priority": 1.0, "phases": [[60.0, 1e9]]},
    ]}  # fmt: skip
    path.write_text(json.dumps(workload))
    result = runner.invoke(app, ["replay", str(path), "--policy", "explicit", "--json"])
    assert result.exit_code == 0, result.output
    assert "NaN" not in result.stdout
    why = "no job completed an I/O phase inside the window [0, 10]"
    assert json.loads(result.stdout) == {
        "utilization": 1.0,
        "io_slowdown": None,
        "max_stretch": 1.0,
        "notes": {"io_slowdown": why},
    }
    assert result.stderr == f"note: io_slowdown: {why}\n"


@pytest.mark.parametrize(
    "args, message",
    [
        (["replay", "WL", "--policy", "nope"], "unknown policy 'nope'"),
        (["replay", "absent.json"], "absent.json: no such file"),
        (["replay", "WL", "--timeline", "t.txt"], "expected a .parquet or .csv file name"),
        (["generate", "-o", "x.json"], "give --figure NAME or at least one --profile"),
        (["generate", "--profile", "1,2", "-o", "x.json"], "expected COUNT,MU,SIGMA"),
        (["generate", "--figure", "fig99", "-o", "x.json"], "unknown figure 'fig99'"),
        (["generate", "--figure", "fig6", "--profile", "1,2,3", "-o", "x.json"], "give either --figure or --profile"),
        (["experiment", "fig42"], "unknown experiment 'fig42'"),
        (["experiment", "fig6", "--points", "5,x"], "--points: expected a number, got 'x'"),
        (["experiment", "fig6", "--points", ","], "--points: expected comma-separated numbers, got ','"),
    ],
)
def test_bad_arguments_exit_1_with_a_message(workload_file, tmp_path, args, message):
    args = [str(workload_file) if a == "WL" else a for a in args]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1  # one line, never wrapped


def test_experiment_writes_csv_and_summary(tmp_path, table_rows):
    result = runner.invoke(app, ["experiment", "fig10", "--seeds", "1", "--points", "5,5000", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    table = pl.read_csv(tmp_path / "fig10.csv")
    assert table.columns == ["experiment", "point", "seed", "policy", "utilization", "io_slowdown", "max_stretch"]
    assert table.height == 2 * 6  # two points, six policies (with clairvoyant)
    assert sorted(table["point"].unique().to_list()) == [5.0, 5000.0]
    title = "fig10: means over 2 points x 1 seeds, reference clairvoyant"
    assert result.stdout.splitlines()[0] == title
    summary = table_rows(result.stdout, title)
    assert [row[0] for row in summary] == [*EXPERIMENT_POLICIES["fig10"]]
    assert summary[-1][4:] == ["0.0000", "1.0000", "1.0000"]  # clairvoyant, the reference, against itself
    assert result.stderr == f"wrote {tmp_path / 'fig10.csv'}\n"


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
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{ops_file}: fcfs, 8000 requests in ")
    assert [line.split("│")[1].strip() for line in lines if line.startswith("│")] == ["c0", "c1", "c2", "c3"]
    # fixed-IOPS device: every request costs 1 ms, whatever its size
    assert lines[-1].startswith("aggregate ") and ", Jain " in lines[-1]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--scheduler", "nope"], "unknown scheduler 'nope'"),
        (["--device", "speed=3"], "--device: expected key=value with key in queue_depth"),
        (["--device", "seek=fast"], "--device seek: expected a number, got 'fast'"),
        (["--weight", "c0"], "--weight: expected key=value"),
        (["--weight", "c0=heavy"], "--weight c0: expected a number, got 'heavy'"),
        (["--param", "x=1"], "unknown parameters ['x']"),
        (["--class-by", "colour"], "has no column 'colour'"),
        (["--class-by", "rank", "--weight", "c0=1"], "--weight: unexpected key 'c0' in 'c0=1'"),
    ],
)
def test_replay_requests_bad_arguments(ops_file, args, message):
    result = runner.invoke(app, ["replay-requests", str(ops_file), *args])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and message in result.stderr
