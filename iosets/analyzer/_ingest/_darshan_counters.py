"""Darshan counter modules: per-module totals, the stacking rule that makes job totals, per-rank I/O time.

Darshan instruments each I/O layer separately, so one byte an application writes through HDF5
over MPI-IO over POSIX shows up in three modules. The job totals count it once.

**The stacking rule.** Layers from the top: HDF5 / PnetCDF (``H5F`` + ``H5D``,
``PNETCDF_FILE`` + ``PNETCDF_VAR``), then ``MPI-IO``, then storage: ``POSIX`` plus the DAOS
layer, ``max(DFS, DAOS)`` (DFS is built on DAOS objects, so DAOS counts DFS traffic again).
``STDIO`` sits beside the stack (``fwrite`` is not seen by the POSIX module). For bytes read,
bytes written, read operations and write operations, each separately::

    total = STDIO + max(top, MPI-IO, POSIX + max(DFS, DAOS))      top = max(H5D, PNETCDF_VAR)

The file-level modules carry no data of their own (``PNETCDF_FILE_BYTES_*`` repeat its
variables' bytes plus the library's header I/O), so only ``H5D`` and ``PNETCDF_VAR`` stand for
the top layer. MPI-IO over POSIX is never counted twice, HDF5 over a file system Darshan did
not instrument still counts, and POSIX reads from data sieving (POSIX > MPI-IO) count as the
storage saw them.

**Standard streams.** STDIO's ``<STDIN>``, ``<STDOUT>`` and ``<STDERR>`` records (a program's
console text: no file system traffic) are not part of the job: they make a module of their own,
``STDIO streams`` (:data:`STREAMS`), shown in the module table with ``counted`` False and left
out of every job total, the I/O time and the I/O window. Darshan names their records by fixed
ids (:data:`STREAM_IDS`), so no name record is needed to know them.

``ModuleTotals.counted`` follows the byte totals: True for STDIO and for the members of the
layer that won the max in a direction with traffic (both directions when the stack has none):
``H5F`` with ``H5D`` or ``PNETCDF_FILE`` with ``PNETCDF_VAR`` (HDF5 first on a tie), ``MPI-IO``,
or both halves of storage, ``POSIX`` and the larger of ``DFS`` / ``DAOS`` (``DAOS`` on a tie).
Ties between layers go to the lowest layer present in the log. ``modules`` names the modules
with data traffic from the top down, joined by ``>``, then ``,STDIO``: ``"H5D>MPI-IO>POSIX,STDIO"``.

**I/O time.** Per rank ``r``, a module's time is the read + write + meta time of its records
of rank ``r``. A shared record (rank -1) puts its ``*_F_SLOWEST_RANK_TIME`` on rank
``*_SLOWEST_RANK`` and spreads the rest of its time evenly over the other ranks; a module
without those counters (``H5F``, ``PNETCDF_FILE``), or a record without a slowest rank, spreads
it evenly over all ranks. Then::

    t_r = STDIO_r + max(H5F_r + H5D_r, PNETCDF_FILE_r + PNETCDF_VAR_r, MPIIO_r, POSIX_r + max(DFS_r, DAOS_r))

``io_time`` is the mean of ``t_r`` over the job's processes and ``slowest_io_time`` its
maximum. For a POSIX-only log ``io_time`` is the module's total time over ``nprocs``.

**Counter names** (darshan-util 3.5, looked up by name; a name the module lacks counts 0):
bytes ``<P>_BYTES_READ`` / ``<P>_BYTES_WRITTEN`` (``<P>`` the module, ``MPIIO`` for MPI-IO;
none in H5F); operations as in :data:`OP_COUNTERS` (MPI-IO and PnetCDF sum their independent,
collective, split and non-blocking calls; DFS ``READS`` + ``READXS``, which include its
non-blocking ones; DAOS object fetches / updates, array reads / writes and KV gets / puts);
time ``<P>_F_READ_TIME`` + ``<P>_F_WRITE_TIME`` + ``<P>_F_META_TIME`` (H5F and PNETCDF_FILE
only have META); ``<P>_SLOWEST_RANK`` and ``<P>_F_SLOWEST_RANK_TIME``; the I/O window from
every ``*_START_TIMESTAMP`` > 0 and ``*_END_TIMESTAMP`` > 0 of every module present.
Negative values (Darshan's "unknown") count as 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ...errors import InputError

__all__ = [
    "COUNTER_MODULES",
    "OP_COUNTERS",
    "STREAMS",
    "STREAM_IDS",
    "SYNC_COUNTERS",
    "ModuleCounters",
    "ModuleTotals",
    "job_counters",
    "reduce_module",
    "split_streams",
]

COUNTER_MODULES = ("POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "STDIO", "DFS", "DAOS")
"""Modules whose counters make the job totals, in header order."""

OP_COUNTERS = {
    "POSIX": (("READS",), ("WRITES",)),
    "MPI-IO": (
        ("INDEP_READS", "COLL_READS", "SPLIT_READS", "NB_READS"),
        ("INDEP_WRITES", "COLL_WRITES", "SPLIT_WRITES", "NB_WRITES"),
    ),
    "STDIO": (("READS",), ("WRITES",)),
    "H5D": (("READS",), ("WRITES",)),
    "PNETCDF_VAR": (("INDEP_READS", "COLL_READS", "NB_READS"), ("INDEP_WRITES", "COLL_WRITES", "NB_WRITES")),
    "DFS": (("READS", "READXS"), ("WRITES", "WRITEXS")),
    "DAOS": (("OBJ_FETCHES", "ARRAY_READS", "KV_GETS"), ("OBJ_UPDATES", "ARRAY_WRITES", "KV_PUTS")),
}
"""Read and write operation counters of each module (names after its prefix), summed."""

SYNC_COUNTERS = {"POSIX": ("POSIX_FSYNCS", "POSIX_FDSYNCS"), "MPI-IO": ("MPIIO_SYNCS",)}
"""Sync-call counters of each module that has them (fsync / fdatasync, MPI_File_sync; time in ``<P>_F_WRITE_TIME``)."""

STREAMS = "STDIO streams"
"""The module-table name of STDIO's standard-stream records (never counted in the job's totals)."""
STREAM_IDS = (14734109647742566553, 15920181672442173319, 7238257241479193519)
"""Darshan's record ids of ``<STDIN>``, ``<STDOUT>`` and ``<STDERR>`` (``darshan_core_gen_record_id`` of the name)."""

_FILE_LEVEL = ("H5F", "PNETCDF_FILE")  # no data bytes or operations of their own in the stack
_DATA_ORDER = ("H5D", "PNETCDF_VAR", "MPI-IO", "POSIX", "DFS", "DAOS")  # top to bottom, for `modules`
_STACKED = ("bytes_read", "bytes_written", "reads", "writes")


@dataclass(frozen=True)
class ModuleTotals:
    """One instrumentation module's traffic in one log."""

    module: str
    bytes_read: int
    bytes_written: int
    reads: int
    writes: int
    io_time: float
    counted: bool


@dataclass(frozen=True)
class ModuleCounters:
    """One module's records reduced: its totals (``counted`` still False), I/O time per rank, I/O window."""

    totals: ModuleTotals
    rank_times: np.ndarray
    first_io: float | None
    last_io: float | None


def _prefix(module: str) -> str:
    return {"MPI-IO": "MPIIO", STREAMS: "STDIO"}.get(module, module)


def split_streams(module: str, records: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """A module's records as (module name, records) parts: STDIO's files and its standard streams apart.

    ``records`` has an ``id`` field (the record id). Parts without records are left out, so a module
    always gives at least one part when it has records, and only STDIO gives two.
    """
    if module != "STDIO":
        return [(module, records)]
    stream = np.isin(records["id"], np.array(STREAM_IDS, dtype=np.uint64))
    parts = [("STDIO", records[~stream]), (STREAMS, records[stream])]
    return [(name, part) for name, part in parts if len(part)] or [(module, records)]


def _indices(names: Sequence[str], wanted: Sequence[str]) -> list[int]:
    """Positions of the ``wanted`` names that exist in ``names``."""
    return [names.index(n) for n in wanted if n in names]


def _sum_columns(values: np.ndarray, cols: list[int]) -> np.ndarray:
    """Per record, the sum of the columns ``cols`` with negative values as 0."""
    return np.clip(values[:, cols], 0, None).sum(axis=1) if cols else np.zeros(len(values))


def _spread_shared(times: np.ndarray, ranks: np.ndarray, slow_rank, slow_time, nprocs: int) -> np.ndarray:
    """Per-rank I/O time: own records on their rank, shared records by the slowest-rank rule."""
    n = max(nprocs, 1)
    size = max(n, int(ranks.max()) + 1 if ranks.size else 0)
    own = ranks >= 0
    out = np.bincount(ranks[own], weights=times[own], minlength=size).astype(np.float64)
    total = times[~own]
    if not total.size:
        return out
    if slow_rank is None:
        rank, slow = np.full(total.size, -1), np.zeros(total.size)
    else:
        rank, slow = slow_rank[~own], np.minimum(slow_time[~own], total)
    known = (n > 1) & (rank >= 0) & (rank < n) & (slow > 0)
    rest = (total[known] - slow[known]) / max(n - 1, 1)
    out[:n] += total[~known].sum() / n + rest.sum()
    out += np.bincount(rank[known], weights=slow[known] - rest, minlength=size)
    return out


def reduce_module(
    module: str, records: np.ndarray, cnames: Sequence[str], fnames: Sequence[str], nprocs: int
) -> ModuleCounters:
    """Totals, per-rank I/O time and I/O window of one module's records.

    Parameters
    ----------
    module : str
        darshan-util's module name (``"MPI-IO"``, ``"H5D"``...), or :data:`STREAMS`.
    records : numpy structured array
        One row per record, fields ``rank`` (int64), ``counters`` (int64, ``len(cnames)``) and
        ``fcounters`` (float64, ``len(fnames)``) (others ignored).
    cnames, fnames : sequence of str
        The module's counter and fcounter names (``cffi_backend.counter_names(module)``).
    nprocs : int
        Processes of the job (shared records spread over them).

    Returns
    -------
    ModuleCounters
    """
    pre = _prefix(module)
    c = records["counters"].reshape(len(records), len(cnames))
    f = records["fcounters"].reshape(len(records), len(fnames))
    reads, writes = OP_COUNTERS.get("STDIO" if module == STREAMS else module, ((), ()))
    times = _sum_columns(f, _indices(fnames, [f"{pre}_F_{k}_TIME" for k in ("READ", "WRITE", "META")]))
    slow_rank = slow_time = None
    if f"{pre}_SLOWEST_RANK" in cnames and f"{pre}_F_SLOWEST_RANK_TIME" in fnames:
        slow_rank = c[:, cnames.index(f"{pre}_SLOWEST_RANK")]
        slow_time = f[:, fnames.index(f"{pre}_F_SLOWEST_RANK_TIME")]
    starts = f[:, [i for i, n in enumerate(fnames) if n.endswith("_START_TIMESTAMP")]]
    ends = f[:, [i for i, n in enumerate(fnames) if n.endswith("_END_TIMESTAMP")]]
    starts, ends = starts[starts > 0], ends[ends > 0]
    totals = ModuleTotals(
        module=module,
        bytes_read=int(_sum_columns(c, _indices(cnames, [f"{pre}_BYTES_READ"])).sum()),
        bytes_written=int(_sum_columns(c, _indices(cnames, [f"{pre}_BYTES_WRITTEN"])).sum()),
        reads=int(_sum_columns(c, _indices(cnames, [f"{pre}_{n}" for n in reads])).sum()),
        writes=int(_sum_columns(c, _indices(cnames, [f"{pre}_{n}" for n in writes])).sum()),
        io_time=float(times.sum()),
        counted=False,
    )
    ranks = records["rank"].astype(np.int64)
    bad = np.flatnonzero((ranks < -1) | (ranks >= max(nprocs, 1)))
    if bad.size:
        raise InputError(
            f"corrupt {module} record {int(bad[0])}: rank {int(ranks[bad[0]])} in a job of {nprocs} processes"
        )
    return ModuleCounters(
        totals=totals,
        rank_times=_spread_shared(times, ranks, slow_rank, slow_time, nprocs),
        first_io=float(starts.min()) if starts.size else None,
        last_io=float(ends.max()) if ends.size else None,
    )


def _stack(v: dict):
    """The stacking rule on one quantity per module (numbers or per-rank arrays; absent modules 0)."""
    top = np.maximum(v["H5F"] + v["H5D"], v["PNETCDF_FILE"] + v["PNETCDF_VAR"])
    return v["STDIO"] + np.maximum(np.maximum(top, v["MPI-IO"]), v["POSIX"] + np.maximum(v["DFS"], v["DAOS"]))


def _stacked_value(t: ModuleTotals | None, field: str) -> int:
    """A module's value in the stack: 0 when absent, and file-level modules carry no data."""
    return 0 if t is None or t.module in _FILE_LEVEL else getattr(t, field)


def _winners(totals: dict[str, ModuleTotals], field: str) -> set[str]:
    """Members of the layer whose ``field`` reaches the total (ties: the lowest layer present)."""

    def val(mod: str) -> int:
        return _stacked_value(totals.get(mod), field)

    def present(*mods: str) -> bool:
        return any(m in totals for m in mods)

    daos = "DAOS" if present("DAOS") and (not present("DFS") or val("DAOS") >= val("DFS")) else "DFS"
    pnetcdf = ("PNETCDF_FILE", "PNETCDF_VAR")
    hdf5 = present("H5F", "H5D") and (not present(*pnetcdf) or val("H5D") >= val("PNETCDF_VAR"))
    top = ("H5F", "H5D") if hdf5 else pnetcdf
    layers = [  # lowest first
        (("POSIX", daos), val("POSIX") + max(val("DFS"), val("DAOS"))),
        (("MPI-IO",), val("MPI-IO")),
        (top, max(val("H5D"), val("PNETCDF_VAR"))),
    ]
    layers = [(members, value) for members, value in layers if present(*members)]
    best = max((value for _, value in layers), default=0)
    return next((set(members) for members, value in layers if value == best), set())


def _counted(totals: dict[str, ModuleTotals]) -> set[str]:
    """Modules whose bytes reach the job totals (STDIO always)."""
    stack = {m: t for m, t in totals.items() if m != "STDIO"}
    deciding = [f for f in ("bytes_read", "bytes_written") if any(_stacked_value(t, f) for t in stack.values())]
    out = {"STDIO"} & set(totals)
    for field in deciding or ["bytes_read", "bytes_written"]:
        out |= _winners(stack, field)
    return out


def _has_traffic(t: ModuleTotals) -> bool:
    return any(_stacked_value(t, f) for f in _STACKED)


def job_counters(reduced: Sequence[ModuleCounters], nprocs: int) -> tuple[dict, tuple[ModuleTotals, ...]]:
    """The job totals of a log's counter modules under the stacking rule, and each module's totals.

    Returns
    -------
    counters : dict
        ``bytes_read``, ``bytes_written``, ``reads``, ``writes`` (int), ``io_time`` (s, mean
        over ranks), ``slowest_io_time`` (s), ``first_io`` / ``last_io`` (s since job start or
        None) and ``modules`` (str, e.g. ``"MPI-IO>POSIX,STDIO"``; ``""`` without traffic).
    modules : tuple of ModuleTotals
        One per module of ``reduced``, in its order, ``counted`` decided.
    """
    totals = {r.totals.module: r.totals for r in reduced}
    out: dict = {f: int(_stack({m: _stacked_value(totals.get(m), f) for m in COUNTER_MODULES})) for f in _STACKED}
    size = max([max(nprocs, 1), *(len(r.rank_times) for r in reduced)])
    zero = np.zeros(size)
    per_rank = {m: zero for m in COUNTER_MODULES}
    for r in reduced:
        per_rank[r.totals.module] = np.pad(r.rank_times, (0, size - len(r.rank_times)))
    t = _stack(per_rank)
    files = [r for r in reduced if r.totals.module != STREAMS]
    firsts = [r.first_io for r in files if r.first_io is not None]
    lasts = [r.last_io for r in files if r.last_io is not None]
    stack = [m for m in _DATA_ORDER if m in totals and _has_traffic(totals[m])]
    stdio = ",STDIO" if "STDIO" in totals and _has_traffic(totals["STDIO"]) else ""
    out |= {
        "io_time": float(t.sum() / max(nprocs, 1)),
        "slowest_io_time": float(t.max()),
        "first_io": min(firsts) if firsts else None,
        "last_io": max(lasts) if lasts else None,
        "modules": (">".join(stack) + stdio).lstrip(","),
    }
    counted = _counted(totals)
    return out, tuple(replace(r.totals, counted=r.totals.module in counted) for r in reduced)
