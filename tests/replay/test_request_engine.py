"""The request engine's device model and baselines on closed-form cases."""

import numpy as np
import polars as pl
import pytest

from iosets.errors import InputError, ReplayError
from iosets.replay import (
    SCHEDULER_PARAMS,
    SCHEDULERS,
    Device,
    RequestArrays,
    _engine,
    jain_index,
    replay_requests,
    sliding_shares,
)

MB = 1_000_000


def ops_of(rows, **extra):
    """rows: (job_id, offset, size, start[, file])."""
    return pl.DataFrame(
        {
            "job_id": [r[0] for r in rows],
            "rank": 0,
            "op": "write",
            "offset": [r[1] for r in rows],
            "size": [r[2] for r in rows],
            "start": [float(r[3]) for r in rows],
            "file": [r[4] if len(r) > 4 else r[0] for r in rows],
            **extra,
        }
    )


def test_unit_cost_is_overhead_plus_transfer_plus_seek():
    device = Device(bandwidth=1e9, overhead=1e-4, seek=2e-3)
    # second request continues the first (no seek); third jumps (seek); fourth is another file (seek)
    ops = ops_of([("a", 0, MB, 0), ("a", MB, MB, 0), ("a", 5 * MB, MB, 0), ("b", MB * 6, MB, 0)])
    r = replay_requests(ops, "time-order", device=device)
    cost = 1e-4 + 1e-3
    expected = np.cumsum([cost + 2e-3, cost, cost + 2e-3, cost + 2e-3])
    np.testing.assert_allclose(r.complete, expected, rtol=1e-12)


def test_fixed_iops_mode_costs_one_over_c():
    ops = ops_of([("a", i * MB, MB, 0) for i in range(5)])
    r = replay_requests(ops, "time-order", device=Device(iops=100))
    np.testing.assert_allclose(r.complete, [0.01, 0.02, 0.03, 0.04, 0.05])


def test_queue_depth_bounds_outstanding_units_but_noop_does_not():
    ops = ops_of([("a", i * MB, MB, 0) for i in range(4)])
    device = Device(queue_depth=2, iops=10)
    to = replay_requests(ops, "time-order", device=device)
    np.testing.assert_allclose(to.dispatch, [0, 0, 0.1, 0.2])  # a slot frees at each completion
    noop = replay_requests(ops, "fcfs", device=device)
    np.testing.assert_allclose(noop.dispatch, [0, 0, 0, 0])
    np.testing.assert_allclose(noop.complete, to.complete)  # the device is FIFO either way


def test_idle_device_starts_at_arrival():
    ops = ops_of([("a", 0, MB, 0), ("a", MB, MB, 5.0)])
    r = replay_requests(ops, "fcfs", device=Device(iops=10))
    np.testing.assert_allclose(r.complete, [0.1, 5.1])
    assert r.metrics.classes["latency_p50"].to_list() == pytest.approx([0.1])


def test_metrics_of_two_classes():
    ops = ops_of([("a", 0, 3 * MB, 0), ("b", 0, MB, 0)])
    r = replay_requests(ops, "fcfs", device=Device(bandwidth=1e6, overhead=0, seek=0))
    classes = r.metrics.classes
    assert classes["class"].to_list() == ["a", "b"]
    assert classes["bytes"].to_list() == [3 * MB, MB]
    assert classes["share"].to_list() == pytest.approx([0.75, 0.25])
    assert classes["throughput"].to_list() == pytest.approx([1e6, MB / 4.0])
    assert r.metrics.aggregate_throughput == pytest.approx(1e6)
    assert r.metrics.jain_index == pytest.approx((1e6 + 2.5e5) ** 2 / (2 * (1e12 + 6.25e10)))
    assert r.metrics.mean_aggregation_size == 1


def test_jain_index_bounds():
    assert jain_index([5, 5, 5]) == pytest.approx(1)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)


def test_sliding_shares_windows():
    ops = ops_of([("a", 0, 1, 0), ("b", 0, 3, 0), ("a", 1, 1, 0), ("b", 3, 3, 0)])
    r = replay_requests(ops, "time-order", device=Device(iops=1))
    shares = sliding_shares(r.trace, r.dispatch, 2)
    np.testing.assert_allclose(shares, [[0.25, 0.75]] * 3)


def test_results_map_back_to_source_rows():
    ops = ops_of([("a", 0, MB, 2.0), ("b", 0, MB, 1.0)])
    frame = replay_requests(ops, "fcfs", device=Device(iops=10)).requests()
    assert frame["row"].to_list() == [1, 0]
    assert frame["class"].to_list() == ["b", "a"]


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"scheduler": "lottery"}, InputError, "unknown scheduler 'lottery'; expected one of fcfs"),
        ({"scheduler": "wfq", "quantum": 3}, InputError, "^wfq: unknown parameters \\['quantum'\\]; it takes none$"),
        (
            {"scheduler": "rbfq", "sigma": 2, "cost": 1},
            InputError,
            "^rbfq: unknown parameters \\['cost', 'sigma'\\]; expected one of cost_bytes, idle_credit, distributed$",
        ),
        ({"scheduler": "wfq", "weights": {"zz": 1}}, InputError, "weights: unknown classes \\['zz'\\]"),
        ({"scheduler": "wfq", "weights": {"a": 0, "b": 1}}, ReplayError, "weight must be finite and > 0 \\(class 0\\)"),
        ({"scheduler": "fcfs", "class_by": "colour"}, InputError, "missing columns \\['colour'\\]"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, message):
    ops = ops_of([("a", 0, MB, 0), ("b", 0, MB, 0)])
    with pytest.raises(error, match=message):
        replay_requests(ops, **kwargs)


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("op", "rd", "ops row 1: op: expected 'read'\\|'write', got 'rd'"),
        ("size", -1, "ops row 1: size: expected bytes >= 0, got -1"),
    ],
)
def test_bad_ops_rows_are_named(column, value, message):
    ops = ops_of([("a", 0, MB, 0), ("b", 0, MB, 1)])
    ops = ops.with_columns(
        pl.when(pl.int_range(pl.len()) == 1).then(pl.lit(value)).otherwise(pl.col(column)).alias(column)
    )
    with pytest.raises(InputError, match=message):
        replay_requests(ops, "fcfs")


def test_a_zero_byte_request_costs_the_overhead_alone():
    # the ops schema allows size 0 (a flush): it occupies the device for the per-request overhead only
    ops = ops_of([("a", 0, MB, 0), ("a", MB, 0, 0)])
    r = replay_requests(ops, "fcfs", device=Device(queue_depth=1, bandwidth=1e9, overhead=1e-3, seek=0.0))
    complete = r.requests().sort("row")["complete"].to_list()
    assert complete == pytest.approx([1e-3 + MB / 1e9, 2e-3 + MB / 1e9], rel=1e-12)


def test_streams_are_files_where_known_else_ranks():
    ops = ops_of([("a", 0, MB, 0), ("a", MB, MB, 0), ("a", 2 * MB, MB, 0)]).with_columns(pl.Series("rank", [0, 1, 1]))
    assert replay_requests(ops.drop("file"), "fcfs").trace.n_streams == 2  # no file column: ranks 0 and 1
    assert replay_requests(ops, "fcfs").trace.n_streams == 1  # one file
    half = ops.with_columns(pl.Series("file", ["f", None, None]))
    assert replay_requests(half, "fcfs").trace.n_streams == 2  # file f, then rank 1 where the file is unknown


def test_bad_device_is_rejected():
    with pytest.raises(InputError, match="^device queue_depth must be an integer in \\[1, 2147483647\\], got 0$"):
        Device(queue_depth=0)
    with pytest.raises(InputError, match="--device: expected key=value"):
        Device.from_strings(["depth=3"])
    assert Device.from_strings(["queue_depth=4", "seek=0"]) == Device(queue_depth=4, seek=0.0)


def test_reservation_met_is_reported_per_class():
    ops = ops_of([("a", i * MB, MB, 0) for i in range(50)] + [("b", i * MB, MB, 0) for i in range(50)])
    r = replay_requests(ops, "time-order", device=Device(iops=100), reservations={"a": 100.0, "b": 60.0})
    classes = r.metrics.classes
    # time order serves a first: 50 IOs in 0.5 s -> 100 IO/s; b: 50 IOs over 1.0 s -> 50 IO/s
    assert classes["reservation"].to_list() == [100.0, 60.0]
    assert classes["reservation_met"].to_list() == [True, False]
    r = replay_requests(ops, "time-order", device=Device(iops=100), reservations={"a": 50.0})
    assert r.metrics.classes["reservation_met"].to_list() == [True, None]


def test_scheduler_parameters_come_from_the_engine():
    declared = _engine.scheduler_params()
    assert tuple(declared) == SCHEDULERS == ("fcfs", "time-order", "wfq", "iosets-wfq", "rbfq", "fairio", "aioli")
    for name, entries in declared.items():
        assert SCHEDULER_PARAMS[name] == {param: default for param, default, _, _ in entries}
        assert all(doc.strip() for *_, doc in entries), name
    assert [entry[:3] for entry in declared["fairio"]] == [
        ("cycle_length", 1.0, "> 0"),
        ("window_cycles", 20.0, "an integer in [1, 1000000]"),
        ("mode", 0.0, "0 or 1"),
        ("class_threshold", 1.0, ">= 0"),
        ("storage_load", 0.0, "an integer in [0, 1000000000]"),
        ("compensate_idle", 0.0, "0 or 1"),
    ]
    assert [entry[:3] for entry in declared["rbfq"]] == [
        ("cost_bytes", 0.0, "0 or 1"),
        ("idle_credit", 0.0, ">= 0"),
        ("distributed", 1.0, "0 or 1"),
    ]


def test_engine_refuses_a_parameter_vector_of_the_wrong_length():
    trace = RequestArrays.from_ops(ops_of([("a", 0, MB, 0)]))
    n = trace.n
    expected = r"^replay_requests: 'params' must be float64 of length n_params=3 \(the parameters of 'aioli'\)"
    with pytest.raises(ValueError, match=expected + ", got float64 of length 2$"):
        _engine.replay_requests(
            scheduler="aioli",
            arrival=trace.arrival,
            **trace.engine_arrays(),
            device=Device(),
            **dict(weight=np.ones(1), reservation=np.zeros(1), limit=np.zeros(1), params=np.array([65536.0, 1e6])),
            **dict(dispatch=np.empty(n), complete=np.empty(n), unit=np.empty(n, np.int64)),
        )


def test_class_table_is_built_on_first_access_and_agrees_with_the_scalars():
    ops = ops_of([("a", i * MB, MB, 0) for i in range(6)] + [("b", i * MB, MB, 0.001 * i) for i in range(3)])
    r = replay_requests(ops, "wfq", weights={"a": 2.0, "b": 1.0}, device=Device(iops=100))
    assert "classes" not in vars(r.metrics)
    classes = r.metrics.classes
    assert r.metrics.classes is classes
    assert classes["requests"].to_list() == [6, 3]
    throughput = classes["throughput"].to_numpy()
    assert r.metrics.jain_index == pytest.approx(jain_index(throughput / [2.0, 1.0]), rel=1e-12)
    assert r.metrics.aggregate_throughput == pytest.approx(9 * MB / r.complete.max(), rel=1e-12)
    assert r.metrics.mean_aggregation_size == 1.0 and r.metrics.n_units == 9
