"""Statistics of the paper's workload generator over many seeds."""

import math

import numpy as np
import polars as pl
import pytest

from iosets.datasets import FIGURES, figure_seed, make_figure_workload, make_iosets_workload
from iosets.errors import InputError


def per_job(workload, values):
    return np.bincount(workload.phases["job"].to_numpy(), weights=values, minlength=workload.n_jobs)


def test_alpha_io_sums_to_omega_and_phases_follow_the_model():
    wl = make_iosets_workload([(30, 100, 10)], omega=0.8, noise=0.0, random_state=1)
    t_io = wl.phases["io_bytes"].to_numpy() / wl.bandwidth
    t_cpu = wl.phases["t_cpu"].to_numpy()
    counts = np.bincount(wl.phases["job"].to_numpy())
    alpha = per_job(wl, t_io) / per_job(wl, t_io + t_cpu)
    assert alpha.sum() == pytest.approx(0.8, rel=1e-12)  # without noise alpha is exact
    w_iter = wl.jobs["w_iter"].to_numpy()
    np.testing.assert_allclose(per_job(wl, t_io + t_cpu) / counts, w_iter, rtol=1e-12)
    np.testing.assert_array_equal(counts, np.floor(20000 / w_iter))


def test_omega_holds_on_average_with_noise():
    sums = []
    for seed in range(50):
        wl = make_iosets_workload([(20, 10, 1), (20, 100, 10)], omega=0.2, noise=0.3, random_state=seed)
        t_io = wl.phases["io_bytes"].to_numpy() / wl.bandwidth
        total = per_job(wl, t_io + wl.phases["t_cpu"].to_numpy())
        sums.append((per_job(wl, t_io) / total).sum())
    assert np.mean(sums) == pytest.approx(0.2, abs=0.005)


def test_w_iter_moments_over_many_seeds():
    draws = np.concatenate(
        [make_iosets_workload([(50, 100, 10)], random_state=s).jobs["w_iter"].to_numpy() for s in range(200)]
    )
    assert draws.mean() == pytest.approx(100, abs=0.5)  # 5 standard errors of the mean
    assert draws.std() == pytest.approx(10, rel=0.05)


def test_w_iter_is_a_normal_truncated_to_positive_values():
    draws = np.concatenate(
        [make_iosets_workload([(100, 10, 10)], random_state=s).jobs["w_iter"].to_numpy() for s in range(100)]
    )
    assert draws.min() > 0
    # mean of N(10, 10) truncated at 0: mu + sigma phi(-1) / (1 - Phi(-1))
    phi = math.exp(-0.5) / math.sqrt(2 * math.pi)
    Phi = 0.5 * (1 + math.erf(-1 / math.sqrt(2)))
    assert draws.mean() == pytest.approx(10 + 10 * phi / (1 - Phi), rel=0.02)


def test_release_is_uniform_in_zero_w_iter():
    fractions = np.concatenate(
        [
            (lambda wl: wl.jobs["release"].to_numpy() / wl.jobs["w_iter"].to_numpy())(
                make_iosets_workload([(60, 1000, 100)], random_state=s)
            )
            for s in range(100)
        ]
    )
    assert fractions.min() >= 0 and fractions.max() <= 1
    assert fractions.mean() == pytest.approx(0.5, abs=0.02)
    assert fractions.var() == pytest.approx(1 / 12, abs=0.005)


def test_phase_noise_spans_the_bound():
    # t_cpu_i = t_cpu (1 + g_i), g_i ~ U[-b, b]: per job max/min <= (1 + b) / (1 - b), nearly reached
    wl = make_iosets_workload([(10, 10, 1)], noise=0.1, random_state=3)
    for column in ("t_cpu", "io_bytes"):
        spread = wl.phases.group_by("job").agg((pl.col(column).max() / pl.col(column).min()).alias("r"))
        assert spread["r"].max() <= 1.1 / 0.9 + 1e-12
        assert spread["r"].min() > 1.2  # ~2000 draws per job fill the range


def test_same_seed_same_workload_and_other_seed_differs():
    a = make_figure_workload("fig6", 5, random_state=figure_seed("fig6", 5, 0))
    b = make_figure_workload("fig6", 5, random_state=figure_seed("fig6", 5, 0))
    c = make_figure_workload("fig6", 5, random_state=figure_seed("fig6", 5, 1))
    assert a.jobs.equals(b.jobs) and a.phases.equals(b.phases)
    assert not a.jobs.equals(c.jobs)


def test_fig7_replays_fig6_workloads():
    assert figure_seed("fig7", 12, 2).entropy == figure_seed("fig6", 12, 2).entropy


@pytest.mark.parametrize(
    "figure, point, counts",
    [("fig6", 5, [5, 20, 35]), ("fig6", 40, [40, 20, 0]), ("fig9", 0.5, [20, 20, 20]), ("fig10", 50, [15] * 4)],
)
def test_figure_presets_have_the_papers_profiles(figure, point, counts):
    wl = make_figure_workload(figure, point, random_state=0)
    assert wl.n_jobs == 60
    assert np.bincount(wl.jobs["profile"].to_numpy(), minlength=len(counts)).tolist() == counts
    assert wl.window == (6000.0, 14000.0) and wl.horizon == 20000.0


def test_figure_points_match_the_paper():
    assert FIGURES["fig6"].points == tuple(float(n) for n in range(41))
    assert min(FIGURES["fig10"].points) == 5 and max(FIGURES["fig10"].points) == 5000


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"profiles": [(10, -1, 1)]}, "profiles\\[0\\] mu must be a finite number > 0, got -1"),
        ({"profiles": [(1.5, 10, 1)]}, "profiles\\[0\\] count must be an integer >= 0, got 1.5"),
        ({"profiles": [(10, 10)]}, "profiles\\[0\\]: expected \\(count, mu, sigma\\)"),
        ({"profiles": [(0, 10, 1)]}, "expected at least one job"),
        ({"profiles": [(1, 10, 1)], "noise": 2.0}, "noise must be in \\[0, 1\\], got 2.0"),
        ({"profiles": [(1, 10, 1)], "omega": 0}, "omega must be a finite number > 0, got 0"),
    ],
)
def test_generator_rejects_bad_parameters(kwargs, message):
    with pytest.raises(InputError, match=message):
        make_iosets_workload(**kwargs)
