"""The root app: registered commands, the one error handler, the version, a lean start and the demo."""

import dataclasses
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import iosets.analyzer
import iosets.arbiter
import iosets.datasets
import iosets.recommender
import iosets.replay
import iosets.validate
from iosets.cli import _choices, app
from iosets.errors import ReplayError

runner = CliRunner()
HEAVY = ("numpy", "polars", "pyarrow", "scipy", "sklearn", "darshan")


def test_every_room_command_is_registered_at_the_top_level():
    names = [command.name for command in app.registered_commands]
    assert names == [
        "analyze",
        "ingest",
        "recommend",
        "export",
        "tune",
        "replay",
        "replay-requests",
        "replay-trace",
        "experiment",
        "generate",
        "calibrate",
        "report",
        "validate",
        "demo",
        "serve",
        "arbiter",
    ]
    assert [group.name for group in app.registered_groups] == ["token"]


def test_help_lists_choices_that_match_the_rooms():
    assert ("auto", *iosets.analyzer.INGESTERS) == _choices.TRACE_FORMATS
    assert iosets.replay.POLICIES == _choices.POLICIES
    assert iosets.arbiter.ARBITER_POLICIES == _choices.ARBITER_POLICIES
    assert iosets.validate.POLICIES == _choices.VALIDATE_POLICIES
    assert iosets.replay.SCHEDULERS == _choices.SCHEDULERS
    assert tuple(f.name for f in dataclasses.fields(iosets.replay.Device)) == _choices.DEVICE_PARAMETERS
    assert tuple(iosets.datasets.FIGURES) == tuple(iosets.replay.EXPERIMENT_REFERENCE) == _choices.FIGURES
    assert ",".join(f"{b:g}" for b in iosets.replay.TUNE_BASES) == _choices.TUNE_BASES
    assert iosets.recommender.MAPPINGS == _choices.MAPPINGS
    assert iosets.recommender.EXPORT_FORMATS == _choices.EXPORT_FORMATS
    assert iosets.recommender.TBF_TARGET == _choices.TBF_TARGET
    help_text = " ".join(runner.invoke(app, ["replay", "--help"]).stdout.split())
    assert "One of: exclusive-fcfs, fair-share, set-10," in help_text


def test_help_and_import_load_no_heavy_module():
    code = (
        "import sys; from iosets.cli import app\n"
        "try: app(['--help'])\n"
        "except SystemExit: pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "replay-requests" in done.stdout
    assert done.stdout.splitlines()[-1] == "[]"


def test_a_library_error_is_one_line_and_exit_1(monkeypatch, tmp_path):
    def refuse(workload, policy):
        raise ReplayError("phase engine: job 3 has a negative [b]t_cpu[/b]", 3)

    monkeypatch.setattr(iosets.replay, "replay_phases", refuse)
    path = tmp_path / "wl.json"
    assert runner.invoke(app, ["generate", "--profile", "2,10,1", "-o", str(path)]).exit_code == 0
    result = runner.invoke(app, ["replay", str(path)], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "error: phase engine: job 3 has a negative [b]t_cpu[/b]\n"


def test_a_bug_is_not_dressed_up_as_a_user_error(monkeypatch, tmp_path):
    def broken(workload, policy):
        raise ValueError("a bug, not the user's input")

    monkeypatch.setattr(iosets.replay, "replay_phases", broken)
    path = tmp_path / "wl.json"
    assert runner.invoke(app, ["generate", "--profile", "2,10,1", "-o", str(path)]).exit_code == 0
    with pytest.raises(ValueError, match="a bug, not the user's input"):
        runner.invoke(app, ["replay", str(path)], catch_exceptions=False)
    result = runner.invoke(app, ["replay", str(path)])
    assert result.exit_code == 1 and isinstance(result.exception, ValueError)
    assert "error:" not in result.stderr


def test_version():
    from iosets import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"iosets {__version__}\n"


def test_demo_runs_every_room(table_rows, tmp_path):
    result = runner.invoke(app, ["demo", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    jobs = table_rows(result.stdout, "Analyzer: sample block traces and pydarshan's example logs")
    assert len(jobs) == 6 + 6  # two jobs per sample trace, one per example log
    periodic = {(row[0], row[1]): row[2] for row in jobs if row[2] != "not periodic"}
    assert periodic == {
        ("sample.blkparse.txt", "8,16"): "10.00",
        ("sample.msr.csv", "hm_1"): "5.00",
        ("sample.spc.csv", "0"): "4.00",
    }
    replayed = table_rows(result.stdout, "Phase-level replay (C engine)")
    assert [row[0] for row in replayed] == ["exclusive-fcfs", "fair-share", "set-10", "set-fairshare", "share-priority"]
    assert replayed[1][4] == "1.00x"  # fair-share against itself
    assert "Utilization upper bound 1 - omega/N = 0.9867" in result.stdout  # 1 - 0.8 / 60
    shares = table_rows(result.stdout, "Request-level replay: byte shares while all three sets are backlogged")
    assert [row[0] for row in shares] == ["fcfs", "wfq", "rbfq"]
    sets = table_rows(result.stdout, "Recommendation for the sample jobs (SET-10, B = 1 GB/s)")
    assert sum(int(row[2]) for row in sets) == 12
    ranking = table_rows(result.stdout, "Tuning by replay: the sample jobs under each mapping")
    assert "fair-share" in [row[1] for row in ranking]
    title = "Trace replay: the blkparse and MSR samples (386 requests) on a 0.5 MB/s disk"
    policies = table_rows(result.stdout, title)
    assert policies == [  # set 1 (8,16 and hm_1) moves (18 874 368 + 12 582 912) / 32 911 360 B = 95.6 %
        ["fcfs", "0.7134", "0.8249", "3.853", "1.212", "1.143", "1.212", "0.19", "95.6", "4.4"],
        ["wfq", "0.7175", "0.8249", "3.468", "1.213", "1.132", "1.212", "0.19", "95.6", "4.4"],
        ["iosets-wfq", "0.7310", "0.8249", "3.303", "1.188", "1.113", "1.188", "0.20", "95.6", "4.4"],
    ]
    stretches = table_rows(result.stdout, "Trace replay: stretch per job (runtime / alone)")
    assert [row[:2] for row in stretches] == [["8,0", "2"], ["8,16", "1"], ["hm_0", "2"], ["hm_1", "1"]]
    assert all(float(row[4]) <= min(float(row[2]), float(row[3])) for row in stretches)  # iosets-wfq: never worse
