"""Tests of the periodicity detector on synthetic traces with known period, I/O fraction and phases."""

import math

import numpy as np
import polars as pl
import pytest

from iosets.analyzer import Periodicity, bandwidth_signal, periodicity, periodicity_from_signal
from iosets.datasets import make_periodic_requests
from iosets.errors import InputError
from iosets.schemas import REQUESTS

DUTIES = (0.01, 0.02, 0.05, 0.10, 0.25, 0.50)
RANKS = (1, 4, 16, 128)


def _cases(n, seed):
    """Random (w_iter, duty, ranks, n_phases, seed) with w_iter log-uniform in 2..1000 s."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        w = float(np.exp(rng.uniform(math.log(2.0), math.log(1000.0))))
        out.append(
            (
                w,
                DUTIES[i % len(DUTIES)],
                int(rng.choice(RANKS)),
                int(rng.integers(8, 31)),
                seed * 1000 + i,
            )
        )
    return out


@pytest.fixture(scope="module")
def periodic_results():
    """Detection results on 90 jittered (+-30 % spacing and length) periodic traces, with the truth."""
    results = []
    for w, duty, ranks, n, seed in _cases(90, 7):
        ops, truth = make_periodic_requests(w, duty, ranks, n_phases=n, random_state=seed)
        results.append((duty, periodicity(ops), truth))
    return results


def test_periodic_detection_rate(periodic_results):
    detected = [p.periodic for _, p, _ in periodic_results]
    assert np.mean(detected) >= 0.95


@pytest.mark.parametrize("duty", DUTIES)
def test_periodic_detection_per_duty_cycle(periodic_results, duty):
    found = [p.periodic for d, p, _ in periodic_results if d == duty]
    assert len(found) == 15
    assert np.mean(found) >= 0.9


def test_w_iter_median_relative_error_below_one_percent(periodic_results):
    errors = [abs(p.w_iter - t["w_iter"]) / t["w_iter"] for _, p, t in periodic_results if p.periodic]
    assert np.median(errors) < 0.01
    assert np.percentile(errors, 90) < 0.05


def test_alpha_io_within_one_percent(periodic_results):
    errors = np.array([abs(p.alpha_io - t["alpha_io"]) for _, p, t in periodic_results])
    assert errors.max() <= 0.01


def test_n_phases_close_to_truth(periodic_results):
    diffs = np.array([abs(p.n_phases - t["n_phases"]) for _, p, t in periodic_results])
    assert np.mean(diffs == 0) >= 0.95
    assert diffs.max() <= 2


def test_confidence_in_unit_interval(periodic_results):
    for _, p, _ in periodic_results:
        assert 0.0 <= p.confidence <= 1.0
        assert p.periodic == (p.confidence >= 0.5)
        assert (p.w_iter is None) == (not p.periodic)


def test_poisson_bursts_are_not_periodic():
    flags = []
    for w, duty, ranks, n, seed in _cases(60, 11):
        duty = min(duty, 0.25)  # exponential spacing: long bursts would merge into one
        ops, _ = make_periodic_requests(w, duty, ranks, n_phases=n, poisson=True, random_state=seed)
        p = periodicity(ops)
        flags.append(p.periodic)
        assert 0.0 <= p.confidence <= 1.0
        if not p.periodic:
            assert p.w_iter is None
    assert np.mean(flags) <= 0.10


def test_exact_periodic_trace_closed_form():
    # 10 bursts of 2 s every 50 s, one request each, no jitter: w_iter 50, alpha 20 / 452
    starts = np.arange(10) * 50.0
    ops = pl.DataFrame(
        {
            "job_id": "j",
            "rank": 0,
            "op": "write",
            "offset": 0,
            "size": 10**6,
            "start": starts,
            "end": starts + 2.0,
        }
    )
    p = periodicity(ops)
    assert p.periodic
    assert p.w_iter == pytest.approx(50.0, rel=1e-9)
    assert p.n_phases == 10
    assert p.alpha_io == pytest.approx(20.0 / 452.0, rel=1e-9)
    assert p.confidence == pytest.approx(1.0, abs=1e-6)


def test_null_end_is_treated_as_start():
    # 12 bursts every 10 s, each 5 instantaneous requests 0.01 s apart (end missing)
    starts = (np.arange(12)[:, None] * 10.0 + np.arange(5)[None, :] * 0.01).ravel()
    ops = pl.DataFrame(
        {
            "job_id": "j",
            "rank": 0,
            "op": "read",
            "offset": 0,
            "size": 1 << 16,  # 3.75 MiB in all: above the byte floor
            "start": starts,
            "end": None,
        },
        schema_overrides={"end": pl.Float64},
    )
    p = periodicity(ops)
    assert p.periodic
    assert p.w_iter == pytest.approx(10.0, rel=1e-9)
    assert p.n_phases == 12
    assert p.alpha_io == pytest.approx(12 * 0.04 / 110.04, rel=1e-9)


def test_explicit_bin_width_gives_same_result():
    ops, truth = make_periodic_requests(20.0, 0.05, 4, n_phases=15, random_state=3)
    p = periodicity(ops, bin_width=0.05)
    assert p.periodic
    assert p.w_iter == pytest.approx(truth["w_iter"], rel=1e-9)


def test_signal_square_wave():
    # Darshan-heatmap-like bins: 1 s bins, period 40 bins, I/O during 4 of them (10 %), 25 periods
    n_periods, period, on = 25, 40, 4
    bw = np.tile(np.r_[np.full(on, 2e9), np.zeros(period - on)], n_periods)
    p = periodicity_from_signal(bw, 1.0)
    assert isinstance(p, Periodicity)
    assert p.periodic
    assert p.w_iter == pytest.approx(40.0, rel=1e-9)
    assert p.n_phases == 25
    assert p.alpha_io == pytest.approx(0.1, abs=1e-9)
    assert p.confidence > 0.9


def test_signal_square_wave_low_duty_cycle_subbin_period():
    # period 100.5 bins of 0.1 s (not a whole number of bins), 1-bin bursts (1 % duty cycle)
    n = 30
    bw = np.zeros(int(n * 100.5) + 1)
    bw[np.floor(np.arange(n) * 100.5).astype(int)] = 1e8
    p = periodicity_from_signal(bw, 0.1)
    assert p.periodic
    assert p.w_iter == pytest.approx(10.05, rel=0.01)
    assert p.n_phases == n


def test_signal_flat_and_zero_are_not_periodic():
    assert not periodicity_from_signal(np.zeros(1000), 1.0).periodic
    flat = periodicity_from_signal(np.full(1000, 5e8), 1.0)
    assert not flat.periodic
    assert flat.w_iter is None
    assert flat.alpha_io == pytest.approx(1.0)


def test_signal_noise_is_not_periodic():
    rng = np.random.default_rng(5)
    flags = [periodicity_from_signal(rng.exponential(1e8, 4096), 1.0).periodic for _ in range(20)]
    assert np.mean(flags) <= 0.1


def test_empty_ops_raises():
    ops, _ = make_periodic_requests(10.0, 0.1, 1, n_phases=5, random_state=0)
    with pytest.raises(InputError, match="empty"):
        periodicity(ops.head(0))


def test_negative_size_raises():
    ops, _ = make_periodic_requests(10.0, 0.1, 1, n_phases=5, random_state=0)
    ops = ops.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(-5).otherwise(pl.col("size")).alias("size"))
    with pytest.raises(InputError, match=r"^ops row 3: size: expected bytes >= 0, got -5$"):
        periodicity(ops)


def test_end_before_start_raises():
    ops, _ = make_periodic_requests(10.0, 0.1, 1, n_phases=5, random_state=0)
    ops = ops.with_columns(pl.when(pl.int_range(pl.len()) == 2).then(-1.0).otherwise(pl.col("end")).alias("end"))
    with pytest.raises(InputError, match=r"^ops row 2: end: expected a date >= start, got -1.0$"):
        periodicity(ops)


def _set(ops: pl.DataFrame, column: str, row: int, value) -> pl.DataFrame:
    at_row = pl.int_range(pl.len()) == row
    return ops.with_columns(pl.when(at_row).then(pl.lit(value, ops.schema[column])).otherwise(column).alias(column))


@pytest.mark.parametrize(
    "edits",
    [
        [("size", 4, -1)],
        [("start", 1, -0.5)],
        [("start", 2, float("inf"))],
        [("start", 3, None)],
        [("end", 6, float("nan"))],
        [("end", 5, 0.0)],
        [("end", 7, 0.0), ("size", 7, -3)],  # same row: the schema's column order decides
        [("end", 2, 0.0), ("size", 9, -3)],  # the earliest row wins
    ],
)
def test_value_errors_are_the_schemas(edits):
    """periodicity's quick checks apply the ops schema's rules and word them as REQUESTS.validate does."""
    ops, _ = make_periodic_requests(10.0, 0.1, 1, n_phases=5, random_state=0)
    for column, row, value in edits:
        ops = _set(ops, column, row, value)
    with pytest.raises(InputError) as expected:
        REQUESTS.validate(ops)
    with pytest.raises(InputError) as found:
        periodicity(ops)
    assert str(found.value) == str(expected.value)
    assert str(found.value).startswith(f"ops row {min(r for _, r, _ in edits)}: ")


def test_zero_byte_requests_are_valid():
    ops, truth = make_periodic_requests(20.0, 0.05, 2, n_phases=10, random_state=6)
    flushes = ops.head(3).with_columns(pl.lit(0, pl.Int64).alias("size"), pl.col("start").alias("end"))
    p = periodicity(pl.concat([ops, flushes]))
    assert p.periodic and p.w_iter == pytest.approx(truth["w_iter"], rel=0.01)


def test_missing_column_raises():
    ops, _ = make_periodic_requests(10.0, 0.1, 1, n_phases=5, random_state=0)
    with pytest.raises(InputError, match=r"ops: missing column\(s\) size; expected size and start"):
        periodicity(ops.drop("size"))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bin_width": 0.0}, "bin_width must be a finite number > 0"),
        ({"bin_width": -1.0}, "bin_width must be a finite number > 0"),
        ({"min_confidence": 1.5}, r"min_confidence must be in \[0, 1\]"),
        ({"min_confidence": -0.1}, "min_confidence must be a finite number >= 0"),
    ],
)
def test_bad_parameters_raise(kwargs, message):
    ops, _ = make_periodic_requests(10.0, 0.1, 1, n_phases=5, random_state=0)
    with pytest.raises(InputError, match=message):
        periodicity(ops, **kwargs)


@pytest.mark.parametrize(
    ("signal", "bin_width", "message"),
    [
        (np.array([]), 1.0, "non-empty 1-D"),
        (np.ones((3, 3)), 1.0, "non-empty 1-D"),
        (np.array([1.0, -2.0, 3.0]), 1.0, "bin 1: expected a finite value >= 0"),
        (np.array([1.0, np.nan]), 1.0, "bin 1: expected a finite value >= 0"),
        (np.ones(10), 0.0, "bin_width must be a finite number > 0"),
    ],
)
def test_bad_signal_raises(signal, bin_width, message):
    with pytest.raises(InputError, match=message):
        periodicity_from_signal(signal, bin_width)


def test_strict_period_with_background_requests_found_by_dft():
    # small requests at random times during compute phases break the idle gaps; the harmonic comb still holds
    rng = np.random.default_rng(3)
    found, errors = [], []
    for i in range(20):
        w = float(np.exp(rng.uniform(math.log(2.0), math.log(1000.0))))
        ops, truth = make_periodic_requests(
            w, DUTIES[i % 5], 4, n_phases=int(rng.integers(8, 31)), jitter=0.0, random_state=i
        )
        st = rng.uniform(0.0, ops["end"].max(), 3 * truth["n_phases"])
        noise = pl.DataFrame(
            {
                "job_id": "job0",
                "rank": 0,
                "op": "read",
                "offset": 0,
                "size": 4096,
                "start": st,
                "end": st + 1e-4 * w,
            }
        )
        p = periodicity(pl.concat([ops, noise.cast(ops.schema)]))
        assert 0.0 <= p.confidence <= 1.0
        found.append(p.periodic)
        if p.periodic:
            errors.append(abs(p.w_iter - truth["w_iter"]) / truth["w_iter"])
    assert np.mean(found) >= 0.8
    assert np.median(errors) < 0.01


def test_several_jobs_raise():
    ops, _ = make_periodic_requests(10.0, 0.1, 1, n_phases=5, random_state=0)
    other = ops.with_columns(pl.lit("job1").alias("job_id"))
    with pytest.raises(InputError, match="2 jobs .*expected the requests of one job"):
        periodicity(pl.concat([ops, other]))


def test_bytes_are_spread_over_the_bins_a_request_covers():
    # 10 bytes over [0.5, 2.5] s, 3 bytes at 3.2 s (no duration), 4 bytes over [3.25, 3.75] s; 1 s bins;
    # a zero-byte request at 0 s puts bin 0 at 0 s
    ops = pl.DataFrame({"size": [0, 10, 3, 4], "start": [0.0, 0.5, 3.2, 3.25], "end": [0.0, 2.5, 3.2, 3.75]})
    bw, width = bandwidth_signal(ops, bin_width=1.0)
    assert width == 1.0
    assert bw == pytest.approx([2.5, 5.0, 2.5, 7.0, 0.0])
    bw, width = bandwidth_signal(ops, bin_width=0.5)
    assert bw.sum() * 0.5 == pytest.approx(17.0)
    assert bw == pytest.approx([0, 5, 5, 5, 5, 0, 10, 4, 0])


def test_signal_starts_at_the_first_request_and_matches_periodicity():
    ops, truth = make_periodic_requests(30.0, 0.05, 4, n_phases=12, random_state=4)
    bw, width = bandwidth_signal(ops)
    assert bw.sum() * width == pytest.approx(ops["size"].sum(), rel=1e-9)
    assert bw[0] > 0 and 2**12 <= len(bw) <= 2**20
    span = ops["end"].max() - ops["start"].min()
    assert len(bw) * width == pytest.approx(span, rel=1e-9)
    same = periodicity_from_signal(bw, width)
    assert same.periodic and same.w_iter == pytest.approx(truth["w_iter"], rel=0.01)


def test_signal_of_an_instant_raises():
    ops = pl.DataFrame({"size": [5, 5], "start": [1.0, 1.0], "end": [1.0, 1.0]})
    with pytest.raises(InputError, match="one date; there is no signal to bin"):
        bandwidth_signal(ops)


def test_row_order_and_column_types_do_not_matter():
    ops, truth = make_periodic_requests(30.0, 0.05, 4, n_phases=12, random_state=4)
    p = periodicity(ops)
    shuffled = ops.sample(fraction=1.0, shuffle=True, seed=1)
    assert periodicity(shuffled) == p
    # integer times (ms), no end column: instantaneous requests at the burst starts
    ms = ops.select(pl.col("size"), (pl.col("start") * 1000).round().cast(pl.Int64).alias("start"))
    q = periodicity(ms)
    assert q.periodic
    assert q.n_phases == truth["n_phases"]
    assert q.w_iter / 1000 == pytest.approx(truth["w_iter"], rel=0.01)


def test_refine_stage_loop_and_vector_agree():
    from iosets.analyzer._periodicity import _stage_scalar, _stage_vector

    # 20 periods of 400 bins, 12 bins on, plus noise: harmonics of 20 bins
    rng = np.random.default_rng(2)
    bw = np.tile(np.r_[np.full(12, 1e9), np.zeros(388)], 20) + rng.exponential(1e6, 8000)
    power = np.abs(np.fft.rfft(bw - bw.mean())) ** 2
    power[0] = 0.0
    thr, tiny = 10.0 * float(np.median(power[1:])), float(power.max()) * 1e-30
    for hs, w in ((range(2, 5), 1), (range(5, 17), 2), (range(17, 65), 4)):
        loop, vector = _stage_scalar(power, 20.03, hs, w, thr, tiny), _stage_vector(power, 20.03, hs, w, thr, tiny)
        assert loop[2] == vector[2] > 0
        assert loop[:2] == pytest.approx(vector[:2], rel=1e-12)
