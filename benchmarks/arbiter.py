"""The arbiter under load: phase begin/end pairs per second and grant latency over loopback tcp.

Starts ``iosets arbiter --policy share-priority`` (one process, pinned to core 0 with
os.sched_setaffinity) and compiles the load generator ``benchmarks/arbiter_load.c`` with cc; the
generator (one process, one epoll loop, pinned to core 1 when there is one) holds N connections,
one per job, each doing BEGIN -> wait for GRANT -> END in a loop. Job i is in a set of its own with
priority 10^-(i mod 4), so that a grant never waits for another job of its set: the latency measured
is the arbiter's, and every admission and departure changes the shares (RATE lines to the jobs that
perform). For N = 10, 100 and 1000:

- saturation: no think time, the next BEGIN goes with the END: the most pairs/s the arbiter serves
  (target: >= 20 000 pairs/s). Closed loop: N requests are always out, so the latency is N / rate
  (Little's law) whatever the arbiter does, and is shown only for completeness;
- paced: each job thinks an exponential time of mean N / 20 000 s between phases, so the jobs offer
  the target's 20 000 pairs/s (then twice that): grant latency p50 / p99 / p99.9, BEGIN sent to
  GRANT read (target: p99 < 1 ms at 1000 jobs).

Each run also reads the arbiter's CPU time (/proc/PID/stat): its share of its core during the run,
and pairs per CPU-second of the arbiter (what one core would serve if nothing else ran on it), and
the load generator's share of its core. When both shares are well under 100 % in a saturation run,
other tenants had the cores; the machine's load average is printed before and after.

Usage: .venv/bin/python benchmarks/arbiter.py [--seconds S] [--warmup S] [--clients 10,100,1000] [--repeat R]
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
TARGET_PAIRS = 20_000.0
TARGET_P99_US = 1000.0


def compile_load(folder: Path) -> Path:
    """benchmarks/arbiter_load.c built with the system's cc."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit("arbiter.py: no C compiler (cc) to build benchmarks/arbiter_load.c")
    binary = folder / "arbiter_load"
    subprocess.run([cc, "-O2", "-std=c11", "-o", str(binary), str(HERE / "arbiter_load.c"), "-lm"], check=True)
    return binary


def pinned(core: int):
    """A preexec_fn pinning the child to ``core`` when the machine has it."""
    cores = os.sched_getaffinity(0)
    return (lambda: os.sched_setaffinity(0, {core})) if core in cores else None


def start_arbiter() -> tuple[subprocess.Popen, str, int]:
    """``iosets arbiter`` on a free loopback port, pinned to core 0; (process, host, port)."""
    command = [sys.executable, "-m", "iosets.cli", "arbiter", "--listen", "tcp:127.0.0.1:0"]
    command += ["--policy", "share-priority", "--bandwidth", "1e9"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, preexec_fn=pinned(0))
    first = process.stdout.readline()
    if not first.startswith("iosets arbiter: listening on tcp:"):
        sys.exit(f"arbiter.py: the arbiter did not start: {first!r}")
    host, port = first.split()[4].removeprefix("tcp:").rsplit(":", 1)
    return process, host, int(port)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (s)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_load(binary: Path, host: str, port: int, clients: int, think_us: float, options, arbiter: int) -> dict:
    """One run of the load generator; its counts and latency percentiles, and the arbiter's CPU share."""
    command = [str(binary), host, str(port), str(clients), f"{think_us:.3f}", str(options.warmup)]
    command += [str(options.seconds), "1"]
    cpu, wall, children = cpu_seconds(arbiter), time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, preexec_fn=pinned(1), timeout=600)
    cpu, wall = cpu_seconds(arbiter) - cpu, time.monotonic() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    generator = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    if done.returncode != 0:
        sys.exit(f"arbiter.py: the load generator failed: {done.stderr.strip()}")
    result = {key: float(value) for key, value in (item.split("=") for item in done.stdout.split())}
    result["pairs_per_s"] = result["pairs"] / result["seconds"]
    result["cpu_share"] = cpu / wall  # over the whole run: connecting, warm-up and measure
    result["generator_share"] = generator / wall
    result["pairs_per_cpu_s"] = result["pairs_per_s"] / max(result["cpu_share"], 1e-9)
    return result


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds before measuring")
    parser.add_argument("--clients", default="10,100,1000", help="comma-separated client counts")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each configuration")
    options = parser.parse_args()
    print(f"cores {sorted(os.sched_getaffinity(0))}; load average before: {load_average()}")
    with tempfile.TemporaryDirectory() as folder:
        binary = compile_load(Path(folder))
        arbiter, host, port = start_arbiter()
        try:
            titles = ("pairs/s", "x target", "p50 us", "p99 us", "p99.9 us", "p99 vs 1 ms", "RATE/s", "arb CPU")
            print(f"{'jobs':>5} {'mode':<22} " + " ".join(f"{t:>8}" for t in (*titles, "pairs/CPU-s", "gen CPU")))
            for clients in (int(n) for n in options.clients.split(",")):
                runs = [("saturation (think 0)", 0.0)]
                runs += [(f"paced {rate / 1e3:g}k pairs/s", clients / rate * 1e6) for rate in (20e3, 40e3)]
                for mode, think_us in runs:
                    for _ in range(options.repeat):
                        r = run_load(binary, host, port, clients, think_us, options, arbiter.pid)
                        print(
                            f"{clients:>5} {mode:<22} {r['pairs_per_s']:>8.0f} {r['pairs_per_s'] / TARGET_PAIRS:>8.2f} "
                            f"{r['p50_us']:>8.1f} {r['p99_us']:>8.1f} {r['p999_us']:>8.1f} "
                            f"{TARGET_P99_US / r['p99_us']:>10.2f}x {r['rates'] / r['seconds']:>8.0f} "
                            f"{r['cpu_share']:>8.0%} {r['pairs_per_cpu_s']:>11.0f} {r['generator_share']:>8.0%}",
                            flush=True,
                        )
        finally:
            arbiter.terminate()
            summary, _ = arbiter.communicate(timeout=60)
    print(summary.strip())
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
