"""Darshan logs: job metadata, requests tables (DXT), a heatmap and counter totals of every module."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from ...errors import InputError
from ...schemas import REQUESTS
from .._pool import DEFAULT_TIMEOUT, run_isolated
from .._stage import IDLE, in_worker, mark_unsafe, note_stage
from ._app_name import app_name
from ._base import OPS_COLUMNS, Ingester, SkipReport
from ._darshan_counters import (
    COUNTER_MODULES,
    SYNC_COUNTERS,
    ModuleCounters,
    ModuleTotals,
    job_counters,
    reduce_module,
    split_streams,
)
from ._darshan_detail import CounterDetail, counter_detail
from ._darshan_layout import MAGIC_NR, MODULES, RISKY_REGIONS, Layout, LayoutError, check_regions, parse_layout
from ._darshan_lustre import FileLayouts, read_file_layouts

__all__ = ["INGESTER", "DarshanJob", "read_darshan"]

SEGMENT_DTYPE = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start_time", "<f8"), ("end_time", "<f8")])
"""Layout of darshan-util's ``segment_info`` struct (32 bytes, trails each DXT file record)."""

_STRUCTS = {
    "POSIX": "struct darshan_posix_file",
    "MPI-IO": "struct darshan_mpiio_file",
    "H5F": "struct darshan_hdf5_file",
    "H5D": "struct darshan_hdf5_dataset",
    "PNETCDF_FILE": "struct darshan_pnetcdf_file",
    "PNETCDF_VAR": "struct darshan_pnetcdf_var",
    "STDIO": "struct darshan_stdio_file",
    "DFS": "struct darshan_dfs_file",
    "DAOS": "struct darshan_daos_object",
}
_DXT_MODULES = ("DXT_POSIX", "DXT_MPIIO")
# Heatmap record ids are hashes of "heatmap:<name>" (see pydarshan report.read_all_heatmap_records).
_HEATMAP_IDS = {
    16592106915301738621: "POSIX",
    3668870418325792824: "MPIIO",
    3989511027826779520: "STDIO",
    1597927878319380788: "DFS",
    4131494093108637317: "DAOS",
}
_STEP_KEYS = ("step", "stepid", "SLURM_STEP_ID")
# Modules whose records darshan-util parses (pydarshan's _structdefs), in header order: each is read or
# drained, so that a truncated or corrupt region is detected.
_KNOWN_MODULES = tuple(m for m in MODULES if m not in ("NULL", "MDHIM", "APXC", "APMPI"))
_COMPRESSED = {
    b"BZh": "a bzip2-compressed file",
    b"\x1f\x8b": "a gzip-compressed file",
    b"\xfd7zXZ": "an xz-compressed file",
    b"PK\x03\x04": "a zip archive",
}


@dataclass(frozen=True)
class DarshanJob:
    """One Darshan log: metadata, DXT requests tables, heatmap, counter totals and which source to trust.

    ``meta`` has ``job_id``, ``user`` (uid), ``app`` (:func:`app_name` of ``exe``), ``exe`` (the
    command line), ``nprocs``, ``start`` / ``end`` (epoch s), ``runtime`` (s) and ``step`` (the
    job step from the job record's metadata, else None). ``dxt`` maps each DXT module with at
    least one segment to its requests table. ``heatmap`` is (bin width s, read bytes per bin, write
    bytes per bin), stacked ``STDIO + max(MPIIO, POSIX + max(DFS, DAOS))``, read only when the
    log has no DXT segments or a partial DXT module. ``counters`` are the job totals of the
    stacking rule (:mod:`._darshan_counters`) and ``modules`` the :class:`ModuleTotals` of
    every counter module in the log.

    ``partial_dxt`` is True when a DXT module is flagged incomplete: the runtime ran out of DXT
    memory and dropped every later segment, so its trace only covers the start of the run.
    ``source`` is then ``'heatmap'`` if the log has HEATMAP bins (they cover the whole run),
    else still ``'dxt'``; ``'counters'`` when there is neither.

    ``syncs`` has, when the log has DXT, one row per POSIX or MPI-IO record that made sync calls
    (fsync, fdatasync, MPI_File_sync: DXT does not trace them): ``module``, ``file``, ``rank`` (-1
    for a record shared by every rank), ``syncs`` (calls) and ``write_time`` (its ``<P>_F_WRITE_TIME``
    in s, the writes' time and the syncs'); None without DXT.

    ``layouts`` are the file layouts of the log's LUSTRE records (:class:`FileLayouts`: stripe size and count,
    first OST, the file system's OST count, and why a file has none); None when the log has no LUSTRE module.

    ``detail`` is what the counters say of the requests beyond the totals (:class:`CounterDetail`: request sizes,
    access order, metadata time, each rank's bytes and time), for the job detail.
    """

    meta: dict
    dxt: dict
    heatmap: tuple[float, np.ndarray, np.ndarray] | None
    counters: dict
    modules: tuple[ModuleTotals, ...]
    source: str
    partial_dxt: bool
    syncs: pl.DataFrame | None = None
    layouts: FileLayouts | None = None
    detail: CounterDetail | None = None

    @property
    def requests(self) -> pl.DataFrame | None:
        """The request-level trace: DXT_POSIX segments, else DXT_MPIIO, else None (what `iosets ingest` replays)."""
        return self.dxt.get("DXT_POSIX", self.dxt.get("DXT_MPIIO"))


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
    j = job[0]
    return {
        "job_id": str(j.jobid),
        "user": str(j.uid),
        "app": app_name(exe_str),
        "exe": exe_str,
        "nprocs": int(j.nprocs),
        "start": j.start_time_sec + j.start_time_nsec * 1e-9,
        "end": j.end_time_sec + j.end_time_nsec * 1e-9,
        "runtime": float(runtime[0]),
        "step": _job_step(ffi.string(j.metadata).decode("utf-8", "replace")),
    }


def _job_step(metadata: str) -> str | None:
    """The job step in the job record's ``key=value`` lines (``step``, ``stepid`` or ``SLURM_STEP_ID``)."""
    pairs = dict(line.split("=", 1) for line in metadata.splitlines() if "=" in line)
    return next((pairs[k].strip() for k in _STEP_KEYS if pairs.get(k, "").strip()), None)


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
    """All segments of a DXT module as the requests table (per record: writes, then reads)."""
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
    ).cast({c: REQUESTS.polars[c] for c in OPS_COLUMNS})


def _read_heatmap(log: _Log) -> tuple[float, np.ndarray, np.ndarray] | None:
    """HEATMAP bins summed over ranks per module, then stacked: ``STDIO + max(MPIIO, POSIX + max(DFS, DAOS))``."""
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
        mod = _HEATMAP_IDS.get(int(rec.base_rec.id))
        log.release(buf)
        if mod is not None:
            per_mod.setdefault(mod, []).append((width, rbins, wbins))
    if not per_mod:
        return None
    widths = {mod: {w for w, _, _ in recs} for mod, recs in per_mod.items()}
    for mod, found in widths.items():
        if len(found) != 1:
            log.fail(f"HEATMAP {mod} records have different bin widths {sorted(found)}")
    bin_width = {w for found in widths.values() for w in found}
    if len(bin_width) != 1:
        found_all = ", ".join(f"{m} {w:g} s" for m, (w,) in widths.items())
        log.fail(f"HEATMAP modules have different bin widths ({found_all})")
    n = max(len(r) for recs in per_mod.values() for _, r, _ in recs)
    sums = {m: (np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)) for m in _HEATMAP_IDS.values()}
    for mod, recs in per_mod.items():
        read, write = sums[mod]
        for _, r, w in recs:
            read[: len(r)] += r
            write[: len(w)] += w

    def stack(k: int) -> np.ndarray:
        v = {m: pair[k] for m, pair in sums.items()}
        return v["STDIO"] + np.maximum(v["MPIIO"], v["POSIX"] + np.maximum(v["DFS"], v["DAOS"]))

    return bin_width.pop(), stack(0), stack(1)


def _record_dtype(log: _Log, mod: str, n_counters: int, n_fcounters: int) -> np.dtype:
    """One record of a counter module as a numpy structured type: ``id``, ``rank``, ``counters``, ``fcounters``."""
    ffi, struct = log.ffi, _STRUCTS[mod]
    return np.dtype(
        {
            "names": ["id", "rank", "counters", "fcounters"],
            "formats": ["<u8", "<i8", ("<i8", n_counters), ("<f8", n_fcounters)],
            "offsets": [
                ffi.offsetof(struct, "base_rec", "id"),
                ffi.offsetof(struct, "base_rec", "rank"),
                ffi.offsetof(struct, "counters"),
                ffi.offsetof(struct, "fcounters"),
            ],
            "itemsize": ffi.sizeof(struct),
        }
    )


@dataclass(frozen=True)
class _Records:
    """One counter module's records as read, with its counter names."""

    module: str
    records: np.ndarray
    cnames: list
    fnames: list

    def reduce(self, nprocs: int) -> list[ModuleCounters]:
        """Totals, per-rank I/O time and I/O window of each part (STDIO's standard streams apart).

        Reducing checks the values: it comes after every module is read, so that darshan-util fails first on a log
        it cannot read (a crash names its module), and a log it reads with impossible values fails after.
        """
        parts = split_streams(self.module, self.records)
        return [reduce_module(name, part, self.cnames, self.fnames, nprocs) for name, part in parts]


def _read_module_counters(log: _Log, mod: str) -> _Records:
    """One counter module's records."""
    cnames, fnames = log.b.counter_names(mod), log.b.fcounter_names(mod)
    dtype = _record_dtype(log, mod, len(cnames), len(fnames))
    idx = log.begin(mod)
    buf = log.ffi.new("void **")
    raw = bytearray()
    while log.get(idx, mod, buf):
        raw += log.ffi.buffer(buf[0], dtype.itemsize)
        log.release(buf)
    return _Records(mod, np.frombuffer(raw, dtype=dtype), list(cnames), list(fnames))


SYNCS_SCHEMA = {"module": pl.String, "file": pl.String, "rank": pl.Int64, "syncs": pl.Int64, "write_time": pl.Float64}
"""Columns of :attr:`DarshanJob.syncs`."""


def _syncs(read: list[_Records], names: dict) -> pl.DataFrame:
    """The POSIX and MPI-IO records that made sync calls: module, file, rank, syncs, write_time."""
    frames = []
    for part in (r for r in read if r.module in SYNC_COUNTERS):
        prefix = "MPIIO" if part.module == "MPI-IO" else part.module
        cols = [part.cnames.index(n) for n in SYNC_COUNTERS[part.module] if n in part.cnames]
        if not cols or f"{prefix}_F_WRITE_TIME" not in part.fnames or not len(part.records):
            continue
        recs = part.records
        syncs = np.clip(recs["counters"][:, cols], 0, None).sum(axis=1)
        keep = np.flatnonzero(syncs > 0)
        frames.append(
            pl.DataFrame(
                {
                    "module": [part.module] * len(keep),
                    "file": [names.get(int(i)) for i in recs["id"][keep]],
                    "rank": recs["rank"][keep],
                    "syncs": syncs[keep],
                    "write_time": recs["fcounters"][keep, part.fnames.index(f"{prefix}_F_WRITE_TIME")],
                },
                schema=SYNCS_SCHEMA,
            )
        )
    return pl.concat(frames) if frames else pl.DataFrame(schema=SYNCS_SCHEMA)


def _drain(log: _Log, mod: str) -> None:
    """Read a module's records through without keeping them, so a truncated tail is detected."""
    buf = log.ffi.new("void **")
    idx = log.begin(mod)
    while log.get(idx, mod, buf):
        log.release(buf)


def _check_file(path: Path) -> tuple[bytes, Layout]:
    """Reject, before darshan-util sees them, missing, empty and compressed files and logs whose layout lies.

    Returns the log's bytes and their layout (header fields and regions).
    """
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
    return data, layout


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
        ``dxt`` holds one requests table per DXT module with the ops-table columns (times in s
        since job start), one row per segment, per record writes then reads; ``ops`` is the
        DXT_POSIX one, else DXT_MPIIO. ``source`` tells which of ops / heatmap / counters
        carries the time structure (HEATMAP rather than a partial DXT trace). ``counters``
        count every module once under the stacking rule of :mod:`._darshan_counters`.

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
    """:func:`read_darshan` in this process: the checks and the LUSTRE records in Python, then darshan-util."""
    layouts = read_file_layouts(*_check_file(path))  # the log's bytes are let go before darshan-util reads it
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
    return dataclasses.replace(job, layouts=layouts)


def _read_all(b, path: Path) -> DarshanJob:
    """Open the log with darshan-util and read everything read_darshan returns but the file layouts (read in Python).

    The modules iosets uses are read in header order: counter modules, DXT (the name records
    first), HEATMAP when the trace is missing or partial; then the other modules darshan-util
    parses are drained (read through, to detect truncation), so that one it mishandles cannot
    spoil what was read.
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
        counter_records, dxt = [], {}
        names: dict | None = None
        heatmap = None
        done = set()
        for mod in (m for m in _KNOWN_MODULES if m in log.modules):
            if mod in COUNTER_MODULES:
                counter_records.append(_read_module_counters(log, mod))
            elif mod in _DXT_MODULES:
                names = _read_names(log) if names is None else names
                frame = _read_dxt(log, mod, meta["job_id"], names)
                if frame is not None:
                    dxt[mod] = frame
            elif mod == "HEATMAP" and (not dxt or _partial(log, dxt)):  # a truncated trace yields to whole-run bins
                heatmap = _read_heatmap(log)
            else:
                continue
            done.add(mod)
        for mod in (m for m in _KNOWN_MODULES if m in log.modules and m not in done):
            _drain(log, mod)  # last: a module darshan-util mishandles (LUSTRE, crash 3) cannot spoil the others
        try:
            parts = [part for records in counter_records for part in records.reduce(meta["nprocs"])]
            counters, modules = job_counters(parts, meta["nprocs"])
            detail = counter_detail(
                [(r.module, r.records, r.cnames, r.fnames) for r in counter_records], meta["nprocs"]
            )
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None
        source = "heatmap" if heatmap is not None else "dxt" if dxt else "counters"
        job = DarshanJob(
            meta=meta,
            dxt=dxt,
            heatmap=heatmap,
            counters=counters,
            modules=modules,
            source=source,
            partial_dxt=_partial(log, dxt),
            syncs=_syncs(counter_records, names) if dxt and names is not None else None,
            detail=detail,
        )
    except BaseException:
        mark_unsafe()
        if not in_worker():
            log.lib.darshan_log_close(log.handle)
        raise
    note_stage("closing the log")
    log.lib.darshan_log_close(log.handle)
    note_stage(IDLE)
    return job


def _partial(log: _Log, dxt: dict) -> bool:
    """Whether a DXT module that gave segments is flagged incomplete."""
    return any(log.modules[mod]["partial"] for mod in dxt)


def _read_ops(path: Path, class_by: str, errors: str, report: SkipReport) -> pl.DataFrame:
    """The DXT segments of a log (``job_id`` the job's id); a log without DXT has no request-level trace."""
    ops = read_darshan(path).requests
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
