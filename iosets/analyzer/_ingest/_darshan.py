"""Darshan logs: job metadata, an ops table (DXT), a heatmap or counter totals."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from ...errors import InputError
from ...schemas import OPS
from .._pool import DEFAULT_TIMEOUT, run_isolated
from .._stage import IDLE, in_worker, mark_unsafe, note_stage
from ._base import OPS_COLUMNS, Ingester, SkipReport
from ._darshan_layout import MAGIC_NR, MODULES, RISKY_REGIONS, LayoutError, check_regions, parse_layout

__all__ = ["INGESTER", "DarshanJob", "read_darshan"]

SEGMENT_DTYPE = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start_time", "<f8"), ("end_time", "<f8")])
"""Layout of darshan-util's ``segment_info`` struct (32 bytes, trails each DXT file record)."""

_COUNTER_MODULES = ("POSIX", "MPI-IO", "STDIO")
_COUNTER_PREFIX = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO"}
_STRUCTS = {
    "POSIX": "struct darshan_posix_file **",
    "MPI-IO": "struct darshan_mpiio_file **",
    "STDIO": "struct darshan_stdio_file **",
}
# Heatmap record ids are hashes of these names (see pydarshan report.read_all_heatmap_records).
_HEATMAP_IDS = {
    16592106915301738621: "POSIX",
    3668870418325792824: "MPIIO",
    3989511027826779520: "STDIO",
}
# Modules whose records darshan-util parses (pydarshan's _structdefs); read through to detect truncation.
_KNOWN_MODULES = tuple(m for m in MODULES if m not in ("NULL", "MDHIM", "APXC", "APMPI"))
_COMPRESSED = {
    b"BZh": "a bzip2-compressed file",
    b"\x1f\x8b": "a gzip-compressed file",
    b"\xfd7zXZ": "an xz-compressed file",
    b"PK\x03\x04": "a zip archive",
}


@dataclass(frozen=True)
class DarshanJob:
    """One Darshan log: metadata, ops table or heatmap, counter totals and which source to trust.

    ``partial_dxt`` is True when the DXT module used for ``ops`` is flagged incomplete: the
    runtime ran out of DXT memory and dropped every later segment, so ``ops`` only covers the
    start of the run. ``source`` is then ``'heatmap'`` if the log has HEATMAP bins (they cover
    the whole run), else still ``'dxt'``.
    """

    meta: dict
    ops: pl.DataFrame | None
    heatmap: tuple[float, np.ndarray, np.ndarray] | None
    counters: dict
    source: str
    partial_dxt: bool


def _backend():
    """Import pydarshan's cffi backend lazily (loading libdarshan-util is slow)."""
    try:
        from darshan.backend import cffi_backend
    except Exception as exc:  # pragma: no cover - depends on the install
        raise InputError(f"pydarshan's darshan-util backend is unavailable ({exc})") from None
    return cffi_backend


@contextlib.contextmanager
def _captured_stderr(sink: list):
    """Collect what C code writes to file descriptor 2 into ``sink`` (one string)."""
    with contextlib.suppress(Exception):  # pragma: no cover
        sys.stderr.flush()
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            sink.append(tmp.read().decode("utf-8", "replace"))


def _c_reason(text: str) -> str:
    """Condense darshan-util's stderr chatter into one clause."""
    lines = [ln.strip().removeprefix("Error:").strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln.removesuffix(": Success.").rstrip(".") for ln in lines]
    return "; ".join(dict.fromkeys(lines))


class _Log:
    """An open darshan-util log handle; raises InputError on every read error."""

    def __init__(self, backend, path: Path):
        self.b, self.ffi, self.lib, self.path = backend, backend.ffi, backend.libdutil, path
        self.handle = self.lib.darshan_log_open(os.fsencode(path))
        self.modules: dict = {}

    def fail(self, what: str):
        """Raise InputError naming the file and what could not be read."""
        raise InputError(f"{self.path}: {what}")

    def release(self, buf):
        """Free the record darshan-util allocated into ``buf`` and reset it to NULL."""
        if buf[0] != self.ffi.NULL:
            self.lib.darshan_free(buf[0])
            buf[0] = self.ffi.NULL

    def begin(self, mod: str) -> int:
        """Say which module darshan-util reads next (a crash names it); its index."""
        note_stage(f"reading {mod}")
        return self.modules[mod]["idx"]

    def get(self, idx: int, mod: str, buf):
        """Fetch the next record of a module into ``buf``; False at the end."""
        r = self.lib.darshan_log_get_record(self.handle, idx, buf)
        if r < 0:
            self.fail(f"cannot read the {mod} module (truncated or corrupt log)")
        return r > 0


def _read_meta(log: _Log) -> dict:
    """Job metadata, as pydarshan's log_get_job / log_get_exe report it."""
    ffi, lib = log.ffi, log.lib
    note_stage("reading the job record")
    job = ffi.new("struct darshan_job *")
    if lib.darshan_log_get_job(log.handle, job) < 0:
        log.fail("cannot read the job record")
    runtime = ffi.new("double *")
    lib.darshan_log_get_job_runtime(log.handle, job[0], runtime)
    exe = ffi.new("char[]", 4096)
    if lib.darshan_log_get_exe(log.handle, exe) < 0:
        log.fail("cannot read the executable name")
    exe_str = ffi.string(exe).decode("utf-8", "replace").strip()
    app = os.path.basename(exe_str.split()[0]) if exe_str else ""
    j = job[0]
    return {
        "job_id": str(j.jobid),
        "user": str(j.uid),
        "app": app,
        "nprocs": int(j.nprocs),
        "start": j.start_time_sec + j.start_time_nsec * 1e-9,
        "end": j.end_time_sec + j.end_time_nsec * 1e-9,
        "runtime": float(runtime[0]),
    }


def _read_modules(log: _Log) -> dict:
    """Module name -> {len, idx, partial} from the log header."""
    ffi, lib = log.ffi, log.lib
    note_stage("reading the module map")
    mods = ffi.new("struct darshan_mod_info **")
    cnt = ffi.new("int *")
    lib.darshan_log_get_modules(log.handle, mods, cnt)
    out = {}
    for i in range(cnt[0]):
        m = mods[0][i]
        out[ffi.string(m.name).decode("utf-8")] = {
            "len": int(m.len),
            "idx": int(m.idx),
            "partial": bool(m.partial_flag),
        }
    if cnt[0]:
        lib.darshan_free(mods[0])
    return out


def _read_names(log: _Log) -> dict:
    """Record id -> name (file path) map."""
    ffi, lib = log.ffi, log.lib
    note_stage("reading the name records")
    nrecs = ffi.new("struct darshan_name_record **")
    cnt = ffi.new("int *")
    lib.darshan_log_get_name_records(log.handle, nrecs, cnt)
    names = {}
    for i in range(cnt[0]):
        rec = nrecs[0][i]
        names[int(rec.id)] = ffi.string(rec.name).decode("utf-8", "replace")
        lib.darshan_free(rec.name)
    if cnt[0]:
        lib.darshan_free(nrecs[0])
    return names


def _read_dxt(log: _Log, mod: str, job_id: str, names: dict) -> pl.DataFrame | None:
    """All segments of a DXT module as the ops table (per record: writes, then reads)."""
    ffi = log.ffi
    idx = log.begin(mod)
    buf = ffi.new("void **")
    head = ffi.sizeof("struct dxt_file_record")
    seg_size = SEGMENT_DTYPE.itemsize
    raw = bytearray()
    ranks, ids, record_counts = [], [], []
    while log.get(idx, mod, buf):
        rec = ffi.cast("struct dxt_file_record *", buf[0])
        w, r = rec.write_count, rec.read_count
        n = w + r
        if n:
            raw += ffi.buffer(ffi.cast("char *", buf[0]) + head, n * seg_size)
            ranks.append(rec.base_rec.rank)
            ids.append(rec.base_rec.id)
            record_counts.append(w)
            record_counts.append(r)
        log.release(buf)
    if not raw:
        return None
    seg = np.frombuffer(raw, dtype=SEGMENT_DTYPE)
    counts = np.asarray(record_counts, dtype=np.int64)
    per_rec = counts[0::2] + counts[1::2]
    is_write = np.repeat(np.tile(np.array([True, False]), len(per_rec)), counts)
    uniq, rec_file = np.unique(np.asarray(ids, dtype=np.uint64), return_inverse=True)
    file_names = pl.Series("file", [names.get(int(u)) for u in uniq], dtype=pl.String)
    rec_file_seg = np.repeat(rec_file.astype(np.uint32), per_rec)
    frame = pl.DataFrame(
        {
            "rank": np.repeat(np.asarray(ranks, dtype=np.int64), per_rec),
            "is_write": is_write,
            "offset": seg["offset"],
            "size": seg["length"],
            "start": seg["start_time"],
            "end": seg["end_time"],
            "file": file_names.gather(pl.Series(rec_file_seg)),
        }
    )
    return frame.select(
        pl.lit(job_id, pl.String).alias("job_id"),
        "rank",
        pl.when("is_write").then(pl.lit("write")).otherwise(pl.lit("read")).alias("op"),
        "offset",
        "size",
        "start",
        "end",
        "file",
    ).cast({c: OPS.polars[c] for c in OPS_COLUMNS})


def _read_heatmap(log: _Log) -> tuple[float, np.ndarray, np.ndarray] | None:
    """HEATMAP bins summed over ranks, for POSIX, else MPI-IO, else STDIO."""
    ffi = log.ffi
    idx = log.begin("HEATMAP")
    buf = ffi.new("void **")
    per_mod: dict = {}
    while log.get(idx, "HEATMAP", buf):
        rec = ffi.cast("struct darshan_heatmap_record *", buf[0])
        nbins = int(rec.nbins)
        width = float(rec.bin_width_seconds)
        wbins = np.frombuffer(ffi.buffer(rec.write_bins, 8 * nbins), dtype=np.int64).copy()
        rbins = np.frombuffer(ffi.buffer(rec.read_bins, 8 * nbins), dtype=np.int64).copy()
        mod = _HEATMAP_IDS.get(int(rec.base_rec.id), str(int(rec.base_rec.id)))
        log.release(buf)
        per_mod.setdefault(mod, []).append((width, rbins, wbins))
    for mod in ("POSIX", "MPIIO", "STDIO", *per_mod):
        recs = per_mod.get(mod)
        if not recs:
            continue
        widths = {w for w, _, _ in recs}
        if len(widths) != 1:
            log.fail(f"HEATMAP {mod} records have different bin widths {sorted(widths)}")
        n = max(len(r) for _, r, _ in recs)
        read = np.zeros(n, dtype=np.int64)
        write = np.zeros(n, dtype=np.int64)
        for _, r, w in recs:
            read[: len(r)] += r
            write[: len(w)] += w
        return widths.pop(), read, write
    return None


def _read_counters(log: _Log, nprocs: int) -> dict:
    """Byte totals, I/O time and first/last I/O timestamps from POSIX, else MPI-IO, else STDIO."""
    b, ffi = log.b, log.ffi
    mod = next((m for m in _COUNTER_MODULES if m in log.modules), None)
    out = {"bytes_read": 0, "bytes_written": 0, "io_time": 0.0, "first_io": None, "last_io": None, "module": mod}
    if mod is None:
        return out
    pre = _COUNTER_PREFIX[mod]
    cnames = b.counter_names(mod)
    fnames = b.fcounter_names(mod)
    ci = [cnames.index(f"{pre}_BYTES_READ"), cnames.index(f"{pre}_BYTES_WRITTEN")]
    fi_time = [fnames.index(f"{pre}_F_{k}_TIME") for k in ("READ", "WRITE", "META")]
    fi_start = [i for i, n in enumerate(fnames) if n.endswith("_START_TIMESTAMP")]
    fi_end = [i for i, n in enumerate(fnames) if n.endswith("_END_TIMESTAMP")]
    idx = log.begin(mod)
    buf = ffi.new("void **")
    struct = _STRUCTS[mod][:-3]
    size = ffi.sizeof(struct)
    rec_dtype = np.dtype(
        {
            "names": ["counters", "fcounters"],
            "formats": [("<i8", len(cnames)), ("<f8", len(fnames))],
            "offsets": [ffi.offsetof(struct, "counters"), ffi.offsetof(struct, "fcounters")],
            "itemsize": size,
        }
    )
    raw = bytearray()
    while log.get(idx, mod, buf):
        raw += ffi.buffer(buf[0], size)
        log.release(buf)
    if not raw:
        return out
    recs = np.frombuffer(raw, dtype=rec_dtype)
    c = recs["counters"][:, ci]
    f = recs["fcounters"]
    out["bytes_read"] = int(np.clip(c[:, 0], 0, None).sum())
    out["bytes_written"] = int(np.clip(c[:, 1], 0, None).sum())
    out["io_time"] = float(np.clip(f[:, fi_time], 0, None).sum() / max(nprocs, 1))
    starts = f[:, fi_start]
    ends = f[:, fi_end]
    starts = starts[starts > 0]
    ends = ends[ends > 0]
    out["first_io"] = float(starts.min()) if starts.size else None
    out["last_io"] = float(ends.max()) if ends.size else None
    return out


def _drain(log: _Log, mod: str) -> None:
    """Read a module's records through without keeping them, so a truncated tail is detected."""
    buf = log.ffi.new("void **")
    idx = log.begin(mod)
    while log.get(idx, mod, buf):
        log.release(buf)


def _check_file(path: Path) -> None:
    """Reject, before darshan-util sees them, missing, empty and compressed files and logs whose layout lies."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    data = path.read_bytes()
    if not data:
        raise InputError(f"{path}: empty file, expected a Darshan log")
    for magic, what in _COMPRESSED.items():
        if data.startswith(magic):
            raise InputError(f"{path}: {what}, expected a Darshan log (decompress it first)")
    try:
        layout = parse_layout(data)
        dxt = any(r.name in ("DXT_POSIX", "DXT_MPIIO") for r in layout.regions)
        check_regions(data, layout, (*RISKY_REGIONS, "name_map") if dxt else RISKY_REGIONS)
    except LayoutError as exc:
        raise InputError(f"{path}: {exc}") from None


def _check_times(path: Path, meta: dict) -> None:
    """A job that ends before it starts: its job record is corrupt (its runtime would be negative)."""
    start, end = meta["start"], meta["end"]
    if end < start:
        raise InputError(
            f"{path}: corrupt job record: the job ends {start - end:g} s before it starts "
            f"(start {start:.3f}, end {end:.3f})"
        )


def read_darshan(path, *, isolated: bool = True, timeout: float = DEFAULT_TIMEOUT) -> DarshanJob:
    """Read a Darshan log: metadata, DXT ops (else HEATMAP bins, else counters) and totals.

    Parameters
    ----------
    path : str or Path
        A Darshan log (``.darshan``).
    isolated : bool, default=True
        Run darshan-util in a worker process (started on first use, kept for later calls), so
        that a corrupt log that crashes or hangs it raises InputError instead of killing this
        process. False reads in this process (what analyze's workers do).
    timeout : float, default=60
        Seconds an isolated read may take before its worker is killed.

    Returns
    -------
    DarshanJob
        ``ops`` has the ops-table columns (times in s since job start), one row per DXT
        segment, per record writes then reads; ``source`` tells which of ops / heatmap /
        counters carries the time structure (HEATMAP rather than a partial DXT trace).

    Raises
    ------
    InputError
        The file is missing, compressed, not a Darshan log, truncated or corrupt, or
        darshan-util crashed or overran the timeout on it; one line, naming the file:
        ``x.darshan: darshan-util crashed: signal 11 (SIGSEGV) while reading DXT_POSIX``.
    """
    path = Path(path)
    if isolated and not in_worker():
        return run_isolated(_read_checked, path, name=str(path), timeout=timeout)
    return _read_checked(path)


def _read_checked(path: Path) -> DarshanJob:
    """:func:`read_darshan` in this process: the checks in Python, then darshan-util."""
    _check_file(path)
    b = _backend()
    err: list = []
    try:
        with _captured_stderr(err):
            job = _read_all(b, path)
    except InputError as exc:
        reason = _c_reason(err[0]) if err else ""
        raise InputError(f"{exc}" + (f" [darshan-util: {reason}]" if reason else "")) from None
    except Exception as exc:  # noqa: BLE001 - pydarshan and cffi raise anything on a corrupt log
        reason = _c_reason(err[0]) if err else ""
        raise InputError(
            f"{path}: cannot read Darshan log ({type(exc).__name__}: {exc}"
            + (f"; darshan-util: {reason}" if reason else "")
            + ")"
        ) from None
    if err and err[0].strip():  # warnings from darshan-util on a log that did load
        sys.stderr.write(err[0])
    _check_times(path, job.meta)
    return job


def _read_all(b, path: Path) -> DarshanJob:
    """Open the log with darshan-util and read everything read_darshan returns.

    After a failed read a worker leaves the log open and retires: closing it is what crashes
    darshan-util (it may have freed the handle already).
    """
    note_stage("opening the log")
    log = _Log(b, path)
    if not log.handle:
        mark_unsafe()
        log.fail("not a readable Darshan log (darshan_log_open failed on the header)")
    try:
        meta = _read_meta(log)
        log.modules = _read_modules(log)
        counters = _read_counters(log, meta["nprocs"])
        ops = heatmap = None
        partial = False
        dxt_mod = next((m for m in ("DXT_POSIX", "DXT_MPIIO") if m in log.modules), None)
        done = {counters["module"], dxt_mod}
        if dxt_mod is not None:
            names = _read_names(log)
            ops = _read_dxt(log, dxt_mod, meta["job_id"], names)
            partial = log.modules[dxt_mod]["partial"]
            if ops is None and dxt_mod == "DXT_POSIX" and "DXT_MPIIO" in log.modules:
                ops = _read_dxt(log, "DXT_MPIIO", meta["job_id"], names)
                done.add("DXT_MPIIO")
                partial = log.modules["DXT_MPIIO"]["partial"]
            if ops is None:
                partial = False
        if (ops is None or partial) and "HEATMAP" in log.modules:  # a truncated trace yields to whole-run bins
            heatmap = _read_heatmap(log)
            done.add("HEATMAP")
        for mod in _KNOWN_MODULES:
            if mod in log.modules and mod not in done:
                _drain(log, mod)
        source = "heatmap" if heatmap is not None else "dxt" if ops is not None else "counters"
        job = DarshanJob(meta=meta, ops=ops, heatmap=heatmap, counters=counters, source=source, partial_dxt=partial)
    except BaseException:
        mark_unsafe()
        if not in_worker():
            log.lib.darshan_log_close(log.handle)
        raise
    note_stage("closing the log")
    log.lib.darshan_log_close(log.handle)
    note_stage(IDLE)
    return job


def _read_ops(path: Path, class_by: str, errors: str, report: SkipReport) -> pl.DataFrame:
    """The DXT segments of a log (``job_id`` the job's id); a log without DXT has no request-level trace."""
    ops = read_darshan(path).ops
    if ops is None:
        raise InputError(f"{path}: no DXT module, so no request-level trace (try `iosets analyze`)")
    return ops


def _sniff(head: bytes) -> bool:
    magic = head[8:16]
    return len(magic) == 8 and MAGIC_NR in (int.from_bytes(magic, "little"), int.from_bytes(magic, "big"))


INGESTER = Ingester(
    "darshan",
    "Darshan log with DXT tracing (one request per DXT segment)",
    _read_ops,
    class_by=("job",),
    suffixes=(".darshan",),
    sniff=_sniff,
)
