"""Phase-level replay speed: iosets' C engine against SimGrid on one Fig. 6 workload.

Replays a Fig. 6 workload (60 jobs, h = 20000 s, n_H = 20) under each policy,
prints events/s and ms per replay (target: < 20 ms per policy on one core) and
the full Python call's time over the C engine's alone (target: <= 1.3), the two
timed in turn; then, if Debian's python3-simgrid can be installed
(benchmarks/setup_simgrid.sh), replays the same resolved workload in SimGrid
(benchmarks/simgrid_phase.py) and prints the speed ratio, the largest io_end
difference and both engines' metrics (FAIR-SHARE and SHARE+PRIORITY are chaotic:
compare them through metrics). Last, the cost per event of FAIR-SHARE against
SET-10 on an overloaded 6000-job workload (target: within 2x) and the time of a
2-job replay (target: < 100 us).

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

from iosets.datasets import figure_seed, make_figure_workload, make_iosets_workload
from iosets.replay import _engine, assign_policy, replay_phases
from iosets.replay._experiments import REFERENCE_POLICIES
from iosets.replay._phase import engine_arguments
from iosets.replay._phase_metrics import workload_metrics
from iosets.workload import Workload, write_workload

HERE = Path(__file__).parent


def engine_call(workload, policy: str):
    """The C engine alone on ``workload`` under ``policy``, its arguments prepared once as replay_phases does."""
    arguments, _ = engine_arguments(workload, policy)
    return lambda: _engine.replay_phases(**arguments)


def best_of(calls: dict, repeat: int) -> dict:
    """Best wall time (s) of each call over ``repeat`` rounds, the calls taking turns within a round."""
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(repeat):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def overloaded_workload() -> Workload:
    """6000 jobs (2000 per Fig. 6 profile), I/O stress omega = 2, h = 2000 s."""
    profiles = [(2000, 10.0, 1.0), (2000, 100.0, 10.0), (2000, 1000.0, 100.0)]
    return make_iosets_workload(profiles, omega=2.0, horizon=2000.0, window=(600.0, 1400.0), random_state=1)


def fair_share_at_scale(repeat: int) -> None:
    """Engine cost per event of FAIR-SHARE against SET-10 on the overloaded 6000-job workload."""
    workload = overloaded_workload()
    calls = {policy: engine_call(workload, policy) for policy in ("set-10", "fair-share")}
    events = {policy: call()[0] for policy, call in calls.items()}
    best = best_of(calls, repeat)
    per_event = {policy: best[policy] / events[policy] * 1e9 for policy in calls}
    print(
        f"fair-share at {workload.n_jobs} jobs (overloaded): {per_event['fair-share']:.0f} ns/event vs set-10 "
        f"{per_event['set-10']:.0f} ns/event, ratio {per_event['fair-share'] / per_event['set-10']:.2f} (target <= 2)"
    )


def two_job_replay(repeat: int) -> None:
    """Time of a full replay_phases call on 2 jobs of one phase each (the window sees them work)."""
    workload = Workload.from_arrays(
        ["a", "b"],
        [0.0, 0.0],
        np.array([0, 1]),
        [1.0, 1.0],
        [1e9, 1e9],
        set=[0, 1],
        priority=[1.0, 0.5],
        horizon=4.0,
        window=(0.0, 4.0),
    )
    calls = {policy: (lambda p=policy: replay_phases(workload, p)) for policy in ("fair-share", "set-10", "explicit")}
    calls["engine alone"] = engine_call(workload, "explicit")
    best = best_of({name: (lambda c=call: [c() for _ in range(100)]) for name, call in calls.items()}, repeat)
    print("2-job replay (target < 100 us): " + ", ".join(f"{name} {best[name] * 1e4:.1f} us" for name in calls))


def simgrid_metrics(workload, io_start, io_end):
    """Metrics of a SimGrid timeline (phases cut by the window: progress interpolated linearly)."""
    job, offsets = workload.phase_job, workload.offsets
    prev_end = np.concatenate(([np.nan], io_end[:-1]))
    cpu_start = np.where(np.arange(job.size) == offsets[job], workload.release[job], prev_end)
    cpu_end = cpu_start + workload.t_cpu
    duration = np.maximum(io_end - io_start, 1e-300)
    remaining = tuple(workload.io_bytes * np.clip((io_end - t) / duration, 0, 1) for t in workload.window)
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
    print(f"Fig. 6 workload: {workload.n_jobs} jobs, {workload.n_phases} phases, h = {workload.horizon:.0f} s")
    with_simgrid = not args.no_simgrid and subprocess.run(["bash", str(HERE / "setup_simgrid.sh")]).returncode == 0
    if not with_simgrid:
        print("SimGrid comparison skipped")

    header = f"{'policy':<15} {'events':>7} {'ms/replay':>9} {'Mevents/s':>9} {'full/engine':>11}"
    if with_simgrid:
        header += f" {'SimGrid s':>9} {'speedup':>8} {'max|d io_end| s':>15}  metrics iosets | SimGrid (U, IOS, MS)"
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for policy in REFERENCE_POLICIES:
            best = best_of(
                {"full": lambda p=policy: replay_phases(workload, p), "engine": engine_call(workload, policy)},
                args.repeat,
            )
            result, seconds = replay_phases(workload, policy), best["full"]
            line = (
                f"{policy:<15} {result.n_events:>7} {seconds * 1e3:>9.2f} {result.n_events / seconds / 1e6:>9.2f}"
                f" {seconds / best['engine']:>11.2f}"
            )
            if with_simgrid:
                sg = run_simgrid(workload, policy, Path(tmp))
                sg_start = np.concatenate([np.asarray(v, dtype=float) for v in sg["io_start"]])
                sg_end = np.concatenate([np.asarray(v, dtype=float) for v in sg["io_end"]])
                diff = np.max(np.abs(sg_end - result.io_end))
                mine, theirs = result.metrics, simgrid_metrics(workload, sg_start, sg_end)
                line += (
                    f" {sg['wall_seconds']:>9.2f} {sg['wall_seconds'] / seconds:>7.0f}x {diff:>15.3g}"
                    f"  {mine.utilization:.4f} {mine.io_slowdown:.3f} {mine.max_stretch:.4f}"
                    f" | {theirs.utilization:.4f} {theirs.io_slowdown:.3f} {theirs.max_stretch:.4f}"
                )
            print(line, flush=True)
    print("target: < 20 ms per policy, full call <= 1.3x the engine alone (anchor: SimGrid 0.5-11 s per policy)")
    fair_share_at_scale(max(3, args.repeat // 5))
    two_job_replay(max(3, args.repeat // 4))


if __name__ == "__main__":
    sys.exit(main())
