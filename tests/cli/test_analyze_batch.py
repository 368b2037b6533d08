"""`iosets analyze` on batches: the errors file, exit codes, capped failure lists, explicit manifests."""

import shutil

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from iosets.analyzer import expand_paths
from iosets.cli import app
from iosets.datasets import load_darshan_examples
from iosets.errors import InputError

runner = CliRunner()
DXT_LOG = load_darshan_examples().paths["dxt.darshan"]
OTHER_LOG = load_darshan_examples().paths["ior_hdf5_example.darshan"]


def _analyze(*args) -> tuple[int, list[str]]:
    """Exit code and stderr lines of ``iosets analyze ARGS --workers 1``."""
    result = runner.invoke(app, ["analyze", *map(str, args), "--workers", "1"], catch_exceptions=False)
    assert result.stdout == ""
    return result.exit_code, result.stderr.splitlines()


@pytest.fixture
def rhythm(tmp_path, writer_ops_of):
    """A requests table of one writer: 40 bursts every 50 s, each moved by up to +-10 s (a confidence of about 0.84)."""
    rng = np.random.default_rng(0)
    path = tmp_path / "ops.csv"
    writer_ops_of(np.arange(40) * 50.0 + rng.uniform(-10, 10, 40)).write_csv(path)
    return path


def _garbage(folder, n: int) -> list:
    """``n`` files named ``bad{k}.darshan`` that are not Darshan logs."""
    folder.mkdir(exist_ok=True)
    paths = [folder / f"bad{k}.darshan" for k in range(n)]
    for path in paths:
        path.write_text("not a Darshan log")
    return paths


def test_a_clean_rerun_removes_the_stale_errors_file(tmp_path):
    logs, out = tmp_path / "logs", tmp_path / "jobs.parquet"
    errors = tmp_path / "jobs.errors.parquet"
    (bad,) = _garbage(logs, 1)
    shutil.copy(DXT_LOG, logs / "dxt.darshan")
    code, _ = _analyze(logs, "-o", out)
    assert code == 0 and pl.read_parquet(errors)["path"].to_list() == [str(bad)]
    bad.unlink()
    code, lines = _analyze(logs, "-o", out)
    assert code == 0 and not errors.exists()
    assert lines == [
        f"wrote {out}: 1 jobs",
        "  0 periodic; not periodic: irregular 1",
        f"note: removed {errors} of an earlier run",
    ]
    code, lines = _analyze(logs, "-o", out)
    assert code == 0 and lines == [
        f"wrote {out}: 1 jobs",
        "  0 periodic; not periodic: irregular 1",
    ]  # nothing stale, nothing said


def test_an_empty_folder_exits_2_and_leaves_no_stale_table(tmp_path):
    empty, out = tmp_path / "empty", tmp_path / "jobs.csv"
    empty.mkdir()
    (empty / "notes.txt").write_text("a folder is searched for *.darshan only")
    out.write_text("job_id\nold\n")  # from an earlier run
    code, lines = _analyze(empty, "-o", out)
    assert code == 2
    assert lines == [f"note: removed {out} of an earlier run", f"error: no trace found in {empty}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


def test_every_log_failing_exits_2_with_the_errors_file_and_no_jobs_table(tmp_path):
    bad, out = _garbage(tmp_path / "logs", 3), tmp_path / "jobs.parquet"
    errors = tmp_path / "jobs.errors.parquet"
    code, lines = _analyze(tmp_path / "logs", "-o", out)
    assert code == 2
    table = pl.read_parquet(errors)
    assert table["path"].to_list() == [str(p) for p in bad]
    assert lines == [f"  {reason}" for reason in table["reason"]] + [
        f"error: no job analysed: 3 of 3 logs failed (see {errors})"
    ]
    assert not out.exists()


def test_some_logs_failing_exits_0_with_a_warning(tmp_path):
    logs, out = tmp_path / "logs", tmp_path / "jobs.parquet"
    errors = tmp_path / "jobs.errors.parquet"
    bad = _garbage(logs, 2)
    shutil.copy(DXT_LOG, logs / "dxt.darshan")
    code, lines = _analyze(logs, "-o", out)
    assert code == 0
    assert pl.read_parquet(out)["path"].to_list() == [str(logs / "dxt.darshan")]
    assert pl.read_parquet(errors)["path"].to_list() == [str(p) for p in bad]
    assert lines[:3] == [
        f"wrote {out}: 1 jobs",
        "  0 periodic; not periodic: irregular 1",
        f"warning: 2 logs failed, listed in {errors}:",
    ]
    assert len(lines) == 5 and all(line.startswith(f"  {p}: ") for line, p in zip(lines[3:], bad, strict=True))


def test_the_console_shows_5_failures_and_the_file_holds_all(tmp_path):
    logs, out = tmp_path / "logs", tmp_path / "jobs.csv"
    errors = tmp_path / "jobs.errors.csv"
    bad = _garbage(logs, 7)
    shutil.copy(DXT_LOG, logs / "dxt.darshan")
    code, lines = _analyze(logs, "-o", out)
    assert code == 0
    table = pl.read_csv(errors)
    assert table["path"].to_list() == [str(p) for p in bad]
    assert lines[1:3] == ["  0 periodic; not periodic: irregular 1", f"warning: 7 logs failed, listed in {errors}:"]
    assert lines[3:] == [f"  {reason}" for reason in table["reason"][:5]] + [f"  ... and 2 more (all in {errors})"]


def test_manifest_paths_are_relative_to_the_manifest_folder(tmp_path):
    logs, lists = tmp_path / "logs", tmp_path / "lists"
    (logs / "more").mkdir(parents=True)
    lists.mkdir()
    shutil.copy(DXT_LOG, logs / "dxt.darshan")
    shutil.copy(OTHER_LOG, logs / "more" / "other.darshan")  # another job: copies of one job's log merge
    manifest = lists / "run.list"
    manifest.write_text("# the logs of run 7\n../logs/dxt.darshan\n\n  ../logs/more  \n../logs/absent.darshan\n")
    out = tmp_path / "jobs.parquet"
    code, lines = _analyze("--manifest", manifest, "-o", out)
    assert code == 0, lines
    assert sorted(pl.read_parquet(out)["path"]) == [
        str(lists / "../logs/dxt.darshan"),
        str(lists / "../logs/more/other.darshan"),
    ]
    errors = pl.read_parquet(tmp_path / "jobs.errors.parquet")
    assert errors["path"].to_list() == [str(lists / "../logs/absent.darshan")]


def test_a_missing_manifest_exits_1_naming_it(tmp_path):
    out = tmp_path / "jobs.parquet"
    code, lines = _analyze(DXT_LOG, "--manifest", tmp_path / "logs.txt", "-o", out)
    assert (code, lines) == (1, [f"error: manifest {tmp_path / 'logs.txt'}: no such file or directory"])
    assert not out.exists()


def test_a_positional_txt_is_a_trace_not_a_manifest(tmp_path):
    listing = tmp_path / "logs.txt"
    listing.write_text(f"{DXT_LOG}\n")
    assert expand_paths([listing]) == [listing]
    code, lines = _analyze(listing, "-o", tmp_path / "jobs.parquet")
    assert code == 2 and lines[-1].startswith("error: no job analysed: 1 of 1 logs failed")
    assert lines[0].startswith(f"  {listing}: ")


def test_manifests_must_be_a_list():
    with pytest.raises(InputError, match=r"^manifests must be a list of paths, got the single path 'logs\.txt'$"):
        expand_paths([], "logs.txt")


@pytest.mark.parametrize("source", ["trace", "--requests"])
def test_min_confidence_decides_which_rhythms_count(tmp_path, rhythm, source):
    out = tmp_path / "jobs.parquet"
    args = [rhythm] if source == "trace" else ["--requests", rhythm]
    assert _analyze(*args, "-o", out)[0] == 0
    job = pl.read_parquet(out).row(0, named=True)
    assert job["w_iter"] == pytest.approx(50.0, rel=0.01) and 0.5 <= job["w_iter_confidence"] < 0.9
    assert _analyze(*args, "-o", out, "--min-confidence", "0.9")[0] == 0
    assert pl.read_parquet(out)["w_iter"].to_list() == [None]  # same rhythm, not trusted at 0.9


@pytest.mark.parametrize("source", [["{log}"], ["--requests", "{ops}"]])
def test_min_confidence_outside_0_1_is_refused(tmp_path, rhythm, source):
    args = [a.format(log=DXT_LOG, ops=rhythm) for a in source]
    code, lines = _analyze(*args, "-o", tmp_path / "jobs.parquet", "--min-confidence", "1.5")
    assert (code, lines) == (1, ["error: min_confidence must be in [0, 1], got 1.5"])
