"""``iosets replay-trace``: the model check after the table, in --json and in -o; the device it used, always said."""

import json
from dataclasses import fields

import polars as pl
import pytest
from typer.testing import CliRunner

from iosets.cli import app
from iosets.cli._format import percent
from iosets.replay import DEVICE_UNITS, Device, SchedulerComparison, calibrate
from iosets.replay._model_check import UNTRUSTED

runner = CliRunner()
CHECK_TITLE = (
    "model check over 4 jobs (each replayed alone against its recorded runtime): |alone / recorded - 1| "
    "median 37.5 %, p90 85 % (threshold 25 %)"
)
WARNING = f"warning: p90 of |alone / recorded - 1| is 85 %, above 25 %: {UNTRUSTED}"
DEVICE_LINE = "device: bandwidth 1 MB/s, overhead 0 us, seek 0 ms, queue depth 1, iops 0 /s"


@pytest.fixture
def files(tmp_path, alone_known):
    """The AloneKnown trace (tests/conftest.py), its recommendation and its device, as files."""
    alone_known.site.write_parquet(tmp_path / "site.parquet")
    alone_known.rec.write_parquet(tmp_path / "rec.parquet")
    (tmp_path / "dev.json").write_text(json.dumps(alone_known.device.to_dict()))
    return tmp_path


def replay(files, *extra):
    args = ["replay-trace", str(files / "site.parquet"), "--rec", str(files / "rec.parquet"), "--compare", "fcfs"]
    result = runner.invoke(app, [*args, *extra])
    assert result.exit_code == 0, result.output
    return result


def test_the_table_is_followed_by_the_model_check_and_its_warning(files, table_rows):
    result = replay(files, "--device", str(files / "dev.json"))
    # the jobs farthest from 1 first: c (2), b (0.5), d (1.25), a (1); e has no recorded runtime
    assert table_rows(result.stdout, CHECK_TITLE) == [
        ["c", "1", "2", "2.000"],
        ["b", "2", "1", "0.500"],
        ["d", "4", "5", "1.250"],
        ["a", "2", "2", "1.000"],
    ]
    assert result.stdout.index("jobs replayed in a closed loop") < result.stdout.index(CHECK_TITLE)
    assert WARNING in result.stderr.splitlines()
    assert DEVICE_LINE in result.stderr.splitlines()
    assert "no --device" not in result.stderr


def test_a_replay_that_reproduces_its_jobs_alone_gives_no_warning(files, alone_known, table_rows):
    kept = alone_known.site.filter(pl.col("job_id").is_in(["a", "d"]))  # ratios 1 and 1.25
    kept.write_parquet(files / "site.parquet")
    result = replay(files, "--device", str(files / "dev.json"))
    title = (
        "model check over 2 jobs (each replayed alone against its recorded runtime): |alone / recorded - 1| "
        "median 12.5 %, p90 22.5 % (threshold 25 %)"
    )
    assert table_rows(result.stdout, title) == [["d", "4", "5", "1.250"], ["a", "2", "2", "1.000"]]
    assert "warning:" not in result.stderr and UNTRUSTED not in result.stderr


def test_json_holds_the_model_check_and_the_device(files, alone_known):
    result = replay(files, "--device", str(files / "dev.json"), "--json")
    data = json.loads(result.stdout)
    check = data["model_check"]
    assert (check["n_jobs"], check["median"], check["threshold"], check["trusted"]) == (4, 0.375, 0.25, False)
    assert check["p90"] == pytest.approx(0.85, rel=1e-12)
    assert check["warning"] == WARNING.removeprefix("warning: ")
    ratios = [("a", 1.0), ("b", 0.5), ("c", 2.0), ("d", 1.25), ("e", None)]
    assert [(job["job_id"], job["alone_ratio"]) for job in check["jobs"]] == ratios
    assert [(job["job_id"], job["alone_ratio"]) for job in data["jobs"]] == ratios
    assert (data["device"], data["device_source"]) == (alone_known.device.to_dict(), "file")
    assert WARNING in result.stderr.splitlines()  # stdout holds the JSON only


def test_without_a_device_it_calibrates_on_the_trace_and_says_so(files, alone_known):
    result = replay(files, "--json")
    fitted = calibrate(alone_known.site)
    error, held = fitted.error, fitted.held_out
    site = files / "site.parquet"
    lines = result.stderr.splitlines()
    said = (
        f"no --device: calibrated on {site} "
        f"(fit error: median {percent(error['phase_median'])}, p90 {percent(error['phase_p90'])}; "
        f"held out: median {percent(held['median'])}, p90 {percent(held['p90'])})"
    )
    assert lines[:2] == [said, f"device: {fitted.device.describe()}"]
    data = json.loads(result.stdout)
    assert (data["device"], data["device_source"]) == (fitted.device.to_dict(), "calibrated")


def test_a_trace_that_cannot_be_calibrated_stops_naming_iosets_calibrate(files, alone_known):
    alone_known.site.filter(job_id="e").write_parquet(files / "site.parquet")  # one request of no duration
    args = ["replay-trace", str(files / "site.parquet"), "--rec", str(files / "rec.parquet")]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: no --device, and {files / 'site.parquet'} cannot be calibrated on: ")
    assert "give --device DEVICE.json (`iosets calibrate SITE -o DEVICE.json`" in result.stderr


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_the_written_tables_carry_the_ratio_and_read_back_to_the_same_check(files, suffix):
    out = files / f"perjob{suffix}"
    result = replay(files, "--device", str(files / "dev.json"), "--compare", "fcfs,wfq", "-o", str(out), "--json")
    printed = json.loads(result.stdout)
    back = SchedulerComparison.read(out)
    assert back.jobs["alone_ratio"].to_list() == [1.0, 0.5, 2.0, 1.25, None] * 2
    assert back.jobs.to_dicts() == printed["jobs"]
    assert back.model_check.to_dict() == printed["model_check"]


def test_describe_device_gives_every_field_with_its_unit():
    device = Device(queue_depth=4, bandwidth=2.5e9, overhead=4e-5, seek=1.5e-4, iops=0.0)
    assert device.describe() == "bandwidth 2500 MB/s, overhead 40 us, seek 0.15 ms, queue depth 4, iops 0 /s"
    slow = Device(bandwidth=5e5, iops=200.0)  # the default overhead (50 us) and seek (2 ms)
    assert slow.describe() == "bandwidth 0.5 MB/s, overhead 50 us, seek 2 ms, queue depth 1, iops 200 /s"
    assert {f.name for f in fields(Device)} == set(DEVICE_UNITS), "give each Device field its label and unit"


def test_calibrate_prints_the_device_as_replay_trace_does(files):
    printed = json.loads(runner.invoke(app, ["calibrate", str(files / "site.parquet"), "--json"]).stdout)
    text = runner.invoke(app, ["calibrate", str(files / "site.parquet")])
    assert text.exit_code == 0, text.output
    assert f"device: {Device.from_dict(printed['device']).describe()}" in text.stdout.splitlines()
