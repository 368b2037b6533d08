"""``iosets replay-trace`` and ``compare_schedulers`` on a hand-computed two-job site trace, and the four tables."""

import json
import math

import polars as pl
import pytest
from typer.testing import CliRunner

from iosets._io import read_frame, write_frame
from iosets.cli import app
from iosets.errors import InputError
from iosets.replay import Device, compare_schedulers
from iosets.replay._trace_metrics import TRACE_METRICS
from iosets.schemas import TRACE_REPLAY_JOBS, TRACE_REPLAY_PHASES, TRACE_REPLAY_SCHEDULERS, TRACE_REPLAY_SHARES

runner = CliRunner()
MB = 1_000_000
SCHEDULERS = ["fcfs", "wfq", "iosets-wfq", "rbfq"]
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


def test_compare_policies_per_job_and_per_scheduler():
    with pytest.warns(
        UserWarning, match="1 job\\(s\\) of the site trace not in the recommendation go to its conservative set 1: y"
    ):
        got = compare_schedulers(site(), recommendation(), ["fcfs", "iosets-wfq"], device=DEVICE)
    per_scheduler, per_job = got.schedulers, got.jobs
    # fcfs: x1 [0, 1], y1 [1, 2], x2 [2, 3], y2 [3, 4]; iosets-wfq (one set): x's phase, then y's
    assert per_job.columns == TRACE_REPLAY_JOBS.names
    runtimes = {
        (r["scheduler"], r["job_id"]): (r["runtime"], r["alone_runtime"], r["wait"]) for r in per_job.to_dicts()
    }
    assert runtimes == {
        ("fcfs", "x"): (3.0, 2.0, 1.0),
        ("fcfs", "y"): (4.0, 2.0, 2.0),
        ("iosets-wfq", "x"): (2.0, 2.0, 0.0),
        ("iosets-wfq", "y"): (4.0, 2.0, 2.0),
    }
    fcfs, sets = per_scheduler.to_dicts()
    assert fcfs["utilization"] == 0.0  # no compute at all
    assert fcfs["io_slowdown"] == pytest.approx(math.sqrt(3 / 2 * 4 / 2))
    assert fcfs["max_stretch"] == 2.0 and fcfs["mean_stretch"] == 1.75
    assert fcfs["throughput"] == pytest.approx(MB)  # 4 MB over [0, 4]
    assert sets["io_slowdown"] == pytest.approx(math.sqrt(1 * 2)) and sets["mean_stretch"] == 1.5
    assert sets["p99_stretch"] == pytest.approx(1.99)
    assert (fcfs["window_start"], fcfs["window_end"]) == (sets["window_start"], sets["window_end"]) == (0.0, 4.0)
    # Both jobs recorded over [0, 2]: one busy period, the same for both schedulers; fcfs moved x1 and y1 in it
    assert (fcfs["busy_periods"], fcfs["busy_seconds"]) == (sets["busy_periods"], sets["busy_seconds"]) == (1, 2.0)
    assert fcfs["busy_throughput"] == pytest.approx(MB) and fcfs["busy_utilization"] == 0.0
    # x and y are both in set 1 (y as the conservative set): it moves all 4 MB of the window
    assert got.shares.rows() == [("fcfs", 1, 4.0 * MB, 1.0), ("iosets-wfq", 1, 4.0 * MB, 1.0)]


def test_the_phases_table_dates_each_phase():
    with pytest.warns(UserWarning, match="conservative set 1: y"):
        got = compare_schedulers(site(), recommendation(), ["fcfs", "iosets-wfq"], device=DEVICE)
    dates = ["job_id", "scheduler", "class", "set", "bytes", "ready", "start", "end"]
    # fcfs, one class per job: x1 [0, 1], y1 [1, 2], x2 [2, 3], y2 [3, 4]; both phases ready at their recorded 0.
    # iosets-wfq, set 1 for both (y not in the recommendation: set null): x's phase, then y's from 2.
    assert got.phases.select(dates).rows() == [
        ("x", "fcfs", "x", 1, 2 * MB, 0.0, 0.0, 3.0),
        ("y", "fcfs", "y", None, 2 * MB, 0.0, 1.0, 4.0),
        ("x", "iosets-wfq", "1", 1, 2 * MB, 0.0, 0.0, 2.0),
        ("y", "iosets-wfq", "1", None, 2 * MB, 0.0, 2.0, 4.0),
    ]
    assert got.phases["phase"].to_list() == [0] * 4
    assert got.phases.select("recorded_start", "recorded_end").unique().rows() == [(0.0, 2.0)]


def two_phase_site():
    """y: one 1 MB request [0, 1]; x: phase 0 [0, 1] (a row after y's), then phase 1 [3, 4] after 2 s of compute."""
    rows = [("y", 0, 0.0), ("x", 0, 0.0), ("x", 1, 3.0)]
    return pl.DataFrame(
        {
            "job_id": [r[0] for r in rows],
            "rank": 0,
            "op": "write",
            "offset": [k * MB for k in range(3)],
            "size": MB,
            "start": [r[2] for r in rows],
            "end": [r[2] + 1 for r in rows],
            "file": [f"{r[0]}.dat" for r in rows],
            "phase": [r[1] for r in rows],
            "synthetic": False,
        }
    )


def test_a_phase_is_ready_at_the_previous_replayed_end_plus_the_recorded_gap():
    rec = recommendation().with_columns(job_id=pl.Series(["x", "y"]), set=pl.Series([1, 0]))
    got = compare_schedulers(two_phase_site(), rec, ["fcfs"], device=DEVICE)
    # fcfs: y [0, 1], then x's phase 0 [1, 2]; x's phase 1 is ready at 2 + (3 - 1), not at its recorded 3
    assert got.phases.select("job_id", "phase", "set", "ready", "start", "end").rows() == [
        ("x", 0, 1, 0.0, 1.0, 2.0),
        ("x", 1, 1, 4.0, 4.0, 5.0),
        ("y", 0, 0, 0.0, 0.0, 1.0),
    ]
    # over [0, 2] set 0 (y) and set 1 (x) each moved 1 MB; over the whole replay [0, 5], 1 MB and 2 MB
    halves = compare_schedulers(two_phase_site(), rec, ["fcfs", "wfq"], device=DEVICE, window=(0.0, 2.0)).shares
    assert halves.filter(scheduler="fcfs").rows() == [("fcfs", 0, 1.0 * MB, 0.5), ("fcfs", 1, 1.0 * MB, 0.5)]
    assert got.shares.rows() == [
        ("fcfs", 0, 1.0 * MB, pytest.approx(1 / 3)),
        ("fcfs", 1, 2.0 * MB, pytest.approx(2 / 3)),
    ]
    for shares in (got.shares, halves):
        totals = shares.group_by("scheduler").agg(pl.col("share").sum())["share"].to_list()
        assert totals == pytest.approx([1.0] * len(totals))


def test_shares_sum_to_one_and_to_the_window_bytes_per_scheduler():
    got = compare_schedulers(
        site(), recommendation().with_columns(job_id=pl.Series(["x", "y"])), SCHEDULERS, device=DEVICE
    )
    assert got.shares["set"].to_list() == [0, 1] * len(SCHEDULERS)
    totals = got.shares.group_by("scheduler", maintain_order=True).agg(pl.col("share").sum(), pl.col("bytes").sum())
    assert totals["share"].to_list() == pytest.approx([1.0] * len(SCHEDULERS))
    width = got.schedulers["window_end"] - got.schedulers["window_start"]
    assert totals["bytes"].to_list() == pytest.approx((got.schedulers["throughput"] * width).to_list())
    assert totals["bytes"].to_list() == pytest.approx([4.0 * MB] * len(SCHEDULERS))


def test_the_policies_table_has_every_trace_metric():
    busy = ["busy_periods", "busy_seconds", *(f"busy_{name}" for name in TRACE_METRICS)]
    assert TRACE_REPLAY_SCHEDULERS.names == ["scheduler", *TRACE_METRICS, "window_start", "window_end", *busy]


def test_replay_trace_prints_the_table_and_writes_per_job_rows(files, table_rows):
    out = files / "perjob.parquet"
    args = ["replay-trace", str(files / "site.parquet"), "--rec", str(files / "rec.parquet")]
    result = runner.invoke(app, [*args, "--device", str(files / "dev.json"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = table_rows(result.stdout.replace(str(files) + "/", ""), TITLE)
    assert [row[0] for row in rows] == ["fcfs", "wfq", "iosets-wfq", "rbfq"]
    # no compute: utilization and its bound 0; p99 stretch of 1.5 and 2: 1.5 + 0.99 * 0.5
    assert rows[0][1:] == ["0.0000", "0.0000", "1.732", "2.000", "1.750", "1.995", "1.00", "100.0"]
    assert rows[2][3:6] == ["1.414", "2.000", "1.500"]
    assert "go to its conservative set 1: y" in result.stderr
    written = pl.read_parquet(out)
    assert written.height == 8 and written.columns == TRACE_REPLAY_JOBS.names
    assert written.filter(scheduler="wfq", job_id="y")["stretch"].item() == 2.0


def test_replay_trace_json_with_a_window_gives_nulls_and_notes(files):
    args = ["replay-trace", str(files / "site.parquet"), "--rec", str(files / "rec.parquet"), "--json"]
    result = runner.invoke(app, [*args, "--device", str(files / "dev.json"), "--compare", "fcfs", "--window", "0,2"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (fcfs,) = data["schedulers"]
    # in [0, 2] x and y each moved one of their two requests (e_io 1 s) and no phase ended
    assert fcfs["io_slowdown"] is None and fcfs["max_stretch"] == 2.0 and fcfs["throughput"] == MB
    assert "fcfs: io_slowdown: no job completed an I/O phase inside the window [0, 2]" in result.stderr
    assert [row["runtime"] for row in data["jobs"]] == [3.0, 4.0]


def test_the_site_jobs_table_beside_the_trace_counts_compute_before_the_first_request(files):
    # x started 2 s before its first request (y at it): window [-2, 4]; fcfs serves x0 y0 x1 y1, each 1 s
    pl.DataFrame({"job_id": ["x", "y"], "start": [-2.0, 0.0]}).write_parquet(files / "site.jobs.parquet")
    args = ["replay-trace", str(files / "site.parquet"), "--rec", str(files / "rec.parquet"), "--json"]
    result = runner.invoke(app, [*args, "--device", str(files / "dev.json"), "--compare", "fcfs"])
    assert result.exit_code == 0, result.output
    (fcfs,) = json.loads(result.stdout)["schedulers"]
    assert fcfs["utilization"] == pytest.approx(2 / 9)  # x: 2 s of compute in a life of 5 s; y: 0 in 4 s
    assert fcfs["utilization_bound"] == pytest.approx(2 / 6)  # alone, each job's I/O takes 2 s
    assert fcfs["max_stretch"] == pytest.approx(2.0)  # y: 4 s for 2 s of I/O
    assert fcfs["mean_stretch"] == pytest.approx((5 / 4 + 4 / 2) / 2)  # x: (3 + 2) / (2 + 2)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--compare", "fcfs,nope"], "scheduler"),
        (["--compare", "fcfs,fcfs"], "each scheduler once"),
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
        compare_schedulers(site(), recommendation().drop("wfq_weight"), ["fcfs"])
    with pytest.raises(InputError, match="recommendation: job_id 'q' appears more than once"):
        compare_schedulers(site(), pl.concat([recommendation(), recommendation()]), ["fcfs"])


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_replay_trace_writes_the_companions_with_the_json_numbers(files, suffix):
    out = files / f"perjob{suffix}"
    args = ["replay-trace", str(files / "site.parquet"), "--rec", str(files / "rec.parquet")]
    args += ["--device", str(files / "dev.json"), "--compare", "fcfs,iosets-wfq", "-o", str(out), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    tables = {
        name: schema.validate(read_frame(files / f"perjob.{name}{suffix}"))
        for name, schema in [("phases", TRACE_REPLAY_PHASES), ("schedulers", TRACE_REPLAY_SCHEDULERS)]
    }
    shares = TRACE_REPLAY_SHARES.validate(read_frame(files / f"perjob.shares{suffix}"))
    # the schedulers table holds the --json numbers (which add each set's share as share_set_<s>)
    assert [{**row, "share_set_1": 1.0} for row in tables["schedulers"].to_dicts()] == printed["schedulers"]
    assert shares.rows() == [("fcfs", 1, 4.0 * MB, 1.0), ("iosets-wfq", 1, 4.0 * MB, 1.0)]
    assert tables["phases"].filter(scheduler="fcfs").select("job_id", "ready", "start", "end").rows() == [
        ("x", 0.0, 0.0, 3.0),
        ("y", 0.0, 1.0, 4.0),
    ]
    assert TRACE_REPLAY_JOBS.validate(read_frame(out)).to_dicts() == printed["jobs"]
    assert f"wrote {out}, {files / f'perjob.phases{suffix}'}" in result.stderr


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_each_table_survives_a_write_and_a_read(tmp_path, suffix):
    rec = recommendation().with_columns(job_id=pl.Series(["x", "z"]))  # y: not in it, null set
    with pytest.warns(UserWarning, match="conservative set 1: y"):
        got = compare_schedulers(site(), rec, SCHEDULERS, device=DEVICE, window=(0.5, 3.0))
    for name, schema in [
        ("jobs", TRACE_REPLAY_JOBS),
        ("phases", TRACE_REPLAY_PHASES),
        ("schedulers", TRACE_REPLAY_SCHEDULERS),
        ("shares", TRACE_REPLAY_SHARES),
    ]:
        frame = getattr(got, name)
        back = schema.validate(read_frame(write_frame(frame, tmp_path / f"{name}{suffix}")))
        assert back.equals(frame), name
    assert got.phases["set"].to_list() == [1, None] * len(SCHEDULERS)


def test_a_companion_that_cannot_be_written_is_refused_before_the_replay(files):
    (files / "perjob.shares.parquet").mkdir()
    args = ["replay-trace", str(files / "site.parquet"), "--rec", str(files / "rec.parquet")]
    result = runner.invoke(app, [*args, "-o", str(files / "perjob.parquet")])
    assert result.exit_code == 1
    assert (
        f"{files / 'perjob.shares.parquet'}: is a folder; expected a file name for the per-set shares" in result.stderr
    )
    assert not (files / "perjob.parquet").exists()


def test_a_window_where_nothing_moved_gives_null_shares():
    with pytest.warns(UserWarning) as caught:
        got = compare_schedulers(site(), recommendation(), ["fcfs"], device=DEVICE, window=(10.0, 20.0))
    assert "fcfs: class_shares: no byte moved inside the window [10, 20]" in {str(w.message) for w in caught}
    assert got.shares.rows() == [("fcfs", 1, 0.0, None)]
    assert got.schedulers.select("window_start", "window_end").row(0) == (10.0, 20.0)
