"""`iosets ingest --site`: the site trace written, its counts printed; `ingest` of one trace unchanged."""

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

pytest.importorskip("darshan")
sys.path.insert(0, str(Path(__file__).parents[1] / "analyzer"))  # the Darshan log writer the analyzer tests use

from darshan_writer import (  # noqa: E402
    HEATMAP_RECORD_IDS,
    counter_record,
    dxt_record,
    heatmap_record,
    lustre_record_v1,
    write_log,
)

from iosets.analyzer import ingest  # noqa: E402
from iosets.cli import app  # noqa: E402

runner = CliRunner()
MIB = 1 << 20
T0 = 1_700_000_000
NAMES = {101: "/scratch/out.dat", HEATMAP_RECORD_IDS["POSIX"]: "heatmap:POSIX"}


def _log(path, *, jobid, start, records):
    job = {"uid": 1, "jobid": jobid, "nprocs": 1, "start": (T0 + start, 0), "end": (T0 + start + 60, 0)}
    write_log(path, job=job, exe="/bin/app", mounts=[("/scratch", "lustre")], names=NAMES, records=records)
    return path


def _posix(written):
    return counter_record("POSIX", 101, 0, {"POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": written}, {})


def _site(folder):
    """Two DXT jobs (3 and 2 requests), a HEATMAP job (4 write bins with bytes) and a counters-only job."""
    for jobid, start, n in ((1, 0, 3), (2, 100, 2)):
        writes = [(k * MIB, MIB, 1.0 + 10 * k, 1.5 + 10 * k) for k in range(n)]
        records = {"DXT_POSIX": [dxt_record(101, 0, writes=writes)], "POSIX": [_posix(n * MIB)]}
        _log(folder / f"dxt{jobid}.darshan", jobid=jobid, start=start, records=records)
    bins = np.zeros(20, dtype=np.int64)
    bins[[2, 3, 12, 13]] = MIB
    heatmap = {
        "HEATMAP": [heatmap_record("POSIX", 0, 1.0, bins, np.zeros(20, dtype=np.int64))],
        "POSIX": [_posix(4 * MIB)],
    }
    _log(folder / "hm.darshan", jobid=3, start=50, records=heatmap)
    _log(folder / "counters.darshan", jobid=4, start=20, records={"POSIX": [_posix(MIB)]})


def test_site_writes_the_trace_and_prints_its_counts(tmp_path):
    _site(tmp_path)
    out = tmp_path / "site.parquet"
    result = runner.invoke(app, ["ingest", str(tmp_path), "--site", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"wrote {out}: 9 requests of 3 jobs (4 synthesised from HEATMAP); skipped 1 counters-only jobs; "
        f"their jobs table in {tmp_path / 'site.jobs.parquet'}",
        "warning: skipped 1:",
        f"  {tmp_path / 'counters.darshan'}: counters only: no DXT or HEATMAP record dates its I/O",
    ]
    ops = pl.read_parquet(out)
    assert ops.group_by("job_id").len().sort("job_id").rows() == [("1", 3), ("2", 2), ("3", 4)]
    jobs = pl.read_parquet(tmp_path / "site.jobs.parquet").sort("job_id")
    assert jobs["job_id"].to_list() == ["1", "2", "3"] and jobs["start"][2] == T0 + 50
    assert ops.filter(pl.col("job_id") == "2")["start"].to_list() == [T0 + 101.0, T0 + 111.0]
    assert ops.filter(pl.col("synthetic"))["start"].to_list() == [T0 + 52.0, T0 + 53.0, T0 + 62.0, T0 + 63.0]


def test_site_says_how_many_files_got_a_layout_and_why_the_others_did_not(tmp_path):
    lustre = [
        lustre_record_v1(101, 0, osts=16, stripe_size=4 * MIB, ost_ids=[3, 4]),
        lustre_record_v1(102, 0, osts=16, stripe_size=-1, ost_ids=[5]),
    ]
    records = {"DXT_POSIX": [dxt_record(101, 0, writes=[(0, MIB, 1.0, 1.5)])], "POSIX": [_posix(MIB)], "LUSTRE": lustre}
    job = {"uid": 1, "jobid": 5, "nprocs": 1, "start": (T0, 0), "end": (T0 + 60, 0)}
    log = tmp_path / "lustre.darshan"
    names = {101: "/scratch/out.dat", 102: "/scratch/bad.dat"}
    write_log(
        log,
        job=job,
        exe="/bin/app",
        mounts=[("/scratch", "lustre")],
        names=names,
        records=records,
        versions={"LUSTRE": 1},
    )
    out = tmp_path / "site.parquet"
    result = runner.invoke(app, ["ingest", str(log), "--site", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"wrote {out}: 1 requests of 1 jobs (0 synthesised from HEATMAP); skipped 0 counters-only jobs; "
        f"their jobs table in {tmp_path / 'site.jobs.parquet'}",
        f"1 files with a layout from LUSTRE records in {tmp_path / 'site.files.parquet'}",
        "warning: skipped 1:",
        f"  {log}: LUSTRE record of /scratch/bad.dat (rank 0): LUSTRE_STRIPE_SIZE: expected bytes > 0, got -1; "
        "the file has no layout",
    ]
    assert pl.read_parquet(tmp_path / "site.files.parquet").rows() == [("/scratch/out.dat", "5", 4 * MIB, 2, 3, 16)]


def test_site_window_keeps_the_overlapping_jobs(tmp_path):
    _site(tmp_path)
    out = tmp_path / "site.csv"
    late = f"{T0 + 170},{T0 + 200}"  # after every job: the last (job 2) ends at T0 + 160
    result = runner.invoke(app, ["ingest", str(tmp_path), "--site", "--window", late, "-o", str(out)])
    assert result.exit_code == 2 and result.stderr == f"error: no job overlaps the window {late}\n"
    window = f"{T0 + 100},{T0 + 105}"  # job 2 [T0 + 100, T0 + 160] and the HEATMAP job [T0 + 50, T0 + 110]
    result = runner.invoke(app, ["ingest", str(tmp_path), "--site", "--window", window, "-o", str(out)])
    assert result.exit_code == 0 and result.stderr.startswith(f"wrote {out}: 6 requests of 2 jobs (4 synthesised")
    assert sorted(pl.read_csv(out)["job_id"].unique().to_list()) == [2, 3]


def test_ingest_of_one_log_is_unchanged(tmp_path):
    _site(tmp_path)
    out = tmp_path / "ops.parquet"
    result = runner.invoke(app, ["ingest", str(tmp_path / "dxt1.darshan"), "-o", str(out)])
    assert result.exit_code == 0 and result.stderr == f"wrote {out}: 3 requests\n"
    assert pl.read_parquet(out).equals(ingest(tmp_path / "dxt1.darshan"))
    assert "phase" not in pl.read_parquet(out).columns


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["a.darshan", "b.darshan"], "give one trace (got 2), or --site for many"),
        (["a.darshan", "--window", "1,2"], "--window and --manifest need --site"),
        (["a.darshan", "--site", "--format", "msr"], "--format, --class-by and --skip-malformed read one trace"),
        (["a.darshan", "--site", "--window", "1"], "--window: expected START,END in seconds since the epoch, got '1'"),
    ],
)
def test_misused_options_are_errors(tmp_path, args, message):
    result = runner.invoke(app, ["ingest", *args, "-o", str(tmp_path / "x.parquet")])
    assert result.exit_code == 1 and message in result.stderr
