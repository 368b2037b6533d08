"""``validate`` and ``iosets validate``: the result file, the paper's criterion, the refusals and a short real run."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from iosets.cli import app
from iosets.errors import InputError
from iosets.replay import PhaseMetrics, replay_phases
from iosets.validate import PolicyValidation, Validation, make_fig4_workload, validate
from iosets.validate._throttle import block_device, throttle_group
from iosets.workload import Workload, read_workload, write_workload

runner = CliRunner()
METRICS = ["utilization", "io_slowdown", "max_stretch"]


def a_validation() -> Validation:
    workload = make_fig4_workload(2, horizon=10.0, bandwidth=1e8)
    measured = {"utilization": [0.8, 0.83, 0.75], "io_slowdown": [1.5, None, 1.7], "max_stretch": [1.2, 1.21, 1.22]}
    outcome = PolicyValidation("set-10", "set-10", measured, PhaseMetrics(0.8, 1.6, 1.2))
    return Validation(workload, 1e8, {"set-10": outcome}, throttle=None)


def test_the_criterion_counts_the_runs_within_the_papers_tolerances():
    outcome = a_validation().policies["set-10"]
    assert outcome.within("utilization") == pytest.approx(1 / 3)  # 0.83 and 0.75 are more than 3.5 % off 0.8
    assert outcome.within("max_stretch") == pytest.approx(2 / 3)  # 1.22 is more than 1.5 % off 1.2
    assert not outcome.meets_criterion()
    rows = {row["metric"]: row for row in outcome.summary()}
    assert (rows["utilization"]["min"], rows["utilization"]["median"], rows["utilization"]["max"]) == (0.75, 0.8, 0.83)
    assert rows["max_stretch"]["difference"] == pytest.approx((1.21 - 1.2) / 1.2)
    assert rows["io_slowdown"]["median"] == pytest.approx(1.6) and rows["io_slowdown"]["within"] is None


def test_validation_json_has_the_issues_shape(tmp_path):
    path = a_validation().write(tmp_path / "validation.json")
    data = json.loads(path.read_text())
    assert list(data) == ["workload", "bandwidth", "policies"]
    assert data["bandwidth"] == 1e8
    assert list(data["policies"]) == ["set-10"]
    assert list(data["policies"]["set-10"]) == ["measured", "simulated"]
    assert data["policies"]["set-10"]["measured"]["io_slowdown"] == [1.5, None, 1.7]
    assert data["policies"]["set-10"]["simulated"] == {"utilization": 0.8, "io_slowdown": 1.6, "max_stretch": 1.2}
    workload = Workload.from_dict(data["workload"])
    assert workload.ids == ["h0", "l0"] and workload.bandwidth == 1e8


def test_a_folder_short_of_space_is_refused_with_the_numbers_before_any_run(tmp_path, periodic):
    huge = Workload.from_arrays(["a"], [0.0], [0], [1.0], [1e18], horizon=10.0)
    with pytest.raises(
        InputError, match=r"has \d+\.\d\d GB free; a run of 1 jobs x 2 processes needs 1000000000\.00 GB"
    ):
        validate(tmp_path, huge, processes=2, policies=["system"])
    assert list(tmp_path.iterdir()) == []  # the run's folder is gone


@pytest.mark.timing
def test_an_interrupted_validation_removes_its_files(tmp_path, periodic):
    tiny = Workload.from_arrays(["a"], [0.0], [0, 0], [0.1, 0.1], [1e6, 1e6], horizon=10.0)

    def interrupt(line):
        assert (tmp_path / f"iosets-validate-{os.getpid()}").is_dir()  # the run's folder, after the calibration
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        validate(tmp_path, tiny, policies=["system"], report=interrupt)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"repeat": 0}, "repeat must be an integer >= 1, got 0"),
        ({"policies": ["set-10", "fifo"]}, "unknown policy 'fifo'; expected one of system, set-10,"),
        ({"policies": ["system", "system"]}, "policies: each policy once, got system, system"),
        ({"request_size": 5000}, "request_size must be a multiple of 4096, got 5000"),
        ({"throttle": -1.0}, "throttle must be a finite number > 0, got -1.0"),
    ],
)
def test_bad_arguments_are_refused_before_anything_runs(tmp_path, arguments, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate(tmp_path, **arguments)
    assert list(tmp_path.iterdir()) == []


def test_throttle_needs_a_block_io_controller(tmp_path):
    message = "--throttle needs the block-I/O cgroup controller: .* has no blkio hierarchy"
    with (
        pytest.raises(InputError, match=message),
        throttle_group(tmp_path, 1e8, cgroup_root=tmp_path / "cgroup", sys_root=fake_sys(tmp_path)),
    ):
        pass


def test_throttle_needs_root(tmp_path, monkeypatch):
    (tmp_path / "cgroup" / "blkio").mkdir(parents=True)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with (
        pytest.raises(InputError, match="--throttle needs root: it creates the cgroup .*blkio/iosets-validate-"),
        throttle_group(tmp_path, 1e8, cgroup_root=tmp_path / "cgroup", sys_root=fake_sys(tmp_path)),
    ):
        pass


def test_throttle_finds_the_disk_of_a_partition_and_refuses_what_is_not_a_block_device(tmp_path):
    sys_root = fake_sys(tmp_path, partition=True)
    assert block_device(tmp_path, sys_root=sys_root) == "254:0"
    with pytest.raises(InputError, match=r"is on device \d+:\d+, which is not a block device"):
        block_device(tmp_path, sys_root=tmp_path / "empty-sys")


def fake_sys(tmp_path: Path, *, partition: bool = False) -> Path:
    """A /sys where ``tmp_path``'s device is a block device (partition 1 of disk 254:0 when asked)."""
    st = os.stat(tmp_path)
    root = tmp_path / "sys"
    disk = root / "devices" / "vda"
    entry = disk / "vda1" if partition else disk
    entry.mkdir(parents=True)
    (disk / "dev").write_text("254:0\n")
    if partition:
        (entry / "partition").write_text("1\n")
    (root / "dev" / "block").mkdir(parents=True)
    (root / "dev" / "block" / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}").symlink_to(entry)
    return root


def _can_throttle(path: Path) -> bool:
    try:
        block_device(path)
    except InputError:
        return False
    return os.geteuid() == 0 and Path("/sys/fs/cgroup/blkio").is_dir()


@pytest.mark.timing
def test_the_throttle_group_caps_the_disk_and_is_removed(tmp_path):
    if not _can_throttle(tmp_path):
        pytest.skip("needs root, cgroup v1 blkio and a temporary folder on a block device")
    with throttle_group(tmp_path, 123456789.0) as group:
        assert group.folder.is_dir()
        assert (group.folder / "blkio.throttle.write_bps_device").read_text() == f"{group.device} 123456789\n"
        assert (group.folder / "blkio.throttle.read_bps_device").read_text() == f"{group.device} 123456789\n"
    assert not group.folder.exists()


def test_a_short_real_run_measures_finite_metrics_and_replays_them(tmp_path, periodic, fake_arbiter_command):
    # a job of 8 phases of w_iter ~0.12 s and one of 3 phases of ~0.34 s: two SET-10 sets
    jobs = [
        {"id": "fast", "phases": [[0.1, 2e6]] * 8},
        {"id": "slow", "phases": [[0.3, 4e6]] * 3},
    ]
    workload = Workload.from_dict({"bandwidth": 1e8, "horizon": 2.0, "window": [0.2, 1.2], "jobs": jobs})
    write_workload(workload, tmp_path / "wl.json")
    data = tmp_path / "data"
    data.mkdir()
    arguments = ["validate", "--dir", str(data), "--workload", str(tmp_path / "wl.json"), "--repeat", "2"]
    result = runner.invoke(
        app, [*arguments, "--policies", "system,set-10", "-o", str(tmp_path / "v.json")], catch_exceptions=False
    )
    assert result.exit_code == 0, result.stderr
    assert list(data.iterdir()) == []  # the run's files are removed
    saved = json.loads((tmp_path / "v.json").read_text())
    replayed = read_workload(tmp_path / "wl.json")  # the file's phases, replayed at the measured bandwidth
    assert Workload.from_dict(saved["workload"]).io_bytes.tolist() == replayed.io_bytes.tolist()
    at_measured = Workload.from_dict(saved["workload"])
    assert at_measured.bandwidth == saved["bandwidth"] > 0
    for policy, simulated_as in (("system", "fair-share"), ("set-10", "set-10")):
        outcome = saved["policies"][policy]
        assert all(len(outcome["measured"][m]) == 2 for m in METRICS)
        assert all(math.isfinite(v) for m in ("utilization", "max_stretch") for v in outcome["measured"][m])
        assert outcome["simulated"] == replay_phases(at_measured, simulated_as).metrics.values()
    assert "set-10: 2 runs, simulated as set-10 at B = " in result.stdout
    assert "of runs within 3.5 % of the simulated Utilization" in result.stdout
    assert f"wrote {tmp_path / 'v.json'}" in result.stderr


def test_the_workload_and_the_default_scenario_exclude_each_other(tmp_path):
    result = runner.invoke(app, ["validate", "--dir", str(tmp_path), "--workload", "wl.json", "--jobs", "4"])
    assert result.exit_code == 1
    assert (
        result.stderr == "error: --jobs and --horizon shape the default workload: give them or --workload, not both\n"
    )
