"""Rate limits granted per slice (issue #21): Linux blk-throttle's budget, on hand-computed dates; and what
calibration takes from a trace under a rate limit.

A target of ``rate`` > 0 and ``slice`` > 0 grants ``rate x slice`` bytes per slice: a unit that finds
the target idle (its slot more than a slice after the last unit's start) opens a slice; by the k-th
slice of it the target may have started k budgets; a unit beyond them by x bytes starts at the next
boundary plus x / rate. Here 1 MB units on a 1 GB/s target take 1 ms, and the budget is 2 MB per
20 ms slice (100 MB/s): a unit one MB over it starts 10 ms after the boundary.
"""

import json
import re
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from site_rows import MB, dates, exactly, site, stream, three_jobs

from iosets.errors import InputError
from iosets.replay import FIT_PARAMETERS, SCHEDULERS, Device, _engine, calibrate, replay_requests, replay_trace
from iosets.replay._evidence import Evidence, beaten_limit

FAST = dict(bandwidth=1e9, overhead=0.0, seek=0.0)  # 1 MB takes 1 ms on a target
SLICED = Device(**FAST, rate=100e6, slice=0.02)  # 2 MB per 20 ms


def test_a_stream_over_its_slices_budget_waits_for_the_boundary():
    # slice opened at 0 by the 1st MB; the 2nd fills the 2 MB budget; the 3rd is 1 MB over: boundary 0.02
    # + 1 MB / 100 MB/s = 0.030; the 4th (slot 0.031, 2nd slice: 4 MB allowed) goes at once; the 5th is
    # 1 MB over 4: 0.04 + 0.01 = 0.050, then slices 1 and 2 but one are trimmed (slice from 0.02, 3 MB
    # charged): the 6th at 0.051 fits in the 4 MB of two slices from 0.02
    result = replay_trace(site(stream("a", 6)), device=SLICED)
    assert dates(result, "served") == exactly([0.0, 0.001, 0.030, 0.031, 0.050, 0.051])
    assert dates(result, "complete") == exactly([0.001, 0.002, 0.031, 0.032, 0.051, 0.052])


def test_the_continuous_bucket_of_the_same_rate_lets_the_stream_through_sooner():
    # a 2 MB bucket at 100 MB/s: the 3rd MB waits for 0.8 MB (8 ms), not for the boundary
    bucket = replay_trace(site(stream("a", 3)), device=Device(**FAST, rate=100e6, burst=2 * MB))
    assert dates(bucket, "served") == exactly([0.0, 0.001, 0.010])


def test_a_unit_that_finds_the_target_idle_opens_a_new_slice():
    # phase 0 as above ends at 0.031 (its last unit started at 0.030); phase 1 recorded 0.05 s after it
    # opens at 0.081, more than a slice after 0.030: a new slice, 2 MB at once, the 3rd at 0.081 + 0.03
    rows = stream("a", 3) + stream("a", 3, phase=1, at=0.053, first=3)
    result = replay_trace(site(rows), device=SLICED)
    assert result.phases["start"].to_list() == exactly([0.0, 0.081])
    assert dates(result, "served") == exactly([0.0, 0.001, 0.030, 0.081, 0.082, 0.111])
    # 5 ms later instead (0.036, within a slice of 0.030): the slice goes on, 4 MB allowed by its 2nd slice
    # (3 charged): the 4th goes at once, the 5th is 1 MB over: 0.04 + 0.01
    rows = stream("a", 3) + stream("a", 3, phase=1, at=0.008, first=3)
    result = replay_trace(site(rows), device=SLICED)
    assert result.phases["start"].to_list() == exactly([0.0, 0.036])
    assert dates(result, "served")[3:5] == exactly([0.036, 0.050])


def test_two_jobs_on_one_throttled_target_share_its_slices():
    # fcfs, one unit at a time: a1 at 0 opens the slice, b1 at 0.001 fills it, a2 at 0.002 is 1 MB over
    # (starts at 0.030), b2 at 0.031 fits in the 2nd slice's 4 MB
    rows = stream("a", 2) + stream("b", 2, file="g")
    shared = replay_trace(site(rows), device=SLICED)
    assert dates(shared, "served") == exactly([0.0, 0.030, 0.001, 0.031])  # rows a1, a2, b1, b2
    assert shared.jobs["alone_runtime"].to_list() == exactly([0.002, 0.002])  # each alone within a budget
    assert shared.jobs["runtime"].to_list() == exactly([0.031, 0.032])
    # on two targets (g starts on target 1) each job has its own throttle: neither waits
    apart = replay_trace(site(rows), device=Device(**FAST, rate=100e6, slice=0.02, targets=2))
    assert dates(apart, "complete") == exactly([0.001, 0.002, 0.001, 0.002])


def test_units_given_slots_at_once_take_the_budget_in_dispatch_order():
    # two slots, 1 MB per 1 s slice: a opens the slice; b, given its slot at 0, is 1 MB over (1 + 1 s);
    # c gets a's slot at 0.001 and is 2 MB over: 1 + 2 s
    rows = [(job, 0, 0, 0.001, MB, 0, 0, job) for job in ("a", "b", "c")]
    result = replay_trace(site(rows), device=Device(**FAST, concurrency=2, rate=1e6, slice=1.0))
    assert dates(result, "served") == exactly([0.0, 2.0, 3.0])


def test_the_open_loop_has_the_same_slices():
    ops = site(stream("a", 4)).with_columns(pl.lit(0.0).alias("start")).drop("phase", "synthetic")
    result = replay_requests(ops, "fcfs", device=SLICED)
    assert result.complete.tolist() == exactly([0.001, 0.002, 0.031, 0.032])


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_a_budget_never_reached_gives_todays_dates(scheduler):
    ops, sets = three_jobs(), {"a": "x", "b": "x", "c": "y"}
    base = dict(queue_depth=2, bandwidth=1e6, concurrency=2)
    expected = replay_trace(ops, scheduler=scheduler, classes=sets, device=Device(**base))
    got = replay_trace(ops, scheduler=scheduler, classes=sets, device=Device(**base, rate=1e12, slice=0.1))
    assert got.requests.equals(expected.requests) and got.jobs.equals(expected.jobs)
    limited = replay_trace(ops, scheduler=scheduler, classes=sets, device=Device(**base, rate=2e5, slice=0.1))
    assert limited.jobs["runtime"].sum() > expected.jobs["runtime"].sum()


# ---------------------------------------------------------------- the device's field


def test_the_slice_round_trips_and_stays_out_of_a_default_device_file():
    device = Device(rate=200e6, slice=0.1)
    assert Device.from_dict(json.loads(json.dumps(device.to_dict()))) == device
    assert list(device.to_dict())[-2:] == ["rate", "slice"]
    assert "slice" not in Device().to_dict()
    assert Device.from_strings(["rate=200e6", "slice=0.1"]) == device
    assert device.describe().endswith("rate 200 MB/s, slice 100 ms")


@pytest.mark.parametrize("value", [-0.1, float("inf"), float("nan")])
def test_a_bad_slice_is_named(value):
    message = f"device slice must be a finite number >= 0, got {value!r}"
    with pytest.raises(InputError, match=f"^{message}$"):
        Device(rate=1e6, slice=value)
    with pytest.raises(InputError, match=f"^device: {message}$"):
        Device.from_dict({"rate": 1e6, "slice": value})


@pytest.mark.parametrize(("rate", "burst"), [(0.0, 0.0), (1e6, 5e5)])
def test_a_slice_needs_a_rate_and_no_burst(rate, burst):
    with pytest.raises(InputError, match=r"^device slice: a slice \(0.1 s\) grants rate x slice bytes per slice"):
        Device(rate=rate, burst=burst, slice=0.1)


def engine_arguments(device):
    one = np.zeros(1)
    return dict(
        scheduler="fcfs", arrival=one, size=np.full(1, 3e6), offset=np.zeros(1, np.int64),
        cls=np.zeros(1, np.int32), stream=np.zeros(1, np.int32), server=np.zeros(1, np.int32),
        phase=np.full(1, -1, np.int32), op=np.ones(1, np.int8), n_classes=1, n_streams=1, n_servers=1, n_phases=0,
        device=device, weight=np.ones(1), reservation=np.zeros(1), limit=np.zeros(1), params=np.zeros(0),
        dispatch=np.empty(1), complete=np.empty(1), unit=np.empty(1, np.int64),
    )  # fmt: skip


def test_the_engine_reads_the_slice_by_name_and_names_a_bad_one():
    fields = dict(queue_depth=1, bandwidth=1e9, overhead=0.0, seek=0.0, iops=0.0, rate=1e8)
    # 3 MB, 1 MB per 10 ms slice: 2 MB over at 0.01 + 0.02, then 3 ms of transfer
    arguments = engine_arguments(SimpleNamespace(**fields, slice=0.01))
    assert _engine.replay_requests(**arguments) == 1
    assert arguments["complete"].tolist() == exactly([0.033])
    arguments = engine_arguments(SimpleNamespace(**fields))  # no slice: the continuous bucket, burst 0
    _engine.replay_requests(**arguments)
    assert arguments["complete"].tolist() == exactly([0.033])
    message = "replay_requests: 'device.slice' must be a finite float >= 0, got -1.0"
    with pytest.raises(ValueError, match=f"^{message}$"):
        _engine.replay_requests(**engine_arguments(SimpleNamespace(**fields, slice=-1.0)))


# ---------------------------------------------------------------- calibration


def throttled_phases(device, *, phases=2, requests=400, gap=3.0):
    """One rank writing ``phases`` phases of ``requests`` 1 MiB requests (0.1 ms apart), replayed on ``device``: the
    recorded dates of a trace made on it."""
    rows = [
        ("a", 0, (phase * requests + k) << 20, 1 << 20, phase * gap + k * 1e-3, 0.0, "f", phase)
        for phase in range(phases)
        for k in range(requests)
    ]
    names = ("job_id", "rank", "offset", "size", "start", "end", "file", "phase")
    ops = pl.DataFrame(rows, schema=names, orient="row").with_columns(op=pl.lit("write"), synthetic=False)
    replayed = replay_trace(ops.with_columns(end=pl.col("start") + 0.9e-3), device=device).requests.sort("row")
    return ops.with_columns(start=replayed["release"], end=replayed["complete"]).sort("start")


def test_a_slice_is_fitted_from_the_period_of_the_waits_and_the_bytes_between_them():
    """10 MB per 50 ms slice, 1 MiB requests: the period within 0.1 %; the budget within 2 kB, though each slice only
    tells that the bytes before its wait fit in its budgets and those with it do not (40 slices a stretch)."""
    truth = Device(bandwidth=2e9, overhead=0.0, seek=0.0, rate=200e6, slice=0.05)
    got = calibrate(throttled_phases(truth), fit=FIT_PARAMETERS, fix={"overhead": 0, "seek": 0})
    assert got.device.slice == pytest.approx(0.05, rel=1e-3)
    assert got.device.burst == 0.0 and got.device.bandwidth == pytest.approx(2e9, rel=0.02)
    assert got.device.rate * got.device.slice == pytest.approx(10e6, abs=2e3)
    how = {p.name: (p.how, p.reason) for p in got.parameters}
    assert how["slice"][0] == "fitted" and "waits end every 50 ms" in how["slice"][1]
    assert how["rate"][0] == "fitted" and how["burst"] == ("not fitted", "a slice's budget is rate x slice: no burst")


def test_a_continuous_rate_limit_fits_no_slice():
    """Phases of 30 MiB through a continuous 20 MB bucket: after the burst every request waits 5.2 ms, on a period
    too, but the first wait of a phase comes ~19 periods in: no slice's budget to tell, the slice is 0 and the
    output says why."""
    truth = Device(bandwidth=2e9, overhead=0.0, seek=0.0, rate=200e6, burst=20e6)
    got = calibrate(
        throttled_phases(truth, phases=6, requests=30),
        fit=FIT_PARAMETERS,
        fix={"overhead": 0, "seek": 0},
        cross_validate=False,
    )
    slice_ = next(p for p in got.parameters if p.name == "slice")
    assert got.device.slice == 0.0 and slice_.how == "not fitted"
    assert slice_.reason.endswith(
        "but the bytes before them fit no one budget (0 slices of busy stretches tell it, 20 needed)"
    )


def test_the_slice_is_fitted_by_default_and_left_to_the_given_device_when_not_asked():
    """The default fit finds the 50 ms slice; a fit without ``"slice"`` keeps the given device's (0) and fits the
    continuous bucket's burst instead."""
    truth = Device(bandwidth=2e9, overhead=0.0, seek=0.0, rate=200e6, slice=0.05)
    found = calibrate(throttled_phases(truth), fix={"overhead": 0, "seek": 0}, cross_validate=False)
    assert found.device.slice == pytest.approx(0.05, rel=1e-3) and found.device.burst == 0.0
    assert next(p for p in found.parameters if p.name == "slice").how == "fitted"
    bucket = tuple(name for name in FIT_PARAMETERS if name != "slice")
    got = calibrate(throttled_phases(truth), fit=bucket, fix={"overhead": 0, "seek": 0}, cross_validate=False)
    assert got.device.slice == 0.0 and got.device.burst > 0
    assert next(p for p in got.parameters if p.name == "slice").how == "given"


# ---------------------------------------------------------------- a continuous rate limit's evidence


def bucket_phases():
    """Six phases of 30 MiB through a continuous 20 MB bucket at 200 MB/s on a 2 GB/s device: 19 requests at the
    device's speed (0.524 ms), then each waits for its tokens."""
    truth = Device(bandwidth=2e9, overhead=0.0, seek=0.0, rate=200e6, burst=20e6)
    return throttled_phases(truth, phases=6, requests=30)


def test_under_a_rate_limit_the_bandwidth_is_the_requests_found_idle_and_the_phases_set_the_burst():
    """The phases last what the bucket lets through: the bandwidth is the median rate of the 180 requests found idle
    (exactly the device's: most went at its speed), the rate the bytes over the time of those from each phase's
    first wait on (215 MB/s: the tokens that came in while the burst went shorten the first waits), and the
    burst what the phases' durations then ask."""
    got = calibrate(bucket_phases(), fix={"overhead": 0, "seek": 0}, cross_validate=False)
    how = {p.name: p for p in got.parameters}
    assert got.device.bandwidth == pytest.approx(2e9, rel=1e-9)
    assert (
        how["bandwidth"].reason
        == "the median rate of 180 requests found idle (a rate limit: the phases do not tell it)"
    )
    assert 200e6 < got.device.rate < 220e6 and got.device.burst > 0
    assert how["rate"].how == how["burst"].how == "fitted"
    assert how["rate"].reason.startswith("the bytes over the time of requests found idle from their phase's first wait")
    assert how["burst"].reason.startswith("the phases' durations at that rate and bandwidth")
    assert got.error["phase_median"] < 1e-3


def test_a_rate_not_below_the_bandwidth_is_refused():
    """With the bandwidth pinned at 150 MB/s, the requests' rate (215 MB/s) would limit nothing: rate, burst and
    slice are 0, and the rate's and burst's rows say why."""
    got = calibrate(bucket_phases(), fix={"overhead": 0, "seek": 0, "bandwidth": 150e6}, cross_validate=False)
    how = {p.name: p for p in got.parameters}
    assert got.device.rate == got.device.burst == 0.0 and got.device.bandwidth == 150e6
    for name in ("rate", "burst"):
        assert how[name].how == "refused" and how[name].value == 0.0
        assert re.fullmatch(
            r"the fitted rate 21\d\.?\d* MB/s is not below the bandwidth 150 MB/s: no limit, refused", how[name].reason
        )
    assert how["slice"].how == "refused" and got.device.slice == 0.0


def test_a_limit_the_traces_busiest_second_beats_is_none():
    """10 requests of 100 MB ending within a second: 1000 MB, more than 1.5 x the 250 MB a 200 MB/s limit with a 50 MB
    burst lets through in a second; 2 of them (200 MB) are within it."""
    limit = Evidence(40, True, "40 of 400 requests found idle waited")
    end, size = np.linspace(0.0, 0.9, 10), np.full(10, 100e6)
    beaten = beaten_limit(limit, end, size, 200e6, 50e6)
    assert beaten == Evidence(
        40,
        False,
        "40 of 400 requests found idle waited, but its busiest 1 s moved 1000 MB, more than 1.5 x the 250 MB such a "
        "limit lets through: no rate limit",
    )
    assert beaten_limit(limit, end[:2], size[:2], 200e6, 50e6) is limit
