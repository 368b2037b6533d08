"""The parallel storage model of the trace replay (issue #21, item 1), on hand-computed cases.

Targets serve in parallel, a target serves `concurrency` units at once (their overheads
overlap, their bytes go one after the other), files are striped over targets, a request
completes with its last part, and a job's client link caps how fast its requests leave.
"""

import json
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from site_rows import MB, dates, site, three_jobs

from iosets.errors import InputError, ReplayError
from iosets.replay import (
    LAYOUT,
    SCHEDULERS,
    Device,
    _engine,
    _striping,
    compare_schedulers,
    replay_requests,
    replay_trace,
)
from iosets.replay._striping import split_requests, stream_layouts

FAST = dict(bandwidth=1e6, overhead=0.0, seek=0.0)  # 1 MB takes 1 s on a target


def layout(*rows):
    """rows: (file, stripe_size, stripe_count, first_target)."""
    return pl.DataFrame(
        [dict(zip(LAYOUT.names, row, strict=True)) for row in rows],
        schema={"file": pl.String, "stripe_size": pl.Int64, "stripe_count": pl.Int64, "first_target": pl.Int64},
    )


def of(result, job_id):
    return result.jobs.filter(pl.col("job_id") == job_id).row(0, named=True)


# ---------------------------------------------------------------- striping arithmetic


def split(offset, size, stream, device, rows=None, files=("f",)):
    layouts = stream_layouts(pl.Series(files, dtype=pl.String), max(stream) + 1, device, rows)
    return split_requests(
        np.array(offset, np.int64), np.array(size, np.float64), np.array(stream, np.int32), layouts, device.targets
    )


def test_a_request_over_three_stripes_of_a_two_stripe_file_is_two_parts():
    # stripes of 100 bytes over targets 1, 2 (first target 1 of 4): bytes [150, 350) touch stripe 1
    # (target 2, object bytes 50-100), stripe 2 (target 1, object 100-200) and stripe 3 (target 2,
    # object 100-150): target 2 gets 50 + 50 bytes from object offset 50, target 1 100 from 100
    parts = split([150], [200], [0], Device(targets=4), layout(("f", 100, 2, 1)))
    assert parts.counts.tolist() == [2] and parts.starts.tolist() == [0] and parts.first.tolist() == [0, 0]
    assert parts.target.tolist() == [2, 1]
    assert parts.size.tolist() == [100.0, 100.0]
    assert parts.offset.tolist() == [50, 100]


def test_a_request_inside_one_stripe_or_of_unknown_place_is_one_part():
    device = Device(targets=4, stripe_size=100, stripe_count=2)
    # file f (stream 0) starts on target 0, rank stream 1 on (1 * 2) % 4 = 2
    parts = split([250, -1, 40, 7], [50, 500, 0, 500], [0, 0, 0, 1], device)
    assert parts.first.tolist() == [0, 1, 2, 3] and parts.counts.tolist() == [1, 1, 1, 1]
    assert parts.target.tolist() == [0, 0, 0, 2]  # stripe 2 of f on target 0; the others on their first target
    assert parts.offset.tolist() == [150, -1, 40, 7]  # stripe 2 is the second stripe of target 0's object
    assert parts.size.tolist() == [50, 500, 0, 500]


def test_a_request_over_more_stripes_than_the_count_sums_its_bytes_per_target():
    # stripes of 10 over 3 targets from target 0; bytes [5, 65) touch stripes 0..6
    parts = split([5], [60], [0], Device(targets=3, stripe_size=10, stripe_count=3))
    assert parts.target.tolist() == [0, 1, 2]
    assert parts.size.tolist() == [5 + 10 + 5, 10 + 10, 10 + 10]  # stripes 0, 3, 6 / 1, 4 / 2, 5
    assert parts.offset.tolist() == [5, 0, 0]


def reference_parts(offset, size, stripe, count, first_target, targets):
    """Byte by byte (stripe by stripe): each target's bytes and its first byte's object offset."""
    got = {}
    position = offset
    while position < offset + size:
        j = position // stripe
        upto = min((j + 1) * stripe, offset + size)
        target = (first_target + j % count) % targets
        seen = got.setdefault(target, [(j // count) * stripe + position % stripe, 0])
        seen[1] += upto - position
        position = upto
    return sorted(got.items(), key=lambda item: (item[1][0], item[0]))


def test_split_agrees_with_a_stripe_by_stripe_reference_on_random_requests():
    rng = np.random.default_rng(3)
    for _ in range(300):
        targets, stripe, count = int(rng.integers(1, 9)), int(rng.integers(1, 50)), int(rng.integers(1, 6))
        device = Device(targets=targets, stripe_size=stripe, stripe_count=count)
        offset, size = int(rng.integers(0, 500)), int(rng.integers(1, 400))
        parts = split([offset], [size], [0], device)
        got = sorted(
            zip(parts.target.tolist(), zip(parts.offset.tolist(), parts.size.tolist(), strict=True), strict=True),
            key=lambda item: (item[1][0], item[0]),
        )
        expected = reference_parts(offset, size, stripe, min(count, targets), 0, targets)
        assert [(t, (o, float(b))) for t, (o, b) in expected] == got
        assert len(set(parts.target.tolist())) == parts.n  # one part per target


def test_blocks_of_requests_split_as_one(monkeypatch):
    rng = np.random.default_rng(5)
    n = 500
    offset = np.where(rng.random(n) < 0.1, -1, rng.integers(0, 10_000, n))
    size = rng.integers(0, 3_000, n).astype(float)
    stream = rng.integers(0, 4, n).astype(np.int32)  # streams 0-2 are files, 3 a rank
    device = Device(targets=5, stripe_size=256, stripe_count=3)
    rows = layout(("b", 100, 5, 4), ("c", 1000, 2, None))
    layouts = stream_layouts(pl.Series(["a", "b", "c"]), 4, device, rows)
    whole = split_requests(offset, size, stream, layouts, 5)
    monkeypatch.setattr(_striping, "_BLOCK", 7)
    blocks = split_requests(offset, size, stream, layouts, 5)
    assert whole.n > n
    for name in ("counts", "starts", "first", "target", "offset", "size"):
        np.testing.assert_array_equal(getattr(blocks, name), getattr(whole, name))


def test_the_layout_is_used_over_the_defaults_and_the_defaults_go_round_robin():
    device = Device(targets=8, stripe_size=100, stripe_count=2)
    files = ("a", "b", "c")
    # defaults: a from target 0, b from (1 * 2) % 8 = 2, c from 4; b's layout: one stripe of 1000 on target 7
    parts = split([150, 150, 150], [100, 100, 100], [0, 1, 2], device, layout(("b", 1000, 1, 7)), files)
    assert parts.target.tolist() == [1, 0, 7, 5, 4]
    assert parts.size.tolist() == [50, 50, 100, 50, 50]
    # a null first target goes round robin with the layout's count: (1 * 3) % 8; 12 is taken modulo 8
    rows = layout(("b", 100, 3, None), ("c", 100, 1, 12))
    parts = split([0, 0, 0], [1, 1, 1], [0, 1, 2], device, rows, files)
    assert parts.target.tolist() == [0, 3, 4]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (layout(("f", 100, 1, 0), ("g", 0, 1, 0)), "layout row 1: stripe_size: expected bytes >= 1, got 0"),
        (layout(("f", 100, 0, 0)), "layout row 0: stripe_count: expected an integer >= 1, got 0"),
        (layout(("f", 100, 1, -2)), "layout row 0: first_target: expected an integer >= 0, got -2"),
        (layout(("f", 100, 1, 0), ("g", 10, 1, 0), ("f", 10, 1, 0)), "layout row 2: file: expected one row per file"),
        (layout(("f", None, 1, 0)), "layout row 0: stripe_size: expected a value (not null), got null"),
        (pl.DataFrame({"file": ["f"], "stripe_size": [1]}), "layout: missing column(s) stripe_count"),
    ],
)
def test_bad_layout_rows_are_named(rows, message):
    with pytest.raises(InputError, match=f"^{message}".replace("(", r"\(").replace(")", r"\)")):
        replay_trace(site([("a", 0, 0, 1, MB, 0, 0, "f")]), device=Device(targets=2), layout=rows)


# ---------------------------------------------------------------- the device's fields


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("targets", 0, "device targets must be an integer in [1, 65536], got 0"),
        ("targets", 2.0, "device targets must be an integer in [1, 65536], got 2.0"),
        ("concurrency", 65537, "device concurrency must be an integer in [1, 65536], got 65537"),
        ("concurrency", True, "device concurrency must be an integer in [1, 65536], got True"),
        ("stripe_size", 0, "device stripe_size must be an integer in [1, 9223372036854775807], got 0"),
        ("stripe_count", -1, "device stripe_count must be an integer in [1, 2147483647], got -1"),
        ("client_bandwidth", -1.0, "device client_bandwidth must be a finite number >= 0, got -1.0"),
        ("ranks_per_node", 0, "device ranks_per_node must be an integer in [1, 2147483647], got 0"),
    ],
)
def test_bad_device_fields_are_named(field, value, message):
    with pytest.raises(InputError, match=f"^{message}".replace("[", r"\[").replace("]", r"\]")):
        Device(**{field: value})
    if not isinstance(value, bool):  # from_dict refuses a bool as not a number
        with pytest.raises(InputError, match="^device: " + message.replace("[", r"\[").replace("]", r"\]")):
            Device.from_dict({field: value})


def test_the_new_fields_round_trip_and_parse_as_integers():
    device = Device(
        targets=64, concurrency=4, stripe_size=4 << 20, stripe_count=4, client_bandwidth=5e9, ranks_per_node=8
    )
    assert Device.from_dict(json.loads(json.dumps(device.to_dict()))) == device
    items = ["targets=64", "concurrency=4", "stripe_size=4194304", "stripe_count=4", "client_bandwidth=5e9"]
    parsed = Device.from_strings([*items, "ranks_per_node=8"])
    assert parsed == device and isinstance(parsed.stripe_size, int)
    with pytest.raises(InputError, match="^--device concurrency: expected an integer, got '2.5'$"):
        Device.from_strings(["concurrency=2.5"])
    assert list(Device().to_dict()) == ["queue_depth", "bandwidth", "overhead", "seek", "iops"]  # as before them
    assert list(Device(targets=2).to_dict())[-1:] == ["targets"]
    assert list(device.to_dict())[-6:] == [
        "targets",
        "concurrency",
        "stripe_size",
        "stripe_count",
        "client_bandwidth",
        "ranks_per_node",
    ]


# ---------------------------------------------------------------- targets in parallel


def test_a_request_split_over_two_targets_ends_with_its_slower_part():
    # b's 3 MB request holds target 1 over [0, 3]; a's 2 MB request is striped over targets 0 and 1:
    # its first MB is served on target 0 over [0, 1], its second waits for target 1 and ends at 4
    rows = [("b", 0, 0, 3, 3 * MB, 0, 0, "g"), ("a", 0, 0, 1, 2 * MB, 0, 0, "f")]
    files = layout(("f", MB, 2, 0), ("g", 4 * MB, 1, 1))
    result = replay_trace(site(rows), device=Device(targets=2, **FAST), layout=files)
    assert result.trace.server.tolist() == [1, 0, 1] and result.trace.size.tolist() == [3 * MB, MB, MB]
    assert dates(result, "complete") == [3.0, 4.0]
    assert dates(result, "served") == [0.0, 0.0] and dates(result, "dispatch") == [0.0, 0.0]
    assert dates(result, "size") == [3 * MB, 2 * MB]
    a = of(result, "a")
    assert (a["runtime"], a["alone_runtime"], a["stretch"]) == (4.0, 1.0, 4.0)  # alone, both parts at once
    assert result.phases.filter(pl.col("job_id") == "a")["end"].to_list() == [4.0]


def test_a_request_gated_on_a_split_one_is_released_by_its_last_part():
    # a's first request (2 parts of 1 MB, targets 0 and 1) and its second, gated on it (the rank had one
    # outstanding) after 0.5 s of think time; target 1 is slower to free: b's 2 MB request holds it to 2
    rows = [("b", 0, 0, 2, 2 * MB, 0, 0, "g"), ("a", 0, 0, 1, 2 * MB, 0, 0, "f"), ("a", 0, 1.5, 2, MB, 0, 0, "h")]
    files = layout(("f", MB, 2, 0), ("g", 4 * MB, 1, 1), ("h", MB, 1, 0))
    result = replay_trace(site(rows), device=Device(targets=2, **FAST), layout=files)
    # the first ends at 3 (its part on target 1 after b's), the second is released at 3.5, ends at 4.5
    assert dates(result, "release") == [0.0, 0.0, 3.5]
    assert dates(result, "complete") == [2.0, 3.0, 4.5]


def two_writers(device, files=None):
    rows = [("a", 0, 0, 1, MB, 0, 0, "f"), ("b", 0, 0, 1, MB, 0, 0, "g")]
    return replay_trace(site(rows), device=device, layout=files)


def test_two_jobs_on_different_targets_do_not_slow_each_other():
    result = two_writers(Device(targets=2, **FAST))  # f on target 0, g on (1 * 1) % 2 = 1
    assert result.trace.server.tolist() == [0, 1]
    assert dates(result, "complete") == [1.0, 1.0]
    assert result.jobs["stretch"].to_list() == [1.0, 1.0]


def test_two_jobs_on_one_target_share_it():
    for shared in (
        two_writers(Device(**FAST)),
        two_writers(Device(targets=2, **FAST), layout(("f", MB, 1, 0), ("g", MB, 1, 2))),  # 2 % 2 = target 0
    ):
        assert dates(shared, "complete") == [1.0, 2.0]
        assert shared.jobs["stretch"].to_list() == [1.0, 2.0] and shared.jobs["alone_runtime"].to_list() == [1.0, 1.0]


def test_the_alone_replay_refuses_more_servers_than_the_engine_numbers():
    ops = site([(f"j{i}", 0, 0, 1, 1, 0, 0, "f") for i in range(2**15 + 1)])
    with pytest.raises(InputError, match="^device targets: the alone replay gives each of the 32769 jobs its own"):
        replay_trace(ops, device=Device(targets=65536))


def test_compare_schedulers_takes_the_layout():
    ops = site([("a", 0, 0, 1, MB, 0, 0, "f"), ("b", 0, 0, 1, MB, 0, 0, "g")])
    rec = pl.DataFrame(
        {"job_id": ["a", "b"], "set": [0, 0], "priority": [1.0] * 2, "wfq_weight": [1] * 2,
         "rbfq_reservation": [None] * 2, "rbfq_weight": [1.0] * 2, "rbfq_limit": [None] * 2}
    )  # fmt: skip
    device = Device(targets=2, **FAST)
    apart = compare_schedulers(ops, rec, ["fcfs", "rbfq"], device=device)
    together = compare_schedulers(ops, rec, ["fcfs", "rbfq"], device=device, layout=layout(("g", MB, 1, 0)))
    assert apart.jobs["runtime"].to_list() == [1.0, 1.0, 1.0, 1.0]
    assert together.jobs["runtime"].to_list() == [1.0, 2.0, 1.0, 2.0]
    assert together.phases["start"].to_list() == [0.0, 1.0, 0.0, 1.0]  # b's request is served once a's ends


# ---------------------------------------------------------------- concurrency


def three_streams(device, scheduler="fcfs"):
    rows = [(job, 0, 0, 1, MB, 0, 0, job) for job in ("a", "b", "c")]
    return replay_trace(site(rows), device=device, scheduler=scheduler)


def test_two_slots_overlap_the_overheads_and_serialise_the_bytes():
    # overhead 1 s, 1 MB at 1 MB/s: a gets a slot at 0, ends at 0 + 2; b a slot at 0 too, its
    # bytes after a's: max(0 + 2, 2 + 1) = 3; c waits for a's slot (2), ends max(2 + 2, 3 + 1) = 4
    device = Device(bandwidth=1e6, overhead=1.0, seek=0.0, concurrency=2)
    result = three_streams(device)
    assert dates(result, "served") == [0.0, 0.0, 2.0]
    assert dates(result, "complete") == [2.0, 3.0, 4.0]
    one_slot = three_streams(Device(bandwidth=1e6, overhead=1.0, seek=0.0))
    assert dates(one_slot, "served") == [0.0, 2.0, 4.0] and dates(one_slot, "complete") == [2.0, 4.0, 6.0]
    # time-order keeps queue_depth units outstanding, but a target always accepts its two slots
    assert dates(three_streams(device, "time-order"), "complete") == [2.0, 3.0, 4.0]


def test_seeks_overlap_like_overheads():
    device = Device(bandwidth=1e6, overhead=0.0, seek=0.5, concurrency=3)
    assert dates(three_streams(device), "complete") == [1.5, 2.5, 3.5]  # every request seeks, at once


def test_concurrency_has_no_effect_in_fixed_iops_mode():
    device = Device(iops=1.0, concurrency=3)
    assert dates(three_streams(device), "complete") == [1.0, 2.0, 3.0]


def test_the_open_loop_shares_the_same_service():
    ops = site([(job, 0, 0, 1, MB, 0, 0, job) for job in ("a", "b", "c")]).drop("phase", "synthetic")
    result = replay_requests(ops, "fcfs", device=Device(bandwidth=1e6, overhead=1.0, seek=0.0, concurrency=2))
    assert result.complete.tolist() == [2.0, 3.0, 4.0]


# ---------------------------------------------------------------- client link


def test_a_client_link_caps_a_job_alone():
    # two overlapping 1 MB requests (both released at 0) on a 1 GB/s target behind a 1 MB/s link: the
    # second leaves the node once the first has gone through the link (1 s later)
    rows = [("a", 0, 0, 0.002, MB, 0, 0, "f"), ("a", 0, 0, 0.002, MB, 0, MB, "f")]
    device = Device(bandwidth=1e9, overhead=0.0, seek=0.0, client_bandwidth=1e6)
    result = replay_trace(site(rows), device=device)
    assert dates(result, "release") == [0.0, 1.0]
    assert dates(result, "complete") == [0.001, 1.001]
    a = of(result, "a")
    assert (a["runtime"], a["alone_runtime"]) == (1.001, 1.001)
    free = replay_trace(site(rows), device=Device(bandwidth=1e9, overhead=0.0, seek=0.0))
    assert of(free, "a")["runtime"] == 0.002


def test_a_job_has_a_link_per_node():
    rows = [("a", 0, 0, 0.001, MB, 0, 0, "f"), ("a", 1, 0, 0.001, MB, 0, MB, "f")]
    device = dict(bandwidth=1e9, overhead=0.0, seek=0.0, client_bandwidth=1e6)
    one_node = replay_trace(site(rows), device=Device(**device, ranks_per_node=2))
    assert dates(one_node, "complete") == [0.001, 1.001]
    two_nodes = replay_trace(site(rows), device=Device(**device, ranks_per_node=1))  # 2 MB/s
    assert dates(two_nodes, "release") == [0.0, 0.5] and dates(two_nodes, "complete") == [0.001, 0.501]


def test_jobs_have_their_own_links():
    rows = [("a", 0, 0, 0.001, MB, 0, 0, "f"), ("b", 0, 0, 0.001, MB, 0, 0, "g")]
    device = Device(bandwidth=1e9, overhead=0.0, seek=0.0, client_bandwidth=1e6, targets=2)
    assert dates(replay_trace(site(rows), device=device), "complete") == [0.001, 0.001]


# ---------------------------------------------------------------- one target reproduces the old model


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_one_target_gives_the_same_replay_whatever_the_striping(scheduler):
    ops, base = three_jobs(), Device(queue_depth=2, bandwidth=1e6)
    sets = {"a": "x", "b": "x", "c": "y"}
    expected = replay_trace(ops, scheduler=scheduler, classes=sets, device=base)
    for device, files in (
        (Device(queue_depth=2, bandwidth=1e6, stripe_count=4, stripe_size=150_000), None),
        (base, layout(("a", 64_000, 3, 5), ("b", 10, 1, None))),
    ):
        got = replay_trace(ops, scheduler=scheduler, classes=sets, device=device, layout=files)
        assert got.requests.equals(expected.requests) and got.jobs.equals(expected.jobs)
        assert got.phases.equals(expected.phases)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_every_scheduler_completes_every_part_on_many_targets(scheduler):
    ops = three_jobs()
    device = Device(queue_depth=2, bandwidth=1e6, targets=3, stripe_size=150_000, stripe_count=2, concurrency=2)
    result = replay_trace(ops, scheduler=scheduler, classes={"a": "x", "b": "x", "c": "y"}, device=device)
    req = result.requests
    assert req.height == ops.height and result.trace.n > ops.height  # some requests were split
    assert req["complete"].is_finite().all() and (req["release"] <= req["served"]).all()
    assert (req["dispatch"] <= req["served"]).all() and (req["served"] < req["complete"]).all()
    assert sorted(req["row"].to_list()) == list(range(ops.height))
    assert req["size"].sum() == ops["size"].sum() == result.trace.size.sum()
    last = req.group_by("job_id", "phase").agg(pl.col("complete").max())
    check = result.phases.join(last, on=["job_id", "phase"])
    assert (check["end"] == check["complete"]).all()
    assert (result.jobs["stretch"] >= 1 - 1e-12).all()


# ---------------------------------------------------------------- the engine's checks


def parts_call(**change):
    """_engine.replay_trace on request A split in parts 0 (1 byte, server 0) and 1 (3 bytes, server 1),
    then request B (part 2, 1 byte, server 0) gated on A; 1 byte takes 1 s."""
    i32 = np.int32
    arguments = dict(
        scheduler="fcfs", size=np.array([1.0, 3.0, 1.0]), offset=np.zeros(3, np.int64), cls=np.zeros(3, i32),
        stream=np.array([0, 0, 1], i32), server=np.array([0, 1, 0], i32), phase=np.zeros(3, i32),
        op=np.zeros(3, np.int8), n_classes=1, n_streams=2, n_servers=2, n_phases=1,
        gate=np.array([-1, -1, 0]), think=np.zeros(3), prev=np.full(1, -1, i32), gap=np.zeros(1),
        job=np.zeros(1, i32), first=np.array([0, 0, 2]), client_rate=None,
        device=Device(bandwidth=1.0, overhead=0.0, seek=0.0), weight=np.ones(1), reservation=np.zeros(1),
        limit=np.zeros(1), params=np.zeros(0), release=np.full(3, np.nan), dispatch=np.full(3, np.nan),
        complete=np.full(3, np.nan), unit=np.zeros(3, np.int64), phase_start=np.full(1, np.nan),
        phase_end=np.full(1, np.nan), served=np.full(3, np.nan),
    )  # fmt: skip
    arguments.update(change)
    return arguments


def test_the_engine_releases_what_a_request_gates_at_its_last_part():
    arguments = parts_call()
    assert _engine.replay_trace(**arguments) == 3
    assert arguments["release"].tolist() == [0.0, 0.0, 3.0]
    assert arguments["complete"].tolist() == [1.0, 3.0, 4.0]
    assert arguments["served"].tolist() == [0.0, 0.0, 3.0]
    assert arguments["phase_end"].tolist() == [4.0]
    alone = parts_call(first=None)  # without parts, request 2 follows request 0 alone
    _engine.replay_trace(**alone)
    assert alone["release"].tolist() == [0.0, 0.0, 1.0]


@pytest.mark.parametrize(
    ("change", "bad"),
    [
        ({"first": np.array([0, 2, 2])}, 1),  # a first part after the part
        ({"first": np.array([0, 0, 1])}, 2),  # a first part that is not its own first
        ({"first": np.array([-1, 0, 2])}, 0),
        ({"gate": np.array([-1, 0, 0])}, 1),  # a part gated otherwise than its first part (and by it)
        ({"think": np.array([0.0, 0.5, 0.0])}, 1),  # another think time
        ({"gate": np.array([-1, -1, 1]), "first": np.array([0, 0, 2])}, 2),  # a gate on a second part
        ({"phase": np.array([0, 1, 1], np.int32), "n_phases": 2, "prev": np.array([-1, 0], np.int32),
          "gap": np.zeros(2), "job": np.zeros(2, np.int32), "phase_start": np.zeros(2), "phase_end": np.zeros(2),
          "gate": np.array([-1, -1, -1])}, 1),  # a part in another phase
    ],
)  # fmt: skip
def test_the_engine_refuses_a_bad_first_naming_the_part(change, bad):
    with pytest.raises(ReplayError, match=rf"with first, a part needs a first part .* \(request {bad}\)$") as info:
        _engine.replay_trace(**parts_call(**change))
    assert info.value.index == bad


def test_the_engine_checks_the_client_rates_and_the_concurrency():
    arguments = parts_call(client_rate=np.array([0.5]))
    _engine.replay_trace(**arguments)
    # A's parts leave at 0 and 2 (1 byte at 0.5 B/s); B, released at 5 by A's last part, at max(5, 2 + 6) = 8
    assert arguments["release"].tolist() == [0.0, 2.0, 8.0]
    assert arguments["complete"].tolist() == [1.0, 5.0, 9.0]
    with pytest.raises(ReplayError, match=r"^client_rate must be finite and >= 0 \(job 0\)$"):
        _engine.replay_trace(**parts_call(client_rate=np.array([-1.0])))
    with pytest.raises(ValueError, match=r"'client_rate' must be float64 of length n_jobs=1 \(the largest label"):
        _engine.replay_trace(**parts_call(client_rate=np.zeros(2)))
    with pytest.raises(ValueError, match=r"'job' must be labels >= 0 with 'client_rate', got -1 \(phase 0\)$"):
        _engine.replay_trace(**parts_call(client_rate=np.zeros(0), job=np.full(1, -1, np.int32)))
    fields = dict(queue_depth=1, bandwidth=1.0, overhead=0.0, seek=0.0, iops=0.0)
    with pytest.raises(ValueError, match=r"'device.concurrency' must be an int in \[1, 2147483647\], got 0$"):
        _engine.replay_trace(**parts_call(device=SimpleNamespace(**fields, concurrency=0)))
    with pytest.raises(ReplayError, match=r"concurrency in \[1, 65536\]$"):
        _engine.replay_trace(**parts_call(device=SimpleNamespace(**fields, concurrency=65537)))
