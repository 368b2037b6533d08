"""Sync time in alpha_io, the counters' second io_bound measure, and standard streams out of the job's bytes.

Hand-made logs (darshan-util's own writer) with a closed-form answer; the real darshan-runtime logs against their
programs' truth are test_runtime_truth.py's.
"""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("darshan")

from darshan_writer import counter_record, dxt_record, write_log  # noqa: E402
from runtime_truth import runtime_cases  # noqa: E402

from iosets.analyzer import analyze_log, read_darshan  # noqa: E402
from iosets.analyzer._evidence import IO_BOUND, counters_io_bound  # noqa: E402
from iosets.analyzer._ingest._darshan_counters import STREAM_IDS, STREAMS  # noqa: E402
from iosets.analyzer._sync_time import sync_requests, sync_times  # noqa: E402

MIB = 1 << 20
T0 = 1_700_000_000
STDIN, STDOUT, STDERR = STREAM_IDS
NAMES = {101: "/scratch/a.dat", 102: "/scratch/b.dat", 200: "/scratch/shared.dat"}


def _log(path, records, *, nprocs=1, runtime=50.0, partial=()):
    job = {"uid": 7, "jobid": 42, "nprocs": nprocs, "start": (T0, 0), "end": (T0 + int(runtime), 0)}
    names = {**NAMES, STDIN: "<STDIN>", STDOUT: "<STDOUT>", STDERR: "<STDERR>"}
    write_log(
        path, job=job, exe="/opt/ckpt", mounts=[("/scratch", "ext4")], names=names, records=records, partial=partial
    )
    return path


def _writes(start, n, *, length=0.01, size=MIB):
    """``n`` back-to-back writes of ``size`` bytes from ``start``, ``length`` s each."""
    return [(j * size, size, start + j * length, start + (j + 1) * length) for j in range(n)]


def _posix(rec_id, rank, *, writes, write_time, fsyncs, meta_time=0.0):
    counters = {"POSIX_WRITES": writes, "POSIX_BYTES_WRITTEN": writes * MIB, "POSIX_FSYNCS": fsyncs}
    return counter_record(
        "POSIX", rec_id, rank, counters, {"POSIX_F_WRITE_TIME": write_time, "POSIX_F_META_TIME": meta_time}
    )


def _requests(job) -> list[tuple[int, float, float]]:
    return [(r, round(s, 9), round(e, 9)) for r, s, e in sync_requests(job).select("rank", "start", "end").iter_rows()]


# ----------------------------------------------------------------------------- how much, and where


def _buffered_checkpoint(path, *, fsyncs=5):
    """5 phases 10 s apart from 1 s: 4 buffered 1 MiB writes of 0.01 s each, then a 0.2 s fsync."""
    segments = [s for k in range(5) for s in _writes(10.0 * k + 1.0, 4)]
    records = {
        "POSIX": [_posix(101, 0, writes=20, write_time=20 * 0.01 + 5 * 0.2, fsyncs=fsyncs)],
        "DXT_POSIX": [dxt_record(101, 0, writes=segments)],
    }
    return _log(path, records)


def test_the_fsync_time_is_the_write_time_the_dxt_writes_do_not_explain(tmp_path):
    job = read_darshan(_buffered_checkpoint(tmp_path / "ckpt.darshan"))
    assert job.syncs.rows() == [("POSIX", "/scratch/a.dat", 0, 5, pytest.approx(1.2))]
    (file, rank, module, seconds), *more = sync_times(job).rows()
    assert (file, rank, module, more) == ("/scratch/a.dat", 0, "DXT_POSIX", [])
    assert seconds == pytest.approx(1.0, abs=1e-9)
    # each phase flushed 4 MiB of the 20: a fifth of the second each, from the end of its writes
    assert _requests(job) == [(0, 10.0 * k + 1.04, 10.0 * k + 1.24) for k in range(5)]


def test_the_fsync_time_is_in_alpha_io_and_the_bytes_do_not_move(tmp_path):
    row = analyze_log(_buffered_checkpoint(tmp_path / "ckpt.darshan"))
    assert row["alpha_io"] == pytest.approx(5 * 0.24 / 50.0, abs=1e-9)  # writes 0.04 s + fsync 0.2 s per phase
    assert row["w_iter"] == pytest.approx(10.0) and row["n_phases"] == 5
    assert row["bytes_written"] == 20 * MIB


def test_write_time_without_sync_calls_is_not_placed(tmp_path):
    """The same counters without POSIX_FSYNCS: whatever the extra time is, nothing says it was a sync."""
    job = read_darshan(_buffered_checkpoint(tmp_path / "ckpt.darshan", fsyncs=0))
    assert job.syncs.is_empty() and sync_requests(job).is_empty()
    assert analyze_log(tmp_path / "ckpt.darshan")["alpha_io"] == pytest.approx(5 * 0.04 / 50.0, abs=1e-9)


def test_mpi_file_sync_counts_its_fsync_once(tmp_path):
    """2 ranks, a file each, 3 phases: one 0.04 s MPI_File_write_at of 4 MiB, then MPI_File_sync (0.2 s, of which
    the fsync under it 0.18 s). MPI-IO gives the file 0.6 s, POSIX 0.54 s: the file's sync time is MPI-IO's."""
    starts = [1.0, 11.0, 21.0]
    records = {"POSIX": [], "MPI-IO": [], "DXT_POSIX": [], "DXT_MPIIO": []}
    for rank, rec in enumerate((101, 102)):
        calls = [(0, 4 * MIB, t, t + 0.04) for t in starts]
        subs = [s for t in starts for s in _writes(t + 0.001, 4, length=0.009)]
        records["DXT_MPIIO"].append(dxt_record(rec, rank, writes=calls))
        records["DXT_POSIX"].append(dxt_record(rec, rank, writes=subs))
        mpiio = {"MPIIO_INDEP_WRITES": 3, "MPIIO_BYTES_WRITTEN": 12 * MIB, "MPIIO_SYNCS": 3}
        records["MPI-IO"].append(counter_record("MPI-IO", rec, rank, mpiio, {"MPIIO_F_WRITE_TIME": 3 * 0.04 + 3 * 0.2}))
        records["POSIX"].append(_posix(rec, rank, writes=12, write_time=12 * 0.009 + 3 * 0.18, fsyncs=3))
    job = read_darshan(_log(tmp_path / "mpi.darshan", records, nprocs=2, runtime=30.0))
    times = sync_times(job)
    assert times.select("file", "rank", "module").rows() == [
        ("/scratch/a.dat", 0, "DXT_MPIIO"),
        ("/scratch/b.dat", 1, "DXT_MPIIO"),
    ]
    assert times.get_column("seconds").to_list() == pytest.approx([0.6, 0.6], abs=1e-9)
    assert _requests(job) == [(rank, t + 0.04, t + 0.24) for rank in (0, 1) for t in starts]
    row = analyze_log(tmp_path / "mpi.darshan")
    assert row["alpha_io"] == pytest.approx(3 * 0.24 / 30.0, abs=1e-9)
    assert row["bytes_written"] == 24 * MIB


@pytest.mark.parametrize(("sync", "ends"), [(0.1, 0.11), (0.02, 0.06)])
def test_a_shared_files_syncs_end_together(tmp_path, sync, ends):
    """One file shared by 2 ranks (record rank -1), 3 phases: rank 0 writes 4 MiB until +0.04 s, rank 1 8 MiB until
    +0.08 s, then both fsync: ``sync`` s a phase in all. They end at T with (T - 0.04) + (T - 0.08) = sync when
    that is past 0.08 (T = 0.11); else rank 0's alone fills it (T = 0.04 + 0.02: rank 1 syncs nothing more)."""
    starts = [1.0, 11.0, 21.0]
    records = {
        "POSIX": [_posix(200, -1, writes=36, write_time=3 * (0.04 + 0.08) + 3 * sync, fsyncs=6)],
        "DXT_POSIX": [
            dxt_record(200, 0, writes=[s for t in starts for s in _writes(t, 4)]),
            dxt_record(200, 1, writes=[s for t in starts for s in _writes(t, 8)]),
        ],
    }
    job = read_darshan(_log(tmp_path / "shared.darshan", records, nprocs=2, runtime=30.0))
    assert sync_times(job).rows() == [("/scratch/shared.dat", -1, "DXT_POSIX", pytest.approx(3 * sync, abs=1e-9))]
    pieces = [(0, t + 0.04, t + ends) for t in starts] + [(1, t + 0.08, t + ends) for t in starts if ends > 0.08]
    assert _requests(job) == sorted(pieces)
    assert analyze_log(tmp_path / "shared.darshan")["alpha_io"] == pytest.approx(3 * max(ends, 0.08) / 30.0, abs=1e-9)


def test_sync_time_that_does_not_fit_before_the_next_run_goes_on_after_it(tmp_path):
    """Two runs of 4 MiB 0.05 s apart, then 0.2 s of fsync: 0.1 s each by bytes; 0.05 s fit after the first,
    the other 0.05 s go after the second with its own 0.1 s."""
    segments = _writes(1.0, 4) + _writes(1.09, 4)
    records = {
        "POSIX": [_posix(101, 0, writes=8, write_time=8 * 0.01 + 0.2, fsyncs=1)],
        "DXT_POSIX": [dxt_record(101, 0, writes=segments)],
    }
    job = read_darshan(_log(tmp_path / "carry.darshan", records, runtime=10.0))
    assert _requests(job) == [(0, 1.04, 1.09), (0, 1.13, 1.28)]


def test_the_write_time_follows_darshans_timer_rule(tmp_path):
    """Two threads' writes overlap, [1, 2] then [1.5, 2.5]: Darshan's timer counts 1 + 0.5 s, so 0.3 s is sync."""
    segments = [(0, MIB, 1.0, 2.0), (MIB, MIB, 1.5, 2.5)]
    records = {
        "POSIX": [_posix(101, 0, writes=2, write_time=1.5 + 0.3, fsyncs=1)],
        "DXT_POSIX": [dxt_record(101, 0, writes=segments)],
    }
    job = read_darshan(_log(tmp_path / "threads.darshan", records, runtime=10.0))
    assert sync_times(job).get_column("seconds").to_list() == pytest.approx([0.3], abs=1e-9)
    assert _requests(job) == [(0, 2.5, 2.8)]


def test_no_sync_time_without_dxt_writes_to_place_it_or_from_a_partial_trace(tmp_path):
    """File b was synced but DXT has no write of it; a partial DXT trace cannot say what the counters' rest is."""
    records = {
        "POSIX": [
            _posix(101, 0, writes=4, write_time=0.04 + 0.2, fsyncs=1),
            _posix(102, 0, writes=4, write_time=0.5, fsyncs=1),
        ],
        "DXT_POSIX": [dxt_record(101, 0, writes=_writes(1.0, 4))],
    }
    whole = read_darshan(_log(tmp_path / "a.darshan", records, runtime=10.0))
    assert sync_times(whole).get_column("file").to_list() == ["/scratch/a.dat"]
    partial = read_darshan(_log(tmp_path / "b.darshan", records, runtime=10.0, partial=["DXT_POSIX"]))
    assert partial.partial_dxt and sync_times(partial).is_empty() and sync_requests(partial).is_empty()


# ----------------------------------------------------------------------------- io_bound: the counters' measure


def _streaming(path, *, meta_time):
    """3 phases of 1 s every 10 s in a 30 s run (DXT alpha 0.1), and ``meta_time`` s in open and close."""
    segments = [s for k in range(3) for s in _writes(10.0 * k, 100)]
    records = {
        "POSIX": [_posix(101, 0, writes=300, write_time=3.0, fsyncs=0, meta_time=meta_time)],
        "DXT_POSIX": [dxt_record(101, 0, writes=segments)],
    }
    return _log(path, records, runtime=30.0)


def test_a_job_whose_counters_fill_its_run_is_io_bound(tmp_path):
    row = analyze_log(_streaming(tmp_path / "s.darshan", meta_time=25.5))  # 28.5 s of 30: 95 %
    assert (row["not_periodic"], row["w_iter"]) == ("io_bound", None)
    assert row["alpha_io"] == pytest.approx(0.1, abs=1e-9)  # alpha_io stays the timeline's
    assert row["explanation"].startswith("does I/O 95% of its run by its counters")
    assert "10% by its timeline" in row["explanation"]


def test_a_job_whose_counters_leave_room_keeps_its_period(tmp_path):
    row = analyze_log(_streaming(tmp_path / "s.darshan", meta_time=12.0))  # 15 s of 30
    assert row["not_periodic"] is None and row["w_iter"] == pytest.approx(10.0)


def test_the_timeline_decides_first_and_earlier_gates_stay():
    by_timeline = counters_io_bound(None, "periodic", alpha_io=0.95, counters_share=0.2)
    assert by_timeline[0] == "io_bound" and "95% of its run by its timeline" in by_timeline[1]
    assert counters_io_bound("few_bytes", "only 1 KiB", alpha_io=0.1, counters_share=1.0) == ("few_bytes", "only 1 KiB")
    assert counters_io_bound("short_run", "x", alpha_io=0.1, counters_share=IO_BOUND)[0] == "io_bound"
    assert counters_io_bound("irregular", "x", alpha_io=0.1, counters_share=0.89) == ("irregular", "x")


# ----------------------------------------------------------------------------- standard streams


def test_standard_streams_are_not_the_jobs_bytes(tmp_path):
    """STDIO: a file (1000 B from 2 s) and IOR-like console text on <STDOUT> and <STDERR> (from 0.1 s)."""
    stdio = [
        counter_record(
            "STDIO",
            101,
            0,
            {"STDIO_WRITES": 2, "STDIO_BYTES_WRITTEN": 1000},
            {"STDIO_F_WRITE_TIME": 0.5, "STDIO_F_WRITE_START_TIMESTAMP": 2.0, "STDIO_F_WRITE_END_TIMESTAMP": 2.5},
        ),
        counter_record(
            "STDIO",
            STDOUT,
            -1,
            {"STDIO_WRITES": 5, "STDIO_BYTES_WRITTEN": 500},
            {"STDIO_F_WRITE_TIME": 0.2, "STDIO_F_WRITE_START_TIMESTAMP": 0.1, "STDIO_F_WRITE_END_TIMESTAMP": 9.0},
        ),
        counter_record("STDIO", STDERR, -1, {"STDIO_WRITES": 1, "STDIO_BYTES_WRITTEN": 20}, {}),
    ]
    job = read_darshan(_log(tmp_path / "s.darshan", {"STDIO": stdio}, runtime=10.0))
    c = job.counters
    assert (c["bytes_written"], c["writes"], c["modules"]) == (1000, 2, "STDIO")
    assert (c["io_time"], c["first_io"], c["last_io"]) == (0.5, 2.0, 2.5)
    rows = [(m.module, m.bytes_written, m.writes, m.counted) for m in job.modules]
    assert rows == [("STDIO", 1000, 2, True), (STREAMS, 520, 6, False)]


def test_a_log_of_console_text_alone_moved_no_byte(tmp_path):
    stdout = counter_record("STDIO", STDOUT, -1, {"STDIO_WRITES": 5, "STDIO_BYTES_WRITTEN": 500}, {})
    row = analyze_log(_log(tmp_path / "s.darshan", {"STDIO": [stdout]}, runtime=10.0))
    assert (row["bytes_written"], row["not_periodic"], row["modules"]) == (0, "no_io", "")


def test_the_stream_ids_are_darshans_hash_of_their_names():
    """darshan_core_gen_record_id is darshan_hash(name, strlen(name), 0), exported by libdarshan."""
    lib = Path("/opt/darshan-runtime/lib/libdarshan.so")
    if not lib.exists():
        pytest.skip("darshan-runtime is not installed at /opt/darshan-runtime")
    code = (
        "import ctypes, sys\n"
        f"lib = ctypes.CDLL({str(lib)!r})\n"
        "lib.darshan_hash.restype = ctypes.c_uint64\n"
        "lib.darshan_hash.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64]\n"
        "print(*(lib.darshan_hash(n, len(n), 0) for n in (b'<STDIN>', b'<STDOUT>', b'<STDERR>')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert tuple(int(v) for v in out.stdout.split()) == STREAM_IDS


# ----------------------------------------------------------------------------- real logs
# (test_runtime_truth.py checks every real fixture's alpha_io, bytes and io_bound against its program's truth)


@pytest.mark.parametrize("case", [case for case in runtime_cases() if case.folder == "corpus"], ids=lambda c: c.id)
def test_real_jobs_without_syncs_do_not_move(case):
    jobs = [read_darshan(log) for log in case.logs]
    assert all(job.syncs is None or job.syncs.is_empty() for job in jobs)
    assert all(sync_requests(job).is_empty() for job in jobs if job.dxt)


def test_counters_past_the_run_overlap_themselves_and_decide_nothing():
    """darshan's dxt.darshan example: counters hold 7.6 times its run, DXT 3 %: the counters' share is no evidence."""
    reason, text = counters_io_bound("irregular", "3 I/O phases", alpha_io=0.03, counters_share=7.64)
    assert (reason, text) == ("irregular", "3 I/O phases")
    assert counters_io_bound("irregular", "", alpha_io=0.03, counters_share=1.0)[0] == "io_bound"
