"""Run IOR under Darshan (MPI build) and write each run's truth from IOR's own timers.

Each case runs ``mpiexec -np N ior ... -v -v -v`` with darshan-runtime preloaded, keeps the
Darshan log and IOR's console text (``<case>.ior.txt``), and derives the truth in the format of
the shared ``darshan-runtime/mpi/ground_truth.json`` from IOR's per-rank timers
(``Test 0: Iter=k, Task=r, Time=t, write start``, gettimeofday seconds):

- ``phases``: per repetition and access, [earliest rank's start, latest rank's stop] of the
  transfer loop (with ``-e`` the fsync is inside it), in seconds from the job start
  (Darshan's log header start, taken at MPI_Init); ``phases_open_close`` the same from
  'open start' to 'close stop';
- ``w_iter_true``: mean spacing of the write phases' starts; ``w_iter_all_phases``: of all
  phases' starts (iosets' definition); ``spacing_cv``: population CV of all phases' spacings;
- ``alpha_true`` (``alpha_true_open_close``): length of the union of ``phases``
  (``phases_open_close``) over ``runtime_true`` (header end - start: MPI_Init to MPI_Finalize);
- bytes and requests: IOR's data only (the log's STDIO also holds IOR's console text);
- ``dxt_lateness``: per rank, how far the rank's first DXT request of each phase, placed at the
  header start plus its DXT offset, lands after IOR's own start timer for that rank.

Usage (public tools only: MPICH's mpiexec, IOR 4.0.0, darshan-runtime 3.5.0, pydarshan)::

    python make_ior_cases.py run [--only NAME ...] [--scratch /tmp/iosets-ior]
    python make_ior_cases.py truth      # rewrite ground_truth.json from the kept logs and texts
    python make_ior_cases.py check      # exit 1 if ground_truth.json differs from what they give

``run`` needs /opt/darshan-runtime-mpi and /opt/ior (``build-darshan-runtime-mpi.sh`` and
``build-ior.sh``); ``truth`` and ``check`` need only pydarshan.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DARSHAN_PREFIX = Path("/opt/darshan-runtime-mpi")
IOR = Path("/opt/ior/bin/ior")
MiB = 1 << 20

CASES: list[dict[str, Any]] = [
    {
        "name": "ior_mpiio_coll_wr",
        "job_id": "5101",
        "nprocs": 8,
        "args": "-a MPIIO -c -w -r -e -b 8m -t 1m -i 4 -d 3",
        "description": "MPI-IO collective, one shared file, write then read, 4 reps, 3 s delay",
        "expected": "periodic",
        "pattern": "periodic",
    },
    {
        "name": "ior_posix_fpp_wr",
        "job_id": "5102",
        "nprocs": 8,
        "args": "-a POSIX -F -w -r -e -b 32m -t 1m -i 4 -d 3",
        "description": "POSIX, file per process, write then read, 4 reps, 3 s delay",
        "expected": "periodic",
        "pattern": "periodic",
    },
    {
        "name": "ior_mpiio_shared_indep",
        "job_id": "5103",
        "nprocs": 4,
        "args": "-a MPIIO -w -e -b 128m -t 1m -i 6 -d 2",
        "description": "MPI-IO independent, one shared file, 6 reps, 2 s delay",
        "expected": "periodic",
        "pattern": "periodic",
    },
    {
        "name": "ior_mpiio_stream",
        "job_id": "5104",
        "nprocs": 4,
        "args": "-a MPIIO -w -k -E -b 512m -t 1m -i 8",
        "description": (
            "MPI-IO, one shared file, 8 back-to-back reps, no delay, no fsync; -k -E keep and reuse the "
            "file (its truncation is in IOR's open timer) instead of a 1-2 s unlink between reps"
        ),
        "expected": "io_bound",
        "pattern": "iobound",
    },
    {
        "name": "ior_posix_stream",
        "job_id": "5106",
        "nprocs": 4,
        "args": "-a POSIX --posix.odirect -w -k -E -F -b 1g -t 1m -i 6",
        "description": (
            "POSIX with O_DIRECT, file per process, 6 back-to-back reps, no delay, no fsync, files kept and reused: "
            "open, write and close all seen by Darshan"
        ),
        "expected": "io_bound",
        "pattern": "iobound",
    },
    {
        "name": "ior_posix_shared_d5",
        "job_id": "5105",
        "nprocs": 4,
        "args": "-a POSIX -w -e -b 64m -t 1m -i 5 -d 5",
        "description": "POSIX, one shared file, 5 reps, 5 s delay, fsync",
        "expected": "periodic",
        "pattern": "periodic",
    },
]

TIMER_RE = re.compile(
    r"^Test (?P<test>\d+): Iter=(?P<iter>\d+), Task=(?P<task>\d+), Time=(?P<time>[0-9.]+), "
    r"(?P<access>write|read) (?P<timer>open start|open stop|start|stop|close start|close stop)$"
)
TABLE_KEYS = (
    "access",
    "bw_MiBps",
    "iops",
    "latency",
    "block_KiB",
    "xfer_KiB",
    "open",
    "wrrd",
    "close",
    "total",
    "iter",
)
SIZE_RE = re.compile(r"^(\d+)([kmgt]?)$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Parse an IOR size ('32m', '1g', '4096') into bytes.

    Examples
    --------
    >>> parse_size("32m"), parse_size("1g"), parse_size("4096")
    (33554432, 1073741824, 4096)
    """
    match = SIZE_RE.match(text)
    if match is None:
        raise ValueError(f"IOR size: expected digits with an optional k/m/g/t suffix, got {text!r}")
    power = "kmgt".find(match.group(2).lower()) + 1 if match.group(2) else 0
    return int(match.group(1)) << (10 * power)


def parse_ior_args(args: str) -> dict:
    """The case's IOR parameters that the truth needs, read from its command line."""
    words = shlex.split(args)
    value = {words[i]: words[i + 1] for i in range(len(words) - 1) if words[i].startswith("-")}
    flags = set(words)
    return {
        "api": value.get("-a", "POSIX"),
        "block": parse_size(value.get("-b", "1m")),
        "transfer": parse_size(value.get("-t", "256k")),
        "reps": int(value.get("-i", "1")),
        "delay_s": float(value.get("-d", "0")),
        "file_per_proc": "-F" in flags,
        "collective": "-c" in flags,
        "fsync": "-e" in flags,
        "write": "-w" in flags,
        "read": "-r" in flags,
    }


def parse_ior_output(text: str) -> tuple[dict, list[dict]]:
    r"""Read IOR's ``-v -v -v`` console text.

    Returns
    -------
    timers : dict
        ``timers[(access, iter)][task][timer]`` = gettimeofday seconds, timer one of
        'open start', 'open stop', 'start', 'stop', 'close start', 'close stop'.
    table : list of dict
        IOR's per-repetition results rows (keys ``TABLE_KEYS``), before its summary.

    Examples
    --------
    >>> names = ["open start", "open stop", "start", "stop", "close start", "close stop"]
    >>> text = "\n".join(
    ...     f"Test 0: Iter=0, Task={task}, Time={10 + task + i / 10:f}, write {name}"
    ...     for task in (0, 1) for i, name in enumerate(names)
    ... )
    >>> row = "write 854.37 1417.07 0.002143 65536 1024.00 0.103714 0.180655 0.159799 0.299636 0"
    >>> timers, table = parse_ior_output(text + "\n" + row + "\nSummary of all tests:\n" + row + " 1")
    >>> timers[("write", 0)][1]["start"], timers[("write", 0)][0]["close stop"]
    (11.2, 10.5)
    >>> len(table), table[0]["wrrd"]
    (1, '0.180655')
    """
    timers: dict = {}
    table = []
    in_summary = False
    for raw in text.splitlines():
        line = raw.strip()
        match = TIMER_RE.match(line)
        if match:
            key = (match["access"], int(match["iter"]))
            task = timers.setdefault(key, {}).setdefault(int(match["task"]), {})
            task[match["timer"]] = float(match["time"])
            continue
        if line.startswith("Summary of all tests"):
            in_summary = True
        words = line.split()
        if not in_summary and words and words[0] in ("write", "read") and len(words) == 11:
            table.append(dict(zip(TABLE_KEYS, words, strict=True)))
    if not timers:
        raise ValueError("IOR output: no 'Test N: Iter=, Task=, Time=' timer lines (run with -v -v -v)")
    for (access, rep), tasks in timers.items():
        for task, names in tasks.items():
            if len(names) != 6:
                raise ValueError(f"IOR output: {access} iter {rep} task {task} has timers {sorted(names)}, expected 6")
    return timers, table


def union_length(intervals: list[list[float]]) -> float:
    """Total length covered by a list of [start, end] intervals.

    Examples
    --------
    >>> union_length([[0.0, 2.0], [1.0, 3.0], [5.0, 6.0], [5.5, 5.75]])
    4.0
    """
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def mean_spacing(starts: list[float]) -> float | None:
    """Mean spacing of sorted starts (None for fewer than two)."""
    return (starts[-1] - starts[0]) / (len(starts) - 1) if len(starts) > 1 else None


def read_log(log: Path, api: str) -> dict:
    """Header times and per-rank DXT request starts of a Darshan log (pydarshan)."""
    import darshan  # pydarshan, only needed here

    report = darshan.DarshanReport(str(log), read_all=True)
    job = report.metadata["job"]
    module = "DXT_MPIIO" if api == "MPIIO" else "DXT_POSIX"
    starts: dict = {}
    for record in report.records[module].to_df():
        for access in ("write", "read"):
            seg = record[f"{access}_segments"]
            if len(seg) == 0:  # pydarshan gives a frame without columns
                continue
            starts.setdefault((access, int(record["rank"])), []).extend(seg["start_time"].tolist())
    return {
        "t_start": job["start_time_sec"] + job["start_time_nsec"] * 1e-9,
        "t_end": job["end_time_sec"] + job["end_time_nsec"] * 1e-9,
        "nprocs": int(job["nprocs"]),
        "dxt_starts": {key: sorted(values) for key, values in starts.items()},
    }


def dxt_lateness(timers: dict, log: dict, params: dict) -> dict:
    """How late each rank's DXT times land against IOR's 'start' timer, per phase.

    A rank's requests of one phase are its next ``block / transfer`` DXT requests of that
    access in time order; the first one's header start + offset minus the rank's IOR start.
    """
    per_phase = params["block"] // params["transfer"]
    late: dict = {}
    for (access, rep), tasks in sorted(timers.items(), key=lambda item: (item[0][1], item[0][0])):
        for task, names in tasks.items():
            starts = log["dxt_starts"].get((access, task), [])
            first = rep * per_phase
            if first >= len(starts):
                raise ValueError(f"DXT: rank {task} has {len(starts)} {access} requests, expected more")
            late.setdefault(task, []).append(log["t_start"] + starts[first] - names["start"])
    phases = len(next(iter(late.values())))
    spread = [max(v[i] for v in late.values()) - min(v[i] for v in late.values()) for i in range(phases)]
    values = [v for vs in late.values() for v in vs]
    return {
        "per_rank_s": {str(task): [round(v, 6) for v in vs] for task, vs in sorted(late.items())},
        "min_s": round(min(values), 6),
        "max_s": round(max(values), 6),
        "max_spread_between_ranks_s": round(max(spread), 6),
    }


def case_truth(case: dict, ior_text: str, log_path: Path, wall: float | None) -> dict:
    """The ground-truth entry of one case from IOR's text and the Darshan log."""
    params = parse_ior_args(case["args"])
    timers, table = parse_ior_output(ior_text)
    log = read_log(log_path, params["api"])
    t0 = log["t_start"]
    runtime = log["t_end"] - t0
    keys = sorted(timers, key=lambda key: min(t["start"] for t in timers[key].values()))
    phases, open_close, spread = [], [], []
    for key in keys:
        tasks = timers[key].values()
        start = min(t["start"] for t in tasks)
        phases.append([round(start - t0, 6), round(max(t["stop"] for t in tasks) - t0, 6)])
        open_close.append(
            [round(min(t["open start"] for t in tasks) - t0, 6), round(max(t["close stop"] for t in tasks) - t0, 6)]
        )
        spread.append(round(max(t["start"] for t in tasks) - start, 6))
    kinds = [access for access, _ in keys]
    write_starts = [p[0] for p, kind in zip(phases, kinds, strict=True) if kind == "write"]
    starts = [p[0] for p in phases]  # spacing_cv: every phase's, as the corpus's
    gaps = [b - a for a, b in zip(starts[:-1], starts[1:], strict=True)]
    nprocs = case["nprocs"]
    per_access = params["block"] * nprocs * params["reps"]
    bytes_written = per_access if params["write"] else 0
    bytes_read = per_access if params["read"] else 0
    io_time = union_length(phases)
    w_iter = mean_spacing(write_starts)
    w_all = mean_spacing([p[0] for p in phases])
    return {
        "name": case["name"],
        "log": [log_path.name],
        "ior_output": f"{case['name']}.ior.txt",
        "job_id": case["job_id"],
        "app": "ior",
        "ior_command": f"mpiexec -np {nprocs} ior {case['args']} -v -v -v -o testfile",
        "description": case["description"],
        "expected": case["expected"],
        "pattern": case["pattern"],
        "params": params,
        "nprocs": log["nprocs"],
        "nprocs_doing_io": len({task for tasks in timers.values() for task in tasks}),
        "bytes_written": bytes_written,
        "bytes_read": bytes_read,
        "requests": (bytes_written + bytes_read) // params["transfer"],
        "n_phases": len(phases),
        "phase_kinds": kinds,
        "phases": phases,
        "phases_open_close": open_close,
        "phase_start_spread_across_ranks": spread,
        "phase_duration_mean": round(statistics.mean(b - a for a, b in phases), 6),
        "w_iter_true": None if w_iter is None else round(w_iter, 6),
        "w_iter_all_phases": None if w_all is None else round(w_all, 6),
        "spacing_cv": round(statistics.pstdev(gaps) / statistics.mean(gaps), 4) if gaps else None,
        "io_time_true": round(io_time, 6),
        "alpha_true": round(io_time / runtime, 6),
        "alpha_true_open_close": round(union_length(open_close) / runtime, 6),
        "runtime_true": round(runtime, 6),
        "runtime_mpiexec_wall": None if wall is None else round(wall, 6),
        "t_start": round(t0, 6),
        "t_end": round(log["t_end"], 6),
        "dxt_lateness": dxt_lateness(timers, log, params),
        "ior_table": table,
    }


def run_case(case: dict, scratch: Path) -> float:
    """Run one case under Darshan; keep its log and IOR text here. Returns mpiexec's wall time."""
    work = scratch / case["name"]
    logs = scratch / f"{case['name']}.logs"
    for folder in (work, logs):
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
    command = [
        "mpiexec", "-np", str(case["nprocs"]),
        "-env", "LD_PRELOAD", str(DARSHAN_PREFIX / "lib" / "libdarshan.so"),
        str(IOR), *shlex.split(case["args"]), "-v", "-v", "-v", "-o", str(work / "testfile"),
    ]  # fmt: skip
    # a bare environment: IOR -v -v -v prints every variable it gets, and that text is kept here
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "DARSHAN_LOG_DIR": str(logs),
        "IOSETS_JOBID": case["job_id"],
        "DXT_ENABLE_IO_TRACE": "1",
    }
    began = time.time()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.time() - began
    if done.returncode != 0:
        raise RuntimeError(f"{case['name']}: mpiexec exited {done.returncode}: {done.stderr[-2000:]}")
    (HERE / f"{case['name']}.ior.txt").write_text(done.stdout)
    produced = sorted(logs.glob("*.darshan"))
    if len(produced) != 1:
        raise RuntimeError(f"{case['name']}: expected one Darshan log in {logs}, found {len(produced)}")
    target = HERE / f"{case['name']}.darshan"
    if target.exists():
        target.chmod(0o644)
        target.unlink()
    target.write_bytes(produced[0].read_bytes())
    target.chmod(0o644)
    for old in work.iterdir():
        old.unlink()
    return wall


def build_truth(walls: dict) -> dict:
    """The ground-truth document of every case whose log and IOR text are here."""
    path = HERE / "ground_truth.json"
    previous = {job["name"]: job for job in json.loads(path.read_text())["jobs"]} if path.exists() else {}
    jobs = []
    for case in CASES:
        log, text = HERE / f"{case['name']}.darshan", HERE / f"{case['name']}.ior.txt"
        if not (log.exists() and text.exists()):
            continue
        wall = walls.get(case["name"], previous.get(case["name"], {}).get("runtime_mpiexec_wall"))
        jobs.append(case_truth(case, text.read_text(), log, wall))
    doc = {
        "description": (
            "Real Darshan 3.5.0 MPI logs (MPICH 4.0.2, darshan-runtime built with mpicc, LD_PRELOAD, "
            "DXT on, HEATMAP on) of IOR 4.0.0 runs on a 2-core VM, local ext4 on a virtio disk. "
            "Phases: IOR's own per-rank gettimeofday timers (-v -v -v), [min rank 'start', max rank "
            "'stop'] per repetition and access; seconds from the job start = Darshan's MPI_Init time "
            "in the log header. runtime_true = Darshan header end - start (MPI_Init to MPI_Finalize). "
            "Bytes: IOR data only. Made by make_ior_cases.py."
        ),
        "darshan_env": (
            "DARSHAN_LOG_DIR=<dir> IOSETS_JOBID=<id> DXT_ENABLE_IO_TRACE=1 mpiexec -np N "
            "-env LD_PRELOAD <prefix>/lib/libdarshan.so ior ..."
        ),
        "jobs": jobs,
    }
    return doc


def write_truth(walls: dict) -> None:
    """Rewrite ground_truth.json from the logs and IOR texts here."""
    (HERE / "ground_truth.json").write_text(json.dumps(build_truth(walls), indent=2) + "\n")


def check_truth() -> list[str]:
    """Names of the jobs whose committed truth differs from the one derived again from their files."""
    committed = {job["name"]: job for job in json.loads((HERE / "ground_truth.json").read_text())["jobs"]}
    derived = {job["name"]: job for job in build_truth({})["jobs"]}
    return sorted(name for name in committed.keys() | derived.keys() if committed.get(name) != derived.get(name))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("run", "truth", "check"))
    parser.add_argument("--only", nargs="+", default=None, help="case names (default: all)")
    parser.add_argument(
        "--scratch",
        type=Path,
        default=Path("/tmp/iosets-ior"),
        help="IOR's files: a real disk (not tmpfs), outside /var/ (Darshan excludes /var/ by default)",
    )
    options = parser.parse_args(argv)
    names = {case["name"] for case in CASES}
    unknown = set(options.only or ()) - names
    if unknown:
        parser.error(f"--only: unknown case(s) {sorted(unknown)}; known: {sorted(names)}")
    if options.action == "check":
        differ = check_truth()
        print(
            f"ground_truth.json differs from the files for: {differ}" if differ else "ground_truth.json is up to date"
        )
        return 1 if differ else 0
    walls = {}
    if options.action == "run":
        for case in CASES:
            if options.only is None or case["name"] in options.only:
                walls[case["name"]] = run_case(case, options.scratch)
                print(f"{case['name']}: {walls[case['name']]:.1f} s", file=sys.stderr)
                write_truth(walls)  # after each case: a later failure keeps this one's wall time
    write_truth(walls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
