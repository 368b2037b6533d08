"""The benchmark program: its own timestamps and files match its parameters."""

from __future__ import annotations

import math
import subprocess
import time

import numpy as np
import pytest

from iosets.validate import read_timestamps

from .conftest import BOUND

pytestmark = pytest.mark.timing
PHASES = "# t_cpu bytes\n0.05 1000000\n\n0.1 3000000\n0.02 0\n"
SHARES = [123 * 4096, 367 * 4096, 0]
"""Each of 2 processes' share of the phases above: ceil(bytes / 2) rounded up to 4 KiB."""


def run(periodic, *arguments, check=True):
    done = subprocess.run([str(periodic), *arguments], capture_output=True, text=True, timeout=BOUND)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("mode", [[], ["--buffered"]], ids=["direct", "buffered"])
def test_timestamps_follow_the_phase_list_and_the_files_hold_one_phase(periodic, tmp_path, mode):
    (tmp_path / "phases.txt").write_text(PHASES)
    csv = tmp_path / "job.csv"
    arguments = [
        "--job-id",
        "job",
        "--dir",
        str(tmp_path),
        "--output",
        str(csv),
        "--phases",
        str(tmp_path / "phases.txt"),
    ]
    done = run(periodic, *arguments, "--processes", "2", "--request-size", "65536", "--keep-files", *mode)
    assert done.stderr == ""
    job_id, (cpu_start, cpu_end, io_start, io_end), sizes = read_timestamps(csv)  # phases 0, 1, 2 in order
    assert job_id == "job"
    assert sizes.tolist() == [2 * share for share in SHARES]
    assert (cpu_end - cpu_start >= np.array([0.05, 0.1, 0.02]) * 1e9).all()  # compute is a sleep of t_cpu at least
    assert (io_start == cpu_end).all()  # without an arbiter the I/O starts when it is asked for
    assert (io_end >= io_start).all()
    assert (cpu_start[1:] == io_end[:-1]).all()  # the next compute starts when the I/O ends
    for rank in (0, 1):  # each process rewrote its file: the largest phase's share is on disk
        assert (tmp_path / f"job.{rank}.dat").stat().st_size == max(SHARES)


def test_no_phase_starts_after_the_stop_date_and_the_files_are_removed(periodic, tmp_path):
    csv = tmp_path / "job.csv"
    start = time.time_ns() + 200_000_000
    stop = start + 1_000_000_000  # 50 phases of 0.05 s compute take 2.5 s at least: the stop date ends the job
    arguments = ["--job-id", "job", "--dir", str(tmp_path), "--output", str(csv), "--count", "50"]
    run(periodic, *arguments, "--t-cpu", "0.05", "--bytes", "4096", "--start-at", str(start), "--stop-at", str(stop))
    _, (cpu_start, _, _, io_end), _ = read_timestamps(csv)
    # released on the date given (or at once, if a loaded machine launched it after that date): never before
    assert cpu_start[0] >= start
    assert 1 <= cpu_start.size < 50
    assert (cpu_start < stop).all() and io_end[-1] >= stop  # the next phase would have started after the stop
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.csv"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--job-id", "a/b"], "--job-id: expected 1 to 64 characters among A-Z a-z 0-9 _ . -, got 'a/b'"),
        (["--job-id", "j", "--count", "1"], "--count needs --t-cpu and --bytes"),
        (["--job-id", "j", "--phases", "BAD"], "--phases: BAD line 2: expected T_CPU BYTES, two finite numbers >= 0"),
        (
            ["--job-id", "j", "--phases", "BAD", "--count", "1"],
            "give either --phases FILE or --count N --t-cpu S --bytes B",
        ),
        (
            ["--job-id", "j", "--count", "1", "--t-cpu", "0", "--bytes", "-1"],
            "--bytes: expected a finite number >= 0, got '-1'",
        ),
        (
            ["--job-id", "j", "--count", "1", "--t-cpu", "0", "--bytes", "0", "--request-size", "5000"],
            "--request-size: expected a multiple of 4096, got 5000",
        ),
        (
            ["--job-id", "j", "--count", "1", "--t-cpu", "0", "--bytes", "0", "--arbiter", "unix:/x"],
            "--arbiter needs --set S (>= 0) and --priority P (> 0)",
        ),
    ],
)
def test_bad_arguments_are_refused_with_the_reason(periodic, tmp_path, arguments, message):
    bad = tmp_path / "bad.txt"
    bad.write_text("0.1 100\n0.1 -5\n")
    arguments = [str(bad) if a == "BAD" else a for a in arguments]
    done = run(periodic, "--dir", str(tmp_path), "--output", str(tmp_path / "j.csv"), *arguments, check=False)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == f"periodic: {message.replace('BAD', str(bad))}"


def test_the_shares_match_what_validate_expects_on_disk():
    from iosets.validate._disk import process_share, run_bytes

    assert process_share(np.array([1e6, 3e6, 0.0]), 2).tolist() == SHARES
    assert run_bytes(np.array([1e6, 3e6, 5e6]), np.array([0, 0, 1]), 2, 2) == 2 * (367 + math.ceil(2.5e6 / 4096)) * 4096
