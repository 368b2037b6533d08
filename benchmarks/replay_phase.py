"""Phase-level replay speed: iosets' C engine against SimGrid on one Fig. 6 workload.

Replays a Fig. 6 workload (60 jobs, h = 20000 s, n_H = 20) under each policy,
prints events/s and ms per replay (target: < 20 ms per policy on one core),
then, if Debian's python3-simgrid can be installed (benchmarks/setup_simgrid.sh),
replays the same resolved workload in SimGrid (benchmarks/simgrid_phase.py) and
prints the speed ratio, the largest io_end difference and both engines' metrics
(FAIR-SHARE and SHARE+PRIORITY are chaotic: compare them through metrics).

Usage: .venv/bin/python benchmarks/replay_phase.py [--no-simgrid] [--repeat N]
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from iosets.datasets import figure_seed, make_figure_workload
from iosets.replay import assign_policy, replay_phases
from iosets.replay._experiments import REFERENCE_POLICIES
from iosets.replay._metrics import workload_metrics
from iosets.workload import write_workload

HERE = Path(__file__).parent


def time_iosets(workload, policy: str, repeat: int) -> tuple[float, object]:
    """Best wall time of ``repeat`` replays (s) and the last result."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = replay_phases(workload, policy)
        best = min(best, time.perf_counter() - start)
    return best, result


def simgrid_metrics(workload, io_start, io_end):
    """Metrics of a SimGrid timeline (phases cut by the window: progress interpolated linearly)."""
    job = workload.phases["job"].to_numpy()
    t_cpu = workload.phases["t_cpu"].to_numpy()
    io_bytes = workload.phases["io_bytes"].to_numpy()
    offsets = workload.phase_offsets()
    prev_end = np.concatenate(([np.nan], io_end[:-1]))
    cpu_start = np.where(np.arange(job.size) == offsets[job], workload.jobs["release"].to_numpy()[job], prev_end)
    cpu_end = cpu_start + t_cpu
    duration = np.maximum(io_end - io_start, 1e-300)
    remaining = tuple(io_bytes * np.clip((io_end - t) / duration, 0, 1) for t in workload.window)
    return workload_metrics(workload, cpu_start, cpu_end, io_start, io_end, remaining)


def run_simgrid(workload, policy: str, folder: Path) -> dict:
    """Replay the workload resolved under ``policy`` in SimGrid; returns its JSON output."""
    resolved = workload.with_assignment(*assign_policy(workload, policy))
    source = write_workload(resolved, folder / f"{policy}.json")
    target = folder / f"{policy}.out.json"
    run = subprocess.run(
        ["/usr/bin/python3", str(HERE / "simgrid_phase.py"), str(source), str(target)], capture_output=True, text=True
    )
    if run.returncode != 0:
        raise SystemExit(f"simgrid_phase.py failed on {policy}:\n{run.stderr}")
    return json.loads(target.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-simgrid", action="store_true", help="skip the SimGrid comparison")
    parser.add_argument("--repeat", type=int, default=20, help="replays per policy (best is kept)")
    args = parser.parse_args()

    workload = make_figure_workload("fig6", 20, random_state=figure_seed("fig6", 20, 0))
    print(f"Fig. 6 workload: {workload.n_jobs} jobs, {workload.phases.height} phases, h = {workload.horizon:.0f} s")
    with_simgrid = not args.no_simgrid and subprocess.run(["bash", str(HERE / "setup_simgrid.sh")]).returncode == 0
    if not with_simgrid:
        print("SimGrid comparison skipped")

    header = f"{'policy':<15} {'events':>7} {'ms/replay':>9} {'Mevents/s':>9}"
    if with_simgrid:
        header += f" {'SimGrid s':>9} {'speedup':>8} {'max|d io_end| s':>15}  metrics iosets | SimGrid (U, IOS, MS)"
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for policy in REFERENCE_POLICIES:
            seconds, result = time_iosets(workload, policy, args.repeat)
            line = f"{policy:<15} {result.n_events:>7} {seconds * 1e3:>9.2f} {result.n_events / seconds / 1e6:>9.2f}"
            if with_simgrid:
                sg = run_simgrid(workload, policy, Path(tmp))
                sg_start = np.concatenate([np.asarray(v, dtype=float) for v in sg["io_start"]])
                sg_end = np.concatenate([np.asarray(v, dtype=float) for v in sg["io_end"]])
                diff = np.max(np.abs(sg_end - result.timeline["io_end"].to_numpy()))
                mine, theirs = result.metrics, simgrid_metrics(workload, sg_start, sg_end)
                line += (
                    f" {sg['wall_seconds']:>9.2f} {sg['wall_seconds'] / seconds:>7.0f}x {diff:>15.3g}"
                    f"  {mine.utilization:.4f} {mine.io_slowdown:.3f} {mine.max_stretch:.4f}"
                    f" | {theirs.utilization:.4f} {theirs.io_slowdown:.3f} {theirs.max_stretch:.4f}"
                )
            print(line, flush=True)
    print("target: < 20 ms per policy (anchor: SimGrid 0.5-11 s per policy)")


if __name__ == "__main__":
    sys.exit(main())
