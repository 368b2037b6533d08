"""Benchmark DXT ingest: iosets' read_darshan versus pydarshan's DXT records and to_df.

Run: ``python benchmarks/ingest.py [LOG] [--reads N] [--large LOG] [--repeat N]``.

Small log (LOG, default the largest DXT log in the darshan wheel: dxt.darshan, 7,623 segments):
each method runs in its own subprocess (fresh interpreter) for time and again for memory, so
neither warms the other; each timing loops over ``--reads`` reads.

Large log (``--large``, default the shared 277 k-segment jeanbez_8_benchmark_parallel.darshan:
~123 k DXT_POSIX and ~154 k DXT_MPIIO segments; skipped if absent): one read per fresh process,
iosets and pydarshan interleaved ``--repeat`` times each, both DXT modules read as tables by
both tools. Each child prints its read time (imports excluded) and its peak RSS (VmHWM).
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

METHODS = {
    "iosets.read_darshan": (
        "from iosets.analyzer import read_darshan",
        "job = read_darshan(PATH, isolated=False); n = job.requests.height",
    ),
    "pydarshan read_all + to_df": (
        "import darshan",
        "r = darshan.DarshanReport(PATH, read_all=True); d = r.records['DXT_POSIX'].to_df();"
        " n = sum(len(x['read_segments']) + len(x['write_segments']) for x in d)",
    ),
    "pydarshan DXT only + to_df": (
        "import darshan",
        "r = darshan.DarshanReport(PATH, read_all=False); r.mod_read_all_dxt_records('DXT_POSIX');"
        " d = r.records['DXT_POSIX'].to_df();"
        " n = sum(len(x['read_segments']) + len(x['write_segments']) for x in d)",
    ),
}

CHILD = r"""
import json, os, resource, sys, time, tracemalloc
import numpy, polars, pandas, darshan.backend.cffi_backend  # imports are not part of the cost
{setup}
PATH, MODE, REPEAT = sys.argv[1], sys.argv[2], int(sys.argv[3])

def once():
    {body}
    return n

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

if MODE == "mem":
    base = rss()
    tracemalloc.start()
    n = once()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({{"segments": n, "tracemalloc_peak": peak, "rss_growth": maxrss - base}}))
else:
    once()  # warm caches (counter names, page cache)
    times = []
    for _ in range(REPEAT):
        t = time.perf_counter()
        n = once()
        times.append(time.perf_counter() - t)
    times.sort()
    print(json.dumps({{"segments": n, "median": times[len(times) // 2], "best": times[0]}}))
"""


LARGE_LOG = "/work/shared/data/darshan/jeanbez_8_benchmark_parallel.darshan"

LARGE_METHODS = {
    "iosets": (
        "from iosets.analyzer import read_darshan",
        """
job = read_darshan(PATH, isolated=False)
n = sum(table.height for table in job.dxt.values())
""",
    ),
    "pydarshan": (
        "import darshan",
        """
r = darshan.DarshanReport(PATH, read_all=False)
n = 0
for mod in ("DXT_POSIX", "DXT_MPIIO"):
    if mod in r.modules:
        r.mod_read_all_dxt_records(mod)
        n += sum(len(x["read_segments"]) + len(x["write_segments"]) for x in r.records[mod].to_df())
""",
    ),
}

LARGE_CHILD = r"""
import json, sys, time
import numpy, polars, pandas, darshan.backend.cffi_backend  # imports are not part of the cost
{setup}
PATH = sys.argv[1]

def peak_rss():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))

base = peak_rss()
t = time.perf_counter()
{body}
seconds = time.perf_counter() - t
print(json.dumps({{"segments": n, "seconds": seconds, "peak_rss": peak_rss(), "base_rss": base}}))
"""


def default_log():
    """Largest DXT log shipped in the darshan wheel."""
    import darshan

    root = os.path.dirname(darshan.__file__)
    logs = glob.glob(os.path.join(root, "**", "*.darshan"), recursive=True)
    dxt = [p for p in logs if _has_dxt_posix(p)]
    return max(dxt, key=os.path.getsize)


def _has_dxt_posix(path):
    import darshan

    with darshan.DarshanReport(path, read_all=False) as r:
        return "DXT_POSIX" in r.modules


def run(method, path, mode, repeat):
    """Run one method in a fresh interpreter; return its JSON result."""
    setup, body = METHODS[method]
    code = CHILD.format(setup=setup, body=body)
    out = subprocess.run(
        [sys.executable, "-c", code, path, mode, str(repeat)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_large(method, path):
    """Read ``path`` once with ``method`` in a fresh interpreter; return its time, segments and peak RSS."""
    setup, body = LARGE_METHODS[method]
    code = LARGE_CHILD.format(setup=setup, body=body)
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_large(path, repeat):
    """Interleave fresh-process reads of the large log (iosets, pydarshan, iosets, ...); print medians and ratios."""
    if not os.path.isfile(path):
        print(f"large log {path} not found: skipped")
        return
    Path(path).read_bytes()  # the page cache holds the log for every run, the first one included
    print(f"\nlarge log: {path} ({os.path.getsize(path)} bytes), {repeat} fresh-process reads per tool, interleaved")
    runs = {m: [] for m in LARGE_METHODS}
    for _ in range(repeat):
        for m in LARGE_METHODS:
            runs[m].append(run_large(m, path))
    medians = {}
    for m, results in runs.items():
        seconds = statistics.median(r["seconds"] for r in results)
        peak = statistics.median(r["peak_rss"] for r in results)
        growth = statistics.median(r["peak_rss"] - r["base_rss"] for r in results)
        medians[m] = (seconds, peak, growth)
        segments = results[0]["segments"]
        print(
            f"{m:10s} {segments:>9,d} seg  median {seconds:7.3f} s  {segments / seconds:>12,.0f} seg/s  "
            f"peak RSS {peak / 2**20:7.1f} MiB (+{growth / 2**20:6.1f} MiB over the imports)"
        )
    counts = {m: results[0]["segments"] for m, results in runs.items()}
    if len(set(counts.values())) > 1:
        print(f"warning: the tools returned different segment counts {counts}: not the same work")
    (ours_s, ours_peak, ours_growth), (theirs_s, theirs_peak, theirs_growth) = medians["iosets"], medians["pydarshan"]
    print(
        f"pydarshan/iosets: time {theirs_s / ours_s:.1f}x, peak RSS {theirs_peak / ours_peak:.1f}x, "
        f"RSS growth {theirs_growth / ours_growth:.1f}x"
    )


def main():
    """Time and measure every method, then print segments/s, memory and the ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", help="DXT log (default: largest shipped in the wheel)")
    ap.add_argument("--reads", type=int, default=30, help="reads per timing on LOG, default=30")
    ap.add_argument("--large", default=LARGE_LOG, help=f"large DXT log, default={LARGE_LOG}")
    ap.add_argument("--repeat", type=int, default=3, help="fresh-process reads per tool of the large log, default=3")
    args = ap.parse_args()
    path = args.log or default_log()
    print(f"log: {path} ({os.path.getsize(path)} bytes), {args.reads} reads per method")
    res = {}
    for m in METHODS:
        t = run(m, path, "time", args.reads)
        mem = run(m, path, "mem", 1)
        res[m] = (t, mem)
        print(
            f"{m:30s} {t['segments']:>9,d} seg  median {t['median'] * 1e3:8.2f} ms "
            f"best {t['best'] * 1e3:8.2f} ms  {t['segments'] / t['median']:>12,.0f} seg/s  "
            f"tracemalloc peak {mem['tracemalloc_peak'] / 2**20:6.2f} MiB  "
            f"RSS growth {mem['rss_growth'] / 2**20:6.2f} MiB"
        )
    ours = res["iosets.read_darshan"][0]["median"]
    for m in list(METHODS)[1:]:
        print(f"speed-up of iosets over {m}: {res[m][0]['median'] / ours:.1f}x (target >= 4x)")
    bench_large(args.large, args.repeat)


if __name__ == "__main__":
    main()
