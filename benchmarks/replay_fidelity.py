"""Trace replay fidelity on real logs: each log calibrated on itself, the error on what the fit did not see.

For each real Darshan log with DXT (the shared LBNL logs, /work/shared/data/darshan, and the darshan wheel's
example logs): its site trace (``site_trace``), ``calibrate`` with cross-validation (folds of jobs, or of
phases for one job), and the replay of each job alone on the fitted device. Printed per log: requests, phases,
the fitted device, the in-sample and held-out median and p90 of ``|replayed / recorded - 1|`` over phases, and
the model check (replayed-alone / recorded runtime). The README's "Trace replay" table is this output.

Usage: .venv/bin/python benchmarks/replay_fidelity.py [LOG ...]
"""

import sys
import time
from pathlib import Path

from iosets.analyzer import site_trace
from iosets.replay import calibrate, model_check, replay_trace

SHARED = Path("/work/shared/data/darshan")  # where the project's machines keep them, as the other tests do
WHEEL_LOGS = ("examples/example_logs/dxt.darshan", "examples/example_logs/ior_hdf5_example.darshan")


def default_logs() -> list[Path]:
    """The shared LBNL logs and the darshan wheel's example logs with DXT segments of several phases."""
    import darshan

    wheel = Path(darshan.__file__).parent
    return sorted(SHARED.glob("*.darshan")) + [wheel / name for name in WHEEL_LOGS]


def fidelity(path: Path) -> dict:
    """One log's calibration and model check."""
    requests = site_trace([path], workers=1).requests
    begin = time.perf_counter()
    fitted = calibrate(requests)
    seconds = time.perf_counter() - begin
    check = model_check(replay_trace(requests, device=fitted.device).jobs)
    return {
        "log": path.name,
        "requests": requests.height,
        "phases": fitted.n_phases if fitted.units == "phases" else f"{fitted.n_phases} ranks",
        "device": fitted.device,
        "in_sample": fitted.error["phase_median"],
        "held_out": fitted.held_out,
        "by": fitted.held_out_by,
        "alone_ratio": check.jobs["alone_ratio"].to_list(),
        "seconds": seconds,
    }


def limit_text(device) -> str:
    """The device's rate limit, if it has one."""
    return f", limit {device.rate / 1e6:.0f} MB/s, burst {device.burst / 1e6:.1f} MB" if device.rate else ""


def main(paths: list[Path]) -> None:
    print("| log | requests | phases | device (per target) | fit median | held-out median | held-out p90 |", end="")
    print(" alone / recorded |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    for path in paths:
        row = fidelity(path)
        device, held = row["device"], row["held_out"]
        ratios = ", ".join(f"{ratio:.2f}" for ratio in row["alone_ratio"])
        print(
            f"| `{row['log']}` | {row['requests']} | {row['phases']} | {device.bandwidth / 1e6:.0f} MB/s, "
            f"{device.overhead * 1e6:.0f} us, seek {device.seek * 1e3:.2f} ms, concurrency {device.concurrency}"
            f"{limit_text(device)} | "
            f"{row['in_sample']:.1%} | {held['median']:.1%} | {held['p90']:.1%} | {ratios} |"
        )
        print(
            f"  ({row['seconds']:.1f} s to calibrate, held out by {row['by']}, {held['folds']:.0f} folds)",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main([Path(arg) for arg in sys.argv[1:]] or default_logs())
