"""``validate --darshan``: the truth from the programs' timestamps, the analyzer's answer from real darshan-runtime logs
(tests/data/darshan-runtime/validate, README there), the result's JSON, and a real run where darshan-runtime is
installed."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from iosets.analyzer import analyze, periodicity, read_darshan, site_trace
from iosets.cli import app
from iosets.errors import InputError
from iosets.replay import Device, PhaseMetrics
from iosets.validate import (
    DarshanValidation,
    JobCheck,
    JobTruth,
    PolicyValidation,
    Validation,
    check_run,
    find_darshan,
    job_truth,
    make_fig4_workload,
    read_timestamps,
    read_truth,
    validate,
)
from iosets.validate._darshan import DEFAULT_EXCLUSIONS, exclusions_for
from iosets.validate._log_check import calibrate_on
from iosets.workload import Workload, write_workload

FIXTURES = Path(__file__).parents[1] / "data" / "darshan-runtime" / "validate"
JOBS4 = FIXTURES / "jobs4"
PROCESSES2 = FIXTURES / "processes2"
PROBE_BYTES = 4096
"""periodic.c's probe of O_DIRECT: one block at offset 0 of rank 0's file before the first phase, not in its CSV."""
S = 10**9  # ns per s

runner = CliRunner()


def recorded(folder: Path) -> dict:
    """The validation.json the fixture's command wrote."""
    return json.loads((folder / "validation.json").read_text())


def truth_files(folder: Path) -> list[Path]:
    return sorted((folder / "system-1").glob("j*.csv"))


def analyzed(folder: Path) -> dict[str, dict]:
    """The analyzer's rows of a fixture's run, by Darshan job id."""
    jobs = analyze([folder / "system-1"], workers=1).jobs
    return {row["job_id"]: row for row in jobs.iter_rows(named=True)}


# ---------------------------------------------------------------------------------------------- the truth


def write_csv(path: Path, rows: list[tuple[int, int, int, int, int]]) -> Path:
    lines = ["job_id,phase,cpu_start,cpu_end,io_start,io_end,bytes"]
    lines += [f"j0,{k},{a},{b},{c},{d},{size}" for k, (a, b, c, d, size) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_truth_of_a_hand_made_csv(tmp_path):
    # three phases: compute 1 s then I/O; the second waited 0.5 s for a grant (cpu_end < io_start)
    rows = [
        (10 * S, 11 * S, 11 * S, 12 * S, 300),
        (12 * S, 13 * S, 13 * S + S // 2, 14 * S + S // 2, 200),
        (14 * S + S // 2, 15 * S + S // 2, 15 * S + S // 2, 17 * S + S // 2, 100),
    ]
    job_id, truth = read_truth(write_csv(tmp_path / "j0.csv", rows))
    assert job_id == "j0"
    assert truth.n_phases == 3 and truth.bytes == 600
    assert truth.w_iter == pytest.approx((15.5 - 11) / 2)  # io starts at 11, 13.5, 15.5
    assert truth.runtime == pytest.approx(7.5)  # 10 to 17.5
    assert truth.alpha_io == pytest.approx((1 + 1 + 2) / 7.5)  # the I/O phases, not the wait for the grant
    assert truth.compute == pytest.approx(3.0)
    assert truth.stretch(100.0) == pytest.approx(7.5 / (3.0 + 600 / 100.0))  # alone: compute + bytes at B


def test_one_phase_has_no_w_iter_and_no_phase_has_no_stretch():
    one = job_truth(np.array([[0], [S], [S], [2 * S]]), np.array([10]))
    assert (one.w_iter, one.alpha_io, one.n_phases, one.runtime) == (None, 0.5, 1, 2.0)
    none = job_truth(np.zeros((4, 0), dtype=np.int64), np.zeros(0, dtype=np.int64))
    assert (none.n_phases, none.bytes, none.alpha_io, none.stretch(1e8)) == (0, 0, None, None)


def test_the_truth_of_a_fixture_csv_is_read_off_its_rows():
    path = JOBS4 / "system-1" / "j2.csv"
    _, dates, sizes = read_timestamps(path)
    _, truth = read_truth(path)
    first, last = dates[:, 0], dates[:, -1]
    assert truth.n_phases == 7 and truth.bytes == 7 * 200003584  # l0: 200 MB per phase, rounded up to 4 KiB
    assert truth.w_iter == pytest.approx((last[2] - first[2]) / 6 / S, rel=1e-12)
    assert truth.runtime == pytest.approx((last[3] - first[0]) / S, rel=1e-12)
    assert truth.alpha_io == pytest.approx(float((dates[3] - dates[2]).sum()) / S / truth.runtime, rel=1e-12)
    assert sizes.tolist() == [200003584] * 7


# ---------------------------------------------------------------------------------------------- the analyzer


@pytest.mark.parametrize("folder", [JOBS4, PROCESSES2], ids=["jobs4", "processes2"])
def test_the_analyzer_counts_every_byte_the_programs_wrote(folder):
    rows = analyzed(folder)
    for k, path in enumerate(truth_files(folder)):
        _, truth = read_truth(path)
        row = rows[str(k + 1)]
        # the phases' bytes, the O_DIRECT probe and the CSV's own text (STDIO), every process's logs merged
        assert row["bytes_written"] == truth.bytes + PROBE_BYTES + path.stat().st_size
        assert row["n_logs"] == (2 if folder == PROCESSES2 else 1)


@pytest.mark.parametrize("folder", [JOBS4, PROCESSES2], ids=["jobs4", "processes2"])
def test_the_analyzer_finds_the_low_frequency_jobs_with_the_probe_as_one_phase_more(folder):
    rows = analyzed(folder)
    ids = recorded(folder)["workload"]["jobs"]
    site = site_trace([folder / "system-1"], workers=1).requests  # every log's requests on one clock
    for k, path in enumerate(truth_files(folder)):
        if not ids[k]["id"].startswith("l"):
            continue
        _, dates, _ = read_timestamps(path)
        _, truth = read_truth(path)
        row = rows[str(k + 1)]
        assert row["n_phases"] == truth.n_phases + 1
        # its w_iter is the spacing of its phases' starts, the probe's (~1.06 s before the release) included
        first = site.filter(pl.col("job_id") == str(k + 1)).sort("start").row(0, named=True)
        assert (first["offset"], first["size"]) == (0, PROBE_BYTES)
        probe = first["start"]
        assert row["w_iter"] == pytest.approx((dates[2, -1] / S - probe) / truth.n_phases, rel=1e-3)
        assert row["w_iter"] == pytest.approx(truth.w_iter, rel=0.05)
        assert row["w_iter"] < truth.w_iter
        assert row["alpha_io"] == pytest.approx(truth.alpha_io, rel=0.06)


def test_without_the_probe_the_dxt_trace_gives_every_jobs_w_iter_and_phases():
    for k, path in enumerate(truth_files(JOBS4)):
        requests = _requests(JOBS4, k)
        probe = requests.row(0, named=True)
        assert (probe["offset"], probe["size"]) == (0, PROBE_BYTES)
        _, truth = read_truth(path)
        found = periodicity(requests.slice(1))
        assert found.n_phases == truth.n_phases
        assert found.w_iter == pytest.approx(truth.w_iter, rel=0.01)
        assert found.alpha_io == pytest.approx(truth.alpha_io, rel=0.1)


@pytest.mark.xfail(
    strict=True,
    reason="the O_DIRECT probe's gap to the first phase (1.37 s) is 4.4x the phases' gaps (0.30 s), and the "
    "segmentation takes the largest break (>= 3x) between gap lengths as the line between idle gaps and gaps inside "
    "a phase: only the probe's gap splits, 2 phases, alpha_io 0.97, no w_iter",
)
def test_the_analyzer_finds_the_high_frequency_jobs_w_iter_within_one_percent():
    rows = analyzed(JOBS4)
    for k in (0, 1):  # h0, h1
        _, truth = read_truth(truth_files(JOBS4)[k])
        assert rows[str(k + 1)]["w_iter"] == pytest.approx(truth.w_iter, rel=0.01)


def _requests(folder: Path, k: int) -> pl.DataFrame:
    (log,) = (folder / "system-1").glob(f"*_id{k + 1}-*.darshan")
    return read_darshan(log).dxt["DXT_POSIX"].sort("start")


# ---------------------------------------------------------------------------------------------- the comparison


@pytest.mark.parametrize("folder", [JOBS4, PROCESSES2], ids=["jobs4", "processes2"])
def test_check_run_on_the_fixture_gives_what_validation_json_recorded(folder):
    saved = recorded(folder)
    ids = [job["id"] for job in saved["workload"]["jobs"]]
    device = Device.from_dict(saved["darshan"]["device"])
    checks = check_run(
        folder / "system-1", ids, policy="system", repetition=1, bandwidth=saved["bandwidth"], device=device
    )
    expected = [JobCheck.from_dict(job) for job in saved["darshan"]["jobs"]]
    assert [c.job_id for c in checks] == ids
    for got, want in zip(checks, expected, strict=True):
        assert got.darshan_job_id == want.darshan_job_id
        assert got.truth == want.truth
        assert got.analyzer.keys() == want.analyzer.keys()
        for name, value in want.analyzer.items():
            assert got.analyzer[name] == (None if value is None else pytest.approx(value, rel=1e-12)), name
        assert got.measured_stretch == pytest.approx(want.measured_stretch, rel=1e-12)
        assert got.predicted_stretch == pytest.approx(want.predicted_stretch, rel=1e-9)


def test_the_measured_stretch_of_a_fixture_job_is_its_runtime_over_compute_plus_bytes_at_b():
    saved = recorded(JOBS4)
    _, dates, sizes = read_timestamps(JOBS4 / "system-1" / "j2.csv")
    runtime = (dates[3, -1] - dates[0, 0]) / S
    alone = float((dates[1] - dates[0]).sum()) / S + float(sizes.sum()) / saved["bandwidth"]
    (l0,) = (job for job in saved["darshan"]["jobs"] if job["job_id"] == "l0")
    assert l0["stretch"]["measured"] == pytest.approx(runtime / alone, rel=1e-12)


def test_the_calibration_run_gives_back_its_throttle_as_a_rate_limit():
    """One job alone under a 200 MB/s blk-throttle: its requests go at the disk's raw speed until the slice's bytes
    are spent, then wait for the next 100 ms slice (a rate limit granted per slice: fitted, at the throttle's rate
    and slice); its only jumps are phase starts (no seek fitted)."""
    calibration = calibrate_on(JOBS4 / "calibration")
    how = {p.name: p for p in calibration.parameters}
    assert how["rate"].how == how["slice"].how == "fitted" and how["burst"].how == "not fitted"
    assert calibration.device.rate == pytest.approx(200e6, rel=0.01)
    assert calibration.device.slice == pytest.approx(0.1, rel=1e-3)
    assert calibration.device.bandwidth > 5 * calibration.device.rate  # the bursts go at the disk's own speed
    assert how["seek"].how == "not fitted" and calibration.device.seek == 0.0


# ---------------------------------------------------------------------------------------------- the result


def test_the_darshan_part_round_trips_through_validation_json():
    saved = recorded(JOBS4)["darshan"]
    assert DarshanValidation.from_dict(saved).to_dict() == saved
    assert [job["job_id"] for job in saved["jobs"]] == ["h0", "h1", "l0", "l1"]


def test_validation_json_keeps_its_keys_and_puts_darshan_after_them(tmp_path):
    workload = make_fig4_workload(2, horizon=10.0, bandwidth=1e8)
    measured = {metric: [0.5] for metric in ("utilization", "io_slowdown", "max_stretch")}
    outcome = PolicyValidation("system", "fair-share", measured, PhaseMetrics(0.5, 1.0, 1.1))
    truth = JobTruth(2.0, 0.25, 1000, 4, 8.0, 6.0)
    answer = {"w_iter": 2.1, "alpha_io": 0.3, "bytes": 1000, "n_phases": 4}
    check = JobCheck("system", 1, "h0", "1", truth, answer, 1.2, None)
    errors = {"phase_median": math.nan}
    darshan = DarshanValidation("/opt/darshan-runtime", None, Device(bandwidth=1e8), errors, [check])
    path = Validation(workload, 1e8, {"system": outcome}, darshan=darshan).write(tmp_path / "v.json")
    data = json.loads(path.read_text())
    assert list(data) == ["workload", "bandwidth", "policies", "darshan"]
    assert data["darshan"]["calibration_error"] == {"phase_median": None}  # JSON has no NaN
    assert data["darshan"]["jobs"] == [
        {
            "policy": "system",
            "repetition": 1,
            "job_id": "h0",
            "darshan_job_id": "1",
            "truth": {"w_iter": 2.0, "alpha_io": 0.25, "bytes": 1000, "n_phases": 4, "runtime": 8.0, "compute": 6.0},
            "analyzer": {"w_iter": 2.1, "alpha_io": 0.3, "bytes": 1000, "n_phases": 4},
            "stretch": {"measured": 1.2, "predicted": None},
        }
    ]
    back = DarshanValidation.from_dict(data["darshan"])
    assert back.jobs == [check] and math.isnan(back.calibration_error["phase_median"])
    assert "darshan" not in Validation(workload, 1e8, {"system": outcome}).to_dict()


# ---------------------------------------------------------------------------------------------- the runtime


def test_the_run_folders_prefix_is_dropped_from_darshans_exclusions():
    kept = exclusions_for("/var/tmp/iosets-dar").split(",")
    assert kept == [prefix for prefix in DEFAULT_EXCLUSIONS if prefix != "/var/"]
    assert exclusions_for("/scratch/run").split(",") == list(DEFAULT_EXCLUSIONS)


def test_a_program_runs_through_env_with_the_library_preloaded(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libdarshan.so").write_bytes(b"")
    runtime = find_darshan(tmp_path)
    command = runtime.wrap(["prog", "--x"], job_id="3", logs=Path("/l"), data=Path("/var/tmp/d"))
    assert command[0] == "env" and command[-2:] == ["prog", "--x"]
    settings = dict(item.split("=", 1) for item in command[1:-2])
    assert settings["LD_PRELOAD"] == str(tmp_path.resolve() / "lib" / "libdarshan.so")
    assert (settings["DARSHAN_ENABLE_NONMPI"], settings["DXT_ENABLE_IO_TRACE"]) == ("1", "1")
    assert (settings["DARSHAN_LOG_DIR"], settings["IOSETS_JOBID"]) == ("/l", "3")
    assert "/var/" not in settings["DARSHAN_EXCLUDE_DIRS"].split(",")


def test_a_prefix_without_the_library_is_refused_before_any_run(tmp_path):
    with pytest.raises(InputError, match=r"--darshan: no darshan-runtime at .* \(.*lib/libdarshan\.so is missing\)"):
        validate(tmp_path, darshan=tmp_path / "nowhere", policies=["system"])
    assert list(tmp_path.iterdir()) == []


def test_a_log_folder_that_is_not_empty_is_refused_before_any_run(tmp_path):
    (tmp_path / "prefix" / "lib").mkdir(parents=True)
    (tmp_path / "prefix" / "lib" / "libdarshan.so").write_bytes(b"")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "old.darshan").write_bytes(b"")
    data = tmp_path / "data"
    data.mkdir()
    with pytest.raises(InputError, match=r"darshan_logs: .*logs is not empty: give a new or empty folder"):
        validate(data, darshan=tmp_path / "prefix", darshan_logs=tmp_path / "logs", policies=["system"])
    assert list(data.iterdir()) == []


def test_darshan_logs_without_darshan_is_refused(tmp_path):
    result = runner.invoke(app, ["validate", "--dir", str(tmp_path), "--darshan-logs", str(tmp_path / "logs")])
    assert result.exit_code == 1
    assert result.stderr == "error: --darshan-logs keeps the logs of --darshan: give --darshan PREFIX too\n"


@pytest.fixture
def darshan_prefix() -> Path:
    """A darshan-runtime install: ``$IOSETS_DARSHAN_PREFIX``, else /opt/darshan-runtime; skips without one."""
    prefix = Path(os.environ.get("IOSETS_DARSHAN_PREFIX") or "/opt/darshan-runtime")
    if not (prefix / "lib" / "libdarshan.so").is_file():
        pytest.skip(
            f"no darshan-runtime at {prefix} (no lib/libdarshan.so): build one with the shared "
            "tools/build-darshan-runtime.sh, or name one in IOSETS_DARSHAN_PREFIX"
        )
    return prefix


@pytest.mark.timing
def test_a_short_real_run_under_darshan_checks_every_job(tmp_path, periodic, darshan_prefix):
    jobs = [{"id": "fast", "phases": [[0.1, 2e6]] * 8}, {"id": "slow", "phases": [[0.3, 4e6]] * 3}]
    workload = Workload.from_dict({"bandwidth": 1e8, "horizon": 2.0, "window": [0.2, 1.8], "jobs": jobs})
    write_workload(workload, tmp_path / "wl.json")
    data = tmp_path / "data"
    data.mkdir()
    arguments = ["validate", "--dir", str(data), "--workload", str(tmp_path / "wl.json"), "--repeat", "1"]
    arguments += ["--policies", "system", "-o", str(tmp_path / "v.json"), "--darshan", str(darshan_prefix)]
    result = runner.invoke(app, arguments, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    logs = tmp_path / "v-darshan"
    assert sorted(p.name for p in logs.iterdir()) == ["calibration", "system-1"]
    run = logs / "system-1"
    assert len(list(run.glob("*_id1-*.darshan"))) == len(list(run.glob("*_id2-*.darshan"))) == 1
    saved = json.loads((tmp_path / "v.json").read_text())
    assert list(saved) == ["workload", "bandwidth", "policies", "darshan"]
    checks = [JobCheck.from_dict(job) for job in saved["darshan"]["jobs"]]
    assert [(c.policy, c.repetition, c.job_id) for c in checks] == [("system", 1, "fast"), ("system", 1, "slow")]
    for k, check in enumerate(checks):
        path = run / f"j{k}.csv"
        assert check.truth == read_truth(path)[1]
        assert 1 <= check.truth.n_phases <= len(jobs[k]["phases"])  # no phase starts after the window
        # the program's probe and its CSV go through raw system calls: Darshan sees the workload's bytes alone
        assert check.analyzer["bytes"] == check.truth.bytes
        assert check.analyzer["n_phases"] == check.truth.n_phases
        assert check.analyzer["w_iter"] == pytest.approx(check.truth.w_iter, rel=0.01)
        assert check.measured_stretch is not None and check.measured_stretch > 0
        assert check.predicted_stretch is not None and check.predicted_stretch >= 1 - 1e-9  # never faster than alone
    assert "Darshan logs: the analyzer against the programs' truth" in result.stdout
    assert list(data.iterdir()) == []


def test_the_darshan_part_of_validation_json_reads_back(tmp_path):
    from iosets.validate import DarshanValidation, read_validation
    from iosets.validate._validate import Validation

    back = read_validation(Path(__file__).parents[1] / "data/darshan-runtime/validate/jobs4/validation.json")
    assert isinstance(back.darshan, DarshanValidation) and back.darshan.jobs
    again = Validation(back.workload, back.bandwidth, back.policies, darshan=back.darshan).write(tmp_path / "v.json")
    assert read_validation(again).darshan.to_dict() == back.darshan.to_dict()
