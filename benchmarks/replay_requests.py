"""Request-level replay speed: 10 M synthetic requests per scheduler in one C call.

Targets (docs/benchmarks.md): >= 10 M req/s for fcfs, time-order and wfq; >= 5 M req/s
for rbfq with 1000 clients. Anchor: libCacheSim (PyPI ``libcachesim``) running
FIFO over the same number of requests from a binary oracleGeneral trace, in the
same process; the ratio printed is iosets req/s / libCacheSim req/s. The rate
"with metrics" includes the per-class table. Last, the time per call of
replay_requests on tiny inputs (4 and 10 requests), from a requests table and from a
prepared RequestArrays, against the C engine alone.

Usage: .venv/bin/python benchmarks/replay_requests.py [--requests N] [--no-anchor]
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from iosets.replay import SCHEDULERS, Device, RequestArrays, _engine, replay_requests

TARGETS = {"fcfs": 10e6, "time-order": 10e6, "wfq": 10e6, "rbfq": 5e6}
CLIENTS = {"rbfq": 1000}  # classes per scheduler; 4 otherwise


def synthetic_trace(n: int, n_classes: int, *, seed: int = 0) -> RequestArrays:
    """Poisson arrivals at 95 % of the device's request rate, 4 KiB requests, random classes."""
    rng = np.random.default_rng(seed)
    device_rate = 1e9 / 4096
    arrival = np.cumsum(rng.exponential(1 / (0.95 * device_rate), n))
    cls = rng.integers(0, n_classes, n).astype(np.int32)
    stream = cls.copy()
    offset = rng.integers(0, 1 << 30, n).astype(np.int64) * 4096
    # iosets-wfq: every class issues phases of 1000 requests
    per_class_index = np.empty(n, dtype=np.int64)
    for c in range(n_classes):
        mask = cls == c
        per_class_index[mask] = np.arange(mask.sum())
    phase_key = cls.astype(np.int64) * (n // 1000 + 1) + per_class_index // 1000
    _, phase = np.unique(phase_key, return_inverse=True)
    return RequestArrays(
        arrival=arrival,
        size=np.full(n, 4096.0),
        offset=offset,
        cls=cls,
        stream=stream,
        server=np.zeros(n, np.int32),
        phase=phase.astype(np.int32),
        op=np.zeros(n, np.int8),
        classes=np.arange(n_classes),
        n_streams=n_classes,
        n_servers=1,
        n_phases=int(phase.max()) + 1,
        order=np.arange(n),
    )


def scheduler_arguments(name: str, n_classes: int) -> dict:
    """Weights (and reservations for rbfq) for a scheduler over ``n_classes`` classes."""
    weights = np.arange(1, n_classes + 1, dtype=float)
    if name in ("wfq", "iosets-wfq"):
        weights = weights * 4096
    arguments = {"weights": weights}
    if name == "rbfq":
        arguments["reservations"] = np.full(n_classes, 10.0)
    return arguments


def libcachesim_rate(n: int) -> float | None:
    """libCacheSim FIFO requests/s over ``n`` requests (installs ``libcachesim`` if missing)."""
    try:
        import libcachesim as lcs
    except ImportError:
        install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "libcachesim"])
        if install.returncode != 0:
            return None
        import libcachesim as lcs
    record = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    trace = np.zeros(n, dtype=record)
    trace["time"] = np.arange(n) // 1000
    trace["id"] = np.random.default_rng(1).integers(0, 1 << 20, n)
    trace["size"] = 4096
    trace["next"] = -1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.oracleGeneral.bin"
        trace.tofile(path)
        reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
        cache = lcs.FIFO(cache_size=1 << 30)
        start = time.perf_counter()
        cache.process_trace(reader)
        return n / (time.perf_counter() - start)


def tiny_ops(n: int) -> pl.DataFrame:
    """``n`` 4 KiB requests of two jobs, in pairs 1 ms apart."""
    return pl.DataFrame(
        {
            "job_id": ["a", "b"] * (n // 2),
            "rank": 0,
            "op": ["read", "write"] * (n // 2),
            "offset": np.repeat(np.arange(n // 2) * 4096, 2),
            "size": 4096,
            "start": np.repeat(np.arange(n // 2) * 0.001, 2),
        }
    )


def engine_alone(trace: RequestArrays):
    """The C engine under fcfs on ``trace``, its arguments prepared once."""
    n, n_classes = trace.n, trace.classes.size
    arguments = {
        "arrival": trace.arrival,
        **trace.engine_arrays(),
        "device": Device(),
        **dict(weight=np.ones(n_classes), reservation=np.zeros(n_classes), limit=np.zeros(n_classes)),
        **dict(params=np.empty(0), dispatch=np.empty(n), complete=np.empty(n), unit=np.empty(n, np.int64)),
    }
    return lambda: _engine.replay_requests(scheduler="fcfs", **arguments)


def per_call(call, calls: int = 300, rounds: int = 5) -> float:
    """Best mean time of one call (s) over ``rounds`` rounds of ``calls`` calls."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def tiny_overhead() -> None:
    """Per-call time of replay_requests on tiny inputs against the C engine alone."""
    for n in (4, 10):
        ops = tiny_ops(n)
        trace = RequestArrays.from_ops(ops)
        times = {
            "requests table": per_call(lambda o=ops: replay_requests(o, "fcfs")),
            "RequestArrays": per_call(lambda t=trace: replay_requests(t, "fcfs")),
            "engine alone": per_call(engine_alone(trace)),
        }
        print(
            f"replay_requests, {n} requests, per call: " + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in times.items())
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000_000)
    parser.add_argument("--no-anchor", action="store_true", help="skip libCacheSim")
    args = parser.parse_args()

    anchor = None if args.no_anchor else libcachesim_rate(args.requests)
    print(f"{args.requests:,} requests per scheduler, one C call each")
    if anchor:
        print(f"anchor: libCacheSim FIFO {anchor / 1e6:.2f} M req/s")
    print(
        f"{'scheduler':<12} {'classes':>7} {'engine s':>9} {'M req/s':>8} {'target':>9} {'vs libCacheSim':>15}"
        f" {'with metrics M req/s':>21}"
    )
    device = Device(overhead=0.0, seek=0.0)
    traces = {}
    for name in SCHEDULERS:
        n_classes = CLIENTS.get(name, 4)
        trace = traces.get(n_classes) or traces.setdefault(n_classes, synthetic_trace(args.requests, n_classes))
        start = time.perf_counter()
        result = replay_requests(trace, name, device=device, **scheduler_arguments(name, n_classes))
        _ = result.metrics.classes  # built on first access; part of the metrics
        overall = trace.n / (time.perf_counter() - start)
        rate = trace.n / result.engine_seconds
        target = TARGETS.get(name)
        verdict = "" if target is None else ("ok" if rate >= target else "MISS")
        ratio = f"{rate / anchor:.1f}x" if anchor else "-"
        target_text = f"{target / 1e6:.0f}M {verdict}" if target else "-"
        print(
            f"{name:<12} {n_classes:>7} {result.engine_seconds:>9.3f} {rate / 1e6:>8.2f} {target_text:>9} {ratio:>15}"
            f" {overall / 1e6:>21.2f}",
            flush=True,
        )
    tiny_overhead()


if __name__ == "__main__":
    sys.exit(main())
