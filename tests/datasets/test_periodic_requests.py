"""make_periodic_requests, the generator the periodicity tests and benchmark rely on: its requests and its truth."""

import numpy as np
import polars as pl
import pytest

from iosets.datasets import make_periodic_requests
from iosets.errors import InputError
from iosets.schemas import REQUESTS


def _union(intervals):
    """Merged intervals, by a plain loop (the reference for the generator's vectorised merge)."""
    merged = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def test_strict_period_closed_form():
    w, duty, n = 50.0, 0.1, 8
    ops, truth = make_periodic_requests(w, duty, 3, n_phases=n, jitter=0.0, requests_per_burst=5, random_state=2)
    assert ops.height == n * 3 * 5
    assert REQUESTS.validate(ops).select(ops.columns).equals(ops)
    assert ops["start"].is_sorted() and (ops["end"] > ops["start"]).all()
    assert truth["w_iter"] == pytest.approx(w, rel=1e-12)
    assert truth["n_phases"] == n
    assert truth["alpha_io"] == pytest.approx(n * duty * w / ((n - 1) * w + duty * w), rel=1e-12)
    starts = ops.group_by("rank").agg(pl.col("start").min()).sort("rank")["start"]
    assert starts.n_unique() == 1  # every rank starts the first burst at its start
    bursts = np.floor((ops["start"].to_numpy() - starts[0]) / w + 1e-9)
    assert np.bincount(bursts.astype(int)).tolist() == [15] * n


def test_overlapping_poisson_bursts_merge_in_the_truth():
    ops, truth = make_periodic_requests(5.0, 0.5, 2, n_phases=60, poisson=True, random_state=11)
    by_rank0 = ops.filter(pl.col("rank") == 0).sort("start")
    per_burst = by_rank0.with_columns((pl.int_range(pl.len()) // 4).alias("burst")).group_by("burst")
    bursts = per_burst.agg(pl.col("start").min(), pl.col("end").max()).sort("burst").select("start", "end").rows()
    merged = _union(bursts)
    assert 1 < truth["n_phases"] == len(merged) < 60
    covered = sum(e - s for s, e in merged)
    assert truth["alpha_io"] == pytest.approx(covered / (merged[-1][1] - merged[0][0]), rel=1e-12)


def test_same_seed_same_trace():
    a, ta = make_periodic_requests(30.0, 0.05, 4, random_state=7)
    b, tb = make_periodic_requests(30.0, 0.05, 4, random_state=np.random.default_rng(7))
    assert a.equals(b) and ta == tb


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0.0, 0.1), {}, "w_iter must be a finite number > 0, got 0.0"),
        ((10.0, 1.0), {}, r"duty must be in \(0, 1\), got 1.0"),
        ((10.0, 0.0), {}, "duty must be a finite number > 0, got 0.0"),
        ((10.0, 0.1, 0), {}, "n_ranks must be an integer >= 1, got 0"),
        ((10.0, 0.1), {"n_phases": 1}, "n_phases must be an integer >= 2, got 1"),
        ((10.0, 0.1), {"requests_per_burst": 0}, "requests_per_burst must be an integer >= 1, got 0"),
        ((10.0, 0.1), {"jitter": 1.0}, r"jitter must be in \[0, 1\), got 1.0"),
        ((10.0, 0.1), {"request_gap": -0.1}, "request_gap must be a finite number >= 0, got -0.1"),
    ],
)
def test_bad_parameters(args, kwargs, message):
    with pytest.raises(InputError, match=message):
        make_periodic_requests(*args, **kwargs)
