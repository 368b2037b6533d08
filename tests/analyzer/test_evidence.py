"""The evidence gates: a period only when the rhythm is evidence enough, otherwise the reason (hand-built traces)."""

import numpy as np
import polars as pl
import pytest

from iosets.analyzer import NOT_PERIODIC, periodicity
from iosets.analyzer._evidence import BYTE_FLOOR, size_text
from iosets.analyzer._periodicity import BACK_TO_BACK, activity_runs
from iosets.schemas import JOBS, NOT_PERIODIC_CODES

MIB = 1 << 20


def _bursts(starts, length=1.0, size=8 * MIB, rank=0) -> pl.DataFrame:
    starts = np.asarray(starts, dtype=np.float64)
    return pl.DataFrame({"rank": rank, "size": size, "start": starts, "end": starts + length})


def test_codes_are_the_schemas():
    assert NOT_PERIODIC == NOT_PERIODIC_CODES
    assert set(NOT_PERIODIC) == set(NOT_PERIODIC_CODES)
    assert "not_periodic" in JOBS.names


def test_regular_phases_are_periodic():
    p = periodicity(_bursts(np.arange(10) * 10.0))
    assert p.periodic and p.reason is None and p.w_iter == pytest.approx(10.0)
    assert p.explanation == "periodic: 10 I/O phases every 10 s (confidence 1.00)"


def test_no_bytes_is_no_io():
    p = periodicity(_bursts(np.arange(10) * 10.0, size=0))
    assert (p.periodic, p.reason, p.explanation) == (False, "no_io", "no I/O recorded")


def test_under_the_byte_floor():
    p = periodicity(_bursts(np.arange(10) * 10.0, size=1000))
    assert p.reason == "few_bytes" and p.w_iter is None
    assert p.explanation == f"only 9.766 KiB of I/O, under the {size_text(BYTE_FLOOR)} floor"


def test_io_nearly_all_the_time_is_io_bound():
    """Bursts of 9.5 s every 10 s: alpha 0.95."""
    p = periodicity(_bursts(np.arange(10) * 10.0, length=9.5))
    assert p.reason == "io_bound" and p.alpha_io == pytest.approx(95.0 / 99.5)


def test_two_phases_are_too_few():
    p = periodicity(_bursts([0.0, 10.0]))
    assert (p.reason, p.n_phases) == ("few_phases", 2)
    assert p.explanation == "2 I/O phases; a period needs 3"


@pytest.mark.parametrize(("runtime", "reason"), [(None, "short_run"), (25.0, "short_run"), (40.0, None)])
def test_a_run_of_fewer_than_three_periods_is_short(runtime, reason):
    """Three phases 10 s apart: 21 s of requests, 2.1 periods; a 40 s run is 4 periods."""
    p = periodicity(_bursts([0.0, 10.0, 20.0]), runtime=runtime)
    assert p.reason == reason
    if reason:
        assert p.explanation.startswith(f"the run lasts {max(runtime or 21.0, 21.0) / 10:.1f} periods of 10 s")


def test_irregular_phases():
    rng = np.random.default_rng(3)
    p = periodicity(_bursts(np.cumsum(rng.exponential(20.0, 30)), length=0.5))
    assert p.reason == "irregular" and p.w_iter is None


def test_min_confidence_one_refuses_what_zero_accepts():
    rng = np.random.default_rng(5)
    starts = np.arange(20) * 10.0 + rng.uniform(-2.0, 2.0, 20)
    loose, strict = periodicity(_bursts(starts), min_confidence=0.0), periodicity(_bursts(starts), min_confidence=1.0)
    assert loose.periodic and strict.reason == "irregular" and loose.confidence == strict.confidence


def test_back_to_back_requests_of_a_rank_are_one_operation():
    """Rank 0: three sub-requests 0.5 ms apart (one call); rank 1 overlaps its end; a request later stands apart."""
    gap = BACK_TO_BACK / 2
    ops = pl.DataFrame(
        {
            "rank": [0, 0, 0, 1, 0],
            "size": [10, 20, 30, 40, 50],
            "start": [0.0, 0.1 + gap, 0.2 + 2 * gap, 0.25, 0.4],
            "end": [0.1, 0.2 + gap, 0.3 + 2 * gap, 0.35, 0.5],
        }
    )
    t0, run_s, run_e, size = activity_runs(ops)
    assert t0 == 0.0
    np.testing.assert_allclose(run_s, [0.0, 0.4])
    np.testing.assert_allclose(run_e, [0.35, 0.5])
    assert size.tolist() == [100.0, 50.0]


def test_a_gap_at_the_resolution_never_splits_a_phase():
    """Phases of 3 s every 8 s, one of them with a 0.5 s hole, at a resolution of 0.5 s: still 25 phases."""
    starts = np.arange(25) * 8.0
    ops = _bursts(starts, length=3.0)
    holed = pl.concat([ops.slice(0, 4), _bursts([32.0, 33.5], length=1.0), ops.slice(5)])  # [32, 33] and [33.5, 34.5]
    assert periodicity(holed, resolution=0.5).n_phases == 25
    assert periodicity(holed, resolution=0.5).w_iter == pytest.approx(8.0, rel=1e-9)
