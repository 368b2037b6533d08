"""Tests of read_darshan against pydarshan on the logs shipped in the darshan wheel."""

import glob
import os
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
import pytest

darshan = pytest.importorskip("darshan")

from iosets.analyzer import DarshanJob, read_darshan  # noqa: E402
from iosets.analyzer._ingest._app_name import app_name  # noqa: E402
from iosets.analyzer._ingest._darshan_counters import STREAM_IDS, STREAMS  # noqa: E402
from iosets.errors import InputError  # noqa: E402

DIR = os.path.dirname(darshan.__file__)
LOGS = sorted(
    glob.glob(os.path.join(DIR, "examples", "example_logs", "*.darshan"))
    + glob.glob(os.path.join(DIR, "tests", "input", "*.darshan"))
)
DXT_LOG = os.path.join(DIR, "examples", "example_logs", "dxt.darshan")
COUNTER_MODULES = ("POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "STDIO", "DFS", "DAOS")


def _records(report, module: str):
    """pydarshan's counters and fcounters of a module-table row (STDIO's files and standard streams apart).

    The streams' ids are checked against their names and Darshan's hash in test_sync_time.py (some shipped
    logs are anonymized: their names are hashes, their ids Darshan's).
    """
    frames = report.records["STDIO" if module == STREAMS else module].to_df()
    c, f = frames["counters"], frames["fcounters"]
    if module in ("STDIO", STREAMS):
        stream = c["id"].isin(STREAM_IDS).to_numpy(dtype=bool)
        keep = stream if module == STREAMS else ~stream
        c, f = c[keep], f[keep]
    return c, f


def _rows(report, module: str) -> list[str]:
    """The module-table rows a module of the log gives: STDIO one per part (files, standard streams) it has."""
    if module != "STDIO":
        return [module]
    return [part for part in ("STDIO", STREAMS) if len(_records(report, part)[0])]


def _id(path):
    return os.path.relpath(path, DIR)


@pytest.fixture(scope="module")
def jobs():
    """read_darshan on every shipped log, once."""
    return {p: read_darshan(p) for p in LOGS}


def test_logs_found():
    assert len(LOGS) >= 8
    assert DXT_LOG in LOGS


@pytest.mark.parametrize("path", LOGS, ids=_id)
def test_metadata_matches_pydarshan(path, jobs):
    job = jobs[path]
    assert isinstance(job, DarshanJob)
    report = darshan.DarshanReport(path, read_all=False)
    ref = report.metadata["job"]
    exe = report.metadata["exe"].strip()
    steps = [ref["metadata"][k] for k in ("step", "stepid", "SLURM_STEP_ID") if k in ref["metadata"]]
    assert job.meta == {
        "job_id": str(ref["jobid"]),
        "user": str(ref["uid"]),
        "app": app_name(exe),
        "exe": exe,
        "nprocs": ref["nprocs"],
        "start": ref["start_time_sec"] + ref["start_time_nsec"] * 1e-9,
        "end": ref["end_time_sec"] + ref["end_time_nsec"] * 1e-9,
        "runtime": ref["run_time"],
        "step": steps[0] if steps else None,
    }
    assert isinstance(job.meta["job_id"], str) and isinstance(job.meta["nprocs"], int)


@pytest.mark.parametrize("path", LOGS, ids=_id)
def test_source_and_counters(path, jobs):
    job = jobs[path]
    report = darshan.DarshanReport(path, read_all=True)
    has_dxt = any(m in report.modules for m in ("DXT_POSIX", "DXT_MPIIO"))
    assert job.source == ("dxt" if has_dxt else "heatmap" if "HEATMAP" in report.modules else "counters")
    assert (job.requests is not None) == has_dxt
    assert job.heatmap is None or job.source == "heatmap"
    assert job.partial_dxt is False  # no shipped log is partial
    present = [row for m in COUNTER_MODULES if m in report.modules for row in _rows(report, m)]
    assert [t.module for t in job.modules] == present
    totals, starts, ends = {}, [], []
    for t in job.modules:  # each module's totals as pydarshan's records give them
        pre = {"MPI-IO": "MPIIO", STREAMS: "STDIO"}.get(t.module, t.module)
        c, f = _records(report, t.module)
        for field, name in (("bytes_read", "BYTES_READ"), ("bytes_written", "BYTES_WRITTEN")):
            want = int(c[f"{pre}_{name}"].clip(lower=0).sum()) if f"{pre}_{name}" in c else 0
            assert getattr(t, field) == want
            totals[t.module, field] = 0 if t.module in ("H5F", "PNETCDF_FILE") else want
        times = [f"{pre}_F_{k}_TIME" for k in ("READ", "WRITE", "META") if f"{pre}_F_{k}_TIME" in f]
        assert t.io_time == pytest.approx(float(f[times].clip(lower=0).to_numpy().sum()))
        assert t.counted is not (t.module == STREAMS) or t.module not in ("STDIO", STREAMS)
        if t.module == STREAMS:  # console text: in no job total, time or I/O window
            continue
        # per rank, the stack's time is at least each module's and at most all of them together
        assert job.counters["io_time"] >= t.io_time / job.meta["nprocs"] - 1e-9
        starts += f.filter(like="_START_TIMESTAMP").to_numpy().ravel().tolist()
        ends += f.filter(like="_END_TIMESTAMP").to_numpy().ravel().tolist()
    assert job.counters["io_time"] <= sum(t.io_time for t in job.modules) / job.meta["nprocs"] + 1e-9
    assert job.counters["slowest_io_time"] >= job.counters["io_time"]
    for field in ("bytes_read", "bytes_written"):
        v = {m: totals.get((m, field), 0) for m in COUNTER_MODULES}
        storage = v["POSIX"] + max(v["DFS"], v["DAOS"])
        assert job.counters[field] == v["STDIO"] + max(v["H5D"], v["PNETCDF_VAR"], v["MPI-IO"], storage)
    if any(s > 0 for s in starts):
        assert job.counters["first_io"] == pytest.approx(min(s for s in starts if s > 0))
        assert job.counters["last_io"] == pytest.approx(max(e for e in ends if e > 0))
        assert 0 <= job.counters["first_io"] <= job.counters["last_io"] <= job.meta["runtime"] + 1


DXT_LOGS = [p for p in LOGS if "dxt" in os.path.basename(p) or "ior_hdf5" in p]


@pytest.mark.parametrize("path", DXT_LOGS, ids=_id)
def test_dxt_bytes_match_posix_counters(path, jobs):
    ops = jobs[path].requests
    assert ops is not None and ops.height > 0
    assert ops.schema == pl.Schema(
        {"job_id": pl.String, "rank": pl.Int64, "op": pl.String, "offset": pl.Int64, "size": pl.Int64}
        | {"start": pl.Float64, "end": pl.Float64, "file": pl.String}
    )
    assert set(ops["op"].unique()) <= {"read", "write"}
    assert (ops["end"] >= ops["start"]).all() and (ops["start"] >= 0).all()
    report = darshan.DarshanReport(path, read_all=True)
    names = report.name_records
    posix = report.records["POSIX"].to_df()["counters"]
    want = defaultdict(int)
    for rid, r, w in zip(posix["id"], posix["POSIX_BYTES_READ"], posix["POSIX_BYTES_WRITTEN"], strict=True):
        want[names[rid]] += int(r) + int(w)
    got = dict(ops.group_by("file").agg(pl.col("size").sum()).iter_rows())
    traced = {names[rec["id"]] for rec in report.records["DXT_POSIX"].to_df()}
    assert set(got) <= traced
    for name in got:
        assert got[name] == want[name], name


def test_dxt_ops_equal_pydarshan_to_df(jobs):
    ops = jobs[DXT_LOG].requests
    report = darshan.DarshanReport(DXT_LOG, read_all=True)
    rows = []
    for rec in report.records["DXT_POSIX"].to_df():
        for op, key in (("write", "write_segments"), ("read", "read_segments")):
            seg = rec[key]
            for off, ln, st, en in zip(
                seg.get("offset", []),
                seg.get("length", []),
                seg.get("start_time", []),
                seg.get("end_time", []),
                strict=True,
            ):
                rows.append((rec["rank"], op, off, ln, st, en))
    assert ops.height == len(rows) == 7623
    ref = np.array([r[2:] for r in rows], dtype=np.float64)
    assert ops["rank"].to_list() == [r[0] for r in rows]
    assert ops["op"].to_list() == [r[1] for r in rows]
    assert ops["offset"].to_list() == [r[2] for r in rows]
    assert ops["size"].to_list() == [r[3] for r in rows]
    np.testing.assert_array_equal(ops["start"].to_numpy(), ref[:, 2])
    np.testing.assert_array_equal(ops["end"].to_numpy(), ref[:, 3])
    assert (ops["job_id"] == "1537455").all()
    assert ops["file"].null_count() == 0


def test_dxt_mpiio_used_only_without_posix(jobs):
    job = jobs[os.path.join(DIR, "tests", "input", "sample-dxt-simple.darshan")]
    report = darshan.DarshanReport(os.path.join(DIR, "tests", "input", "sample-dxt-simple.darshan"), read_all=True)
    n_posix = sum(r["write_count"] + r["read_count"] for r in report.records["DXT_POSIX"].to_df())
    assert job.requests.height == n_posix


def test_empty_exe_gives_empty_app(jobs):
    assert jobs[DXT_LOG].meta["app"] == ""


@pytest.mark.parametrize(
    "cut, reason",
    [
        (200, r"truncated in the header \(200 of 360 bytes\)"),
        (3000, r"name map region \[offset 1353, length 4496\] extends past the end of the file \(3000 bytes\)"),
        (-20000, r"module DXT_POSIX region \[offset 17944, length 81054\] extends past the end .* \(78998 bytes\)"),
        (-100, r"module DXT_POSIX region \[offset 17944, length 81054\] extends past the end .* \(98898 bytes\)"),
    ],
)
def test_truncated_log_raises(tmp_path, cut, reason):
    data = Path(DXT_LOG).read_bytes()
    bad = tmp_path / "cut.darshan"
    bad.write_bytes(data[:cut])
    with pytest.raises(InputError, match=rf"cut\.darshan: {reason}$"):
        read_darshan(bad)


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"hello, not a darshan log\n" * 10, "not a readable Darshan log"),
        (b"", "empty file"),
        (b"BZh91AY&SY" + b"\0" * 100, "a bzip2-compressed file"),
    ],
)
def test_non_darshan_file_raises(tmp_path, content, reason):
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(content)
    with pytest.raises(InputError, match=rf"bad\.darshan: {reason}"):
        read_darshan(bad)


def test_missing_file_raises(tmp_path):
    with pytest.raises(InputError, match="nope.darshan: no such file"):
        read_darshan(tmp_path / "nope.darshan")


def test_bad_log_does_not_crash_interpreter(tmp_path):
    import subprocess
    import sys

    data = Path(DXT_LOG).read_bytes()
    bad = tmp_path / "cut.darshan"
    bad.write_bytes(data[: len(data) // 2])
    code = (
        "import sys; from iosets.analyzer import read_darshan\n"
        "from iosets.errors import InputError\n"
        "try: read_darshan(sys.argv[1])\n"
        "except InputError: print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(bad)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
