"""The paper's metrics from hand-made timestamp files equal hand-computed values (one definition with the engine's)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iosets.errors import InputError
from iosets.validate import measured_metrics, read_timestamps, workload_times
from iosets.workload import Workload

GB = 1e9
ORIGIN = 1_700_000_000_000_000_000
HEADER = "job_id,phase,cpu_start,cpu_end,io_start,io_end,bytes\n"


def write_csv(path, job_id, rows):
    """A program's CSV from rows of (cpu_start, cpu_end, io_start, io_end) in seconds since ORIGIN."""
    lines = [
        f"{job_id},{k},{','.join(str(ORIGIN + round(t * 1e9)) for t in dates)},{GB:.0f}\n"
        for k, dates in enumerate(rows)
    ]
    path.write_text(HEADER + "".join(lines))
    return path


@pytest.fixture
def two_jobs(tmp_path):
    """Job A: compute 0-1, I/O 1-3 (1 GB, slowed), compute 3-4, I/O 4-5. Job B: compute 0-2, waits, I/O 3-5
    (2 GB); its second phase never ran. B = 1 GB/s."""
    workload = Workload.from_arrays(
        ["a", "b"], [0.0, 0.0], [0, 0, 1, 1], [1.0, 1.0, 2.0, 5.0], [GB, GB, 2 * GB, GB], bandwidth=GB, horizon=10.0
    )
    paths = [
        write_csv(tmp_path / "a.csv", "a", [(0, 1, 1, 3), (3, 4, 4, 5)]),
        write_csv(tmp_path / "b.csv", "b", [(0, 2, 3, 5)]),
    ]
    return workload, workload_times(workload, paths, ORIGIN)


def with_window(workload, window):
    return Workload.from_arrays(
        workload.ids,
        workload.release,
        workload.phase_job,
        workload.t_cpu,
        workload.io_bytes,
        bandwidth=workload.bandwidth,
        horizon=workload.horizon,
        window=window,
    )


def test_metrics_over_a_window_that_cuts_no_phase(two_jobs):
    workload, times = two_jobs
    assert np.isinf(times[:, 3]).all()  # b's second phase did not run
    m = measured_metrics(with_window(workload, (1.0, 9.0)), times)
    # A: e_cpu 1 (3-4), e_io 2 s, 2 I/O phases end inside, T_io 1 s; B: e_cpu 1 (1-2), e_io 2 s, 1 phase, T_io 1.5 s
    assert m.utilization == pytest.approx((1 + 1) / (2 * 8))
    assert m.io_slowdown == pytest.approx(math.sqrt((8 - 1) / (1 * 2) * (8 - 1) / (1.5 * 1)))
    assert m.max_stretch == pytest.approx(8 / 3)


def test_a_phase_cut_by_the_window_counts_the_bytes_moved_at_a_constant_rate(two_jobs):
    workload, times = two_jobs
    m = measured_metrics(with_window(workload, (2.0, 9.0)), times)
    # at 2 s, A's first I/O (1 GB over 1-3 s) has moved half its bytes: A's e_io = (2 - 0.5) GB / B
    assert m.utilization == pytest.approx((1 + 0) / (2 * 7))
    assert m.io_slowdown == pytest.approx(math.sqrt((7 - 1) / (1 * 2) * (7 - 0) / (1.5 * 1)))
    assert m.max_stretch == pytest.approx(max(7 / (1 + 1.5), 7 / 2))


def test_the_timestamps_file_is_read_back_in_ns(tmp_path):
    path = write_csv(tmp_path / "a.csv", "a", [(0, 1, 1.5, 3), (3, 4, 4, 5)])
    job_id, dates, sizes = read_timestamps(path)
    assert job_id == "a"
    assert dates.dtype == np.int64 and dates.shape == (4, 2)
    assert (dates[:, 0] - ORIGIN).tolist() == [0, 1_000_000_000, 1_500_000_000, 3_000_000_000]
    assert sizes.tolist() == [GB, GB]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("job,phase\n", "expected the header job_id,phase,cpu_start,cpu_end,io_start,io_end,bytes"),
        (HEADER + "a,1,0,1,2,3,4\n", "line 2: expected phase 0 and 4 dates, got"),
        (HEADER + "a,0,0,1,x,3,4\n", "line 2: expected integers after the job id"),
        (HEADER + "a,0,5,1,2,3,4\n", "line 2: dates out of order (cpu_start <= cpu_end <= io_start <= io_end)"),
        (HEADER + "a,0,0,1,2,3,4\nb,1,3,4,5,6,7\n", "rows of several jobs: ['a', 'b']"),
    ],
)
def test_a_bad_timestamps_file_is_refused_with_its_line(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=f"^{path}.*{_escaped(message)}"):
        read_timestamps(path)


def test_more_phases_than_the_workload_has_is_an_error(two_jobs, tmp_path):
    workload, _ = two_jobs
    paths = [write_csv(tmp_path / "a.csv", "a", [(0, 1, 1, 2)] * 3), write_csv(tmp_path / "b.csv", "b", [])]
    with pytest.raises(InputError, match="3 phases, but job 'a' has 2"):
        workload_times(workload, paths, ORIGIN)


def _escaped(text: str) -> str:
    import re

    return re.escape(text)
