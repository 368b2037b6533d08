"""Period detection: iosets against FTIO (the anchor) on the same synthetic traces, in one process.

For each duty cycle (1, 2, 5, 10, 25, 50 %) it generates jittered periodic traces (w_iter 2..1000 s, +-30 % jitter
on phase spacing and length, 1..128 ranks) and prints, per tool, the detection rate and the median relative error
of w_iter, then the share of Poisson traces declared periodic, then the speed.

Speed is the ratio FTIO time / iosets time per trace, each tool timed as the best of ``--repeat`` runs on the same
trace, one right after the other. The anchor is "FTIO same bins": FTIO gets the bandwidth signal iosets builds
(same bins, ``-f 1/bin``) and is timed on its analysis only, while iosets is timed from the requests table (signal
construction included). Also shown: FTIO at its default 10 Hz sampling, and one long trace (600 k samples at 10 Hz).

Usage: python benchmarks/periodicity.py [--traces N] [--repeat R] [--per-trace]   (pip install ftio-hpc)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import time

import numpy as np

from iosets.analyzer import bandwidth_signal, periodicity
from iosets.datasets import make_periodic_requests

DUTIES = (0.01, 0.02, 0.05, 0.10, 0.25, 0.50)
ANCHOR = "FTIO same bins"

try:  # the anchor
    from ftio.cli.ftio_core import core as _ftio_core
    from ftio.parse.args import parse_args as _ftio_args

    FTIO_WHY = None
except Exception as exc:  # noqa: BLE001 - any import failure means: run iosets alone
    _ftio_core = _ftio_args = None
    FTIO_WHY = f"FTIO not usable ({type(exc).__name__}: {exc}); pip install ftio-hpc to compare"


def _signal(ops):
    """The binned bandwidth signal iosets builds from ``ops`` (time of each bin, bytes/s, bin width, bytes)."""
    bw, dt = bandwidth_signal(ops)
    return np.arange(len(bw)) * dt, bw, dt, int(ops["size"].sum())


def _best(run, repeat):
    """Result of ``run()`` and its best time (s) over ``repeat`` runs."""
    best = math.inf
    for _ in range(repeat):
        t_start = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - t_start)
    return out, best


def _ftio(t, bw, total, ranks, freq, repeat=1):
    """FTIO's period (s) or None, and its best time (s) over ``repeat`` runs."""
    args = _ftio_args(["-e", "no", "-f", repr(freq)], "ftio")
    data = {"time": t, "bandwidth": bw, "total_bytes": total, "ranks": ranks}
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        (pred, _), elapsed = _best(lambda: _ftio_core(data, args), repeat)
    f = pred.get_dominant_freq()
    return (None if f is None or not np.isfinite(f) or f <= 0 else 1.0 / f), elapsed


def _iosets(ops, repeat=1):
    """iosets' period (s) or None, and its best time (s) over ``repeat`` runs."""
    res, elapsed = _best(lambda: periodicity(ops), repeat)
    return res.w_iter, elapsed


def _err(w, truth):
    return "none" if w is None else f"{100 * abs(w - truth) / truth:.3f} %"


def _accuracy(tools, per_duty, repeat, rng):
    """Detection and w_iter errors per tool and duty cycle, and per-trace timings."""
    acc = {tool: {d: ([], []) for d in DUTIES} for tool in tools}
    speed = []
    for duty in DUTIES:
        for _ in range(per_duty):
            w = float(np.exp(rng.uniform(math.log(2.0), math.log(1000.0))))
            ranks = int(rng.choice((1, 4, 16, 128)))
            n_phases = int(rng.integers(8, 31))
            seed = int(rng.integers(2**31))
            ops, truth = make_periodic_requests(w, duty, ranks, n_phases=n_phases, random_state=seed)
            found = {"iosets": _iosets(ops, repeat)}
            if _ftio_core is not None:
                t, bw, dt, total = _signal(ops)
                found[ANCHOR] = _ftio(t, bw, total, ranks, 1.0 / dt, repeat)
                found["FTIO 10 Hz"] = _ftio(t, bw, total, ranks, 10.0, repeat)
                speed.append((duty, w, len(ops), len(bw), int(t[-1] * 10), *(found[k][1] for k in tools)))
            for tool, (w_found, _) in found.items():
                hits, errors = acc[tool][duty]
                hits.append(w_found is not None)
                if w_found is not None:
                    errors.append(abs(w_found - truth["w_iter"]) / truth["w_iter"])
    return acc, speed


def _print_accuracy(tools, acc, per_duty):
    head = f"{per_duty} traces per duty cycle (w_iter 2..1000 s, +-30 % jitter, 1..128 ranks)"
    for tool in tools:
        print(f"\n{tool}: {head}")
        print("  duty |  detect  | median rel. err")
        for duty in DUTIES:
            hits, errors = acc[tool][duty]
            med = 100.0 * np.median(errors) if errors else float("nan")
            print(f"{100 * duty:5.0f}% | {100.0 * np.mean(hits):6.1f} % | {med:9.3f} %")


def _poisson(tools, n_traces, rng):
    """Share of Poisson-burst traces each tool declares periodic (it should say 'not periodic')."""
    false_pos = {tool: 0 for tool in tools}
    for i in range(n_traces):
        w = float(np.exp(rng.uniform(math.log(2.0), math.log(1000.0))))
        ops, _ = make_periodic_requests(w, DUTIES[i % 4], 4, n_phases=20, poisson=True, random_state=i)
        false_pos["iosets"] += _iosets(ops)[0] is not None
        if _ftio_core is not None:
            t, bw, dt, total = _signal(ops)
            false_pos[ANCHOR] += _ftio(t, bw, total, 4, 1.0 / dt)[0] is not None
            false_pos["FTIO 10 Hz"] += _ftio(t, bw, total, 4, 10.0)[0] is not None
    print(f"\nPoisson bursts ({n_traces} traces), declared periodic:")
    for tool in tools:
        print(f"  {tool:>15}: {100.0 * false_pos[tool] / n_traces:5.1f} %")


def _print_speed(speed, repeat, per_trace):
    rows = np.array([row[3:] for row in speed])  # bins, 10 Hz samples, iosets s, FTIO bins s, FTIO 10 Hz s
    duty = np.array([row[0] for row in speed])
    print(f"\nspeed per trace: FTIO time / iosets time, each the best of {repeat} runs on the same trace")
    print("(iosets from the requests table; FTIO on iosets' signal, its analysis only)")
    if per_trace:
        print(
            "  duty |  w_iter s | requests |   bins  | 10Hz smp | iosets ms |"
            " FTIO bins ms | ratio | FTIO 10Hz ms | ratio"
        )
        for d, w, n_req, n_bins, n_10, t_io, t_fb, t_f10 in speed:
            print(
                f"{100 * d:5.0f}% | {w:9.2f} | {n_req:8d} | {n_bins:7d} | {n_10:8d} | {1e3 * t_io:9.2f} | "
                f"{1e3 * t_fb:12.1f} | {t_fb / t_io:4.1f}x | {1e3 * t_f10:12.1f} | {t_f10 / t_io:5.1f}x"
            )
    print("  duty | median bins | iosets ms | FTIO bins ms | median ratio")
    for d in DUTIES:
        r = rows[duty == d]
        print(
            f"{100 * d:5.0f}% | {np.median(r[:, 0]):11.0f} | {1e3 * np.median(r[:, 2]):9.2f} | "
            f"{1e3 * np.median(r[:, 3]):12.2f} | {np.median(r[:, 3] / r[:, 2]):11.1f}x"
        )
    for col, name in ((3, f"{ANCHOR} (anchor)"), (4, "FTIO 10 Hz")):
        r = rows[:, col] / rows[:, 2]
        print(
            f"speed ratio {name} / iosets over {len(r)} traces: median {np.median(r):.1f}x, "
            f"p10 {np.percentile(r, 10):.1f}x, min {r.min():.1f}x, max {r.max():.1f}x"
        )


def _long_trace(repeat):
    """The speed anchor: a long trace sampled by FTIO at its default 10 Hz (600 k samples)."""
    ops, truth = make_periodic_requests(600.0, 0.01, 16, n_phases=100, random_state=1)
    t, bw, dt, total = _signal(ops)
    w_ft, t_ft = _ftio(t, bw, total, 16, 10.0)
    w_io, t_io = _iosets(ops, repeat)
    print(
        f"\nlong trace ({t[-1]:.0f} s, 1 % duty, {len(ops)} requests): "
        f"FTIO at 10 Hz ({int(t[-1] * 10)} samples) {1e3 * t_ft:.0f} ms, "
        f"error {_err(w_ft, truth['w_iter'])}; iosets {1e3 * t_io:.1f} ms, "
        f"error {_err(w_io, truth['w_iter'])}; FTIO / iosets {t_ft / t_io:.0f}x"
    )


def main(per_duty: int = 20, repeat: int = 3, per_trace: bool = False) -> None:
    rng = np.random.default_rng(2026)
    if FTIO_WHY:
        print(FTIO_WHY)
    tools = ("iosets", ANCHOR, "FTIO 10 Hz") if _ftio_core is not None else ("iosets",)
    acc, speed = _accuracy(tools, per_duty, repeat, rng)
    _print_accuracy(tools, acc, per_duty)
    _poisson(tools, 4 * per_duty, rng)
    if speed:
        _print_speed(speed, repeat, per_trace)
        _long_trace(repeat)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=20, help="traces per duty cycle (default 20)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per tool and trace, best kept (default 3)")
    parser.add_argument("--per-trace", action="store_true", help="also print one speed row per trace")
    args = parser.parse_args()
    main(args.traces, args.repeat, args.per_trace)
