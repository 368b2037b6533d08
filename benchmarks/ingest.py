"""Benchmark DXT ingest: iosets' read_darshan versus pydarshan's DXT_POSIX to_df.

Run: ``python benchmarks/ingest.py [LOG] [--repeat N]``.  Each method runs in its own
subprocess (fresh interpreter) for time and again for memory, so neither warms the other.
The shipped logs are small (dxt.darshan: 7,623 segments), so each timing loops over many reads.
"""

import argparse
import glob
import json
import os
import subprocess
import sys

METHODS = {
    "iosets.read_darshan": (
        "from iosets.analyzer import read_darshan",
        "job = read_darshan(PATH, isolated=False); n = job.ops.height",
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


def main():
    """Time and measure every method, then print segments/s, memory and the ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", help="DXT log (default: largest shipped in the wheel)")
    ap.add_argument("--repeat", type=int, default=30, help="reads per timing, default=30")
    args = ap.parse_args()
    path = args.log or default_log()
    print(f"log: {path} ({os.path.getsize(path)} bytes), {args.repeat} reads per method")
    res = {}
    for m in METHODS:
        t = run(m, path, "time", args.repeat)
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


if __name__ == "__main__":
    main()
