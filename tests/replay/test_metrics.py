"""The window metrics of the IO-SETS paper on hand-computed cases."""

import math

import numpy as np
import pytest

from iosets.replay import replay_phases
from iosets.replay._phase_metrics import workload_metrics

GB = 1e9


def metrics(workload):
    return replay_phases(workload, "explicit").metrics


def test_single_job_inside_window(workload_of):
    # cpu 0-3, io 3-4, cpu 4-7, io 7-8, cpu 8-11, io 11-12; window [0, 10]
    wl = workload_of([(0, 0, 1, [[3, GB]] * 3)], window=(0, 10))
    m = metrics(wl)
    assert m.utilization == pytest.approx(8 / 10)  # e_cpu = 3 + 3 + 2
    assert m.io_slowdown == pytest.approx((10 - 8) / (1 * 2))  # two I/O phases end inside
    assert m.max_stretch == pytest.approx(10 / (8 + 2))


def test_window_cutting_an_io_phase_counts_its_share_of_bytes(workload_of):
    wl = workload_of([(0, 0, 1, [[3, GB]] * 3)], window=(3.5, 10))
    m = metrics(wl)
    assert m.utilization == pytest.approx(5 / 6.5)  # e_cpu = 3 (4-7) + 2 (8-10)
    assert m.io_slowdown == pytest.approx((6.5 - 5) / (1 * 2))
    assert m.max_stretch == pytest.approx(6.5 / (5 + 0.5 + 1))


def test_shared_io_phase_cut_by_window_uses_bytes_not_time(workload_of):
    # two sets share equally: both move 1 GB over [0, 2]; at 0.5 each moved 0.25 GB
    wl = workload_of([(0, 0, 1, [[0, GB]]), (0, 1, 1, [[0, GB]])], window=(0.5, 10))
    m = metrics(wl)
    assert m.utilization == 0
    assert m.io_slowdown == pytest.approx(9.5 / 1.0)
    assert m.max_stretch == pytest.approx(9.5 / 0.75)


def test_priority_shares_seen_through_the_window(workload_of):
    # priorities 1 and 0.1: at 0.55 s job 1 moved 0.05 GB, job 0 0.5 GB
    wl = workload_of([(0, 0, 1.0, [[0, GB]]), (0, 1, 0.1, [[0, GB]])], window=(0.55, 20))
    m = metrics(wl)
    width = 20 - 0.55
    assert m.max_stretch == pytest.approx(width / 0.5)  # job 0 moved its last 0.5 GB inside
    assert m.io_slowdown == pytest.approx(width)  # both: (width - 0) / (1 s * 1 phase)


def test_io_slowdown_is_a_geometric_mean(workload_of):
    # job 0: T_io 1 s, 2 phases end inside; job 1: T_io 2 s, 1 phase
    wl = workload_of([(0, 0, 1, [[1, GB], [1, GB]]), (50, 1, 1, [[1, 2 * GB]])], window=(0, 60))
    m = metrics(wl)
    ratio0 = (60 - 2) / (1 * 2)
    ratio1 = (60 - 1) / (2 * 1)
    assert m.io_slowdown == pytest.approx(math.sqrt(ratio0 * ratio1))
    assert m.utilization == pytest.approx(3 / (2 * 60))


def numpy_metrics(workload, cpu_start, cpu_end, io_start, io_end, remaining):
    """The window metrics as numpy formulas (what iosets computed in Python before the C engine did)."""
    job, n_jobs, io_bytes, bandwidth = workload.phase_job, workload.n_jobs, workload.io_bytes, workload.bandwidth
    tb, te = workload.window
    width = te - tb

    def moved_before(date, left):
        performing = (io_start < date) & (io_end > date)
        return np.where(performing, io_bytes - np.nan_to_num(left), np.where(io_end <= date, io_bytes, 0.0))

    e_cpu = np.bincount(
        job, weights=np.clip(np.minimum(cpu_end, te) - np.maximum(cpu_start, tb), 0, None), minlength=n_jobs
    )
    moved = moved_before(te, remaining[1]) - moved_before(tb, remaining[0])
    e_io = np.bincount(job, weights=moved / bandwidth, minlength=n_jobs)
    e_iter = np.bincount(job, weights=(io_end >= tb) & (io_end <= te), minlength=n_jobs)
    t_io = np.bincount(job, weights=io_bytes, minlength=n_jobs) / np.maximum(np.bincount(job, minlength=n_jobs), 1)
    t_io = t_io / bandwidth
    counted = (e_iter > 0) & (t_io > 0)
    with np.errstate(divide="ignore"):
        logs = np.log((width - e_cpu[counted]) / (t_io[counted] * e_iter[counted]))
    work = e_cpu + e_io
    return (
        float(e_cpu.sum() / (n_jobs * width)) if (work > 0).any() else math.nan,  # no work inside: nothing measured
        float(np.exp(np.mean(logs))) if counted.any() else math.nan,
        float(np.max(width / work[work > 0])) if (work > 0).any() else math.nan,
    )


def random_timeline(seed, workload_of):
    """A workload and an arbitrary timeline of it: phases in order per job, some cut by the window."""
    rng = np.random.default_rng(seed)
    n_jobs = int(rng.integers(1, 6))
    jobs = [
        (0, 0, 1, [[0, float(rng.uniform(0, 2)) * GB] for _ in range(int(rng.integers(1, 5)))]) for _ in range(n_jobs)
    ]
    wl = workload_of(jobs, window=(float(rng.uniform(0, 5)), float(rng.uniform(6, 15))))
    durations = rng.uniform(0, 2, (4, wl.n_phases))
    ends = np.cumsum(durations.T.ravel()).reshape(-1, 4).T  # cpu_start < cpu_end <= io_start < io_end
    remaining = [np.where(rng.random(wl.n_phases) < 0.2, np.nan, rng.uniform(0, 1, wl.n_phases) * wl.io_bytes)] * 2
    return wl, (*ends, tuple(remaining))


@pytest.mark.parametrize("seed", range(40))
def test_c_metrics_match_the_numpy_formulas(seed, workload_of):
    wl, timeline = random_timeline(seed, workload_of)
    got = workload_metrics(wl, *timeline)
    expected = numpy_metrics(wl, *timeline)
    for name, e in zip(("utilization", "io_slowdown", "max_stretch"), expected, strict=True):
        g = getattr(got, name)
        assert (math.isnan(e) and g is None and name in got.notes) or g == pytest.approx(e, rel=1e-12, abs=1e-300), name


def test_metrics_without_a_counted_job_are_none_with_a_note(workload_of):
    # the only I/O phase ends after the window: no e_iter, no IO-slowdown; the window holds compute only
    m = metrics(workload_of([(0, 0, 1, [[5, GB]])], window=(1, 3)))
    assert m.io_slowdown is None
    assert m.utilization == pytest.approx(1.0)
    assert m.max_stretch == pytest.approx(1.0)
    note = "no job completed an I/O phase inside the window [1, 3]"
    assert m.notes == {"io_slowdown": note}
    assert m.to_dict() == {
        "utilization": m.utilization,
        "io_slowdown": None,
        "max_stretch": m.max_stretch,
        "notes": {"io_slowdown": note},
    }


def test_a_job_computing_through_the_window_makes_io_slowdown_zero(workload_of):
    # job 1 ends an I/O phase inside, then computes to the end of the window: (width - e_cpu) = 0
    m = metrics(workload_of([(0, 0, 1, [[1, GB], [20, GB]]), (0, 1, 1, [[3, GB]])], window=(2, 10)))
    assert m.io_slowdown == 0.0
