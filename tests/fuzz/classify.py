"""Read each mutant of a fuzz corpus in a child process and classify how the read ended.

Outcomes: ``ok`` (every module read through), ``exception`` (a Python exception, message kept),
``signal`` (the child was killed by a signal: ``signal`` names it, e.g. SIGSEGV or SIGABRT,
as a negative ``subprocess`` return code would), ``exit`` (another non-zero exit status) and
``timeout`` (killed after ``timeout`` seconds).

The reader mirrors one that wants everything in the log, with pydarshan's cffi backend:
log_open, log_get_job, log_get_exe, log_get_mounts, log_get_modules, log_get_name_records, then
every record of every module darshan-util has a reader for (``darshan_log_get_record`` until it
returns 0; -1 raises), DXT segments copied as iosets copies them, then log_close (in a
``finally``, as iosets does). ``--reader pydarshan`` instead runs
``darshan.DarshanReport(path, read_all=True)``, deletes it and collects garbage (the report's
``log_close`` runs then).

Children are forked from a small server process that has already imported the backend (a
fresh interpreter per mutant costs 0.6 s); ``--isolation subprocess`` starts one per mutant.

Usage::

    python tests/fuzz/classify.py --n 300 --seed 0            # corpus in a temporary directory
    python tests/fuzz/classify.py --corpus DIR --out results.json --backtrace   # + gdb stack per crash
    python tests/fuzz/classify.py --child some.darshan        # read one log in this process
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEGMENT_BYTES = 32  # struct segment_info
OUTCOMES = ("ok", "exception", "signal", "exit", "timeout")


# ----------------------------------------------------------------------------- the reader (child side)


def _decode(b, mod: str, buf) -> int:
    """Copy one record out of darshan-util's buffer as a reader would; returns its DXT segment count."""
    import numpy as np

    ffi = b.ffi
    if mod in ("DXT_POSIX", "DXT_MPIIO"):
        rec = ffi.cast("struct dxt_file_record *", buf[0])
        n = rec.write_count + rec.read_count
        if n:
            head = ffi.sizeof("struct dxt_file_record")
            seg = ffi.buffer(ffi.cast("char *", buf[0]) + head, n * SEGMENT_BYTES)
            np.frombuffer(seg, dtype=np.float64).copy()
        return n
    if mod == "HEATMAP":
        rec = ffi.cast("struct darshan_heatmap_record *", buf[0])
        for bins in (rec.write_bins, rec.read_bins):
            np.frombuffer(ffi.buffer(bins, 8 * rec.nbins), dtype=np.int64).copy()
        return 0
    if mod == "LUSTRE":
        rec = ffi.cast("struct darshan_lustre_record *", buf[0])
        names = b.counter_names("LUSTRE_COMP")
        stripes = names.index("LUSTRE_COMP_STRIPE_COUNT")
        ost = 0
        for i in range(rec.num_comps):
            counters = np.frombuffer(ffi.buffer(rec.comps[i].counters), dtype=np.int64).copy()
            ffi.unpack(rec.ost_ids + ost, int(counters[stripes]))
            ost += int(counters[stripes])
        return 0
    b._make_generic_record(ffi.cast(b._structdefs[mod], buf), mod, "numpy")
    return 0


def read_log(path, progress: Callable[[str], None] | None = None) -> dict:
    """Read everything in a Darshan log with pydarshan's cffi backend; returns a summary.

    Raises RuntimeError when darshan-util reports an error (open failed, a record read returned -1).
    """
    from darshan.backend import cffi_backend as b

    step = progress or (lambda s: None)
    ffi, lib = b.ffi, b.libdutil
    step("open")
    log = b.log_open(str(path))
    if not log["handle"]:
        raise RuntimeError("darshan_log_open failed")
    summary: dict = {"records": {}, "segments": {}}
    try:
        step("job")
        job = b.log_get_job(log)
        summary["nprocs"] = int(job["nprocs"])
        step("exe")
        b.log_get_exe(log)
        step("mounts")
        summary["mounts"] = len(b.log_get_mounts(log))
        step("modules")
        mods = b.log_get_modules(log)
        step("name_records")
        summary["names"] = len(b.log_get_name_records(log))
        for mod, info in mods.items():
            if mod not in b._structdefs or mod.startswith(("APXC", "APMPI")):
                summary["records"][mod] = None  # darshan-util has no reader for it here
                continue
            step(f"records {mod}")
            buf = ffi.new("void **")
            n = nseg = 0
            while True:
                r = lib.darshan_log_get_record(log["handle"], info["idx"], buf)
                if r < 0:
                    raise RuntimeError(f"darshan_log_get_record failed on {mod} record {n}")
                if r == 0:
                    break
                nseg += _decode(b, mod, buf)
                lib.darshan_free(buf[0])
                buf[0] = ffi.NULL
                n += 1
            summary["records"][mod] = n
            if mod.startswith("DXT_"):
                summary["segments"][mod] = nseg
    finally:
        step("close")
        b.log_close(log)
    step("done")
    return summary


def read_log_pydarshan(path, progress: Callable[[str], None] | None = None) -> dict:
    """Read a log the way a pydarshan user does: ``DarshanReport(path, read_all=True)``."""
    import darshan

    step = progress or (lambda s: None)
    step("DarshanReport")
    report = darshan.DarshanReport(str(path), read_all=True)
    summary = {"records": {m: len(r) for m, r in report.records.items()}}
    step("close")
    del report
    gc.collect()  # the report sits in a reference cycle: its __del__ (log_close) runs here
    step("done")
    return summary


READERS = {"lowlevel": read_log, "pydarshan": read_log_pydarshan}


def _child_main(path: str, reader: str, out_fd: int) -> int:
    """Read one log, writing ``stage ...`` lines then ``result {json}`` or ``exception {json}`` to out_fd."""

    def emit(kind: str, payload) -> None:
        os.write(out_fd, f"{kind} {json.dumps(payload)}\n".encode())

    try:
        summary = READERS[reader](path, progress=lambda s: emit("stage", s))
    except Exception as exc:
        emit("exception", f"{type(exc).__name__}: {exc}")
        return 1
    emit("result", summary)
    return 0


# ----------------------------------------------------------------------------- the parent side


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _outcome(path, returncode: int | None, out: str, err: str, seconds: float, timed_out: bool) -> dict:
    """One classification row from a child's exit status and output."""
    stage = result = message = None
    for line in out.splitlines():
        kind, _, payload = line.partition(" ")
        if kind == "stage":
            stage = json.loads(payload)
        elif kind == "result":
            result = json.loads(payload)
        elif kind == "exception":
            message = json.loads(payload)
    if timed_out:
        outcome, sig = "timeout", None
    elif returncode is not None and returncode < 0:
        outcome, sig = "signal", _signal_name(-returncode)
    elif returncode == 0 and result is not None:
        outcome, sig = "ok", None
    elif message is not None:
        outcome, sig = "exception", None
    else:
        outcome, sig = "exit", None
    lines = [ln for ln in err.splitlines() if ln.strip()]
    c_lines = [
        ln for ln in lines if not ln.startswith(("Fatal Python error", "Current thread", "  File", "Thread", "<"))
    ]
    return {
        "path": str(path),
        "outcome": outcome,
        "signal": sig,
        "returncode": returncode,
        "stage": stage,
        "message": message,
        "records": json.dumps(result["records"]) if result else None,
        "darshan_stderr": " | ".join(dict.fromkeys(c_lines))[:500] or None,
        "fatal": next((ln for ln in lines if ln.startswith("Fatal Python error")), None),
        "seconds": round(seconds, 3),
    }


def _fork_one(path: str, reader: str, timeout: float) -> dict:
    """Fork a child of this (server) process to read one log; contain and classify its end."""
    with tempfile.TemporaryFile() as err:
        r, w = os.pipe()
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:  # child
            code = 1
            try:
                os.close(r)
                os.dup2(err.fileno(), 2)
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                code = _child_main(path, reader, w)
            finally:
                os._exit(code)
        os.close(w)
        chunks, timed_out = [], False
        deadline = t0 + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                os.kill(pid, signal.SIGKILL)
                break
            ready, _, _ = select.select([r], [], [], left)
            if ready:
                data = os.read(r, 65536)
                if not data:
                    break
                chunks.append(data)
        os.close(r)
        _, status = os.waitpid(pid, 0)
        seconds = time.monotonic() - t0
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status)
    return _outcome(path, code, b"".join(chunks).decode("utf-8", "replace"), text, seconds, timed_out)


def _serve(reader: str, timeout: float) -> int:
    """Fork server: one log path per stdin line, one JSON outcome per stdout line."""
    import faulthandler

    from darshan.backend import cffi_backend  # noqa: F401  (import once, before forking)

    faulthandler.enable()
    for line in sys.stdin:
        path = line.rstrip("\n")
        if path:
            sys.stdout.write(json.dumps(_fork_one(path, reader, timeout)) + "\n")
            sys.stdout.flush()
    return 0


def _run_subprocess(path, reader: str, timeout: float) -> dict:
    """Read one log in a fresh interpreter (``classify.py --child``)."""
    cmd = [
        sys.executable,
        "-X",
        "faulthandler",
        str(Path(__file__).resolve()),
        "--child",
        str(path),
        "--reader",
        reader,
    ]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode("utf-8", "replace")
        err = (exc.stderr or b"").decode("utf-8", "replace")
        return _outcome(path, None, out, err, time.monotonic() - t0, True)
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    return _outcome(path, proc.returncode, out, err, time.monotonic() - t0, False)


def classify_paths(
    paths: Iterable, *, timeout: float = 10.0, reader: str = "lowlevel", isolation: str = "fork"
) -> list[dict]:
    """Classify how reading each log ends; one dict per path (see ``_outcome`` for the keys)."""
    paths = [str(p) for p in paths]
    if reader not in READERS:
        raise ValueError(f"reader must be one of {sorted(READERS)}")
    if isolation == "subprocess":
        return [_run_subprocess(p, reader, timeout) for p in paths]
    if isolation != "fork":
        raise ValueError("isolation must be 'fork' or 'subprocess'")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--serve", "--reader", reader, "--timeout", str(timeout)]
    out = []
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as server:
        for p in paths:
            server.stdin.write(p + "\n")
            server.stdin.flush()
            line = server.stdout.readline()
            if not line:  # pragma: no cover - the server itself died
                raise RuntimeError(f"classify server exited with {server.wait()} while reading {p}")
            out.append(json.loads(line))
        server.stdin.close()
    return out


_SKIP_FRAMES = (
    "__pthread_kill_implementation",
    "__pthread_kill_internal",
    "__GI_raise",
    "__GI_abort",
    "__libc_message",
    "malloc_printerr",
    "__assert_fail_base",
    "__GI___assert_fail",
)


def backtrace(path, reader: str = "lowlevel", timeout: float = 120.0) -> dict | None:
    """Rerun the read of ``path`` under gdb; the stage it died in and its C stack, innermost first.

    ``{"stage": ..., "frames": ["func (file:line)", ...], "site": ...}`` where ``site`` is the
    innermost darshan-util frame (else the innermost frame); None when gdb is missing or the
    read did not die on a signal (a fresh process may not crash where a forked child did).
    """
    import re
    import shutil

    gdb = shutil.which("gdb")
    if gdb is None:
        return None
    me = str(Path(__file__).resolve())
    cmd = [gdb, "-q", "-nx", "-batch", "-ex", "run", "-ex", "bt 30", "--args", sys.executable, me]
    cmd += ["--child", str(path), "--reader", reader]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).stdout
    except subprocess.TimeoutExpired:
        return None
    if "received signal" not in out:
        return None
    stages = re.findall(r'^stage "(.*)"$', out, re.M)
    frames = []
    for m in re.finditer(r"^#\d+\s+(?:0x[0-9a-f]+ in )?([\w.]+) \(.*?\)(?: (?:at|from) (\S+))?$", out, re.M):
        func, where = m.group(1), m.group(2) or ""
        if func in _SKIP_FRAMES:
            continue
        if func == "ffi_call_unix64" or func.startswith(("_PyEval", "_PyObject", "PyObject_", "cfunction_")):
            break  # cffi's call into the library, or the interpreter: the rest is Python
        frames.append(f"{func} ({Path(where).name})" if where else func)
    frames = frames[:8]
    site = next((f for f in frames if "(darshan-" in f), frames[0] if frames else None)
    return {"stage": stages[-1] if stages else None, "frames": frames, "site": site}


def _corpus():
    """The sibling corpus module (tests/fuzz is not a package)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import corpus

    return corpus


def classify_corpus(corpus_dir, **kwargs):
    """Classify every mutant of a corpus directory; the manifest joined with the outcomes (Polars)."""
    import polars as pl

    read_manifest = _corpus().read_manifest
    corpus_dir = Path(corpus_dir)
    manifest = read_manifest(corpus_dir)
    rows = classify_paths([corpus_dir / f for f in manifest["file"]], **kwargs)
    outcomes = pl.DataFrame(rows, infer_schema_length=None).drop("path")
    return pl.concat([manifest, outcomes], how="horizontal")


def summarize(frame) -> dict:
    """Outcome counts overall and per mutation kind (``outcome`` or ``outcome:SIGNAL``)."""
    import polars as pl

    label = (
        pl.when(pl.col("signal").is_not_null())
        .then(pl.lit("signal:") + pl.col("signal"))
        .otherwise(pl.col("outcome"))
        .alias("label")
    )
    frame = frame.with_columns(label)
    total = dict(sorted(frame.group_by("label").len().iter_rows()))
    per_kind = frame.pivot(on="label", index="kind", values="index", aggregate_function="len").fill_null(0)
    return {"total": total, "per_kind": per_kind.sort("kind")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, help="existing corpus directory (default: make one)")
    ap.add_argument("--n", type=int, default=300, help="mutants to make when no --corpus is given")
    ap.add_argument("--seed", type=int, default=0, help="random_state of the corpus to make")
    ap.add_argument("--keep", type=Path, help="make the corpus in this directory (kept)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per mutant")
    ap.add_argument("--reader", choices=sorted(READERS), default="lowlevel")
    ap.add_argument("--isolation", choices=("fork", "subprocess"), default="fork")
    ap.add_argument("--out", type=Path, help="write the classified manifest here (.json or .parquet)")
    ap.add_argument("--backtrace", action="store_true", help="rerun each crash under gdb and keep its C stack")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        return _child_main(args.child, args.reader, sys.stdout.fileno())
    if args.serve:
        return _serve(args.reader, args.timeout)

    import polars as pl

    make_corpus = _corpus().make_corpus

    with tempfile.TemporaryDirectory(prefix="darshan-fuzz-") as tmp:
        corpus_dir = args.corpus
        if corpus_dir is None:
            corpus_dir = args.keep or Path(tmp)
            t0 = time.monotonic()
            make_corpus(corpus_dir, args.n, random_state=args.seed)
            print(f"corpus: {args.n} mutants, seed {args.seed}, in {time.monotonic() - t0:.1f} s -> {corpus_dir}")
        t0 = time.monotonic()
        frame = classify_corpus(corpus_dir, timeout=args.timeout, reader=args.reader, isolation=args.isolation)
        print(f"classified in {time.monotonic() - t0:.1f} s ({args.reader} reader, {args.isolation})")
        if args.backtrace:
            bts = [
                backtrace(Path(corpus_dir) / f, args.reader) if o == "signal" else None
                for f, o in zip(frame["file"], frame["outcome"], strict=True)
            ]
            frame = frame.with_columns(
                pl.Series("gdb_stage", [b and b["stage"] for b in bts], dtype=pl.String),
                pl.Series("gdb_site", [b and b["site"] for b in bts], dtype=pl.String),
                pl.Series("gdb_stack", [b and " < ".join(b["frames"]) for b in bts], dtype=pl.String),
            )
    summary = summarize(frame)
    print("outcomes:", json.dumps(summary["total"]))
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200):
        print(summary["per_kind"])
        crashes = frame.filter(pl.col("outcome").is_in(["signal", "timeout", "exit"]))
        if crashes.height:
            print(crashes.select("file", "signal", "stage", "field", "value", "description"))
        if "gdb_site" in frame.columns:
            sites = crashes.group_by("signal", "gdb_stage", "gdb_site").agg(pl.len(), pl.col("file").first())
            print(sites.sort("len", descending=True))
    if args.out:
        if args.out.suffix == ".parquet":
            frame.write_parquet(args.out)
        else:
            args.out.write_text(json.dumps(frame.to_dicts(), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
