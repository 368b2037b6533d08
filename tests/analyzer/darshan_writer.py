"""Write genuine Darshan logs with darshan-util's own writer functions (a test helper).

The records are serialized as darshan-util 3.5 reads them back:

* counter modules (:func:`counter_record`): base record (id, rank), the parent file's record id
  (H5D, PNETCDF_VAR), int64 counters, double counters, then DFS's pool and container uuids
  (16 bytes each) and DAOS's uuids and object id (``oid_hi``, ``oid_lo``); e.g. POSIX is
  ``struct darshan_posix_file`` (base record, 69 int64 counters, 17 double counters, 704 bytes);
* DXT_POSIX / DXT_MPIIO: ``struct dxt_file_record`` (base record, shared flag, 64-byte hostname,
  write and read counts) followed by the write segments, then the read segments (32 bytes each);
* HEATMAP: ``struct darshan_heatmap_record`` as laid out in memory, i.e. base record, bin width,
  nbins and two (ignored) pointer slots, followed by the write bins, then the read bins;
* LUSTRE: version 1 (:func:`lustre_record_v1`, darshan 3.1 to 3.4) or version 2 (:func:`lustre_record_v2`,
  darshan 3.5), as ``write_log(..., versions={"LUSTRE": 1})`` chooses.

Module ids and versions are those of darshan 3.5 (``DARSHAN_MODULE_IDS``); darshan-util refuses
a module whose version is newer than its own, and each module is written in increasing id order.
"""

from __future__ import annotations

import os
import struct

import cffi
import numpy as np
from darshan.backend import cffi_backend
from darshan.discover_darshan import find_utils

MOD_IDS = {
    "POSIX": 1,
    "MPI-IO": 2,
    "H5F": 3,
    "H5D": 4,
    "PNETCDF_FILE": 5,
    "PNETCDF_VAR": 6,
    "LUSTRE": 8,
    "STDIO": 9,
    "DXT_POSIX": 10,
    "DXT_MPIIO": 11,
    "HEATMAP": 15,
    "DFS": 16,
    "DAOS": 17,
}
MOD_VERSIONS = {
    "POSIX": 4,
    "MPI-IO": 3,
    "H5F": 3,
    "H5D": 2,
    "PNETCDF_FILE": 3,
    "PNETCDF_VAR": 1,
    "LUSTRE": 2,
    "STDIO": 2,
    "DXT_POSIX": 1,
    "DXT_MPIIO": 2,
    "HEATMAP": 1,
    "DFS": 1,
    "DAOS": 1,
}
"""The newest version darshan-util 3.5 reads of each module (it returns no record of a newer one)."""
HEATMAP_RECORD_IDS = {
    "POSIX": 16592106915301738621,
    "MPIIO": 3668870418325792824,
    "STDIO": 3989511027826779520,
    "DFS": 1597927878319380788,
    "DAOS": 4131494093108637317,
}
"""Record ids of the ``heatmap:<module>`` name records the runtime writes."""

_CDEF = """
struct darshan_job {
    int64_t uid;
    int64_t start_time_sec;
    int64_t start_time_nsec;
    int64_t end_time_sec;
    int64_t end_time_nsec;
    int64_t nprocs;
    int64_t jobid;
    char metadata[1024];
};
struct darshan_mnt_info { char mnt_type[3015]; char mnt_path[3015]; };
typedef struct UT_hash_handle {
    void *tbl;
    void *prev;
    void *next;
    void *hh_prev;
    void *hh_next;
    void *key;
    unsigned keylen;
    unsigned hashv;
} UT_hash_handle;
struct darshan_name_record_ref { void *name_record; UT_hash_handle hlink; };
void *darshan_log_create(const char *name, int comp_type, int partial_flag);
int darshan_log_put_job(void *fd, struct darshan_job *job);
int darshan_log_put_exe(void *fd, char *buf);
int darshan_log_put_mounts(void *fd, struct darshan_mnt_info *mnts, int count);
int darshan_log_put_namehash(void *fd, struct darshan_name_record_ref *hash);
int darshan_log_put_mod(void *fd, int mod_id, void *buf, int size, int ver);
void darshan_log_close(void *fd);
"""
_ZLIB = 0  # enum darshan_comp_type: DARSHAN_ZLIB_COMP
_SEGMENT = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start_time", "<f8"), ("end_time", "<f8")])
_DXT_HEAD = struct.Struct("<Qqq64sqq")
_HEATMAP_HEAD = struct.Struct("<Qqdq16x")
_WITH_PARENT = ("H5D", "PNETCDF_VAR")  # a uint64 parent file record id follows the base record
_TAILS = {"DFS": ("pool_uuid", "cont_uuid"), "DAOS": ("pool_uuid", "cont_uuid", "oid_hi", "oid_lo")}

_ffi = cffi.FFI()
_ffi.cdef(_CDEF)
_lib = None


def _library():
    """libdarshan-util with the writer declarations, found the way pydarshan finds it (once)."""
    global _lib
    if _lib is None:
        _lib = find_utils(_ffi, None)
    return _lib


def counter_record(
    module: str,
    rec_id: int,
    rank: int,
    counters: dict | None = None,
    fcounters: dict | None = None,
    *,
    extra: dict | None = None,
) -> bytes:
    """A record of a counter module; counters by name (e.g. ``H5D_BYTES_READ``), the rest zero.

    ``extra`` sets the fields beyond the counters: ``file_rec_id`` (H5D, PNETCDF_VAR: the parent
    file's record id), ``pool_uuid`` / ``cont_uuid`` (DFS, DAOS: 16 bytes) and ``oid_hi`` /
    ``oid_lo`` (DAOS). The length is checked against darshan-util's struct.
    """
    cnames, fnames = cffi_backend.counter_names(module), cffi_backend.fcounter_names(module)
    c = np.zeros(len(cnames), dtype="<i8")
    f = np.zeros(len(fnames), dtype="<f8")
    for name, value in (counters or {}).items():
        c[cnames.index(name)] = value
    for name, value in (fcounters or {}).items():
        f[fnames.index(name)] = value
    extra = dict(extra or {})
    head = struct.pack("<Qq", rec_id, rank)
    if module in _WITH_PARENT:
        head += struct.pack("<Q", extra.pop("file_rec_id", 0))
    tail = b""
    for field in _TAILS.get(module, ()):
        value = extra.pop(field, 0 if field.startswith("oid") else bytes(16))
        tail += struct.pack("<Q", value) if field.startswith("oid") else struct.pack("16s", value)
    if extra:
        raise ValueError(f"{module} records have no field {sorted(extra)}")
    out = head + c.tobytes() + f.tobytes() + tail
    size = cffi_backend.ffi.sizeof(cffi_backend._structdefs[module].removesuffix(" **"))
    if len(out) != size:
        raise AssertionError(f"{module} record of {len(out)} bytes, darshan-util's struct has {size}")
    return out


def posix_record(rec_id: int, rank: int, counters: dict | None = None, fcounters: dict | None = None) -> bytes:
    """A POSIX record; counters by name (e.g. ``POSIX_BYTES_READ``), the rest zero."""
    return counter_record("POSIX", rec_id, rank, counters, fcounters)


def dxt_record(rec_id: int, rank: int, writes=(), reads=(), hostname: str = "node0") -> bytes:
    """A DXT file record; ``writes`` / ``reads`` are (offset, length, start, end) tuples."""
    w = np.array([tuple(s) for s in writes], dtype=_SEGMENT)
    r = np.array([tuple(s) for s in reads], dtype=_SEGMENT)
    head = _DXT_HEAD.pack(rec_id, rank, 0, hostname.encode(), len(w), len(r))
    return head + w.tobytes() + r.tobytes()


def heatmap_record(module: str, rank: int, bin_width: float, write_bins, read_bins) -> bytes:
    """A HEATMAP record of ``module`` (POSIX, MPIIO, STDIO, DFS or DAOS) for one rank."""
    w = np.asarray(write_bins, dtype="<i8")
    r = np.asarray(read_bins, dtype="<i8")
    if w.shape != r.shape:
        raise ValueError("write_bins and read_bins must have the same length")
    return _HEATMAP_HEAD.pack(HEATMAP_RECORD_IDS[module], rank, bin_width, len(w)) + w.tobytes() + r.tobytes()


def lustre_record_v1(
    rec_id: int, rank: int, *, osts: int, stripe_size: int, ost_ids=(), stripe_width: int | None = None
) -> bytes:
    """A version-1 LUSTRE record: id, rank, LUSTRE_OSTS, _MDTS (1), _STRIPE_OFFSET (0), _STRIPE_SIZE, _STRIPE_WIDTH
    (the number of ``ost_ids`` unless given), then the OST ids."""
    width = len(ost_ids) if stripe_width is None else stripe_width
    head = struct.pack("<Qq5q", rec_id, rank, osts, 1, 0, stripe_size, width)
    return head + struct.pack(f"<{len(ost_ids)}q", *ost_ids)


def lustre_record_v2(rec_id: int, rank: int, components, ost_ids=()) -> bytes:
    """A version-2 LUSTRE record: id, rank, num_comps, num_stripes, each component, then the OST ids.

    ``components`` are (stripe size, stripe count, pattern) triples; each is written with flags 0, extent
    [0, -1), mirror id 0 and an empty pool name.
    """
    comps = b"".join(
        struct.pack("<7q16s", size, count, pattern, 0, 0, -1, 0, b"") for size, count, pattern in components
    )
    head = struct.pack("<Qq2q", rec_id, rank, len(components), len(ost_ids))
    return head + comps + struct.pack(f"<{len(ost_ids)}q", *ost_ids)


def _job(job: dict):
    """A ``struct darshan_job`` from uid, jobid, nprocs, start/end (sec, nsec) and metadata."""
    j = _ffi.new("struct darshan_job *")
    j.uid, j.jobid, j.nprocs = job["uid"], job["jobid"], job["nprocs"]
    j.start_time_sec, j.start_time_nsec = job["start"]
    j.end_time_sec, j.end_time_nsec = job["end"]
    j.metadata = job.get("metadata", "").encode()
    return j


def _namehash(names: dict, keep: list):
    """A uthash list of name records, linked through ``hlink.next`` (all put_namehash iterates)."""
    refs = _ffi.new("struct darshan_name_record_ref[]", max(len(names), 1))
    for i, (rec_id, name) in enumerate(names.items()):
        rec = _ffi.new("char[]", struct.pack("<Q", rec_id) + name.encode() + b"\0")
        keep.append(rec)
        refs[i].name_record = rec
        refs[i].hlink.next = refs + i + 1 if i + 1 < len(names) else _ffi.NULL
    return refs if names else _ffi.NULL


def _put_mod(lib, fd, mod: str, buf: bytes, version: int) -> bool:
    """Append one module's serialized records, with the module's log format version."""
    return lib.darshan_log_put_mod(fd, MOD_IDS[mod], _ffi.from_buffer(buf), len(buf), version) == 0


def write_log(
    path,
    *,
    job: dict,
    exe: str = "",
    mounts=(),
    names: dict | None = None,
    records: dict | None = None,
    partial=(),
    versions: dict | None = None,
) -> None:
    """Write a Darshan log with darshan-util.

    ``job`` has uid, jobid, nprocs, start and end as (sec, nsec); ``mounts`` are
    (mount point, fs type) pairs (darshan-util only returns the exe when there is
    at least one); ``names`` maps record ids to names; ``records`` maps a module
    name to its serialized records; ``partial`` names modules flagged as incomplete; ``versions`` maps a
    module to the format version its records are written in (default :data:`MOD_VERSIONS`).
    """
    lib = _library()
    mask = 0
    for mod in partial:
        mask |= 1 << MOD_IDS[mod]
    fd = lib.darshan_log_create(os.fsencode(path), _ZLIB, mask)
    if fd == _ffi.NULL:
        raise OSError(f"darshan_log_create failed for {path}")
    keep: list = []
    mnts = _ffi.new("struct darshan_mnt_info[]", max(len(mounts), 1))
    for i, (point, fs_type) in enumerate(mounts):
        mnts[i].mnt_path, mnts[i].mnt_type = point.encode(), fs_type.encode()
    try:
        ok = lib.darshan_log_put_job(fd, _job(job)) == 0
        ok = ok and lib.darshan_log_put_exe(fd, _ffi.new("char[]", exe.encode())) == 0
        ok = ok and lib.darshan_log_put_mounts(fd, mnts, len(mounts)) == 0
        ok = ok and lib.darshan_log_put_namehash(fd, _namehash(names or {}, keep)) == 0
        for mod in sorted(records or {}, key=MOD_IDS.__getitem__):
            version = (versions or {}).get(mod, MOD_VERSIONS[mod])
            ok = ok and _put_mod(lib, fd, mod, b"".join(records[mod]), version)
    finally:
        lib.darshan_log_close(fd)
    if not ok:
        raise OSError(f"darshan-util failed to write {path}")
