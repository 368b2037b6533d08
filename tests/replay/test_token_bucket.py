"""Rate-limited targets (issue #21): a token bucket per target, on hand-computed dates.

A target of ``rate`` > 0 holds a bucket of ``burst`` bytes, full at the start and refilled at
``rate`` bytes/s; a unit of b bytes given its slot at s starts at s if the bucket holds b
bytes, else once the missing ones have come in, and ends at max(start + cost, previous end +
transfer). Here 1 MB units on a 1 GB/s target take 1 ms; at 100 MB/s, 0.1 MB come in per ms.
"""

import json
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from site_rows import MB, dates, exactly, site, stream, three_jobs

from iosets.errors import InputError
from iosets.replay import SCHEDULERS, Device, _engine, replay_requests, replay_trace

FAST = dict(bandwidth=1e9, overhead=0.0, seek=0.0)  # 1 MB takes 1 ms on a target
THROTTLED = Device(**FAST, rate=100e6, burst=2 * MB)


def test_a_stream_goes_at_full_speed_for_its_burst_then_at_the_rate():
    # 1st: 2 MB in the bucket, starts at 0, 1 MB left; 2nd at 0.001: 1 + 0.1 MB, starts, 0.1 MB left;
    # 3rd at 0.002: 0.2 MB, waits 0.8 MB / 100 MB/s = 8 ms, starts at 0.010; 4th at 0.011: 0.1 MB, waits 9 ms
    result = replay_trace(site(stream("a", 4)), device=THROTTLED)
    assert dates(result, "release") == exactly([0.0, 0.001, 0.002, 0.011])
    assert dates(result, "served") == exactly([0.0, 0.001, 0.010, 0.020])
    assert dates(result, "complete") == exactly([0.001, 0.002, 0.011, 0.021])
    unlimited = replay_trace(site(stream("a", 4)), device=Device(**FAST))
    assert dates(unlimited, "complete") == exactly([0.001, 0.002, 0.003, 0.004])


def test_the_bucket_refills_during_a_compute_gap():
    # phase 0 as above ends at 0.011 with an empty bucket (refilled at 0.010); phase 1 was recorded
    # 0.05 s after phase 0's end, so it opens at 0.061: 51 ms of refill, capped at the 2 MB burst
    rows = stream("a", 3) + stream("a", 3, phase=1, at=0.053, first=3)
    result = replay_trace(site(rows), device=THROTTLED)
    assert result.phases["start"].to_list() == exactly([0.0, 0.061])
    assert dates(result, "served") == exactly([0.0, 0.001, 0.010, 0.061, 0.062, 0.071])
    assert dates(result, "complete") == exactly([0.001, 0.002, 0.011, 0.062, 0.063, 0.072])
    assert result.phases["end"].to_list() == exactly([0.011, 0.072])


def test_two_jobs_on_one_rate_limited_target_share_its_rate():
    # fcfs, one unit at a time: a1 at 0 (1 MB left), b1 at 0.001 (0.1 MB left), a2 at 0.002 waits
    # for 0.8 MB (starts at 0.010), b2 at 0.011 for 0.9 MB (starts at 0.020)
    rows = stream("a", 2) + stream("b", 2, file="g")
    shared = replay_trace(site(rows), device=THROTTLED)
    assert dates(shared, "served") == exactly([0.0, 0.010, 0.001, 0.020])  # rows a1, a2, b1, b2
    assert dates(shared, "complete") == exactly([0.001, 0.011, 0.002, 0.021])
    assert shared.jobs["alone_runtime"].to_list() == exactly([0.002, 0.002])  # each alone within its burst
    assert shared.jobs["runtime"].to_list() == exactly([0.011, 0.021])
    # on two targets (g starts on target 1) each job has its own bucket: neither waits
    apart = replay_trace(site(rows), device=Device(**FAST, rate=100e6, burst=2 * MB, targets=2))
    assert dates(apart, "complete") == exactly([0.001, 0.002, 0.001, 0.002])


def test_a_burst_of_zero_is_a_plain_rate_limit():
    # every MB waits for its 10 ms of tokens from its slot: starts at 0.010, then at 0.011 + 0.010
    # (an empty bucket holds nothing: the 0.1 MB that came in during the first transfer overflowed)
    result = replay_trace(site(stream("a", 2)), device=Device(**FAST, rate=100e6))
    assert dates(result, "served") == exactly([0.010, 0.021])
    assert dates(result, "complete") == exactly([0.011, 0.022])


def test_a_unit_larger_than_the_burst_waits_for_its_missing_tokens():
    # 3 MB with 2 MB in the bucket: 1 MB missing, 10 ms at 100 MB/s; then 3 ms of transfer
    result = replay_trace(site([("a", 0, 0, 0.003, 3 * MB, 0, 0, "f")]), device=THROTTLED)
    assert dates(result, "served") == exactly([0.010]) and dates(result, "complete") == exactly([0.013])


def test_units_given_slots_at_once_take_their_tokens_in_dispatch_order():
    # two slots, an empty bucket refilled at 1 MB/s: a starts at 1 s; b, given its slot at 0, finds the
    # bucket owing a's MB and starts 1 s after a; c gets a's slot at 1.001 and starts 1 s after b
    rows = [(job, 0, 0, 0.001, MB, 0, 0, job) for job in ("a", "b", "c")]
    device = Device(**FAST, concurrency=2, rate=1e6)
    result = replay_trace(site(rows), device=device)
    assert dates(result, "served") == exactly([1.0, 2.0, 3.0])
    assert dates(result, "complete") == exactly([1.001, 2.001, 3.001])


def test_the_bucket_counts_bytes_in_fixed_iops_mode():
    # 1000 IOPS: a unit takes 1 ms whatever its size, as the 1 GB/s target above
    result = replay_trace(site(stream("a", 4)), device=Device(iops=1000.0, rate=100e6, burst=2 * MB))
    assert dates(result, "complete") == exactly([0.001, 0.002, 0.011, 0.021])


def test_the_open_loop_has_the_same_buckets():
    # the four requests all arrive at 0, fcfs one at a time: the dates of the closed loop above
    ops = site(stream("a", 4)).with_columns(pl.lit(0.0).alias("start")).drop("phase", "synthetic")
    result = replay_requests(ops, "fcfs", device=THROTTLED)
    assert result.complete.tolist() == exactly([0.001, 0.002, 0.011, 0.021])


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_a_rate_of_zero_or_a_bucket_never_empty_gives_todays_dates(scheduler):
    ops, sets = three_jobs(), {"a": "x", "b": "x", "c": "y"}
    base = dict(queue_depth=2, bandwidth=1e6, concurrency=2)
    expected = replay_trace(ops, scheduler=scheduler, classes=sets, device=Device(**base))
    for device in (Device(**base, burst=5e5), Device(**base, rate=1.0, burst=1e12)):
        got = replay_trace(ops, scheduler=scheduler, classes=sets, device=device)
        assert got.requests.equals(expected.requests) and got.jobs.equals(expected.jobs)
    limited = replay_trace(ops, scheduler=scheduler, classes=sets, device=Device(**base, rate=2e5, burst=5e5))
    assert limited.jobs["runtime"].sum() > expected.jobs["runtime"].sum()


# ---------------------------------------------------------------- the device's fields


def test_rate_and_burst_round_trip_and_stay_out_of_a_default_device_file():
    device = Device(rate=200e6, burst=20e6)
    assert Device.from_dict(json.loads(json.dumps(device.to_dict()))) == device
    assert list(device.to_dict())[-2:] == ["rate", "burst"]
    assert "rate" not in Device().to_dict() and "burst" not in Device(rate=1e6).to_dict()
    assert Device.from_strings(["rate=200e6", "burst=20e6"]) == device
    with pytest.raises(InputError, match="^--device rate: expected a number, got 'fast'$"):
        Device.from_strings(["rate=fast"])


@pytest.mark.parametrize(
    ("field", "value"),
    [("rate", -1.0), ("rate", float("inf")), ("rate", float("nan")), ("burst", -1e6), ("burst", float("inf"))],
)
def test_bad_rates_and_bursts_are_named(field, value):
    message = f"device {field} must be a finite number >= 0, got {value!r}"
    with pytest.raises(InputError, match=f"^{message}$"):
        Device(**{field: value})
    with pytest.raises(InputError, match=f"^device: {message}$"):
        Device.from_dict({field: value})


def engine_arguments(device):
    one = np.zeros(1)
    return dict(
        scheduler="fcfs", arrival=one, size=np.full(1, 1e6), offset=np.zeros(1, np.int64),
        cls=np.zeros(1, np.int32), stream=np.zeros(1, np.int32), server=np.zeros(1, np.int32),
        phase=np.full(1, -1, np.int32), op=np.ones(1, np.int8), n_classes=1, n_streams=1, n_servers=1, n_phases=0,
        device=device, weight=np.ones(1), reservation=np.zeros(1), limit=np.zeros(1), params=np.zeros(0),
        dispatch=np.empty(1), complete=np.empty(1), unit=np.empty(1, np.int64),
    )  # fmt: skip


def test_the_engine_reads_the_bucket_by_name_and_names_a_bad_one():
    fields = dict(queue_depth=1, bandwidth=1e9, overhead=0.0, seek=0.0, iops=0.0)
    arguments = engine_arguments(SimpleNamespace(**fields, rate=1e8))  # no burst: 0, 1 MB waits 10 ms
    assert _engine.replay_requests(**arguments) == 1
    assert arguments["complete"].tolist() == exactly([0.011])
    for field, value in (("rate", -1.0), ("burst", float("nan"))):
        bad = SimpleNamespace(**fields, **{field: value})
        message = f"replay_requests: 'device.{field}' must be a finite float >= 0, got {value!r}"
        with pytest.raises(ValueError, match=f"^{message}$"):
            _engine.replay_requests(**engine_arguments(bad))
