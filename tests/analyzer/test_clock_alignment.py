"""A job's processes (logs) on one clock: Darshan's late stamps do not widen the union; an MPI log's ranks stay.

Hand-made cases put a known lateness on a clock and check the shift, alpha_io and the site trace's
dates against values worked out here; the real logs check the phase starts against their programs' truth.
"""

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

pytest.importorskip("darshan")

from darshan_writer import counter_record, dxt_record, write_log  # noqa: E402

from iosets.analyzer import _clocks as clocks  # noqa: E402
from iosets.analyzer import analyze, analyze_log, site_trace  # noqa: E402
from iosets.analyzer._clocks import (  # noqa: E402
    MAX_CLOCK_OFFSET,
    MIN_CLOCK_SHIFT,
    MIN_MATCHED_STARTS,
    clock_shifts,
    log_shifts,
)
from iosets.analyzer._ingest import read_darshan  # noqa: E402
from iosets.analyzer._worker import PART, log_row  # noqa: E402
from iosets.validate._timestamps import read_timestamps  # noqa: E402

MIB = 1 << 20
T0 = 1_700_000_000
DATA = Path(__file__).parents[1] / "data" / "darshan-runtime"


def _phases(n, late=0.0, *, period=10.0, length=1.0):
    """Start and end arrays of ``n`` phases released every ``period`` s, seen ``late`` s late."""
    start = 1.0 + period * np.arange(n) + late
    return start, start + length


def _shifts(*clocks):
    """clock_shifts of clocks given as (start, end) pairs."""
    clock = np.concatenate([np.full(len(s), k) for k, (s, _) in enumerate(clocks)])
    start = np.concatenate([s for s, _ in clocks])
    end = np.concatenate([e for _, e in clocks])
    return clock_shifts(clock, start, end, resolution=1e-6)


# ----------------------------------------------------------------------------- the estimate and its bounds


def test_every_clock_moves_onto_the_earliest():
    shifts = _shifts(_phases(6, 0.004), _phases(6, 0.001), _phases(6, 0.017))
    assert shifts == pytest.approx([-0.003, 0.0, -0.016], abs=1e-12)


def test_the_offset_is_the_median_over_the_phases_so_one_late_start_does_not_move_it():
    late = np.array([0.010, 0.010, 0.060, 0.010, 0.011, 0.009])  # phase 2 of clock 1 really started 50 ms later
    start, end = _phases(6)
    assert _shifts((start, end), (start + late, end + late)) == pytest.approx([0.0, -0.010], abs=1e-12)


def test_clocks_further_apart_than_the_bound_are_the_jobs_own_behaviour():
    apart = 1.5 * MAX_CLOCK_OFFSET  # a rank that always writes later than the others: not a clock
    assert _shifts(_phases(6), _phases(6, apart)).tolist() == [0.0, 0.0]
    assert _shifts(_phases(6), _phases(6, 0.5 * MAX_CLOCK_OFFSET)) == pytest.approx([0.0, -0.5 * MAX_CLOCK_OFFSET])


def test_too_few_matched_phases_move_nothing():
    few = MIN_MATCHED_STARTS - 1
    assert _shifts(_phases(few), _phases(few, 0.005)).tolist() == [0.0, 0.0]
    assert _shifts(_phases(MIN_MATCHED_STARTS), _phases(MIN_MATCHED_STARTS, 0.005)) == pytest.approx([0.0, -0.005])


def test_clocks_closer_than_a_ms_stay_where_they_are():
    near = 0.5 * MIN_CLOCK_SHIFT  # as near as one collective call's ranks
    assert _shifts(_phases(6), _phases(6, near), _phases(6, 0.004)) == pytest.approx([0.0, 0.0, -0.004], abs=1e-12)


def test_a_clock_in_other_phases_than_the_reference_stays_where_it_is():
    start, end = _phases(8)
    odd = (start[1::2] + 0.005, end[1::2] + 0.005)  # clock 2: every other phase only, 5 ms late
    even = (start[::2] + 0.3, end[::2] + 0.3)  # clock 1: phases of its own, 0.3 s after clock 0's
    assert _shifts((start, end), even, odd) == pytest.approx([0.0, 0.0, -0.005])


# ----------------------------------------------------------------------------- merged logs, MPI ranks, site trace

PHASES, PERIOD, LENGTH = 8, 2.0, 0.25  # a phase of 4 x 1 MiB writes every 2 s, 0.25 s long


def _writes(late: float, since: float) -> list:
    """Every phase's writes on a clock whose zero is ``since`` s after T0, stamped ``late`` s late."""
    return [
        (j * MIB, MIB, t + late - since + LENGTH / 4 * j, t + late - since + LENGTH / 4 * (j + 1))
        for t in 0.5 + PERIOD * np.arange(PHASES)
        for j in range(4)
    ]


def _log(path, *, since: float, ranks: dict[int, float], runtime=PHASES * PERIOD):
    """A log whose header says it started ``since`` s after T0; rank r's DXT clock is ``ranks[r]`` s late."""
    n = len(ranks)
    records = {
        "DXT_POSIX": [dxt_record(101, r, writes=_writes(late, since)) for r, late in ranks.items()],
        "POSIX": [
            counter_record("POSIX", 101, r, {"POSIX_WRITES": 4 * PHASES, "POSIX_BYTES_WRITTEN": 4 * PHASES * MIB}, {})
            for r in ranks
        ],
    }
    begin, end = T0 + since, T0 + runtime
    job = {
        "uid": 4242,
        "jobid": 31,
        "nprocs": n,
        "start": (int(begin), round((begin % 1) * 1e9)),
        "end": (int(end), round((end % 1) * 1e9)),
    }
    write_log(path, job=job, exe="/opt/app/ckpt", mounts=[("/scratch", "lustre")], names={101: "/s/f"}, records=records)
    return path


UNION = PHASES * LENGTH


def test_merged_processes_stamped_late_do_not_widen_the_union(tmp_path):
    """A launcher and 3 forked writers: their headers are stamped 2, 9, 17 and 30 ms after their DXT zeros."""
    for k, late in enumerate((0.002, 0.009, 0.017, 0.030)):
        _log(tmp_path / f"p{k}.darshan", since=0.01 * k, ranks={0: late})
    row = analyze([tmp_path], workers=1).jobs.row(0, named=True)
    assert row["n_logs"] == 4 and row["n_phases"] == PHASES
    assert row["alpha_io"] == pytest.approx(UNION / (PHASES * PERIOD), abs=1e-9)  # not (0.25 + 0.028) per phase
    assert row["w_iter"] == pytest.approx(PERIOD, rel=1e-9)


def test_the_ranks_of_one_mpi_log_keep_their_clocks(tmp_path):
    """Their first starts differ for real as much as their clocks do (see the module doc): nothing tells them apart."""
    row = analyze_log(_log(tmp_path / "mpi.darshan", since=0.0, ranks={0: 0.005, 1: 0.040, 2: 0.021, 3: 0.076}))
    assert row["alpha_io"] == pytest.approx(PHASES * (LENGTH + 0.071) / (PHASES * PERIOD), abs=1e-9)


def test_the_site_trace_dates_the_requests_on_the_clock_the_phases_have(tmp_path):
    _log(tmp_path / "a.darshan", since=0.0, ranks={0: 0.003})
    _log(tmp_path / "b.darshan", since=0.02, ranks={0: 0.025})
    _log(tmp_path / "c.darshan", since=0.03, ranks={0: 0.011})
    site = site_trace([tmp_path], workers=1)
    requests = site.requests.with_columns((pl.col("start") - T0).alias("at"))
    assert requests["phase"].null_count() == 0
    firsts = requests.filter(pl.col("offset") == 0).group_by("phase").agg(pl.col("at").min())
    assert firsts.sort("phase")["at"].to_list() == pytest.approx(
        [0.5 + 0.003 + PERIOD * k for k in range(PHASES)], abs=1e-6
    )  # every clock on the earliest (3 ms late: what no log records); epoch dates hold microseconds
    spread = requests.filter(pl.col("offset") == 0).group_by("phase").agg(pl.col("at").max() - pl.col("at").min())
    assert spread["at"].max() == pytest.approx(0.0, abs=1e-6)


# ----------------------------------------------------------------------------- real logs, against their programs' truth

PROCESSES2 = DATA / "validate" / "processes2" / "system-1"
STEPS, FORKED = DATA / "steps", DATA / "forked"


def _lateness(log: Path, truth_starts: np.ndarray) -> float:
    """How late the log's DXT requests, placed at header start + offset, start after the truth's phase starts (s)."""
    job = read_darshan(log)
    starts = np.sort(job.requests["start"].to_numpy()) + job.meta["start"]
    firsts = starts[np.searchsorted(starts, truth_starts - 0.05)]  # each phase's first request (no phase 50 ms early)
    return float(np.median(firsts - truth_starts))


def _shifts_of(logs: list[Path]) -> list[float]:
    """How far :func:`log_shifts` moves each log's clock (s)."""
    rows = [log_row(read_darshan(path), str(path), 0.5) for path in logs]
    start = min(row["start"] for row in rows)
    timelines = [(row["start"] - start, row[PART].timeline) for row in rows]
    return [new - old for new, (old, _) in zip(log_shifts(timelines), timelines, strict=True)]


def test_a_forked_workers_offset_is_what_the_programs_truth_says_and_under_a_ms_it_stays(monkeypatch):
    """Job l0 of processes2: parent and forked worker write each phase; their stamps differ by 0.6 ms."""
    logs = sorted(PROCESSES2.glob("*_id2-*.darshan"))
    _, dates, _ = read_timestamps(PROCESSES2 / "j1.csv")
    late = [_lateness(log, dates[2] / 1e9) for log in logs]
    assert 0.0005 < abs(late[0] - late[1]) < MIN_CLOCK_SHIFT
    assert _shifts_of(logs) == [0.0, 0.0]
    monkeypatch.setattr(clocks, "MIN_CLOCK_SHIFT", 0.0)
    assert _shifts_of(logs) == pytest.approx([min(late) - x for x in late], abs=1e-4)


def _truth(folder: Path, name: str) -> dict:
    return next(job for job in json.loads((folder / "ground_truth.json").read_text())["jobs"] if job["name"] == name)


@pytest.mark.skipif(not STEPS.is_dir(), reason="tests/data/darshan-runtime/steps comes with the fixtures of issue 22")
def test_six_processes_on_one_grid_get_the_truths_alpha_once_their_clocks_are_one():
    """steps_a: each process's stamps are 1.6 to 22 ms late; merged as placed, alpha_io was 0.0732 against 0.0659."""
    truth = _truth(STEPS, "steps_a")
    logs = [STEPS / name for name in truth["log"]]
    late = [
        _lateness(log, np.array([s for s, _ in phases]) + truth["t_start"])
        for log, phases in zip(logs, truth["process_phases"], strict=True)
    ]
    assert max(late) - min(late) > 0.015
    assert _shifts_of(logs) == pytest.approx([min(late) - x for x in late], abs=5e-4)
    row = analyze(logs, workers=1).jobs.row(0, named=True)
    assert row["n_phases"] == truth["n_phases"]
    assert row["alpha_io"] == pytest.approx(truth["alpha_true"], abs=0.001)
    assert row["w_iter"] == pytest.approx(truth["w_iter_true"], rel=0.001)


@pytest.mark.skipif(not FORKED.is_dir(), reason="tests/data/darshan-runtime/forked comes with the fixtures of issue 22")
def test_a_launcher_and_three_forked_workers_get_the_truths_alpha():
    truth = _truth(FORKED, "forked")
    row = analyze([FORKED / name for name in truth["log"]], workers=1).jobs.row(0, named=True)
    assert row["n_logs"] == 4 and row["n_phases"] == truth["n_phases"]
    assert row["alpha_io"] == pytest.approx(truth["alpha_true"], abs=0.003)
    assert row["w_iter"] == pytest.approx(truth["w_iter_true"], rel=0.01)
