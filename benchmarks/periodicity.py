"""Period detection: iosets against FTIO (anchor) on the same synthetic traces, in one process.

For each duty cycle (1, 2, 5, 10, 25, 50 %) it generates jittered periodic traces (w_iter 2..1000 s, +-30 %
jitter on phase spacing and length, 1..128 ranks) and prints, per duty cycle and per tool, the detection
rate and the median relative error of w_iter, then the speed ratio FTIO time / iosets time per trace.
FTIO gets the bandwidth signal iosets builds (same bins, ``-f 1/bin``) and is timed on its analysis only;
iosets is timed from the ops table (signal construction included). A last row times one long trace with
FTIO at its default 10 Hz sampling (600 k samples).

Usage: python benchmarks/periodicity.py [traces_per_duty_cycle]   (pip install ftio-hpc for the anchor)
"""

from __future__ import annotations

import contextlib
import io
import math
import sys
import time

import numpy as np

from iosets.analyzer import _periodicity as P
from iosets.analyzer._periodicity import _make_periodic_ops, periodicity

DUTIES = (0.01, 0.02, 0.05, 0.10, 0.25, 0.50)

try:  # the anchor
    from ftio.cli.ftio_core import core as _ftio_core
    from ftio.parse.args import parse_args as _ftio_args

    FTIO_WHY = None
except Exception as exc:  # noqa: BLE001 - any import failure means: run iosets alone
    _ftio_core = _ftio_args = None
    FTIO_WHY = f"FTIO not usable ({type(exc).__name__}: {exc}); pip install ftio-hpc to compare"


def _signal(ops):
    """The binned bandwidth signal iosets builds from ``ops`` (time of each bin, bytes/s, bin width)."""
    s = ops["start"].to_numpy()
    e = ops["end"].to_numpy()
    z = ops["size"].to_numpy().astype(np.float64)
    t0 = s.min()
    s, e = s - t0, e - t0
    span = float(e.max())
    run_s, run_e = P._merge(s, e)
    seg = P._segment(run_s, run_e, span, None)
    n = P._auto_bins(span, seg.starts, seg.ends) if seg.clear else P._auto_bins(span, run_s, run_e)
    dt = span / n * (1 + 1e-12)
    return np.arange(n) * dt, P._bin_bandwidth(s, e, z, n, dt), dt, int(z.sum())


def _ftio(t, bw, total, ranks, freq):
    """FTIO's period (s) or None, and its time (s)."""
    args = _ftio_args(["-e", "no", "-f", repr(freq)], "ftio")
    sink = io.StringIO()
    t_start = time.perf_counter()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        pred, _ = _ftio_core({"time": t, "bandwidth": bw, "total_bytes": total, "ranks": ranks}, args)
    elapsed = time.perf_counter() - t_start
    f = pred.get_dominant_freq()
    return (None if f is None or not np.isfinite(f) or f <= 0 else 1.0 / f), elapsed


def _iosets(ops, repeat=3):
    """iosets' period (s) or None, and its best time (s) over ``repeat`` runs."""
    best = math.inf
    for _ in range(repeat):
        t_start = time.perf_counter()
        res = periodicity(ops)
        best = min(best, time.perf_counter() - t_start)
    return res.w_iter, best


def _err(w, truth):
    return "none" if w is None else f"{100 * abs(w - truth) / truth:.3f} %"


def main(per_duty: int = 20) -> None:
    rng = np.random.default_rng(2026)
    if FTIO_WHY:
        print(FTIO_WHY)
    tools = ("iosets", "FTIO same bins", "FTIO 10 Hz") if _ftio_core is not None else ("iosets",)
    acc = {tool: {d: ([], []) for d in DUTIES} for tool in tools}
    speed = []
    for duty in DUTIES:
        for _ in range(per_duty):
            w = float(np.exp(rng.uniform(math.log(2.0), math.log(1000.0))))
            ranks = int(rng.choice((1, 4, 16, 128)))
            n_phases = int(rng.integers(8, 31))
            seed = int(rng.integers(2**31))
            ops, truth = _make_periodic_ops(w, duty, ranks, n_phases=n_phases, random_state=seed)
            found = {"iosets": _iosets(ops)}
            if _ftio_core is not None:
                t, bw, dt, total = _signal(ops)
                found["FTIO same bins"] = _ftio(t, bw, total, ranks, 1.0 / dt)
                found["FTIO 10 Hz"] = _ftio(t, bw, total, ranks, 10.0)
                times = [found[k][1] for k in tools]
                speed.append((duty, w, len(ops), len(bw), int(t[-1] * 10), *times))
            for tool, (w_found, _) in found.items():
                hits, errors = acc[tool][duty]
                hits.append(w_found is not None)
                if w_found is not None:
                    errors.append(abs(w_found - truth["w_iter"]) / truth["w_iter"])
    head = f"{per_duty} traces per duty cycle (w_iter 2..1000 s, +-30 % jitter, 1..128 ranks)"
    for tool in tools:
        print(f"\n{tool}: {head}")
        print("  duty |  detect  | median rel. err")
        for duty in DUTIES:
            hits, errors = acc[tool][duty]
            med = 100.0 * np.median(errors) if errors else float("nan")
            print(f"{100 * duty:5.0f}% | {100.0 * np.mean(hits):6.1f} % | {med:9.3f} %")
    # Poisson bursts: a detector should say 'not periodic'
    false_pos = {tool: 0 for tool in tools}
    n_poisson = 4 * per_duty
    for i in range(n_poisson):
        w = float(np.exp(rng.uniform(math.log(2.0), math.log(1000.0))))
        duty = DUTIES[i % 4]
        ops, _ = _make_periodic_ops(w, duty, 4, n_phases=20, poisson=True, random_state=i)
        false_pos["iosets"] += _iosets(ops, repeat=1)[0] is not None
        if _ftio_core is not None:
            t, bw, dt, total = _signal(ops)
            false_pos["FTIO same bins"] += _ftio(t, bw, total, 4, 1.0 / dt)[0] is not None
            false_pos["FTIO 10 Hz"] += _ftio(t, bw, total, 4, 10.0)[0] is not None
    print(f"\nPoisson bursts ({n_poisson} traces), declared periodic:")
    for tool in tools:
        print(f"  {tool:>15}: {100.0 * false_pos[tool] / n_poisson:5.1f} %")
    if speed:
        print("\nspeed per trace (iosets from the ops table; FTIO on iosets' signal, its analysis only)")
        print(
            "  duty |  w_iter s | requests |   bins  | 10Hz smp | iosets ms |"
            " FTIO bins ms | ratio | FTIO 10Hz ms | ratio"
        )
        for duty, w, n_req, n_bins, n_10, t_io, t_fb, t_f10 in speed:
            print(
                f"{100 * duty:5.0f}% | {w:9.2f} | {n_req:8d} | {n_bins:7d} | {n_10:8d} | "
                f"{1e3 * t_io:9.2f} | {1e3 * t_fb:12.1f} | {t_fb / t_io:4.1f}x | "
                f"{1e3 * t_f10:12.1f} | {t_f10 / t_io:5.1f}x"
            )
        for col, name in ((6, "FTIO same bins"), (7, "FTIO 10 Hz")):
            r = np.array([row[col] / row[5] for row in speed])
            print(f"speed ratio {name} / iosets: median {np.median(r):.1f}x, min {r.min():.1f}x, max {r.max():.1f}x")
        # the DESIGN.md anchor: a long trace sampled by FTIO at its default 10 Hz (600 k samples)
        ops, truth = _make_periodic_ops(600.0, 0.01, 16, n_phases=100, random_state=1)
        t, bw, dt, total = _signal(ops)
        w_ft, t_ft = _ftio(t, bw, total, 16, 10.0)
        w_io, t_io = _iosets(ops)
        print(
            f"\nlong trace ({t[-1]:.0f} s, 1 % duty, {len(ops)} requests): "
            f"FTIO at 10 Hz ({int(t[-1] * 10)} samples) {1e3 * t_ft:.0f} ms, "
            f"error {_err(w_ft, truth['w_iter'])}; iosets {1e3 * t_io:.1f} ms, "
            f"error {_err(w_io, truth['w_iter'])}; FTIO / iosets {t_ft / t_io:.0f}x"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
