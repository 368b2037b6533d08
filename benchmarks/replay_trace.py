"""Closed-loop trace replay: speed and peak memory on 10 M requests, and the Fig. 6 agreement table.

Speed: the Fig. 6 workload (n_H = 20, seed 0: 60 jobs, about 45 000 phases) as a site trace
(``workload_site_requests``) of --requests requests, each phase's requests dealt to --ranks ranks
in turn (each rank then has one request outstanding and thinks while the others write).
``replay_trace`` runs it under fcfs, wfq (a class per job) and iosets-wfq (SET-10's sets and
weights), each run in a fresh child process, the schedulers interleaved, best of --repeat, on two
storage models: one target (bandwidth B, no overhead or seek, one unit at a time; target
>= 5 M req/s) and 64 targets serving 4 units at once (queue depth 4), every file striped over 4 of
them in stripes of twice the request size, so that requests are half a stripe and about half of them
cross a stripe boundary into two parts; a target moves B / 4, so that a job alone writes at B as
the trace recorded it (target >= 3 M req/s).
Printed per storage and scheduler: the C call's rate in recorded requests/s (one core), the whole
call's (trace building, striping and the alone replay included), the peak RSS over the call (VmHWM
of /proc/self/status, reset through clear_refs just before) and the RSS before it, the engine's
parts per request and, on 64 targets, the striping's own rate (``split_requests`` on the recorded
requests); then the anchors, as the issue's benchmarks print them: the open-loop
``replay_requests`` on the same requests (parts) at their recorded dates (C rate, and closed /
open) and the phase engine on the same workload (``replay_phases`` under FAIR-SHARE for fcfs and
wfq, SET-10 for iosets-wfq: time per replay, and closed-loop call / phase engine).

Agreement (issue #13, item 6): Fig. 6, n_H = 20, seeds 0-2, 1 MiB requests, device of
bandwidth B without overhead or seek, queue depth 1: closed-loop iosets-wfq with SET-10
weights against ``replay_phases(.., "set-10")``, and wfq with a class per job against
FAIR-SHARE. Utilization, IO-slowdown and Max Stretch (``trace_metrics`` on the workload's
window) of both scales, their relative difference, and whether it is within the targets
(0.5 %, 2 %, 2 %). Both phase schedulers are chaotic (a compute moved by far less than one request's
service reorders a set's queue), so the seed means are what the targets judge; per seed, the phase
engine's own spread under such noise (sd over 20 copies) and the trace's z-score against it are
printed beside each difference.

Usage: .venv/bin/python benchmarks/replay_trace.py [--requests N] [--ranks R] [--repeat K]
       [--seeds S] [--no-speed] [--no-agreement]
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from iosets.datasets import figure_seed, make_figure_workload, workload_site_requests
from iosets.replay import Device, assign_policy, replay_phases, replay_requests, replay_trace, trace_metrics
from iosets.workload import Workload

SCHEDULERS = ("fcfs", "wfq", "iosets-wfq")
STORAGES = {"1 target": 5e6, "64 targets": 3e6}  # and the target rate of the C call, recorded requests/s
PHASE_POLICY = {"fcfs": "fair-share", "wfq": "fair-share", "iosets-wfq": "set-10"}
TARGETS = {"utilization": 0.005, "io_slowdown": 0.02, "max_stretch": 0.02}
CHAOS_COPIES = 20
CHAOS_NOISE = 1e-5  # relative change of each compute: < 0.1 ms on Fig. 6's 10 s jobs, a 1 MiB request takes 1.05 ms
PAIRS = (("iosets-wfq", "set-10"), ("wfq", "fair-share"))


def fig6(seed: int) -> Workload:
    return make_figure_workload("fig6", 20, random_state=figure_seed("fig6", 20, seed))


def device_of(workload: Workload) -> Device:
    return Device(queue_depth=1, bandwidth=workload.bandwidth, overhead=0.0, seek=0.0)


def striped_device_of(workload: Workload, request_size: int) -> Device:
    """64 targets of B / 4 (a file over 4 of them moves at B), 4 units at once, stripes of twice ``request_size``."""
    return Device(
        queue_depth=4,
        bandwidth=workload.bandwidth / 4,
        overhead=0.0,
        seek=0.0,
        targets=64,
        concurrency=4,
        stripe_size=2 * request_size,
        stripe_count=4,
    )


def storage_device(workload: Workload, storage: str, ops: pl.DataFrame) -> Device:
    return device_of(workload) if storage == "1 target" else striped_device_of(workload, int(ops["size"].max()))


def scheduler_arguments(workload: Workload, scheduler: str) -> dict:
    """iosets-wfq: SET-10's sets as classes, their priorities as weights; otherwise a class per job."""
    if scheduler != "iosets-wfq":
        return {}
    sets, priorities = assign_policy(workload, "set-10")
    return {
        "classes": dict(zip(workload.ids, sets.tolist(), strict=True)),
        "weights": dict(zip(sets.tolist(), priorities.tolist(), strict=False)),
    }


def speed_trace(workload: Workload, n_requests: int, ranks: int) -> pl.DataFrame:
    """``workload`` as about ``n_requests`` requests, each phase's dealt to ``ranks`` ranks in turn."""
    size = max(int(workload.io_bytes.sum() // n_requests), 1)
    ops = workload_site_requests(workload, request_size=size)
    return ops.with_columns((pl.int_range(pl.len()).over("job_id", "phase") % ranks).alias("rank"))


def memory_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def split_seconds(ops: pl.DataFrame, device: Device) -> float:
    """Time of the striping alone (layouts and ``split_requests``) on the recorded requests of ``ops``."""
    from iosets.replay._closed import _build
    from iosets.replay._striping import split_requests, stream_layouts

    trace = _build(ops, None)[0]  # the requests, not split
    start = time.perf_counter()
    files = ops["file"].drop_nulls().unique().sort()
    layouts = stream_layouts(files, trace.n_streams, device, None)
    split_requests(trace.offset, trace.size, trace.stream, layouts, device.targets)
    return time.perf_counter() - start


def child(path: str, scheduler: str, storage: str) -> None:
    """One scheduler's closed-loop replay of the trace at ``path``, then the open-loop one; JSON on stdout."""
    ops = pl.read_parquet(path)
    workload = fig6(0)
    device = storage_device(workload, storage, ops)
    arguments = {**scheduler_arguments(workload, scheduler), "device": device}
    rss_before = memory_kib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    start = time.perf_counter()
    result = replay_trace(ops, scheduler=scheduler, **arguments)
    call = time.perf_counter() - start
    peak = memory_kib("VmHWM")
    open_loop = replay_requests(result.trace, scheduler, weights=arguments.get("weights"), device=device).engine_seconds
    measures = {"n": ops.height, "parts": result.trace.n, "engine": result.engine_seconds, "call": call}
    measures |= {"open": open_loop, "rss_before_kib": rss_before, "peak_kib": peak}
    if device.targets > 1:
        measures["split"] = split_seconds(ops, device)
    print(json.dumps(measures))


def phase_seconds(workload: Workload, policy: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        replay_phases(workload, policy)
        best = min(best, time.perf_counter() - start)
    return best


def speed(n_requests: int, ranks: int, repeat: int) -> None:
    workload = fig6(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "site.parquet")
        ops = speed_trace(workload, n_requests, ranks)
        ops.write_parquet(path)
        n, n_jobs = ops.height, ops["job_id"].n_unique()
        del ops
        print(f"speed: Fig. 6 (n_H = 20, seed 0) as {n:,} requests, {n_jobs} jobs x {ranks} ranks, best of {repeat}")
        runs: dict[tuple[str, str], list[dict]] = {(storage, name): [] for storage in STORAGES for name in SCHEDULERS}
        for _ in range(repeat):
            for storage, name in runs:  # interleaved
                out = subprocess.run(
                    [sys.executable, __file__, "--child", path, name, storage],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                runs[(storage, name)].append(json.loads(out.stdout.strip().splitlines()[-1]))
    phases = {name: phase_seconds(workload, PHASE_POLICY[name], repeat) for name in SCHEDULERS}
    for storage, target in STORAGES.items():
        print(f"\n{storage}: rates in recorded requests/s")
        print(
            f"{'scheduler':<11} {'C s':>6} {'C M req/s':>9} {'target':>10} {'call s':>7} {'call M req/s':>12}"
            f" {'peak RSS GiB':>12} {'RSS before':>10} {'parts/req':>9} {'split M req/s':>13}"
            f" {'open C M req/s':>14} {'closed/open':>11} {'phase engine ms':>15} {'call/phase':>10}"
        )
        for name in SCHEDULERS:
            print(speed_row(name, runs[(storage, name)], n, target, phases[name]), flush=True)


def speed_row(name: str, runs: list[dict], n: int, target: float, phase: float) -> str:
    """One scheduler's line of a storage's speed table: the best of its runs."""
    best = min(runs, key=lambda r: r["engine"])
    call = min(r["call"] for r in runs)
    open_loop = min(r["open"] for r in runs)
    peak = max(r["peak_kib"] for r in runs) / 2**20
    before = max(r["rss_before_kib"] for r in runs) / 2**20
    split = f"{n / min(r['split'] for r in runs) / 1e6:.1f}" if "split" in best else "-"
    rate = n / best["engine"]
    verdict = f"{target / 1e6:g}M {'ok' if rate >= target else 'MISS'}"
    return (
        f"{name:<11} {best['engine']:>6.2f} {rate / 1e6:>9.2f} {verdict:>10} {call:>7.1f}"
        f" {n / call / 1e6:>12.2f} {peak:>12.2f} {before:>10.2f} {best['parts'] / n:>9.2f} {split:>13}"
        f" {n / open_loop / 1e6:>14.2f} {open_loop / best['engine']:>11.2f} {phase * 1e3:>15.1f} {call / phase:>10.0f}"
    )


def chaos(workload: Workload, policy: str, copies: int = CHAOS_COPIES) -> dict[str, np.ndarray]:
    """The phase engine's own metrics on ``copies`` copies of ``workload`` whose every compute moved by at most
    CHAOS_NOISE of itself (far less than one 1 MiB request's service): how much the fluid model itself moves."""
    rng = np.random.default_rng(7)
    runs = []
    for _ in range(copies):
        t_cpu = workload.t_cpu * (1 + rng.uniform(-CHAOS_NOISE, CHAOS_NOISE, workload.n_phases))
        moved = Workload.from_arrays(
            workload.ids, workload.release, workload.phase_job, t_cpu, workload.io_bytes, window=workload.window
        )
        runs.append(replay_phases(moved, policy).metrics.values())
    return {metric: np.array([run[metric] for run in runs]) for metric in TARGETS}


def agreement(seeds: int) -> None:
    print(f"\nagreement: Fig. 6, n_H = 20, seeds 0-{seeds - 1}, 1 MiB requests (relative difference trace / phase - 1)")
    print(
        f"the phase model's own spread: {CHAOS_COPIES} copies with every compute moved by at most {CHAOS_NOISE:g} of"
        " itself; sd = their standard deviation (% of the phase value), z = (trace - their mean) / sd"
    )
    print(
        f"{'seed':>4} {'closed loop':<11} {'phase':<10} " + " ".join(f"{m + ' ph/tr/diff sd z':>44}" for m in TARGETS)
    )
    values: dict[tuple[str, str], list[tuple[dict, dict]]] = {pair: [] for pair in PAIRS}
    for seed in range(seeds):
        workload = fig6(seed)
        ops = workload_site_requests(workload, request_size=2**20)
        for scheduler, policy in PAIRS:
            phase = replay_phases(workload, policy).metrics.values()
            result = replay_trace(
                ops, scheduler=scheduler, device=device_of(workload), **scheduler_arguments(workload, scheduler)
            )
            trace = trace_metrics(result, window=workload.window).values()
            values[(scheduler, policy)].append((phase, trace))
            spread = chaos(workload, policy)
            print(f"{seed:>4} {scheduler:<11} {policy:<10} {row(phase, trace, spread)}", flush=True)
        del ops
    for (scheduler, policy), pairs in values.items():
        mean_phase = {m: float(np.mean([p[m] for p, _ in pairs])) for m in TARGETS}
        mean_trace = {m: float(np.mean([t[m] for _, t in pairs])) for m in TARGETS}
        print(f"{'mean':>4} {scheduler:<11} {policy:<10} {row(mean_phase, mean_trace)}")


def row(phase: dict, trace: dict, spread: dict[str, np.ndarray] | None = None) -> str:
    """Per metric: phase value, trace value, difference (! beyond the target), and with ``spread`` the
    phase model's own standard deviation under noise and the trace's z-score against it."""
    cells = []
    for metric, target in TARGETS.items():
        diff = trace[metric] / phase[metric] - 1
        mark = "" if abs(diff) <= target else "!"
        cell = f"{phase[metric]:>9.4f} {trace[metric]:>9.4f} {diff * 100:>+7.2f}%{mark:1}"
        if spread is not None:
            sd = float(spread[metric].std())
            z = (trace[metric] - spread[metric].mean()) / sd if sd > 0 else float("nan")
            cell += f" {sd / phase[metric] * 100:>5.2f}% {z:>+5.1f}"
        cells.append(cell)
    return " ".join(f"{c:>{44 if spread is not None else 30}}" for c in cells)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000_000)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--no-speed", action="store_true")
    parser.add_argument("--no-agreement", action="store_true")
    args = parser.parse_args()
    if not args.no_speed:
        speed(args.requests, args.ranks, args.repeat)
    if not args.no_agreement:
        agreement(args.seeds)


if __name__ == "__main__":
    sys.exit(main())
