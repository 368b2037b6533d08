"""Start-up cost of the command line and per-call overhead of the replay entries.

Target (docs/benchmarks.md): ``iosets --help`` and ``iosets replay tiny.json --json`` under 0.3 s of CPU;
anchor: bare ``python -c pass`` (about 0.05 s), run in the same script. Each command runs as a
child process, interleaved with the others over several rounds; its CPU time is the user + system
time of the child (``getrusage(RUSAGE_CHILDREN)`` deltas), reported as median and min and as a
ratio to bare python.

The second part times ``replay_phases`` (2 jobs) and ``replay_requests`` (4 requests) per call
against the C engine alone, called with arrays prepared once the way the Python wrappers prepare
them (iosets/replay/_phase.py and _requests.py): the difference is the Python overhead of a call.

Usage: .venv/bin/python benchmarks/startup.py [--rounds N] [--calls N]
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

TARGET_CPU = 0.3
TINY_WORKLOAD = {
    "bandwidth": 1e9,
    "horizon": 100.0,
    "window": [10.0, 90.0],
    "jobs": [
        {"id": "j0", "release": 0.0, "set": 0, "priority": 1.0, "phases": [[9.0, 1e9], [9.0, 1e9]]},
        {"id": "j1", "release": 1.0, "set": 1, "priority": 0.1, "phases": [[90.0, 1e10]]},
    ],
}


def child_cpu(command: list[str]) -> float:
    """User + system CPU seconds of one run of ``command`` (which must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def startup(rounds: int, tiny: Path) -> None:
    """CPU time of each command, interleaved over ``rounds`` rounds, against bare python."""
    iosets = str(Path(sys.executable).with_name("iosets"))
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import iosets'": [sys.executable, "-c", "import iosets"],
        "iosets --help": [iosets, "--help"],
        "iosets replay tiny.json --json": [iosets, "replay", str(tiny), "--json"],
    }
    for command in commands.values():  # warm the file cache and the bytecode
        child_cpu(command)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, command in commands.items():
            times[name].append(child_cpu(command))
    anchor = statistics.median(times["python -c pass"])
    print(f"CPU time per run, {rounds} interleaved rounds (target < {TARGET_CPU} s for the iosets commands)")
    print(f"{'command':34} {'median s':>9} {'min s':>7} {'x python':>9}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:34} {median:9.3f} {min(values):7.3f} {median / anchor:9.1f}")


def per_call(function: Callable[[], object], calls: int, repeats: int = 5) -> float:
    """Median over ``repeats`` of the mean wall time of one call of ``function``, in seconds."""
    means = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        means.append((time.perf_counter() - start) / calls)
    return statistics.median(means)


def phase_engine_call(workload) -> Callable[[], object]:
    """The C phase engine on ``workload`` under 'explicit', arguments prepared once as replay_phases does."""
    from iosets.replay import _engine
    from iosets.replay._phase import engine_arguments

    arguments, _ = engine_arguments(workload, "explicit")
    _engine.replay_phases(**arguments)  # fails here, not in the timing loop, if the signature changed
    return lambda: _engine.replay_phases(**arguments)


def request_engine_call(ops) -> Callable[[], object]:
    """The C request engine on ``ops`` under fcfs, arguments prepared once as replay_requests does."""
    import numpy as np

    from iosets.replay import SCHEDULER_PARAMS, Device, RequestArrays, _engine

    trace = RequestArrays.from_ops(ops, class_by="job_id")
    n_classes = trace.classes.size
    arguments = {
        "scheduler": "fcfs",
        "arrival": trace.arrival,
        **trace.engine_arrays(),
        "device": Device(),
        "weight": np.ones(n_classes),
        "reservation": np.zeros(n_classes),
        "limit": np.zeros(n_classes),
        "params": np.array(list(SCHEDULER_PARAMS["fcfs"].values()), dtype=np.float64),
        "dispatch": np.full(trace.n, np.nan),
        "complete": np.full(trace.n, np.nan),
        "unit": np.full(trace.n, -1, dtype=np.int64),
    }
    _engine.replay_requests(**arguments)
    return lambda: _engine.replay_requests(**arguments)


def engine_alone(prepare: Callable[[object], Callable[[], object]], data, wrapper: str) -> Callable[[], object] | None:
    """``prepare(data)``, or None with a message when the engine's arguments no longer match this script."""
    try:
        return prepare(data)
    except (AttributeError, ImportError, KeyError, TypeError, ValueError) as exc:
        print(
            f"  engine alone: skipped, the C call no longer matches this script ({type(exc).__name__}: {exc}); "
            f"update {prepare.__name__} from {wrapper}"
        )
        return None


def overhead(calls: int, tiny: Path) -> None:
    """Per-call time of replay_phases and replay_requests on tiny inputs, against the C engine alone."""
    import polars as pl

    from iosets import read_workload
    from iosets.replay import replay_phases, replay_requests

    workload = read_workload(tiny)
    ops = pl.DataFrame(
        {
            "job_id": ["a", "b", "a", "b"],
            "rank": [0, 0, 0, 0],
            "op": ["read", "write", "read", "write"],
            "offset": [0, 0, 4096, 4096],
            "size": [4096, 4096, 4096, 4096],
            "start": [0.0, 0.0, 0.001, 0.001],
        }
    )
    cases = [
        (
            "replay_phases, 2 jobs",
            lambda: replay_phases(workload, "explicit"),
            phase_engine_call,
            workload,
            "_phase.py",
        ),
        ("replay_requests, 4 requests", lambda: replay_requests(ops, "fcfs"), request_engine_call, ops, "_requests.py"),
    ]
    print(f"\nPer call, mean of {calls} calls (median of 5 repeats)")
    for name, full, prepare, data, wrapper in cases:
        full()  # first call: imports and caches
        full_time = per_call(full, calls)
        engine = engine_alone(prepare, data, f"iosets/replay/{wrapper}")
        if engine is None:
            print(f"{name:28} full call {full_time * 1e6:9.1f} us")
            continue
        engine_time = per_call(engine, calls)
        print(
            f"{name:28} full call {full_time * 1e6:9.1f} us   engine alone {engine_time * 1e6:7.1f} us   "
            f"overhead {(full_time - engine_time) * 1e6:9.1f} us ({full_time / engine_time:.0f}x the engine)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved runs of each command")
    parser.add_argument("--calls", type=int, default=2000, help="calls per timing of a replay entry")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tiny = Path(folder) / "tiny.json"
        tiny.write_text(json.dumps(TINY_WORKLOAD))
        startup(args.rounds, tiny)
        overhead(args.calls, tiny)


if __name__ == "__main__":
    main()
