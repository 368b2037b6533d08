"""One job is its overlapping processes: logs of one job id merge while their runs overlap or touch.

Logs are written with darshan-util's own writer; every expected row is worked out here from the
runs put into the logs.
"""

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("darshan")

from darshan_writer import counter_record, dxt_record, write_log  # noqa: E402

from iosets.analyzer import SAME_JOB_GAP, analyze  # noqa: E402

MIB = 1 << 20
T0 = 1_700_000_000
STEP = 8.0
"""The job's rhythm: every process reads 8 MiB at 1 s past each multiple of 8 s of the job's clock."""


def _log(path, *, start, runtime, jobid=7, uid=4242):
    """One process of job ``jobid`` alive over [start, start + runtime] (s after T0), reading on the job's rhythm."""
    first = -(-(start - 1.0) // STEP)  # the first step whose read starts after the process did
    dates = [1.0 + STEP * k - start for k in range(int(first), 10_000) if 1.5 + STEP * k <= start + runtime]
    reads = [(k * 8 * MIB, 8 * MIB, t, t + 0.5) for k, t in enumerate(dates)]
    records = {
        "DXT_POSIX": [dxt_record(101, 0, reads=reads)],
        "POSIX": [
            counter_record(
                "POSIX",
                101,
                0,
                {"POSIX_READS": len(reads), "POSIX_BYTES_READ": len(reads) * 8 * MIB},
                {"POSIX_F_READ_TIME": 0.5 * len(reads)},
            )
        ],
    }
    begin, end = T0 + start, T0 + start + runtime
    job = {
        "uid": uid,
        "jobid": jobid,
        "nprocs": 1,
        "start": (int(begin), round((begin % 1) * 1e9)),
        "end": (int(end), round((end % 1) * 1e9)),
    }
    exe = "/usr/bin/python3 /home/u/dlio_benchmark/main.py"
    write_log(path, job=job, exe=exe, mounts=[("/scratch", "lustre")], names={101: "/scratch/d.npz"}, records=records)
    return path


def _rows(folder):
    return analyze([folder], workers=1).jobs.sort("start").select("job_id", "step", "n_logs", "start", "runtime").rows()


def test_24_processes_started_19_s_apart_and_alive_together_are_one_job(tmp_path):
    for k in range(24):  # process k from 19 k s to 460 s: the last starts 437 s after the first
        _log(tmp_path / f"p{k:02d}.darshan", start=19.0 * k, runtime=460.0 - 19.0 * k)
    result = analyze([tmp_path], workers=1)
    assert result.jobs.select("job_id", "step", "n_logs", "nprocs").rows() == [("7", None, 24, 24)]
    row = result.jobs.row(0, named=True)
    assert row["start"] == T0 and row["runtime"] == pytest.approx(460.0)
    assert row["w_iter"] == pytest.approx(STEP, rel=1e-6)  # the job's rhythm, from its processes' union
    assert row["n_phases"] == 58  # reads at 1, 9, ..., 457 s
    assert row["explanation"].endswith("24 logs merged")


def test_two_disjoint_runs_of_one_job_id_are_steps_0_and_1(tmp_path):
    _log(tmp_path / "a.darshan", start=0.0, runtime=100.0)
    _log(tmp_path / "b.darshan", start=40.0, runtime=60.0)
    _log(tmp_path / "c.darshan", start=100.0 + SAME_JOB_GAP + 5.0, runtime=50.0)
    assert _rows(tmp_path) == [
        ("7.0", "0", 2, T0, pytest.approx(100.0)),
        ("7.1", "1", 1, T0 + 106, pytest.approx(50.0)),
    ]


def test_a_chain_of_logs_each_overlapping_only_the_next_is_one_job(tmp_path):
    for k in range(4):  # [0, 100], [90, 190], [180, 280], [270, 370]: the first and the last are 170 s apart
        _log(tmp_path / f"p{k}.darshan", start=90.0 * k, runtime=100.0)
    assert _rows(tmp_path) == [("7", None, 4, T0, pytest.approx(370.0))]


@pytest.mark.parametrize(
    ("gap", "rows"),
    [
        (0.0, [("7", None, 2, T0, pytest.approx(150.0))]),
        (0.5 * SAME_JOB_GAP, [("7", None, 2, T0, pytest.approx(150.0 + 0.5 * SAME_JOB_GAP))]),
        (
            1.5 * SAME_JOB_GAP,
            [("7.0", "0", 1, T0, pytest.approx(100.0)), ("7.1", "1", 1, T0 + 101.5, pytest.approx(50.0))],
        ),
    ],
    ids=["touching", "half-a-gap-apart", "one-and-a-half-gaps-apart"],
)
def test_a_log_starting_within_the_gap_after_the_last_end_joins_the_job(tmp_path, gap, rows):
    _log(tmp_path / "a.darshan", start=0.0, runtime=100.0)
    _log(tmp_path / "b.darshan", start=100.0 + gap, runtime=50.0)
    assert _rows(tmp_path) == rows


def test_the_gap_is_counted_from_the_latest_end_not_the_last_log(tmp_path):
    _log(tmp_path / "long.darshan", start=0.0, runtime=300.0)
    _log(tmp_path / "short.darshan", start=10.0, runtime=20.0)  # ends at 30 s, inside the long one
    _log(tmp_path / "late.darshan", start=200.0, runtime=150.0)  # 170 s after the short one's end
    assert _rows(tmp_path) == [("7", None, 3, T0, pytest.approx(350.0))]


def test_copies_of_a_log_still_count_once(tmp_path):
    _log(tmp_path / "a.darshan", start=0.0, runtime=100.0)
    shutil.copy(tmp_path / "a.darshan", tmp_path / "a-copy.darshan")
    _log(tmp_path / "b.darshan", start=50.0, runtime=100.0)
    result = analyze([tmp_path], workers=1)
    row = result.jobs.row(0, named=True)
    assert (result.jobs.height, row["job_id"], row["n_logs"], row["nprocs"]) == (1, "7", 2, 2)
    assert row["explanation"].endswith("2 logs merged; 1 copy of a log ignored")


def test_other_users_and_job_ids_never_merge(tmp_path):
    _log(tmp_path / "a.darshan", start=0.0, runtime=100.0)
    _log(tmp_path / "b.darshan", start=10.0, runtime=100.0, uid=1)
    _log(tmp_path / "c.darshan", start=20.0, runtime=100.0, jobid=8)
    jobs = analyze([tmp_path], workers=1).jobs.sort("start")
    assert jobs.select("job_id", "user", "n_logs").rows() == [("7.0", "4242", 1), ("7.1", "1", 1), ("8", "4242", 1)]


# ----------------------------------------------------------------------------- real runs (darshan-runtime 3.5.0)

STEPS = Path(__file__).parents[1] / "data" / "darshan-runtime" / "steps"


@pytest.mark.skipif(not STEPS.is_dir(), reason="tests/data/darshan-runtime/steps comes with the fixtures of issue 22")
def test_real_processes_of_one_job_id_are_one_row_per_overlapping_set():
    """steps_a: 6 processes started 3 s apart; steps_b: one program run twice, 4 s apart; steps_c: 4 processes
    started 12 s apart, all alive together from 36 to 39 s (the 30 s rule made two rows of them)."""
    truth = json.loads((STEPS / "ground_truth.json").read_text())["jobs"]
    result = analyze([STEPS], workers=1)
    got = result.jobs.sort("start").select("job_id", "n_logs", "nprocs").rows()
    assert got == [("2240", 6, 6), ("2241.0", 1, 1), ("2241.1", 1, 1), ("2242", 4, 4)]
    logs: dict[str, set[str]] = {}
    for job_id, path in result.modules.select("job_id", "path").rows():
        logs.setdefault(job_id, set()).add(Path(path).name)
    assert logs == {
        job_id: set(job["log"]) for job_id, job in zip(["2240", "2241.0", "2241.1", "2242"], truth, strict=True)
    }
