"""read_darshan and analyze_log on Darshan logs written at test time with darshan-util's own writer.

Each log is first checked with pydarshan, so the writer is proven independently of iosets;
every iosets assertion compares against the values put into the log.
"""

import numpy as np
import pytest

darshan = pytest.importorskip("darshan")

from darshan_writer import HEATMAP_RECORD_IDS, MOD_IDS, dxt_record, heatmap_record, posix_record, write_log  # noqa: E402

from iosets.analyzer import analyze_log, read_darshan  # noqa: E402

JOB = {"uid": 4242, "jobid": 9001, "nprocs": 4, "start": (1700000000, 250000000), "end": (1700000100, 750000000)}
START = JOB["start"][0] + JOB["start"][1] * 1e-9
END = JOB["end"][0] + JOB["end"][1] * 1e-9
MOUNTS = [("/scratch", "lustre"), ("/", "ext4")]
FILES = {101: "/scratch/run/out.dat", 102: "/scratch/run/in.dat"}
HEATMAP_NAMES = {HEATMAP_RECORD_IDS[m]: f"heatmap:{m}" for m in ("POSIX", "MPIIO")}

# HEATMAP pattern: bursts of BURST bins every PERIOD bins from bin FIRST, bytes scaled per rank
WIDTH, NBINS, PERIOD, BURST, FIRST, RANKS = 0.5, 200, 8, 2, 2, 4
# DXT pattern: one write per rank per phase, every DXT_PERIOD s, for the first DXT_PHASES phases only
DXT_PERIOD, DXT_LEN, DXT_T0, DXT_PHASES, DXT_SIZE = 4.0, 1.0, 1.0, 5, 1 << 20


def _burst_starts():
    return list(range(FIRST, NBINS - BURST + 1, PERIOD))


def _bins(rank: int) -> tuple[np.ndarray, np.ndarray]:
    """Write and read bins of one rank: writes in every burst, reads in each burst's first bin."""
    write = np.zeros(NBINS, dtype=np.int64)
    read = np.zeros(NBINS, dtype=np.int64)
    for s in _burst_starts():
        write[s : s + BURST] = (rank + 1) * 3_000_000
        read[s] = (rank + 1) * 1000 + s
    return write, read


def _posix_sums() -> tuple[np.ndarray, np.ndarray]:
    """Write and read bins of the POSIX records summed over ranks."""
    return sum(_bins(r)[0] for r in range(RANKS)), sum(_bins(r)[1] for r in range(RANKS))


def _heatmap_records() -> list:
    """POSIX records of RANKS ranks, and one MPI-IO record that sees half their bytes (counted once: POSIX)."""
    recs = [heatmap_record("POSIX", r, WIDTH, *_bins(r)) for r in range(RANKS)]
    write, read = _posix_sums()
    recs.append(heatmap_record("MPIIO", 0, WIDTH, write // 2, read // 2))
    return recs


def _segments(rank: int) -> list:
    """(offset, length, start, end) of one rank's DXT writes."""
    return [
        (i * DXT_SIZE, DXT_SIZE, DXT_T0 + i * DXT_PERIOD + 0.01 * rank, DXT_T0 + i * DXT_PERIOD + DXT_LEN)
        for i in range(DXT_PHASES)
    ]


def _reads(rank: int) -> list:
    """(offset, length, start, end) of one rank's DXT reads, inside the first write phase."""
    return [(7 * rank, 4096 + rank, DXT_T0 + 0.2 + 0.25 * rank, DXT_T0 + 0.4 + 0.25 * rank)]


def _dxt_records() -> list:
    """Two ranks' DXT records of file 101."""
    return [dxt_record(101, r, writes=_segments(r), reads=_reads(r), hostname=f"nid{r:05d}") for r in range(2)]


def _dxt_counters() -> list:
    """The POSIX counters a runtime writes beside the DXT records: their bytes and operations."""
    return [
        posix_record(
            101,
            r,
            {
                "POSIX_BYTES_WRITTEN": sum(s[1] for s in _segments(r)),
                "POSIX_WRITES": len(_segments(r)),
                "POSIX_BYTES_READ": sum(s[1] for s in _reads(r)),
                "POSIX_READS": len(_reads(r)),
            },
        )
        for r in range(2)
    ]


def _write(path, **kw):
    kw.setdefault("job", JOB)
    kw.setdefault("mounts", MOUNTS)
    write_log(path, **kw)
    return path


def _heatmap_counters() -> list:
    """The POSIX counters beside the heatmap: one shared record with the bins' bytes."""
    write, read = _posix_sums()
    return [posix_record(101, -1, {"POSIX_BYTES_WRITTEN": int(write.sum()), "POSIX_BYTES_READ": int(read.sum())})]


@pytest.fixture
def heatmap_log(tmp_path):
    return _write(
        tmp_path / "heatmap.darshan",
        exe="/opt/app/sim --steps 10",
        names=HEATMAP_NAMES,
        records={"HEATMAP": _heatmap_records(), "POSIX": _heatmap_counters()},
    )


def _dxt_log(tmp_path, name, *, partial, heatmap):
    records = {"DXT_POSIX": _dxt_records(), "POSIX": _dxt_counters()}
    if heatmap:
        records["HEATMAP"] = _heatmap_records()
    return _write(
        tmp_path / name,
        exe="/opt/app/sim",
        names={**FILES, **HEATMAP_NAMES},
        records=records,
        partial=["DXT_POSIX"] if partial else [],
    )


# ----------------------------------------------------------------------------- the writer, checked by pydarshan


def test_pydarshan_reads_written_job_and_names(heatmap_log):
    report = darshan.DarshanReport(str(heatmap_log), read_all=True)
    job = report.metadata["job"]
    assert (job["uid"], job["jobid"], job["nprocs"]) == (JOB["uid"], JOB["jobid"], JOB["nprocs"])
    assert (job["start_time_sec"], job["start_time_nsec"]) == JOB["start"]
    assert (job["end_time_sec"], job["end_time_nsec"]) == JOB["end"]
    assert job["run_time"] == pytest.approx(END - START)
    assert report.metadata["exe"] == "/opt/app/sim --steps 10"
    assert sorted(darshan.backend.cffi_backend.log_get_mounts(report.log)) == sorted(MOUNTS)
    assert darshan.backend.cffi_backend.log_get_name_records(report.log) == HEATMAP_NAMES
    assert report.modules["HEATMAP"]["idx"] == MOD_IDS["HEATMAP"]
    assert report.modules["HEATMAP"]["partial_flag"] is False


def test_pydarshan_reads_written_heatmap(heatmap_log):
    report = darshan.DarshanReport(str(heatmap_log), read_all=True)
    assert set(report.heatmaps) == {"POSIX", "MPIIO"}
    hm = report.heatmaps["POSIX"]
    assert hm._bin_width_seconds == WIDTH and hm._nbins == NBINS and hm._ranks == set(range(RANKS))
    for r in range(RANKS):
        write, read = _bins(r)
        np.testing.assert_array_equal(hm._data["write"][r], write)
        np.testing.assert_array_equal(hm._data["read"][r], read)


@pytest.mark.parametrize("partial", [True, False])
def test_pydarshan_reads_written_dxt_and_partial_flag(tmp_path, partial):
    path = _dxt_log(tmp_path, "dxt.darshan", partial=partial, heatmap=False)
    report = darshan.DarshanReport(str(path), read_all=True)
    assert report.modules["DXT_POSIX"]["partial_flag"] is partial
    recs = report.records["DXT_POSIX"].to_df()
    assert [(r["id"], r["rank"], r["hostname"]) for r in recs] == [(101, 0, "nid00000"), (101, 1, "nid00001")]
    for r, rec in enumerate(recs):
        for key, want in (("write_segments", _segments(r)), ("read_segments", _reads(r))):
            seg = rec[key]
            got = list(zip(seg["offset"], seg["length"], seg["start_time"], seg["end_time"], strict=True))
            assert got == want


# ----------------------------------------------------------------------------- HEATMAP only


def test_heatmap_only_log_reads_summed_posix_bins(heatmap_log):
    job = read_darshan(heatmap_log)
    assert job.source == "heatmap" and job.requests is None and job.partial_dxt is False
    width, read, write = job.heatmap
    assert width == WIDTH
    np.testing.assert_array_equal(write, _posix_sums()[0])  # max(MPIIO, POSIX): POSIX, never their sum
    np.testing.assert_array_equal(read, _posix_sums()[1])
    assert job.counters["modules"] == "POSIX"
    assert (job.counters["bytes_written"], job.counters["bytes_read"]) == tuple(int(b.sum()) for b in _posix_sums())


def test_heatmap_only_log_meta(heatmap_log):
    meta = read_darshan(heatmap_log).meta
    assert meta == {
        "job_id": str(JOB["jobid"]),
        "user": str(JOB["uid"]),
        "app": "sim",
        "exe": "/opt/app/sim --steps 10",
        "nprocs": JOB["nprocs"],
        "start": START,
        "end": END,
        "runtime": pytest.approx(END - START),
        "step": None,
    }


def test_heatmap_only_log_rhythm(heatmap_log):
    row = analyze_log(heatmap_log)
    bursts = _burst_starts()
    assert row["source"] == "heatmap"
    assert row["w_iter"] == pytest.approx(PERIOD * WIDTH, abs=WIDTH)
    assert row["n_phases"] == len(bursts)
    assert row["alpha_io"] == pytest.approx(len(bursts) * BURST / NBINS, abs=1 / NBINS)
    assert row["w_iter_confidence"] >= 0.5


# ----------------------------------------------------------------------------- partial DXT


def _expected_ops():
    """(rank, op, offset, size, start, end, file) in the log's order: per record writes, then reads."""
    rows = []
    for r in range(2):
        rows += [(r, "write", *s, FILES[101]) for s in _segments(r)]
        rows += [(r, "read", *s, FILES[101]) for s in _reads(r)]
    return rows


def _ops_rows(ops):
    return list(ops.select("rank", "op", "offset", "size", "start", "end", "file").iter_rows())


def test_partial_dxt_without_heatmap_keeps_the_trace(tmp_path):
    path = _dxt_log(tmp_path, "partial.darshan", partial=True, heatmap=False)
    job = read_darshan(path)
    assert job.partial_dxt is True and job.source == "dxt" and job.heatmap is None
    assert _ops_rows(job.requests) == _expected_ops()
    assert (job.requests["job_id"] == str(JOB["jobid"])).all()
    row = analyze_log(path)
    assert row["source"] == "dxt"
    assert row["w_iter"] == pytest.approx(DXT_PERIOD, rel=0.02)
    assert row["n_phases"] == DXT_PHASES


def test_partial_dxt_yields_to_heatmap(tmp_path):
    path = _dxt_log(tmp_path, "partial_hm.darshan", partial=True, heatmap=True)
    job = read_darshan(path)
    assert job.partial_dxt is True and job.source == "heatmap"
    assert _ops_rows(job.requests) == _expected_ops()  # the trace is still returned
    np.testing.assert_array_equal(job.heatmap[2], _posix_sums()[0])
    row = analyze_log(path)
    assert row["source"] == "heatmap"
    assert row["n_phases"] == len(_burst_starts())  # the whole run, not the traced prefix
    assert row["w_iter"] == pytest.approx(PERIOD * WIDTH, abs=WIDTH)


def test_complete_dxt_is_preferred_to_heatmap(tmp_path):
    path = _dxt_log(tmp_path, "full.darshan", partial=False, heatmap=True)
    job = read_darshan(path)
    assert job.partial_dxt is False and job.source == "dxt" and job.heatmap is None
    assert _ops_rows(job.requests) == _expected_ops()


def test_partial_dxt_mpiio_used_when_posix_trace_is_empty(tmp_path):
    records = {
        "DXT_POSIX": [dxt_record(102, 0)],
        "DXT_MPIIO": [dxt_record(101, r, writes=_segments(r), reads=_reads(r)) for r in range(2)],
    }
    path = _write(tmp_path / "mpiio.darshan", exe="/opt/app/sim", names=FILES, records=records, partial=["DXT_MPIIO"])
    report = darshan.DarshanReport(str(path), read_all=True)
    assert report.modules["DXT_MPIIO"]["partial_flag"] and not report.modules["DXT_POSIX"]["partial_flag"]
    job = read_darshan(path)
    assert job.partial_dxt is True and job.source == "dxt"
    assert _ops_rows(job.requests) == _expected_ops()


# ----------------------------------------------------------------------------- counters only


POSIX_RECS = [  # (record id, rank, counters, fcounters); rank -1 is a record shared by all ranks
    (
        101,
        -1,
        {"POSIX_BYTES_READ": 0, "POSIX_BYTES_WRITTEN": 8 << 30},
        {
            "POSIX_F_WRITE_TIME": 30.0,
            "POSIX_F_META_TIME": 2.0,
            "POSIX_F_OPEN_START_TIMESTAMP": 1.5,
            "POSIX_F_CLOSE_END_TIMESTAMP": 90.25,
        },
    ),
    (
        102,
        0,
        {"POSIX_BYTES_READ": 123_456_789, "POSIX_BYTES_WRITTEN": -1},  # -1: darshan's "unknown"
        {"POSIX_F_READ_TIME": 4.5, "POSIX_F_READ_START_TIMESTAMP": 0.75, "POSIX_F_READ_END_TIMESTAMP": 12.0},
    ),
    (
        102,
        3,
        {"POSIX_BYTES_READ": 1000, "POSIX_BYTES_WRITTEN": 24},
        {"POSIX_F_READ_TIME": 0.5, "POSIX_F_WRITE_TIME": 1.0},
    ),
]


@pytest.fixture
def counters_log(tmp_path):
    records = {"POSIX": [posix_record(*rec) for rec in POSIX_RECS]}
    return _write(tmp_path / "counters.darshan", exe="", names=FILES, records=records)


def test_pydarshan_reads_written_posix_counters(counters_log):
    report = darshan.DarshanReport(str(counters_log), read_all=True)
    c = report.records["POSIX"].to_df()["counters"]
    f = report.records["POSIX"].to_df()["fcounters"]
    assert list(zip(c["id"], c["rank"], strict=True)) == [(i, r) for i, r, _, _ in POSIX_RECS]
    for row, (_, _, counters, fcounters) in enumerate(POSIX_RECS):
        assert {k: c[k][row] for k in counters} == counters
        assert {k: f[k][row] for k in fcounters} == fcounters


SLOWEST_RANK_TIME = 4.5 + 32.0 / 4  # rank 0: its own 4.5 s read and a quarter of the shared record's 32 s


def test_counters_only_log_totals(counters_log):
    job = read_darshan(counters_log)
    assert job.source == "counters" and job.requests is None and job.heatmap is None
    cs = [c for _, _, c, _ in POSIX_RECS]
    fs = [f for _, _, _, f in POSIX_RECS]
    times = sum(f.get(f"POSIX_F_{k}_TIME", 0.0) for f in fs for k in ("READ", "WRITE", "META"))
    assert job.counters == {
        "bytes_read": sum(max(c["POSIX_BYTES_READ"], 0) for c in cs),
        "bytes_written": sum(max(c["POSIX_BYTES_WRITTEN"], 0) for c in cs),
        "reads": 0,
        "writes": 0,
        "io_time": pytest.approx(times / JOB["nprocs"]),
        "slowest_io_time": pytest.approx(SLOWEST_RANK_TIME),
        "first_io": min(v for f in fs for k, v in f.items() if k.endswith("_START_TIMESTAMP")),
        "last_io": max(v for f in fs for k, v in f.items() if k.endswith("_END_TIMESTAMP")),
        "modules": "POSIX",
    }


def test_counters_only_log_row(counters_log):
    row = analyze_log(counters_log)
    times = sum(f.get(f"POSIX_F_{k}_TIME", 0.0) for *_, f in POSIX_RECS for k in ("READ", "WRITE", "META"))
    assert row["source"] == "counters" and row["w_iter"] is None and row["n_phases"] is None
    assert row["io_time"] == pytest.approx(times / JOB["nprocs"])
    assert row["alpha_io"] == pytest.approx(SLOWEST_RANK_TIME / (END - START))  # the slowest rank's share of the run
    assert row["app"] == ""  # the log was written with an empty exe
    assert row["bytes_written"] == (8 << 30) + 24
