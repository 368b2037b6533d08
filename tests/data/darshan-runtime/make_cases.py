"""Make the real darshan-runtime fixtures of issue 22 (contention, gaps-exp, fsync, forked, steps) with their truth.

Public tools only: darshan-runtime 3.5.0 (non-MPI, LD_PRELOAD), the project's benchmark program ``periodic``
(iosets/validate/src/periodic.c, compiled with ``cc -O2 -std=c11``), ``dd`` for the competing writers, and
pydarshan (the ``darshan`` package) to read each log's header start and end; for ``steps``, a minimal IO-SETS
arbiter of its own (:class:`GridArbiter`) that grants the processes' I/O phases on one grid. The truth is the
program's own CSV (CLOCK_REALTIME ns, written with raw system calls Darshan does not see).

Usage::

    python make_cases.py --periodic PATH --darshan /opt/darshan-runtime --scratch /var/tmp/iosets-fx [CASE ...]

The data are written in ``--scratch`` (a real disk, not tmpfs); each case's logs and ``ground_truth.json`` go
to the folder of that name beside this script. Cases: contention, gaps-exp, fsync, forked, steps.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import darshan

from iosets.validate._darshan import exclusions_for

HERE = Path(__file__).resolve().parent
MIB = 1 << 20


class Maker:
    """Runs ``periodic`` under darshan-runtime in a scratch folder and turns its CSV and logs into truth."""

    def __init__(self, periodic: Path, prefix: Path, scratch: Path):
        self.periodic, self.prefix, self.scratch = periodic, prefix, scratch

    def env(self, job_id: str, logs: Path) -> dict:
        """The environment of a traced process: Darshan preloaded, DXT on, the scratch folder instrumented."""
        return {
            **os.environ,
            "LD_PRELOAD": str(self.prefix / "lib" / "libdarshan.so"),
            "DARSHAN_ENABLE_NONMPI": "1",
            "DXT_ENABLE_IO_TRACE": "1",
            "DARSHAN_EXCLUDE_DIRS": exclusions_for(self.scratch),
            "DARSHAN_LOG_DIR": str(logs),
            "IOSETS_JOBID": job_id,
        }

    def fresh(self, name: str) -> Path:
        """An empty run folder ``scratch/name`` (logs and CSVs of one run)."""
        folder = self.scratch / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder

    def start(self, run: Path, job_id: str, tag: str, args: list[str]) -> subprocess.Popen:
        """Start ``periodic`` traced, its CSV ``run/tag.csv``, its data in ``run/data``."""
        (run / "data").mkdir(exist_ok=True)
        command = [
            str(self.periodic),
            "--job-id",
            job_id,
            "--dir",
            str(run / "data"),
            "--output",
            str(run / f"{tag}.csv"),
            *args,
        ]
        return subprocess.Popen(command, env=self.env(job_id, run), cwd=run)


def wait_ok(processes: list[subprocess.Popen]) -> None:
    for p in processes:
        if p.wait() != 0:
            raise SystemExit(f"{p.args}: exit status {p.returncode}")


def read_csv(path: Path) -> list[dict]:
    with path.open() as f:
        return [{k: (v if k == "job_id" else int(v)) for k, v in row.items()} for row in csv.DictReader(f)]


def logs_of(run: Path) -> list[Path]:
    """The run's Darshan logs, oldest header start first."""
    return sorted(run.glob("*.darshan"), key=lambda p: header(p)[0])


def header(path: Path) -> tuple[float, float, dict]:
    """A log's start and end (s, CLOCK_REALTIME) and its job metadata."""
    job = darshan.DarshanReport(str(path), read_all=False).metadata["job"]
    return job["start_time_sec"] + job["start_time_nsec"] * 1e-9, job["end_time_sec"] + job["end_time_nsec"] * 1e-9, job


def posix_totals(path: Path) -> tuple[int, int, int, int]:
    """Bytes written, bytes read, writes, reads of a log's POSIX records."""
    report = darshan.DarshanReport(str(path), read_all=False)
    report.mod_read_all_records("POSIX")
    c = report.records["POSIX"].to_df()["counters"]
    return (
        int(c["POSIX_BYTES_WRITTEN"].sum()),
        int(c["POSIX_BYTES_READ"].sum()),
        int(c["POSIX_WRITES"].sum()),
        int(c["POSIX_READS"].sum()),
    )


def union(intervals: list[list[float]]) -> list[list[float]]:
    runs: list[list[float]] = []
    for s, e in sorted(intervals):
        if runs and s <= runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], e)
        else:
            runs.append([s, e])
    return runs


def spacing(phases: list[list[float]]) -> tuple[float | None, float | None]:
    """Mean spacing of the phases' starts and its coefficient of variation (population std / mean)."""
    gaps = [b[0] - a[0] for a, b in zip(phases, phases[1:], strict=False)]
    if not gaps:
        return None, None
    mean = sum(gaps) / len(gaps)
    return mean, statistics.pstdev(gaps) / mean


def truth(
    name: str,
    *,
    logs: list[Path],
    rows_csv: list[list[dict]],
    pattern: str,
    expected: str,
    params: dict,
    folder: Path,
    log_names: list[str],
    extra: dict | None = None,
) -> dict:
    """One expected jobs-table row: its logs (copied into ``folder`` as ``log_names``) and the programs' truth.

    ``rows_csv`` holds each process's CSV rows (a process of several forked ranks writes one CSV); the row's
    phases are the union of every process's [io_start, io_end], in s from the first log's header start.
    """
    heads = [header(p) for p in logs]
    t_start = min(h[0] for h in heads)
    t_end = max(h[1] for h in heads)
    job_ids = {str(h[2]["jobid"]) for h in heads}
    assert len(job_ids) == 1, job_ids
    intervals = [[r["io_start"] * 1e-9 - t_start, r["io_end"] * 1e-9 - t_start] for rows in rows_csv for r in rows]
    phases = [[round(s, 6), round(e, 6)] for s, e in union(intervals)]
    runtime = t_end - t_start
    io_time = sum(e - s for s, e in phases)
    w_iter, cv = spacing(phases)
    totals = [posix_totals(p) for p in logs]
    csv_bytes = sum(r["bytes"] for rows in rows_csv for r in rows)
    written = sum(t[0] for t in totals)
    assert written == csv_bytes, (name, written, csv_bytes)
    for path, target in zip(logs, log_names, strict=True):
        shutil.copyfile(path, folder / target)
        os.chmod(folder / target, 0o644)
    return {
        "log": log_names,
        "name": name,
        "app": "periodic",
        "pattern": pattern,
        "expected": expected,
        "job_id": job_ids.pop(),
        "nprocs": len(logs),
        "nprocs_doing_io": len(logs),
        "params": params,
        "t_start": round(t_start, 6),
        "t_end": round(t_end, 6),
        "runtime_true": round(runtime, 6),
        "bytes_written": csv_bytes,
        "bytes_read": sum(t[1] for t in totals),
        "requests": sum(t[2] + t[3] for t in totals),
        "n_phases": len(phases),
        "phase_kinds": ["write"] * len(phases),
        "io_time_true": round(io_time, 6),
        "alpha_true": round(io_time / runtime, 6),
        "w_iter_true": None if w_iter is None else round(w_iter, 6),
        "w_iter_all_phases": None if w_iter is None else round(w_iter, 6),
        "spacing_cv": None if cv is None else round(cv, 4),
        "phase_duration_mean": round(io_time / len(phases), 6),
        "process_phases": [
            [[round(r["io_start"] * 1e-9 - t_start, 6), round(r["io_end"] * 1e-9 - t_start, 6)] for r in rows]
            for rows in rows_csv
        ],
        **(extra or {}),
        "phases": phases,
    }


def write_truth(folder: Path, description: str, jobs: list[dict]) -> None:
    env = (
        "LD_PRELOAD=/opt/darshan-runtime/lib/libdarshan.so DARSHAN_ENABLE_NONMPI=1 DXT_ENABLE_IO_TRACE=1 "
        "DARSHAN_EXCLUDE_DIRS=<Darshan's defaults but /var/> DARSHAN_LOG_DIR=<dir> IOSETS_JOBID=<id>"
    )
    text = json.dumps({"description": description, "darshan_env": env, "jobs": jobs}, indent=1)
    (folder / "ground_truth.json").write_text(text + "\n")


def out_folder(name: str) -> Path:
    """The case's folder beside this script, its logs and truth removed (its README.md is kept)."""
    folder = HERE / name
    folder.mkdir(exist_ok=True)
    for old in (*folder.glob("*.darshan"), folder / "ground_truth.json"):
        old.unlink(missing_ok=True)
    return folder


DESCRIPTION = (
    "Real darshan-runtime 3.5.0 non-MPI logs (LD_PRELOAD, DXT and HEATMAP on) of the project's benchmark program "
    "periodic on a 2-core VM, data in /var/tmp on ext4 on a virtio disk; truth from the program's own CSV "
    "(CLOCK_REALTIME, raw syscalls). phases: union of the processes' [io_start, io_end], s from the first log's "
    "header start; runtime_true: last log's header end - first log's header start. Made by make_cases.py."
)


# ---------------------------------------------------------------- contention


def compete(scratch: Path, job: subprocess.Popen, rng: random.Random) -> None:
    """While ``job`` runs, start untraced ``dd oflag=direct`` writers (0-3 at a time, random sizes) at random
    moments on the same disk; wait for the last ones to end."""
    running: list[subprocess.Popen] = []
    k = 0
    while job.poll() is None:
        running = [p for p in running if p.poll() is None]
        if len(running) < 3 and rng.random() < 0.55:
            count = rng.choice((128, 256, 512, 1024, 2048))
            target = scratch / f"dd.{k % 4}"
            k += 1
            command = ["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={count}", "oflag=direct", "conv=notrunc"]
            running.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(rng.uniform(0.05, 0.8))
    for p in running:
        p.wait()


def contention_run(m: Maker, job_id: str, seed: int) -> tuple[Path, list[dict]]:
    run = m.fresh(f"contention-{job_id}")
    job = m.start(run, job_id, "job", ["--count", "15", "--t-cpu", "0.6", "--bytes", str(320 * MIB)])
    compete(m.scratch, job, random.Random(seed))
    wait_ok([job])
    return run, read_csv(run / "job.csv")


def make_contention(m: Maker) -> None:
    folder = out_folder("contention")
    jobs = []
    # the run had a spacing CV of 0.32: the second run is kept only near it
    for job_id, seed, (low, high) in (("2201", 1, (0.15, 0.35)), ("2202", 2, (0.28, 0.35))):
        for attempt in range(12):
            run, rows = contention_run(m, job_id, seed + 10 * attempt)
            starts = [[r["io_start"] * 1e-9, 0] for r in rows]
            _, cv = spacing(starts)
            print(f"contention {job_id} attempt {attempt}: spacing CV {cv:.3f}", file=sys.stderr)
            if low <= cv <= high:
                break
        else:
            raise SystemExit(f"contention {job_id}: no run with a spacing CV in [{low}, {high}]")
        name = f"contention_{job_id}"
        params = {
            "count": 15,
            "t_cpu": 0.6,
            "bytes": 320 * MIB,
            "request": MIB,
            "o_direct": True,
            "competitors": "dd oflag=direct bs=1M, 0-3 at a time, started at seeded random moments",
            "seed": seed + 10 * attempt,
        }
        jobs.append(
            truth(
                name,
                logs=logs_of(run),
                rows_csv=[rows],
                pattern="periodic compute, I/O durations varied by contention",
                expected="periodic",
                params=params,
                folder=folder,
                log_names=[f"{name}.darshan"],
            )
        )
    write_truth(folder, DESCRIPTION, jobs)
    for f in m.scratch.glob("dd.*"):
        f.unlink()


# ---------------------------------------------------------------- gaps-exp


def make_gaps_exp(m: Maker) -> None:
    folder = out_folder("gaps-exp")
    rng = random.Random(34)
    gaps = [round(rng.expovariate(1.0), 3) for _ in range(20)]
    run = m.fresh("gaps-exp")
    # the phase file under /dev/ (one of Darshan's exclusions), so that the log holds the workload's bytes only
    phase_file = Path("/dev/shm") / f"iosets-fx-phases-{os.getpid()}.txt"
    phase_file.write_text("".join(f"{g} {32 * MIB}\n" for g in gaps))
    try:
        wait_ok([m.start(run, "2210", "job", ["--phases", str(phase_file)])])
    finally:
        phase_file.unlink()
    rows = read_csv(run / "job.csv")
    mean = statistics.mean(gaps)
    params = {
        "phases": 20,
        "t_cpu": gaps,
        "t_cpu_mean": round(mean, 4),
        "t_cpu_cv": round(statistics.pstdev(gaps) / mean, 4),
        "bytes": 32 * MIB,
        "request": MIB,
        "o_direct": True,
        "seed": 34,
        "distribution": "random.Random(34).expovariate(1.0), rounded to ms (seed 34: sample mean 0.93 s, CV 0.87)",
    }
    job = truth(
        "gaps_exp",
        logs=logs_of(run),
        rows_csv=[rows],
        pattern="exponentially distributed compute gaps",
        expected="not_periodic",
        params=params,
        folder=folder,
        log_names=["gaps_exp.darshan"],
    )
    write_truth(folder, DESCRIPTION, [job])


# ---------------------------------------------------------------- fsync


def make_fsync(m: Maker) -> None:
    folder = out_folder("fsync")
    jobs = []
    for job_id, size in (("2220", 256), ("2221", 64)):
        run = m.fresh(f"fsync-{job_id}")
        wait_ok(
            [m.start(run, job_id, "job", ["--buffered", "--count", "12", "--t-cpu", "0.8", "--bytes", str(size * MIB)])]
        )
        name = f"fsync_{size}m"
        params = {
            "count": 12,
            "t_cpu": 0.8,
            "bytes": size * MIB,
            "request": MIB,
            "buffered": True,
            "fsync": "one per phase, inside the phase",
        }
        jobs.append(
            truth(
                name,
                logs=logs_of(run),
                rows_csv=[read_csv(run / "job.csv")],
                pattern="buffered writes + fsync per phase",
                expected="periodic",
                params=params,
                folder=folder,
                log_names=[f"{name}.darshan"],
            )
        )
    write_truth(folder, DESCRIPTION, jobs)


# ---------------------------------------------------------------- forked


def make_forked(m: Maker) -> None:
    folder = out_folder("forked")
    run = m.fresh("forked")
    wait_ok(
        [
            m.start(
                run, "2230", "job", ["--processes", "4", "--count", "12", "--t-cpu", "0.8", "--bytes", str(256 * MIB)]
            )
        ]
    )
    logs = logs_of(run)
    assert len(logs) == 4, logs
    names = [f"forked_{k}.darshan" for k in range(4)]  # header start order: rank 0 first
    params = {"processes": 4, "count": 12, "t_cpu": 0.8, "bytes": 256 * MIB, "request": MIB, "o_direct": True}
    job = truth(
        "forked",
        logs=logs,
        rows_csv=[read_csv(run / "job.csv")],
        pattern="rank 0 + 3 forked workers, one log each",
        expected="periodic",
        params=params,
        folder=folder,
        log_names=names,
    )
    write_truth(folder, DESCRIPTION, [job])


# ---------------------------------------------------------------- steps


class GridArbiter:
    """A minimal IO-SETS arbiter (wire protocol v1, docs/guides/arbiter.md) that grants every BEGIN at the next tick
    of one grid, ``origin + k * period``, at an unbounded rate: the I/O phases of every process that asks it start
    on the same ticks, whatever each process's own I/O durations did to its clock (``periodic`` starts a compute
    phase when its I/O ends, so processes that do not wait drift apart by their I/O durations)."""

    RATE = 1e15
    """bytes/s of every grant: unpaced."""

    def __init__(self, path: Path, period: float):
        self.path, self.period, self.origin = path, period, time.time()
        path.unlink(missing_ok=True)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"unix:{self.path}"

    def tick_after(self, date: float) -> float:
        """The first grid tick at or after ``date`` (s)."""
        return self.origin + math.ceil((date - self.origin) / self.period) * self.period

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rw") as stream:
            for line in stream:
                word = line.split()[0] if line.strip() else ""
                if word == "HELLO":
                    stream.write(f"OK {self.RATE:g}\n")
                elif word == "BEGIN":
                    time.sleep(max(0.0, self.tick_after(time.time()) - time.time()))
                    stream.write(f"GRANT {self.RATE:g}\n")
                elif word == "BYE":
                    return
                stream.flush()

    def close(self) -> None:
        self.server.close()
        self.path.unlink(missing_ok=True)


def overlapping(
    m: Maker,
    name: str,
    job_id: str,
    *,
    processes: int,
    stagger: float,
    count: int,
    t_cpu: float,
    period: float,
    size: int,
    folder: Path,
    row: int,
) -> dict:
    """``processes`` processes of one job id started ``stagger`` s apart, their I/O phases granted on the ticks of
    one :class:`GridArbiter` of ``period`` s: one expected row, whose phases are the union of theirs."""
    run = m.fresh(name)
    grid = GridArbiter(m.scratch / f"{name}.sock", period)
    args = ["--count", str(count), "--t-cpu", str(t_cpu), "--bytes", str(size)]
    args += ["--arbiter", grid.address, "--set", "0", "--priority", "1"]
    procs = []
    for k in range(processes):
        time.sleep(max(0.0, grid.origin + k * stagger - time.time()))
        procs.append(m.start(run, job_id, f"p{k}", args))
    wait_ok(procs)
    grid.close()
    logs = logs_of(run)
    assert len(logs) == processes, logs
    pids = {p.pid: f"p{k}" for k, p in enumerate(procs)}  # the log's name holds its process id
    tags = [pids[int(p.name.split("_id")[1].split("-")[1].split("_")[0])] for p in logs]
    rows_csv = [read_csv(run / f"{t}.csv") for t in tags]
    steps = len({round((r["io_start"] * 1e-9 - grid.origin) / period) for rows in rows_csv for r in rows})
    n_union = len(union([[r["io_start"], r["io_end"]] for rows in rows_csv for r in rows]))
    print(f"{name}: {n_union} union phases on {steps} grid ticks", file=sys.stderr)
    params = {
        "processes": processes,
        "started_every_s": stagger,
        "count": count,
        "t_cpu": t_cpu,
        "bytes": size,
        "request": MIB,
        "o_direct": True,
        "grid_period": period,
        "grid": "each I/O phase granted at the next tick of one grid (make_cases.py's GridArbiter through --arbiter)",
    }
    names = [f"{name.replace('-', '_')}_{t}.darshan" for t in tags]
    pattern = f"{processes} overlapping processes of one job id, started {stagger:g} s apart, I/O on one grid"
    return truth(
        name.replace("-", "_"),
        logs=logs,
        rows_csv=rows_csv,
        pattern=pattern,
        expected="periodic",
        params=params,
        folder=folder,
        log_names=names,
        extra={"row": row},
    )


def make_steps(m: Maker) -> None:
    folder = out_folder("steps")
    # (a) 6 processes started ~3 s apart, each ~20 s: their starts span 15 s
    jobs = [
        overlapping(
            m,
            "steps-a",
            "2240",
            processes=6,
            stagger=3.0,
            count=13,
            t_cpu=0.5,
            period=1.5,
            size=32 * MIB,
            folder=folder,
            row=0,
        )
    ]
    # (b) one job id run twice, the second 4 s after the first ended
    for step in (0, 1):
        run = m.fresh(f"steps-b{step}")
        wait_ok([m.start(run, "2241", "job", ["--count", "8", "--t-cpu", "1.0", "--bytes", str(64 * MIB)])])
        params = {
            "count": 8,
            "t_cpu": 1.0,
            "bytes": 64 * MIB,
            "request": MIB,
            "o_direct": True,
            "pause_before_s": 4.0 if step else 0.0,
        }
        name = f"steps_b_run{step}"
        jobs.append(
            truth(
                name,
                logs=logs_of(run),
                rows_csv=[read_csv(run / "job.csv")],
                pattern="one job id run twice in a row",
                expected="periodic",
                params=params,
                folder=folder,
                log_names=[f"{name}.darshan"],
                extra={"row": 1 + step},
            )
        )
        if step == 0:
            time.sleep(4.0)
    # (c) 4 processes started ~12 s apart, each ~40 s: their starts span 36 s, all alive together at 36-40 s
    jobs.append(
        overlapping(
            m,
            "steps-c",
            "2242",
            processes=4,
            stagger=12.0,
            count=26,
            t_cpu=0.5,
            period=1.5,
            size=32 * MIB,
            folder=folder,
            row=3,
        )
    )
    text = " Each entry is one expected jobs-table row (its 'row' number); its 'log' list holds the logs that form it."
    write_truth(folder, DESCRIPTION + text, jobs)


CASES = {
    "contention": make_contention,
    "gaps-exp": make_gaps_exp,
    "fsync": make_fsync,
    "forked": make_forked,
    "steps": make_steps,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--periodic", type=Path, required=True, help="the compiled benchmark program")
    parser.add_argument("--darshan", type=Path, default=Path("/opt/darshan-runtime"), help="darshan-runtime prefix")
    parser.add_argument("--scratch", type=Path, default=Path("/var/tmp/iosets-fx"), help="run folder on a real disk")
    parser.add_argument("cases", nargs="*", help=f"among {', '.join(CASES)} (default: all)")
    options = parser.parse_args()
    unknown = set(options.cases) - set(CASES)
    if unknown:
        parser.error(f"unknown cases {sorted(unknown)}; expected among {', '.join(CASES)}")
    options.scratch.mkdir(parents=True, exist_ok=True)
    maker = Maker(options.periodic.resolve(), options.darshan, options.scratch)
    for case in options.cases or CASES:
        CASES[case](maker)
        print(f"{case}: done", file=sys.stderr)


if __name__ == "__main__":
    main()
