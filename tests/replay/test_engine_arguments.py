"""The C replay entries take every argument by name and check each one by name (iosets/replay/src/_engine.c).

Each entry has one valid call here, small enough to compute by hand. Then one argument at a
time gets the wrong dtype, the wrong length, a strided layout, a read-only buffer (outputs) or
is left out; a call gets an unknown keyword or a positional argument. Each error names the
argument, and no buffer stays exported after any of them.
"""

import array
import ast
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import pytest

from iosets.errors import ReplayError
from iosets.replay import Device, _engine

NAN = np.nan
DEVICE = Device(queue_depth=1, bandwidth=1.0, overhead=0.0, seek=0.0)  # a byte takes 1 s


def phases_call():
    """Two jobs, three phases, no overlap: job 0 computes 1 s then moves 1 byte, twice; job 1 once, from 10 s."""
    return {
        "release": np.array([0.0, 10.0]),
        "sets": np.array([0, 1]),
        "priority": np.array([1.0, 0.1]),
        "phase_ptr": np.array([0, 2, 3]),
        "t_cpu": np.ones(3),
        "io_bytes": np.ones(3),
        "bandwidth": 1.0,
        "window": (0.0, 20.0),
        "cpu_start": np.full(3, NAN),
        "cpu_end": np.full(3, NAN),
        "io_start": np.full(3, NAN),
        "io_end": np.full(3, NAN),
    }


def check_phases(arguments, result):
    assert result[0] == 6  # a compute and an I/O completion per phase
    assert result[1:] == pytest.approx((0.075, 13.076696830622023, 10.0), rel=1e-12)
    timeline = [list(arguments[name]) for name in ("cpu_start", "cpu_end", "io_start", "io_end")]
    assert timeline == [[0, 2, 10], [1, 3, 11], [1, 3, 11], [2, 4, 12]]


def metrics_call():
    """The timeline of phases_call, measured again over the same window."""
    return {
        "phase_ptr": np.array([0, 2, 3]),
        "io_bytes": np.ones(3),
        "cpu_start": np.array([0.0, 2.0, 10.0]),
        "cpu_end": np.array([1.0, 3.0, 11.0]),
        "io_start": np.array([1.0, 3.0, 11.0]),
        "io_end": np.array([2.0, 4.0, 12.0]),
        "remaining_begin": np.full(3, NAN),
        "remaining_end": np.full(3, NAN),
        "bandwidth": 1.0,
        "window": (0.0, 20.0),
    }


def check_metrics(arguments, result):
    assert result == pytest.approx((0.075, 13.076696830622023, 10.0), rel=1e-12)  # replay_phases' own metrics


def requests_call():
    """Three requests of two classes under fcfs: 2, 1 and 1 bytes arriving at 0, 0 and 1 s."""
    return {
        "scheduler": "fcfs",
        "arrival": np.array([0.0, 0.0, 1.0]),
        "size": np.array([2.0, 1.0, 1.0]),
        "offset": np.array([0, 2, 3]),
        "cls": np.array([0, 0, 1], np.int32),
        "stream": np.zeros(3, np.int32),
        "server": np.zeros(3, np.int32),
        "phase": np.full(3, -1, np.int32),
        "op": np.zeros(3, np.int8),
        "n_classes": 2,
        "n_streams": 1,
        "n_servers": 1,
        "n_phases": 0,
        "device": DEVICE,
        "weight": np.ones(2),
        "reservation": np.zeros(2),
        "limit": np.zeros(2),
        "params": np.zeros(0),
        "dispatch": np.full(3, NAN),
        "complete": np.full(3, NAN),
        "unit": np.full(3, -1),
    }


def check_requests(arguments, result):
    assert result == 3
    assert list(arguments["dispatch"]) == [0, 0, 1]  # fcfs dispatches on arrival
    assert list(arguments["complete"]) == [2, 3, 4]  # the device serves them one at a time
    assert list(arguments["unit"]) == [0, 1, 2]


def trace_call():
    """One job of two phases under fcfs: requests 0 then 1 (1 and 2 bytes, 0.5 s think before 1), then
    1 s of compute, then request 2 (1 byte, 0.25 s think); each request its own part, no client limit."""
    return {
        "scheduler": "fcfs",
        "size": np.array([1.0, 2.0, 1.0]),
        "offset": np.array([0, 1, 3]),
        "cls": np.array([0, 0, 1], np.int32),
        "stream": np.zeros(3, np.int32),
        "server": np.zeros(3, np.int32),
        "phase": np.array([0, 0, 1], np.int32),
        "op": np.zeros(3, np.int8),
        "n_classes": 2,
        "n_streams": 1,
        "n_servers": 1,
        "n_phases": 2,
        "gate": np.array([-1, 0, -1]),
        "think": np.array([0.0, 0.5, 0.25]),
        "prev": np.array([-1, 0], np.int32),
        "gap": np.array([0.0, 1.0]),
        "job": np.zeros(2, np.int32),
        "first": np.arange(3),
        "client_rate": np.zeros(1),
        "device": DEVICE,
        "weight": np.ones(2),
        "reservation": np.zeros(2),
        "limit": np.zeros(2),
        "params": np.zeros(0),
        "release": np.full(3, NAN),
        "dispatch": np.full(3, NAN),
        "complete": np.full(3, NAN),
        "unit": np.full(3, -1),
        "phase_start": np.full(2, NAN),
        "phase_end": np.full(2, NAN),
        "served": np.full(3, NAN),
    }


def check_trace(arguments, result):
    assert result == 3
    # request 1 waits for request 0 (ends at 1) + 0.5; phase 1 opens 1 s after phase 0 ends (3.5)
    assert list(arguments["release"]) == [0, 1.5, 4.75]
    assert list(arguments["complete"]) == [1, 3.5, 5.75]
    assert list(arguments["phase_start"]) == [0, 4.5] and list(arguments["phase_end"]) == [3.5, 5.75]
    if arguments.get("served") is not None:
        assert list(arguments["served"]) == [0, 1.5, 4.75]  # the device is idle at each release


def gates_call():
    """Group 0 never has two requests in flight (one ending as the next starts), group 1 has one request."""
    return {
        "group": np.array([0, 0, 1, 0], np.int32),
        "n_groups": 2,
        "start": np.array([0.0, 1.0, 1.5, 2.0]),
        "end": np.array([1.0, 2.0, 3.0, 3.0]),
        "gate": np.full(4, -2),
    }


def check_gates(arguments, result):
    assert result is None
    assert list(arguments["gate"]) == [-1, 0, -1, 1]


class Entry(NamedTuple):
    make: Callable[[], dict]  # a valid call's arguments
    check: Callable[[dict, object], None]  # asserts its result and outputs
    outputs: set[str]  # the arrays it fills
    sizer: str  # the array whose length sets n_requests or n_jobs
    optional: frozenset[str] = frozenset()  # the arrays it may go without


ENTRIES = {
    "replay_phases": Entry(phases_call, check_phases, {"cpu_start", "cpu_end", "io_start", "io_end"}, "release"),
    "phase_metrics": Entry(metrics_call, check_metrics, set(), "phase_ptr"),
    "replay_requests": Entry(requests_call, check_requests, {"dispatch", "complete", "unit"}, "arrival"),
    "replay_trace": Entry(
        trace_call,
        check_trace,
        {"release", "dispatch", "complete", "unit", "phase_start", "phase_end", "served"},
        "size",
        frozenset({"first", "client_rate", "served"}),
    ),
    "chain_gates": Entry(gates_call, check_gates, {"gate"}, "group"),
}
ARRAYS = [(entry, name) for entry in ENTRIES for name, v in ENTRIES[entry].make().items() if isinstance(v, np.ndarray)]
OUTPUTS = [(entry, name) for entry in ENTRIES for name in sorted(ENTRIES[entry].outputs)]


def call(entry, arguments):
    return getattr(_engine, entry)(**arguments)


def as_array_module(arguments, keep=()):
    """The arguments with every numpy array but ``keep`` copied into an array.array, which cannot grow
    while a buffer of it is exported."""
    codes = {"float64": "d", "int64": "q", "int32": "i", "int8": "b"}
    return {
        name: array.array(codes[v.dtype.name], v.tolist()) if isinstance(v, np.ndarray) and name not in keep else v
        for name, v in arguments.items()
    }


def assert_no_buffer_held(arguments):
    for value in arguments.values():
        if isinstance(value, array.array):
            value.append(0)  # BufferError if the engine still held it


@pytest.mark.parametrize("entry", ENTRIES)
def test_the_valid_call_gives_the_hand_computed_result_and_releases_its_buffers(entry):
    make, check = ENTRIES[entry].make, ENTRIES[entry].check
    arguments = make()
    check(arguments, call(entry, arguments))
    held = as_array_module(make())
    check(held, call(entry, held))
    assert_no_buffer_held(held)


@pytest.mark.parametrize("entry", ENTRIES)
def test_keywords_in_any_order_give_the_same_result(entry):
    make, check = ENTRIES[entry].make, ENTRIES[entry].check
    arguments = make()
    check(arguments, call(entry, dict(reversed(arguments.items()))))


@pytest.mark.parametrize("entry", ENTRIES)
def test_read_only_inputs_are_accepted(entry):
    arguments = ENTRIES[entry].make()
    for name, value in arguments.items():
        if isinstance(value, np.ndarray) and name not in ENTRIES[entry].outputs:
            value.setflags(write=False)  # as polars' to_numpy() often returns them
    ENTRIES[entry].check(arguments, call(entry, arguments))


@pytest.mark.parametrize("entry", ENTRIES)
def test_the_signature_the_stub_and_the_valid_call_name_the_same_keyword_only_arguments(entry):
    parameters = inspect.signature(getattr(_engine, entry)).parameters  # from the C docstring
    assert {p.kind for p in parameters.values()} == {inspect.Parameter.KEYWORD_ONLY}
    stub = ast.parse((Path(_engine.__file__).parent / "_engine.pyi").read_text())
    (function,) = [node for node in stub.body if isinstance(node, ast.FunctionDef) and node.name == entry]
    assert not function.args.args and [a.arg for a in function.args.kwonlyargs] == list(parameters)
    assert list(ENTRIES[entry].make()) == list(parameters)


@pytest.mark.parametrize(("entry", "name"), ARRAYS)
def test_a_wrong_dtype_is_named_and_releases_the_other_buffers(entry, name):
    arguments = as_array_module(ENTRIES[entry].make(), keep={name})
    given = arguments[name]
    wrong = np.float32 if given.dtype == np.float64 else np.float64
    arguments[name] = given.astype(wrong)
    with pytest.raises(TypeError) as info:
        call(entry, arguments)
    expected = f"{entry}: '{name}' must be {given.dtype.name} of length "
    assert str(info.value).startswith(expected)
    assert str(info.value).endswith(f", got {np.dtype(wrong).name} of length {given.size}")
    assert_no_buffer_held(arguments)


@pytest.mark.parametrize(("entry", "name"), ARRAYS)
def test_a_wrong_length_is_named_with_the_length_expected(entry, name):
    arguments = ENTRIES[entry].make()
    given = arguments[name]
    arguments[name] = np.append(given, given[:1] if given.size else 0).astype(given.dtype)
    with pytest.raises(ValueError) as info:
        call(entry, arguments)
    message = str(info.value)
    if name == ENTRIES[entry].sizer:  # its length sets the size: the next array that follows it is refused
        assert re.fullmatch(
            rf"{entry}: '\w+' must be \w+ of length \w+=\d+ \(the (length|last item) of '{name}'\), got .*", message
        )
    else:
        assert message.startswith(f"{entry}: '{name}' must be {given.dtype.name} of length ")
        assert message.endswith(f", got {given.dtype.name} of length {given.size + 1}")


@pytest.mark.parametrize(("entry", "name"), [(e, n) for e, n in ARRAYS if ENTRIES[e].make()[n].size > 1])
def test_a_strided_array_is_named(entry, name):
    arguments = ENTRIES[entry].make()
    arguments[name] = np.repeat(arguments[name], 2)[::2]  # same values, every other item
    with pytest.raises(ValueError, match=rf"^{entry}: '{name}' must be a C-contiguous 1-d array, got a non-contiguous"):
        call(entry, arguments)


@pytest.mark.parametrize(("entry", "name"), OUTPUTS)
def test_a_read_only_output_is_named(entry, name):
    arguments = ENTRIES[entry].make()
    arguments[name].setflags(write=False)
    message = f"{entry}: '{name}' is an output and must be writable, got a read-only array"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call(entry, arguments)


@pytest.mark.parametrize(
    ("entry", "name"), [(e, n) for e in ENTRIES for n in ENTRIES[e].make() if n not in ENTRIES[e].optional]
)
def test_a_missing_keyword_is_named(entry, name):
    arguments = ENTRIES[entry].make()
    del arguments[name]
    with pytest.raises(TypeError, match=f"^{entry}: missing keyword argument '{name}'$"):
        call(entry, arguments)


@pytest.mark.parametrize(("entry", "name"), [(e, n) for e in ENTRIES for n in sorted(ENTRIES[e].optional)])
def test_an_optional_array_left_out_or_none_gives_the_same_result(entry, name):
    for left_out in (True, False):
        arguments = ENTRIES[entry].make()
        if left_out:
            del arguments[name]
        else:
            arguments[name] = None
        ENTRIES[entry].check(arguments, call(entry, arguments))


@pytest.mark.parametrize("entry", ENTRIES)
def test_an_unknown_keyword_and_a_positional_call_are_refused(entry):
    arguments = ENTRIES[entry].make()
    with pytest.raises(TypeError, match=f"^{entry}: unknown keyword argument 'n_request'$"):
        call(entry, arguments | {"n_request": 3})
    with pytest.raises(TypeError, match=f"^{entry}: takes keyword arguments only, got {len(arguments)} positional$"):
        getattr(_engine, entry)(*arguments.values())


def test_a_2d_array_and_a_non_buffer_are_named():
    arguments = requests_call()
    with pytest.raises(ValueError, match="^replay_requests: 'complete' must be a C-contiguous 1-d array, got a 2-d"):
        call("replay_requests", arguments | {"complete": np.zeros((3, 1))})
    expected = r"^replay_requests: 'weight' must be float64 of length n_classes=2, got list$"
    with pytest.raises(TypeError, match=expected):
        call("replay_requests", arguments | {"weight": [1.0, 1.0]})


@pytest.mark.parametrize(
    ("entry", "change", "error", "message"),
    [
        ("replay_trace", {"n_phases": -1}, ValueError, "'n_phases' must be an int in [0, 2147483647], got -1"),
        ("replay_trace", {"n_classes": 2.0}, TypeError, "'n_classes' must be an int in [0, 2147483647], got 2.0"),
        (
            "chain_gates",
            {"n_groups": 2**31},
            ValueError,
            "'n_groups' must be an int in [0, 2147483647], got 2147483648",
        ),
        ("replay_phases", {"bandwidth": "fast"}, TypeError, "'bandwidth' must be a float, got 'fast'"),
        (
            "replay_phases",
            {"window": (0.0,)},
            TypeError,
            "'window' must be a pair of floats (T_begin, T_end), got (0.0,)",
        ),
        ("phase_metrics", {"window": 20.0}, TypeError, "'window' must be a pair of floats (T_begin, T_end), got 20.0"),
        ("replay_requests", {"scheduler": "lottery"}, ValueError, "unknown scheduler 'lottery'"),
        ("replay_requests", {"scheduler": b"fcfs"}, TypeError, "'scheduler' must be a scheduler's name, got b'fcfs'"),
        (
            "replay_requests",
            {"device": (1, 1.0, 0.0, 0.0, 0.0)},
            TypeError,
            "'device' must have queue_depth, bandwidth, overhead, seek and iops (a Device), got tuple without "
            "'queue_depth'",
        ),
        (
            "replay_trace",
            {"device": SimpleNamespace(queue_depth=2**31, bandwidth=1.0, overhead=0.0, seek=0.0, iops=0.0)},
            ValueError,
            "'device.queue_depth' must be an int in [1, 2147483647], got 2147483648",
        ),
        (
            "replay_trace",
            {"device": SimpleNamespace(queue_depth=1, bandwidth=None, overhead=0.0, seek=0.0, iops=0.0)},
            TypeError,
            "'device.bandwidth' must be a float, got None",
        ),
        (
            "replay_requests",
            {"params": np.zeros(1)},
            ValueError,
            "'params' must be float64 of length n_params=0 (the parameters of 'fcfs'), got float64 of length 1",
        ),
        (
            "replay_phases",
            {"phase_ptr": np.array([0, 2, 2, 3])},
            ValueError,
            "'phase_ptr' must be int64 of length n_jobs + 1=3 (n_jobs=2, the length of 'release'), got int64 of "
            "length 4",
        ),
        (
            "phase_metrics",
            {"phase_ptr": np.array([0, 4, 3])},
            ValueError,
            "'phase_ptr' offsets must not decrease (job 1)",
        ),
    ],
)
def test_a_bad_scalar_or_rule_is_named(entry, change, error, message):
    arguments = ENTRIES[entry].make() | change
    with pytest.raises(error, match=f"^{re.escape(f'{entry}: {message}')}$"):
        call(entry, arguments)


def test_the_device_is_read_by_name_and_checked_by_the_engine_as_before():
    arguments = requests_call()
    deepest = Device(queue_depth=2**31 - 1, bandwidth=1.0, overhead=0.0, seek=0.0)
    assert call("replay_requests", arguments | {"device": deepest}) == 3
    assert list(arguments["complete"]) == [2, 3, 4]
    fields = dict(queue_depth=1, bandwidth=1.0, overhead=0.0, seek=0.0, iops=0.0)
    stopped = SimpleNamespace(**fields | {"bandwidth": 0.0})  # Device refuses it
    with pytest.raises(ReplayError, match="^device: queue_depth >= 1, bandwidth > 0"):
        call("replay_requests", requests_call() | {"device": stopped})
    with pytest.raises(
        ValueError, match=r"^replay_requests: 'device.queue_depth' must be an int in \[1, 2147483647\], got 0$"
    ):
        call("replay_requests", requests_call() | {"device": SimpleNamespace(**fields | {"queue_depth": 0})})


def test_swapped_arrays_of_one_dtype_are_refused_by_length_or_read_by_their_names():
    arguments = trace_call()
    # think (n_requests=3) and gap (n_phases=2) swapped: the first one read is refused by name and length
    swapped = arguments | {"think": arguments["gap"], "gap": arguments["think"]}
    expected = (
        "replay_trace: 'think' must be float64 of length n_requests=3 (the length of 'size'), got float64 of length 2"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        call("replay_trace", swapped)
    # size and think, both float64 of n_requests, swapped: each is read as what its name says
    swapped = trace_call()
    swapped["size"], swapped["think"] = swapped["think"], swapped["size"]
    assert call("replay_trace", swapped) == 3
    # request 0 is released at 1 s (think 1) and moves 0 bytes, request 1 waits 2 s after it, request 2
    # 1 s after its phase opens (3.5 + 1)
    assert list(swapped["release"]) == [1, 3, 5.5]
    assert list(swapped["release"]) != [0, 1.5, 4.75]  # the correct call's (check_trace)


@pytest.mark.parametrize(
    ("entry", "change", "error", "message"),
    [
        ("phase_metrics", {"phase_ptr": np.array([0, 4, 3])}, ValueError, "offsets must not decrease"),
        ("chain_gates", {"group": np.array([0, 0, 2, 0], np.int32)}, ValueError, "request 2: group out of range"),
        ("replay_phases", {"t_cpu": np.array([1.0, -1.0, 1.0])}, ReplayError, r"t_cpu must be .* \(phase 1\)"),
        ("replay_requests", {"size": np.array([2.0, -1.0, 1.0])}, ReplayError, r"size must be .* \(request 1\)"),
        ("replay_trace", {"gate": np.array([-1, 2, -1])}, ReplayError, r"earlier request of its phase.* \(request 1\)"),
    ],
)
def test_an_error_in_the_data_releases_every_buffer(entry, change, error, message):
    arguments = as_array_module(ENTRIES[entry].make() | change)
    with pytest.raises(error, match=message):
        call(entry, arguments)
    assert_no_buffer_held(arguments)
