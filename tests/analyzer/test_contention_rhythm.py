"""A job's rhythm under contention (issue 22, point 2): regular compute gaps keep a period while I/O durations vary.

The requests tables are built here phase by phase: phase k's I/O (320 MiB in 16 back-to-back requests of one
rank) lasts ``durations[k]``, then the job computes for ``gaps[k]`` before phase k + 1 starts. The truth is
the mean spacing of the phase starts, computed from the phases themselves.
"""

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from iosets.analyzer import analyze_log, periodicity
from iosets.analyzer._periodicity import _regularity

N_PHASES = 15
PHASE_BYTES = 320 << 20
REQUESTS_PER_PHASE = 16
COMPUTE = 0.6  # s, the program
LIGHT = Path(__file__).parents[1] / "data" / "darshan-runtime" / "contention-light"


def compute_loop(gaps: np.ndarray, durations: np.ndarray) -> tuple[pl.DataFrame, np.ndarray]:
    """The requests table of phases lasting ``durations`` separated by compute ``gaps``, and the phases' starts."""
    assert len(gaps) == len(durations) - 1 and durations.min() > 0 and gaps.min() > 0
    starts = np.r_[0.0, np.cumsum(durations[:-1] + gaps)]
    cuts = np.linspace(0.0, 1.0, REQUESTS_PER_PHASE + 1)
    begin = starts[:, None] + cuts[None, :-1] * durations[:, None]
    end = starts[:, None] + cuts[None, 1:] * durations[:, None]
    size = PHASE_BYTES // REQUESTS_PER_PHASE
    return pl.DataFrame({"rank": 0, "size": size, "start": begin.ravel(), "end": end.ravel()}), starts


def cv(values: np.ndarray) -> float:
    return float(np.std(values) / np.mean(values))


def spread(mean: float, target: float, seed: int) -> np.ndarray:
    """``N_PHASES - 1`` values of this mean and coefficient of variation ``target``: evenly spread values in a
    seeded order, so that their extremes are known (+-1.61 standard deviations)."""
    z = np.random.default_rng(seed).permutation(np.linspace(-1.0, 1.0, N_PHASES - 1))
    return mean * (1.0 + target * z / z.std())


def durations_for_spacing_cv(target: float, mean_io: float, seed: int) -> np.ndarray:
    """I/O durations of mean ``mean_io`` after which a :data:`COMPUTE` spaces the phases with CV ``target``."""
    return np.r_[spread(mean_io + COMPUTE, target, seed) - COMPUTE, mean_io]  # the last phase's length spaces nothing


def test_regularity_is_the_better_of_a_clock_and_a_compute_loop():
    """Hand-computed: each reading is exp(-(cv / 0.4)^2); the compute loop's loses up to 1/4 to the spacing."""
    e = math.exp(-1.0)  # a CV of 0.4
    assert _regularity(0.0, 0.0) == 1.0
    assert _regularity(0.0, 0.8) == 1.0  # a clock: the gaps absorb the I/O's variation
    assert _regularity(0.4, 0.0) == pytest.approx(1.0 - 0.25 * (1.0 - e))  # 0.842: the job at CV 0.4
    assert _regularity(0.4, 0.8) == pytest.approx(e)  # irregular gaps: the spacing's reading, as before
    assert _regularity(math.inf, 0.0) == pytest.approx(0.75)  # regular gaps keep three quarters whatever the spread
    assert _regularity(0.9, 0.9) == pytest.approx(math.exp(-((0.9 / 0.4) ** 2)))  # exponential gaps: 0.006


@pytest.mark.parametrize("seed", range(10))
def test_fixed_compute_with_contended_io_is_periodic(seed):
    """The issue's program: 0.6 s of compute, phases of 320 MiB that last 0.07-0.99 s."""
    durations = np.random.default_rng(seed).uniform(0.07, 0.99, N_PHASES)
    ops, starts = compute_loop(np.full(N_PHASES - 1, COMPUTE), durations)
    found = periodicity(ops)
    assert found.periodic and found.reason is None
    assert found.n_phases == N_PHASES
    assert found.w_iter == pytest.approx(np.diff(starts).mean(), rel=0.05)


@pytest.mark.parametrize("target", [0.25, 0.32, 0.35])
@pytest.mark.parametrize("seed", range(5))
def test_spacing_cv_up_to_0_35_is_periodic_when_the_compute_is_regular(target, seed):
    ops, starts = compute_loop(np.full(N_PHASES - 1, COMPUTE), durations_for_spacing_cv(target, 1.2, seed))
    assert cv(np.diff(starts)) == pytest.approx(target)
    found = periodicity(ops)
    assert found.periodic
    assert found.w_iter == pytest.approx(np.diff(starts).mean(), rel=0.05)


def test_the_confidence_reflects_the_spread():
    """Same compute, same shape of I/O variation, wider and wider: the confidence falls, and stays above 0.5."""
    gaps = np.full(N_PHASES - 1, COMPUTE)
    confidence = [
        periodicity(compute_loop(gaps, durations_for_spacing_cv(t, 1.2, 3))[0]).confidence for t in (0.0, 0.2, 0.35)
    ]
    assert confidence[0] == pytest.approx(1.0, abs=1e-6)
    assert confidence[0] > confidence[1] > confidence[2] >= 0.5


def test_exponential_gaps_are_not_periodic():
    """Compute gaps drawn from an exponential (CV ~0.9), short I/O: no period, over 20 seeds."""
    gap_cvs = []
    for seed in range(20):
        gaps = np.random.default_rng(seed).exponential(1.0, N_PHASES - 1)
        found = periodicity(compute_loop(gaps, np.full(N_PHASES, 0.1))[0])
        assert not found.periodic and found.w_iter is None, seed
        assert found.reason in ("irregular", "few_phases"), seed  # the shortest gaps may merge phases
        gap_cvs.append(cv(gaps))
    assert 0.75 < np.mean(gap_cvs) < 1.1  # the case is the one named


def test_exponential_gaps_with_contended_io_are_rarely_periodic():
    """The same gaps after I/O of 0.07-0.99 s: the spacing is less spread than the gaps (CV ~0.6), and once in
    a hundred runs (seed 19: 13 phases once the shortest gaps merge, spacing CV 0.30) the spacing alone looks
    like a jittered clock, as it did before the gaps were read; the gaps never make it periodic."""
    periodic = 0
    for seed in range(100):
        rng = np.random.default_rng(seed)
        gaps = rng.exponential(1.0, N_PHASES - 1)
        found = periodicity(compute_loop(gaps, rng.uniform(0.07, 0.99, N_PHASES))[0])
        periodic += found.periodic
    assert periodic <= 2


def test_one_huge_phase_among_regular_gaps_is_periodic_with_less_confidence():
    """A checkpoint ten times the others in mid-run: spacing CV ~0.8, the compute still regular."""
    durations = np.random.default_rng(4).uniform(0.4, 0.6, N_PHASES)
    durations[7] = 5.0
    ops, starts = compute_loop(np.full(N_PHASES - 1, COMPUTE), durations)
    assert cv(np.diff(starts)) > 0.75
    found = periodicity(ops)
    assert found.periodic
    assert found.w_iter == pytest.approx(np.diff(starts).mean(), rel=0.05)
    # the spread takes nearly its whole quarter: 1 - 0.25 * (1 - exp(-(0.75 / 0.4)^2)) = 0.757 at most
    assert 0.5 <= found.confidence <= 0.76


def test_a_clock_with_contended_io_keeps_full_confidence():
    """Phases every 1.2 s whatever their I/O lasts: the gaps vary, the spacing does not."""
    durations = np.random.default_rng(5).uniform(0.07, 0.99, N_PHASES)
    ops, _ = compute_loop(1.2 - durations[:-1], durations)
    found = periodicity(ops)
    assert found.periodic
    assert found.w_iter == pytest.approx(1.2, rel=1e-9)
    assert found.confidence == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_slightly_noisy_compute_with_contended_io_is_periodic(seed):
    """Compute gaps of CV 0.05 (a timer's noise) under phases spaced with CV ~0.35."""
    gaps = spread(COMPUTE, 0.05, 100 + seed)
    ops, starts = compute_loop(gaps, durations_for_spacing_cv(0.35, 1.2, seed))
    assert 0.33 < cv(np.diff(starts)) < 0.37
    found = periodicity(ops)
    assert found.periodic
    assert found.w_iter == pytest.approx(np.diff(starts).mean(), rel=0.05)


@pytest.mark.parametrize("seed", range(5))
def test_irregular_gaps_under_spread_spacing_are_not_periodic(seed):
    """Neither rhythm holds: spacing of CV 0.4 (exp(-1) = 0.37), compute gaps of CV 0.5 (0.21 at most)."""
    spacing, gaps = spread(3.4, 0.4, seed), spread(COMPUTE, 0.5, 100 + seed)
    ops, starts = compute_loop(gaps, np.r_[spacing - gaps, 1.0])
    assert cv(np.diff(starts)) == pytest.approx(0.4)
    found = periodicity(ops)
    assert (found.periodic, found.reason) == (False, "irregular")


def _light_runs():
    truth = json.loads((LIGHT / "contention_truth.json").read_text())
    return [
        (run["job"], run["rep"], part, run[part]["phases"]) for run in truth["runs"] for part in ("alone", "together")
    ]


@pytest.mark.parametrize(
    ("job", "rep", "part", "phases"), _light_runs(), ids=lambda v: str(v) if not isinstance(v, list) else ""
)
def test_real_contended_runs_keep_their_period(job, rep, part, phases):
    """The contention-light logs (README there): every run, alone or together, has its programs' w_iter within 1 %.

    together/cj1.r0 (phases of 0.14-1.31 s after 1 s of compute, spacing CV 0.29) was ``irregular`` at 0.47."""
    row = analyze_log(LIGHT / part / f"{job}.r{rep}.darshan")
    starts = [start for start, _ in phases]
    truth = (starts[-1] - starts[0]) / (len(starts) - 1)
    assert row["not_periodic"] is None
    assert row["n_phases"] == len(phases)
    assert row["w_iter"] == pytest.approx(truth, rel=0.01)
