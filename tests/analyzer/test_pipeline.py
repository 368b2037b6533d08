"""The many-log pipeline: jobs table, error rows, local processes and Dask."""

import glob
import os
import shutil
from importlib import resources
from pathlib import Path

import darshan
import numpy as np
import polars as pl
import pytest

from iosets.analyzer import analyze, analyze_requests, expand_paths, read_blocktrace
from iosets.errors import InputError
from iosets.schemas import JOBS

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
    data = Path(LOGS[0]).read_bytes()
    (folder / "sub").mkdir()
    (folder / "sub" / "truncated.darshan").write_bytes(data[: len(data) // 3])
    (folder / "sub" / "notes.darshan").write_text("not a darshan log\n")
    return folder


def test_every_log_gives_a_row_and_bad_ones_an_error(log_dir):
    result = analyze([log_dir], workers=1, per_log=True)
    assert result.jobs.height == len(LOGS)
    assert result.jobs.columns == JOBS.names
    assert sorted(os.path.basename(p) for p in result.errors["path"]) == ["notes.darshan", "truncated.darshan"]
    assert all("darshan" in reason for reason in result.errors["reason"])
    assert set(result.jobs["source"]) <= {"dxt", "heatmap", "counters"}


@pytest.fixture(scope="module")
def many_logs(tmp_path_factory, log_dir):
    """Four copies of every log of ``log_dir``: enough traces for worker processes."""
    folder = tmp_path_factory.mktemp("many")
    for copy in range(4):
        shutil.copytree(log_dir, folder / f"copy{copy}")
    return folder


def test_parallel_run_gives_the_same_table(many_logs):
    seen = []

    def progress(iterable, total):
        seen.append(total)
        for item in iterable:
            seen.append(item)
            yield item

    one = analyze([many_logs], workers=1, per_log=True)
    two = analyze([many_logs], workers=2, progress=progress, per_log=True)
    assert seen[0] == 4 * (len(LOGS) + 2) >= 48  # the pool's threshold: this batch runs in workers
    assert len(seen) == 1 + seen[0]  # one item per trace, whatever the chunks
    assert one.jobs.height == 4 * len(LOGS) and one.errors.height == 8
    assert one.jobs.equals(two.jobs)
    assert one.errors.equals(two.errors)


def test_copies_of_a_log_count_once(log_dir, many_logs):
    """The wheel ships three logs twice; four more copies of everything change nothing but the notes."""
    per_log = analyze([log_dir], workers=1, per_log=True).jobs
    distinct = per_log.unique(subset=["job_id", "start", "bytes_read", "bytes_written"])
    jobs = analyze([log_dir], workers=1).jobs
    assert jobs.height == distinct.height < per_log.height
    assert jobs.select(pl.col("n_logs").sum()).item() == distinct.height
    merged = analyze([many_logs], workers=2).jobs
    assert merged.drop("explanation", "path").sort("job_id").equals(jobs.drop("explanation", "path").sort("job_id"))
    assert all(text.endswith("copies of a log ignored") for text in merged["explanation"])


def test_block_traces_give_one_row_per_job(tmp_path):
    samples = resources.files("iosets.datasets.data")
    with (
        resources.as_file(samples / "sample.blkparse.txt") as blk,
        resources.as_file(samples / "sample.msr.csv") as msr,
    ):
        result = analyze([blk, msr, LOGS[0]], workers=1)  # a blkparse .txt is a trace, not a manifest
        expected = pl.concat(
            [analyze_requests(read_blocktrace(p)).with_columns(pl.lit(str(p)).alias("path")) for p in (blk, msr)]
        )
    assert result.errors.height == 0
    per_path = {
        path: (jobs, sources) for path, jobs, sources in result.jobs.group_by("path").agg("job_id", "source").rows()
    }
    assert per_path == {
        LOGS[0]: (["1537455"], ["dxt"]),
        str(blk): (["8,0", "8,16"], ["ops", "ops"]),
        str(msr): (["hm_0", "hm_1"], ["ops", "ops"]),
    }
    assert result.jobs.filter(pl.col("source") == "ops").equals(expected.sort("path", maintain_order=True))


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_table(log_dir):
    local = analyze([log_dir], workers=1)
    cluster = analyze([log_dir], dask="local")
    assert cluster.jobs.equals(local.jobs)
    assert cluster.errors.equals(local.errors)


def test_manifest_and_missing_files(tmp_path, log_dir):
    manifest = tmp_path / "logs.txt"
    manifest.write_text(f"# two logs\n{LOGS[0]}\n\nabsent.darshan\n")
    assert expand_paths([], [manifest]) == [type(tmp_path)(LOGS[0]), tmp_path / "absent.darshan"]
    result = analyze([], manifests=[manifest], workers=1)
    assert result.jobs.height == 1 and result.errors["path"].to_list() == [str(tmp_path / "absent.darshan")]


def test_analyze_ops_finds_a_periodic_writer(writer_ops_of):
    ops = writer_ops_of(np.arange(40) * 50.0)  # a 1 s burst every 50 s
    jobs = analyze_requests(ops)
    row = jobs.row(0, named=True)
    assert row["w_iter"] == pytest.approx(50.0, rel=0.01)
    assert row["n_phases"] == 40
    assert row["bytes_written"] == 800 * 1_000_000 and row["bytes_read"] == 0
    assert row["nprocs"] == 4 and row["source"] == "ops"
    assert row["alpha_io"] == pytest.approx(1.0 / 50, abs=0.01)


def test_rows_that_break_the_jobs_schema_become_errors(tmp_path):
    from darshan_writer import posix_record, write_log

    job = {"uid": 1, "jobid": 77, "nprocs": 0, "start": (1700000000, 0), "end": (1700000100, 0)}
    broken = tmp_path / "no_procs.darshan"
    write_log(
        broken,
        job=job,
        exe="/bin/app",
        mounts=[("/", "ext4")],
        names={1: "/f"},
        records={"POSIX": [posix_record(1, 0)]},
    )
    result = analyze([broken, LOGS[0]], workers=1)
    assert result.jobs["path"].to_list() == [LOGS[0]]
    assert result.errors.rows() == [(str(broken), f"{broken} row 0: nprocs: expected >= 1, got 0")]


def test_workers_must_be_a_count(log_dir):
    with pytest.raises(InputError, match="workers must be an integer >= 1, got 0"):
        analyze([log_dir], workers=0)


def test_a_relative_path_names_a_file_of_the_callers_current_folder(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, name in ((first, "a.darshan"), (second, "b.darshan")):
        folder.mkdir()
        shutil.copy(LOGS[0], folder / name)
    monkeypatch.chdir(first)
    assert analyze(["a.darshan"], workers=1).errors.height == 0  # the Darshan reader starts here
    monkeypatch.chdir(second)  # a later call from elsewhere: the running reader must look here, not in first/
    again = analyze(["b.darshan"], workers=1)
    assert again.errors["reason"].to_list() == [] and again.jobs["path"].to_list() == ["b.darshan"]
