"""``iosets replay-trace`` and ``compare_policies`` on a hand-computed two-job site trace."""

import json
import math

import polars as pl
import pytest
from typer.testing import CliRunner

from iosets.cli import app
from iosets.errors import InputError
from iosets.replay import Device, compare_policies
from iosets.schemas import TRACE_REPLAY_JOBS

runner = CliRunner()
MB = 1_000_000
DEVICE = Device(queue_depth=1, bandwidth=1e6, overhead=0.0, seek=0.0)  # 1e6 bytes take 1 s
TITLE = "site.parquet: 2 jobs replayed in a closed loop"


def site():
    """x and y: one phase of two 1 MB requests each on rank 0, recorded [0, 1] and [1, 2]."""
    rows = [("x", 0, 1), ("x", 1, 2), ("y", 0, 1), ("y", 1, 2)]
    return pl.DataFrame(
        {
            "job_id": [r[0] for r in rows],
            "rank": 0,
            "op": "write",
            "offset": [k * MB for k in range(4)],
            "size": MB,
            "start": [float(r[1]) for r in rows],
            "end": [float(r[2]) for r in rows],
            "file": [f"{r[0]}.dat" for r in rows],
            "phase": 0,
            "synthetic": False,
        }
    )


def recommendation():
    """x in set 1; q (not in the trace) in set 0; y is missing: the conservative set 1."""
    return pl.DataFrame(
        {
            "job_id": ["x", "q"],
            "set": [1, 0],
            "priority": [0.1, 1.0],
            "wfq_weight": [MB, 10 * MB],
            "rbfq_reservation": [None, None],
            "rbfq_weight": [1.0, 10.0],
            "rbfq_limit": [None, None],
        },
        schema_overrides={"rbfq_reservation": pl.Float64, "rbfq_limit": pl.Float64},
    )


@pytest.fixture
def files(tmp_path):
    site().write_parquet(tmp_path / "site.parquet")
    recommendation().write_parquet(tmp_path / "rec.parquet")
    (tmp_path / "dev.json").write_text(json.dumps(DEVICE.to_dict()))
    return tmp_path


def test_compare_policies_per_job_and_per_policy():
    with pytest.warns(
        UserWarning, match="1 job\\(s\\) of the site trace not in the recommendation go to its conservative set 1: y"
    ):
        per_policy, per_job = compare_policies(site(), recommendation(), ["fcfs", "iosets-wfq"], device=DEVICE)
    # fcfs: x1 [0, 1], y1 [1, 2], x2 [2, 3], y2 [3, 4]; iosets-wfq (one set): x's phase, then y's
    assert per_job.columns == TRACE_REPLAY_JOBS.names
    runtimes = {(r["policy"], r["job_id"]): (r["runtime"], r["alone_runtime"], r["wait"]) for r in per_job.to_dicts()}
    assert runtimes == {
        ("fcfs", "x"): (3.0, 2.0, 1.0),
        ("fcfs", "y"): (4.0, 2.0, 2.0),
        ("iosets-wfq", "x"): (2.0, 2.0, 0.0),
        ("iosets-wfq", "y"): (4.0, 2.0, 2.0),
    }
    fcfs, sets = per_policy.to_dicts()
    assert fcfs["utilization"] == 0.0  # no compute at all
    assert fcfs["io_slowdown"] == pytest.approx(math.sqrt(3 / 2 * 4 / 2))
    assert fcfs["max_stretch"] == 2.0 and fcfs["mean_stretch"] == 1.75
    assert fcfs["throughput"] == pytest.approx(MB)  # 4 MB over [0, 4]
    assert sets["io_slowdown"] == pytest.approx(math.sqrt(1 * 2)) and sets["mean_stretch"] == 1.5
    assert sets["p99_stretch"] == pytest.approx(1.99)
    assert (fcfs["share_set_1"], sets["share_set_1"]) == (1.0, 1.0)


def test_replay_trace_prints_the_table_and_writes_per_job_rows(files, table_rows):
    out = files / "perjob.parquet"
    args = ["replay-trace", str(files / "site.parquet"), "--rec", str(files / "rec.parquet")]
    result = runner.invoke(app, [*args, "--device", str(files / "dev.json"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = table_rows(result.stdout.replace(str(files) + "/", ""), TITLE)
    assert [row[0] for row in rows] == ["fcfs", "wfq", "iosets-wfq", "rbfq"]
    # p99 stretch of 1.5 and 2: 1.5 + 0.99 * 0.5
    assert rows[0][1:] == ["0.0000", "1.732", "2.000", "1.750", "1.995", "1.00", "100.0"]
    assert rows[2][2:5] == ["1.414", "2.000", "1.500"]
    assert "go to its conservative set 1: y" in result.stderr
    written = pl.read_parquet(out)
    assert written.height == 8 and written.columns == TRACE_REPLAY_JOBS.names
    assert written.filter(policy="wfq", job_id="y")["stretch"].item() == 2.0


def test_replay_trace_json_with_a_window_gives_nulls_and_notes(files):
    args = ["replay-trace", str(files / "site.parquet"), "--rec", str(files / "rec.parquet"), "--json"]
    result = runner.invoke(app, [*args, "--device", str(files / "dev.json"), "--compare", "fcfs", "--window", "0,2"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (fcfs,) = data["policies"]
    # in [0, 2] x and y each moved one of their two requests (e_io 1 s) and no phase ended
    assert fcfs["io_slowdown"] is None and fcfs["max_stretch"] == 2.0 and fcfs["throughput"] == MB
    assert "fcfs: io_slowdown: no job completed an I/O phase inside the window [0, 2]" in result.stderr
    assert [row["runtime"] for row in data["jobs"]] == [3.0, 4.0]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--compare", "fcfs,nope"], "policy"),
        (["--compare", "fcfs,fcfs"], "each policy once"),
        (["--window", "3,1"], "window: expected finite T_BEGIN < T_END"),
        (["-o", "out.txt"], "out.txt"),
    ],
)
def test_replay_trace_refuses_bad_options(files, extra, message):
    args = ["replay-trace", str(files / "site.parquet"), "--rec", str(files / "rec.parquet")]
    result = runner.invoke(app, [*args, *extra])
    assert result.exit_code == 1
    assert message in result.stderr


def test_a_recommendation_without_its_columns_is_refused():
    with pytest.raises(InputError, match="recommendation: missing column\\(s\\) wfq_weight"):
        compare_policies(site(), recommendation().drop("wfq_weight"), ["fcfs"])
    with pytest.raises(InputError, match="recommendation: job_id 'q' appears more than once"):
        compare_policies(site(), pl.concat([recommendation(), recommendation()]), ["fcfs"])
