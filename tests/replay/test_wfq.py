"""WFQ as in AGIOS (the AGIOS WFQ report) and IO-SETS at request level."""

import numpy as np
import polars as pl
import pytest

from iosets.datasets import make_backlogged_requests, make_iosets_workload, make_phase_requests
from iosets.replay import Device, backlogged_shares, replay_phases, replay_requests
from iosets.replay._request_metrics import interval_bytes

PLAIN = Device(overhead=0.0, seek=0.0)


@pytest.mark.parametrize(
    "weights, expected",
    [
        ([500, 1000, 1500, 2000], [0.10, 0.20, 0.30, 0.40]),
        ([1024, 2048, 4096, 8192], [1 / 15, 2 / 15, 4 / 15, 8 / 15]),  # the report's 7/13/27/53 %
    ],
)
def test_four_backlogged_sets_share_by_weight(weights, expected):
    ops = make_backlogged_requests(10_000, 4, random_state=0)
    result = replay_requests(
        ops, "wfq", weights=dict(zip(["c0", "c1", "c2", "c3"], weights, strict=True)), device=PLAIN
    )
    np.testing.assert_allclose(backlogged_shares(result), expected, atol=0.005)


def test_one_percent_against_ninety_nine():
    ops = make_backlogged_requests(10_000, 2, random_state=1)
    result = replay_requests(ops, "wfq", weights={"c0": 100, "c1": 9900}, device=PLAIN)
    np.testing.assert_allclose(backlogged_shares(result), [0.01, 0.99], atol=0.002)


def test_a_set_alone_gets_all_the_bandwidth():
    ops = make_backlogged_requests(2000, 1, size_range=(1000, 1000), random_state=2)
    result = replay_requests(ops, "wfq", weights={"c0": 1}, device=PLAIN)
    assert result.metrics.aggregate_throughput == pytest.approx(1e9)


def test_shares_re_split_when_a_set_finishes():
    ops = make_backlogged_requests(20_000, 4, random_state=3)
    result = replay_requests(ops, "wfq", weights={"c0": 500, "c1": 1000, "c2": 1500, "c3": 2000}, device=PLAIN)
    ends = sorted(result.complete[result.trace.cls == c].max() for c in range(4))
    # the heaviest set ends first; between then and the next end, 1 : 2 : 3 among the others
    done = interval_bytes(result.trace, result.complete, np.nextafter(ends[0], np.inf), ends[1])
    np.testing.assert_allclose(done[:3] / done[:3].sum(), [1 / 6, 2 / 6, 3 / 6], atol=0.01)
    assert done[3] == 0


def test_credit_lets_a_request_larger_than_the_quantum_through():
    # quantum 100 B each; c0's requests are 250 B: it waits three rounds for each, keeping the rest as credit
    ops = pl.DataFrame(
        {
            "job_id": ["c0"] * 40 + ["c1"] * 200,
            "rank": 0,
            "op": "write",
            "offset": np.concatenate((np.arange(40) * 250, np.arange(200) * 50)),
            "size": [250] * 40 + [50] * 200,
            "start": 0.0,
        }
    )
    result = replay_requests(ops, "wfq", weights={"c0": 100, "c1": 100}, device=PLAIN)
    np.testing.assert_allclose(backlogged_shares(result), [0.5, 0.5], atol=0.02)
    order = result.trace.cls[np.argsort(result.dispatch, kind="stable")]
    # first rounds: c0 has 100 then 200 bytes (too few), c1 sends two 50 B requests per round
    assert order[:5].tolist() == [1, 1, 1, 1, 0]


def test_iosets_wfq_matches_the_phase_engine():
    """Seed 004 at request level: per-phase I/O times within 5 % of the phase engine's."""
    wl = make_iosets_workload([(2, 10, 0.5), (2, 100, 5)], horizon=400, window=(50, 350), noise=0.0, random_state=5)
    sets = np.array([1, 1, 2, 2])
    priority = 10.0**-sets
    wl = wl.with_assignment(sets, priority)
    phase = replay_phases(wl, "explicit").timeline
    ops = make_phase_requests(wl, phase["cpu_end"].to_numpy(), request_size=1 << 20)
    weights = {1: 10 * (1 << 20), 2: 1 << 20}  # 10 : 1 like the priorities
    result = replay_requests(ops, "iosets-wfq", class_by="set", weights=weights, device=PLAIN)
    frame = result.requests().join(
        ops.with_row_index("row").select(pl.col("row").cast(pl.Int64), "job_id", "phase"), on="row"
    )
    ends = frame.group_by("job_id", "phase").agg(pl.col("complete").max()).sort("job_id", "phase")
    expected = phase.select("job_id", "phase", "cpu_end", "io_end").sort("job_id", "phase")
    requested = expected["cpu_end"].to_numpy()
    duration_requests = ends["complete"].to_numpy() - requested
    duration_phases = expected["io_end"].to_numpy() - requested
    np.testing.assert_allclose(duration_requests, duration_phases, rtol=0.05)
