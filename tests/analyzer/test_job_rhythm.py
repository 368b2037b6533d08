"""A job's rhythm on Darshan logs written with darshan-util's own writer: the job's layer, one alpha_io, evidence.

Every expected value is computed here from the pattern put into the log.
"""

import json

import numpy as np
import pytest

pytest.importorskip("darshan")

from darshan_writer import HEATMAP_RECORD_IDS, counter_record, dxt_record, heatmap_record, write_log  # noqa: E402

from iosets.analyzer import analyze, analyze_log  # noqa: E402
from iosets.recommender import export, recommend  # noqa: E402

MIB = 1 << 20
T0 = 1_700_000_000
NAMES = {
    101: "/scratch/run/out.dat",
    HEATMAP_RECORD_IDS["POSIX"]: "heatmap:POSIX",
    HEATMAP_RECORD_IDS["STDIO"]: "heatmap:STDIO",
}


def _job(*, jobid=9001, nprocs=4, runtime=100.0, start=0.0, uid=4242):
    """A job record starting ``start`` s after T0 and lasting ``runtime`` s."""
    begin, end = T0 + start, T0 + start + runtime
    return {
        "uid": uid,
        "jobid": jobid,
        "nprocs": nprocs,
        "start": (int(begin), round((begin % 1) * 1e9)),
        "end": (int(end), round((end % 1) * 1e9)),
    }


def _write(path, *, job, records, partial=(), exe="/opt/app/sim"):
    write_log(path, job=job, exe=exe, mounts=[("/scratch", "lustre")], names=NAMES, records=records, partial=partial)
    return path


def _posix(rank, *, writes, written, write_time):
    return counter_record(
        "POSIX",
        101,
        rank,
        {"POSIX_WRITES": writes, "POSIX_BYTES_WRITTEN": written},
        {"POSIX_F_WRITE_TIME": write_time},
    )


# ----------------------------------------------------------------------------- the job's layer: MPI-IO

RANKS, ITERS, LENGTH = 32, 4, 2.6


def _mpiio_no_compute_log(path):
    """32 ranks, 4 collective iterations of 16 MiB per rank, back to back (2.6 s each), no compute.

    DXT_MPIIO: one call per rank per iteration, over the whole iteration. DXT_POSIX: 4 aggregators
    write the 2 GiB as 16 MiB sub-requests 0.08 s apart (0.02 s each), 8 per iteration each.
    """
    calls = [(i * 16 * MIB, 16 * MIB, 0.2 + i * LENGTH, 0.2 + (i + 1) * LENGTH - 0.005) for i in range(ITERS)]
    subs = [
        (j * 16 * MIB, 16 * MIB, 0.2 + i * LENGTH + 0.01 + 0.08 * j, 0.2 + i * LENGTH + 0.03 + 0.08 * j)
        for i in range(ITERS)
        for j in range(8)
    ]
    mpiio_counters = {"MPIIO_COLL_WRITES": ITERS, "MPIIO_BYTES_WRITTEN": ITERS * 16 * MIB}
    records = {
        "DXT_MPIIO": [dxt_record(101, r, writes=calls) for r in range(RANKS)],
        "DXT_POSIX": [dxt_record(101, r, writes=subs) for r in range(4)],
        "MPI-IO": [
            counter_record("MPI-IO", 101, r, mpiio_counters, {"MPIIO_F_WRITE_TIME": ITERS * (LENGTH - 0.005)})
            for r in range(RANKS)
        ],
        "POSIX": [
            _posix(r, writes=len(subs), written=len(subs) * 16 * MIB, write_time=0.02 * len(subs)) for r in range(4)
        ],
    }
    return _write(path, job=_job(nprocs=RANKS, runtime=0.2 + ITERS * LENGTH + 0.3), records=records)


def test_mpiio_job_without_compute_is_io_bound_not_periodic(tmp_path):
    row = analyze_log(_mpiio_no_compute_log(tmp_path / "mpiio.darshan"))
    busy = ITERS * (LENGTH - 0.005)  # the calls' union: 4 x 2.595 s
    assert row["alpha_io"] >= 0.9
    assert row["alpha_io"] == pytest.approx(busy / (0.2 + ITERS * LENGTH + 0.3), abs=1e-6)
    assert row["w_iter"] is None and row["not_periodic"] == "io_bound"
    assert row["rhythm_from"] == "DXT_MPIIO+DXT_POSIX" and row["resolution"] == pytest.approx(1e-6)
    assert row["bytes_written"] == RANKS * ITERS * 16 * MIB  # the POSIX bytes equal MPI-IO's: counted once
    assert "I/O-bound" in row["explanation"]


# ----------------------------------------------------------------------------- heatmaps: empty bins, thin evidence

WIDTH, PERIOD_BINS, PHASE_BINS, N_PHASES = 0.5, 16, 6, 25  # w_iter 8 s, phases of 3 s, a run of 200 s


def _heatmap_bins(hole: bool) -> tuple[np.ndarray, np.ndarray]:
    """Write bins of one rank: 6-bin phases every 16 bins from bin 2; with ``hole`` the 5th phase misses a bin."""
    write = np.zeros(PERIOD_BINS * N_PHASES, dtype=np.int64)
    for k in range(N_PHASES):
        write[2 + k * PERIOD_BINS : 2 + k * PERIOD_BINS + PHASE_BINS] = 8 * MIB
    if hole:
        write[2 + 4 * PERIOD_BINS + 3] = 0
    return write, np.zeros_like(write)


def _periodic_heatmap_log(path, *, hole: bool, jobid=9001):
    ranks = 4
    records = {
        "HEATMAP": [heatmap_record("POSIX", r, WIDTH, *_heatmap_bins(hole)) for r in range(ranks)],
        "POSIX": [
            _posix(r, writes=N_PHASES * 6, written=N_PHASES * PHASE_BINS * 8 * MIB, write_time=N_PHASES * 3.0)
            for r in range(ranks)
        ],
    }
    runtime = WIDTH * PERIOD_BINS * N_PHASES
    return _write(path, job=_job(jobid=jobid, nprocs=ranks, runtime=runtime), records=records)


@pytest.mark.parametrize("hole", [False, True])
def test_empty_bin_inside_a_phase_keeps_the_period(tmp_path, hole):
    row = analyze_log(_periodic_heatmap_log(tmp_path / "hm.darshan", hole=hole))
    assert row["rhythm_from"] == "HEATMAP" and row["resolution"] == WIDTH
    assert row["n_phases"] == N_PHASES
    assert row["w_iter"] == pytest.approx(WIDTH * PERIOD_BINS, rel=0.02)
    assert row["not_periodic"] is None and row["explanation"].startswith("periodic: 25 I/O phases")
    # 3 s of I/O per 8 s: the counters' slowest rank (75 s) within what the bins allow (74.5 s with the hole)
    assert row["alpha_io"] == pytest.approx((75.0 - WIDTH * hole) / 200.0, abs=1e-9)


def test_three_bins_of_console_output_are_not_periodic(tmp_path):
    """A 0.6 s run whose only I/O is three 0.2 s heatmap bins of STDIO output."""
    write = np.array([900, 1200, 700], dtype=np.int64)
    records = {
        "STDIO": [counter_record("STDIO", 101, 0, {"STDIO_WRITES": 3, "STDIO_BYTES_WRITTEN": int(write.sum())}, {})],
        "HEATMAP": [heatmap_record("STDIO", 0, 0.2, write, np.zeros(3, dtype=np.int64))],
    }
    row = analyze_log(_write(tmp_path / "tiny.darshan", job=_job(nprocs=1, runtime=0.6), records=records))
    assert row["w_iter"] is None and row["not_periodic"] == "few_bytes"
    assert row["explanation"].startswith("only 2.734 KiB of I/O, under the 256 KiB floor")
    assert row["bytes_written"] == 2800 and row["modules"] == "STDIO"


# ----------------------------------------------------------------------------- one alpha_io from three sources

PHASES, STEP, BURST, STAGGER = 10, 10.0, 3.0, 0.2  # rank r writes [10k + 1.5 + 0.2 r, +3 s]: union 3.6 s per phase


def _segments(rank: int) -> list:
    """A rank's writes: each phase as 30 back-to-back 0.1 s DXT segments of 1 MiB."""
    return [
        (j * MIB, MIB, k * STEP + 1.5 + STAGGER * rank + 0.1 * j, k * STEP + 1.5 + STAGGER * rank + 0.1 * (j + 1))
        for k in range(PHASES)
        for j in range(30)
    ]


def _bins(rank: int) -> np.ndarray:
    """The rank's bytes per 1 s heatmap bin (its 1 MiB segments binned by start), plus 4 KiB of logging every bin."""
    write = np.full(int(PHASES * STEP), 4096, dtype=np.int64)
    for _, size, start, _ in _segments(rank):
        write[int(start)] += size
    return write


def _three_source_log(path, *, dxt: bool, heatmap: bool, partial=()):
    ranks = 3
    records = {"POSIX": [_posix(r, writes=300, written=300 * MIB, write_time=PHASES * BURST) for r in range(ranks)]}
    if dxt:
        records["DXT_POSIX"] = [dxt_record(101, r, writes=_segments(r)) for r in range(ranks)]
    if heatmap:
        records["HEATMAP"] = [
            heatmap_record("POSIX", r, 1.0, _bins(r), np.zeros(int(PHASES * STEP), dtype=np.int64))
            for r in range(ranks)
        ]
    return _write(path, job=_job(nprocs=ranks, runtime=PHASES * STEP), records=records, partial=partial)


def test_dxt_heatmap_and_counters_agree_on_alpha_io(tmp_path):
    from_dxt = analyze_log(_three_source_log(tmp_path / "a.darshan", dxt=True, heatmap=True))
    from_heatmap = analyze_log(_three_source_log(tmp_path / "b.darshan", dxt=True, heatmap=True, partial=["DXT_POSIX"]))
    from_counters = analyze_log(_three_source_log(tmp_path / "c.darshan", dxt=False, heatmap=False))
    assert [r["source"] for r in (from_dxt, from_heatmap, from_counters)] == ["dxt", "heatmap", "counters"]
    assert from_dxt["alpha_io"] == pytest.approx(PHASES * (BURST + 2 * STAGGER) / 100.0, abs=1e-6)  # the union
    assert from_counters["alpha_io"] == pytest.approx(PHASES * BURST / 100.0)  # the slowest rank
    assert from_counters["not_periodic"] == "no_timeline"
    alphas = [r["alpha_io"] for r in (from_dxt, from_heatmap, from_counters)]
    assert max(alphas) - min(alphas) <= 0.1
    assert from_heatmap["alpha_io"] < 0.5  # the 4 KiB of logging in every bin is not I/O time
    assert from_dxt["w_iter"] == pytest.approx(STEP, rel=1e-6) and from_heatmap["w_iter"] == pytest.approx(
        STEP, rel=0.02
    )
    assert "partial" in from_heatmap["explanation"]


# ----------------------------------------------------------------------------- jobs, not logs


def _process_log(path, *, start, jobid=7, uid=4242):
    """One process of a DLIO-like job: reads 8 MiB at the start of every 8 s step, 12 steps."""
    reads = [(k * 8 * MIB, 8 * MIB, 1.0 + 8.0 * k, 1.5 + 8.0 * k) for k in range(12)]
    records = {
        "DXT_POSIX": [dxt_record(101, 0, reads=reads)],
        "POSIX": [
            counter_record(
                "POSIX", 101, 0, {"POSIX_READS": 12, "POSIX_BYTES_READ": 96 * MIB}, {"POSIX_F_READ_TIME": 6.0}
            )
        ],
    }
    exe = "/usr/bin/python3 -u /home/u/dlio_benchmark/main.py workload=unet3d"
    return _write(path, job=_job(jobid=jobid, uid=uid, nprocs=1, runtime=100.0, start=start), records=records, exe=exe)


def test_logs_of_one_job_id_merge_into_one_row(tmp_path):
    _process_log(tmp_path / "p0.darshan", start=0.0)
    _process_log(tmp_path / "p1.darshan", start=2.0)
    result = analyze([tmp_path])
    jobs = result.jobs
    assert jobs.height == 1
    assert (
        result.modules.select("job_id", "module", "bytes_read", "reads", "counted").rows()
        == [("7", "POSIX", 96 * MIB, 12, True)] * 2
    )  # each log's breakdown, under the job it went into
    row = jobs.row(0, named=True)
    assert (row["job_id"], row["n_logs"], row["nprocs"]) == ("7", 2, 2)
    assert row["bytes_read"] == 2 * 96 * MIB and row["reads"] == 24
    assert row["start"] == T0 and row["runtime"] == pytest.approx(102.0)
    assert row["app"] == "main.py"
    assert row["w_iter"] == pytest.approx(8.0, rel=1e-6) and row["n_phases"] == 12  # the merged timeline
    assert row["explanation"].endswith("2 logs merged")


def test_one_job_id_with_runs_apart_gets_one_row_per_run(tmp_path):
    _process_log(tmp_path / "a.darshan", start=0.0)
    _process_log(tmp_path / "b.darshan", start=5.0)
    _process_log(tmp_path / "c.darshan", start=500.0)
    result = analyze([tmp_path])
    assert result.jobs.sort("start").select("job_id", "step", "n_logs").rows() == [("7.0", "0", 2), ("7.1", "1", 1)]
    assert result.modules.select("job_id", "path").rows() == [
        ("7.0", str(tmp_path / "a.darshan")),
        ("7.0", str(tmp_path / "b.darshan")),
        ("7.1", str(tmp_path / "c.darshan")),
    ]


def test_export_works_when_logs_repeat_a_job_id(tmp_path):
    for k in range(3):
        _process_log(tmp_path / f"p{k}.darshan", start=float(k))
    _process_log(tmp_path / "other.darshan", start=0.0, jobid=8)
    jobs = analyze([tmp_path]).jobs
    assert sorted(jobs["job_id"]) == ["7", "8"]
    written = export(recommend(jobs), "json", tmp_path / "out.json")
    assert [p.name for p in written] == ["out.json"]
    assert sorted(json.loads(written[0].read_text())["jobs"]) == ["7", "8"]
