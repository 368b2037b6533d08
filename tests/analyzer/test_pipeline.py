"""The many-log pipeline: jobs table, error rows, local processes and Dask."""

import glob
import os
import shutil

import darshan
import numpy as np
import polars as pl
import pytest

from iosets.analyzer import analyze, analyze_ops, expand_paths
from iosets.analyzer._pipeline import JOB_COLUMNS

WHEEL = os.path.dirname(darshan.__file__)
LOGS = sorted(
    glob.glob(os.path.join(WHEEL, "examples", "example_logs", "*.darshan"))
    + glob.glob(os.path.join(WHEEL, "tests", "input", "*.darshan"))
)


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    """The wheel's logs, a truncated copy and a file that is not a Darshan log."""
    folder = tmp_path_factory.mktemp("logs")
    for k, log in enumerate(LOGS):
        shutil.copy(log, folder / f"{k:02d}_{os.path.basename(log)}")
    data = open(LOGS[0], "rb").read()
    (folder / "sub").mkdir()
    (folder / "sub" / "truncated.darshan").write_bytes(data[: len(data) // 3])
    (folder / "sub" / "notes.darshan").write_text("not a darshan log\n")
    return folder


def test_every_log_gives_a_row_and_bad_ones_an_error(log_dir):
    result = analyze([log_dir], workers=1)
    assert result.jobs.height == len(LOGS)
    assert result.jobs.columns == list(JOB_COLUMNS)
    assert sorted(os.path.basename(p) for p in result.errors["path"]) == ["notes.darshan", "truncated.darshan"]
    assert all("darshan" in reason for reason in result.errors["reason"])
    assert set(result.jobs["source"]) <= {"dxt", "heatmap", "counters"}


def test_parallel_run_gives_the_same_table(log_dir):
    one = analyze([log_dir], workers=1)
    two = analyze([log_dir], workers=2)
    assert one.jobs.equals(two.jobs)
    assert one.errors.equals(two.errors)


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_table(log_dir):
    local = analyze([log_dir], workers=1)
    cluster = analyze([log_dir], dask="local")
    assert cluster.jobs.equals(local.jobs)
    assert cluster.errors.equals(local.errors)


def test_manifest_and_missing_files(tmp_path, log_dir):
    manifest = tmp_path / "logs.txt"
    manifest.write_text(f"# two logs\n{LOGS[0]}\n{tmp_path / 'absent.darshan'}\n")
    assert expand_paths([manifest]) == [type(tmp_path)(LOGS[0]), tmp_path / "absent.darshan"]
    result = analyze([manifest], workers=1)
    assert result.jobs.height == 1 and result.errors.height == 1


def test_analyze_ops_finds_a_periodic_writer():
    starts = np.concatenate([k * 50.0 + np.arange(20) * 0.05 for k in range(40)])  # a 1 s burst every 50 s
    ops = pl.DataFrame(
        {
            "job_id": "app",
            "rank": np.arange(starts.size) % 4,
            "op": "write",
            "offset": np.arange(starts.size) * 1_000_000,
            "size": 1_000_000,
            "start": starts,
            "end": starts + 0.05,
        }
    )
    jobs = analyze_ops(ops)
    row = jobs.row(0, named=True)
    assert row["w_iter"] == pytest.approx(50.0, rel=0.01)
    assert row["n_phases"] == 40
    assert row["bytes_written"] == 800 * 1_000_000 and row["bytes_read"] == 0
    assert row["nprocs"] == 4 and row["source"] == "ops"
    assert row["alpha_io"] == pytest.approx(1.0 / 50, abs=0.01)
