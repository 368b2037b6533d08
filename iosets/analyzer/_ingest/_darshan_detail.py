"""What Darshan's counters say of one log's requests, beyond its totals: sizes, access order, metadata, ranks.

This is what darshan's job summary and Drishti read from a log (iosets' job detail shows it per job):

* **request sizes**: ``POSIX_SIZE_{READ,WRITE}_<bucket>`` and MPI-IO's ``MPIIO_SIZE_{READ,WRITE}_AGG_<bucket>``
  count the requests of each size bucket (:data:`SIZE_BUCKETS`, Darshan's: the upper bound belongs to the
  bucket, so a 1 MiB request is in ``100K_1M``);
* **access order**: ``POSIX_SEQ_{READS,WRITES}`` count the requests at a higher offset than the record's
  previous one (the others are random, a seek back or a first request at offset 0);
* **metadata**: ``<P>_F_META_TIME`` (open, stat, seek, close...) against ``<P>_F_{READ,WRITE,META}_TIME``, for the
  POSIX and STDIO modules (STDIO's standard streams left out, as in the totals);
* **ranks**: each rank's POSIX bytes and time, from its own records, and for a record shared by every rank (rank
  -1) Darshan's ``POSIX_{FASTEST,SLOWEST}_RANK``, ``*_RANK_BYTES`` and ``POSIX_F_*_RANK_TIME``; the rest of a
  shared record spread evenly over the other ranks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._darshan_counters import STREAM_IDS

__all__ = ["SIZE_BUCKETS", "CounterDetail", "counter_detail"]

SIZE_BUCKETS = (
    ("0_100", 0, 100),
    ("100_1K", 101, 1024),
    ("1K_10K", 1025, 10240),
    ("10K_100K", 10241, 102400),
    ("100K_1M", 102401, 1048576),
    ("1M_4M", 1048577, 4194304),
    ("4M_10M", 4194305, 10485760),
    ("10M_100M", 10485761, 104857600),
    ("100M_1G", 104857601, 1073741824),
    ("1G_PLUS", 1073741825, None),
)
"""Darshan's request-size buckets: name, smallest and largest size (bytes, both in the bucket; None: no bound)."""

_SIZE_COUNTERS = {"POSIX": "POSIX_SIZE_{op}_{bucket}", "MPI-IO": "MPIIO_SIZE_{op}_AGG_{bucket}"}
_TIME_MODULES = {"POSIX": "POSIX", "STDIO": "STDIO"}


@dataclass(frozen=True)
class CounterDetail:
    """One log's request sizes, access order, metadata time and rank spread, from its counters.

    ``sizes`` maps ``(module, op)`` to the requests of each :data:`SIZE_BUCKETS` bucket (modules with
    requests only). ``sequential`` / ``accesses`` are POSIX's sequential requests and all its requests (None
    without POSIX records). ``meta_time`` / ``io_time`` sum POSIX's and STDIO's metadata time and their read +
    write + metadata time over ranks (s). ``rank_bytes`` / ``rank_time`` are each rank's POSIX bytes and time
    (None without POSIX records).
    """

    sizes: dict[tuple[str, str], np.ndarray]
    sequential: int | None
    accesses: int | None
    meta_time: float
    io_time: float
    rank_bytes: np.ndarray | None
    rank_time: np.ndarray | None


def _column(values: np.ndarray, names: Sequence[str], name: str) -> np.ndarray:
    """One counter of every record, negative values (Darshan's "unknown") as 0; zeros when the module lacks it."""
    if name not in names:
        return np.zeros(len(values))
    return np.clip(values[:, list(names).index(name)], 0, None).astype(np.float64)


def _counters(records: np.ndarray, names: Sequence[str], field: str) -> np.ndarray:
    return records[field].reshape(len(records), len(names))


def _sizes(module: str, records: np.ndarray, cnames: Sequence[str]) -> dict[tuple[str, str], np.ndarray]:
    counters = _counters(records, cnames, "counters")
    out = {}
    for op in ("read", "write"):
        pattern = _SIZE_COUNTERS[module]
        counts = np.array(
            [_column(counters, cnames, pattern.format(op=op.upper(), bucket=b)).sum() for b, _, _ in SIZE_BUCKETS]
        )
        if counts.sum() > 0:
            out[(module, op)] = counts.astype(np.int64)
    return out


def _rank_spread(records, cnames, fnames, nprocs: int) -> tuple[np.ndarray, np.ndarray]:
    """Each rank's POSIX bytes and time: own records on their rank, shared ones by the fastest/slowest counters."""
    c, f = _counters(records, cnames, "counters"), _counters(records, fnames, "fcounters")
    moved = _column(c, cnames, "POSIX_BYTES_READ") + _column(c, cnames, "POSIX_BYTES_WRITTEN")
    spent = np.sum([_column(f, fnames, f"POSIX_F_{k}_TIME") for k in ("READ", "WRITE", "META")], axis=0)
    ranks = records["rank"].astype(np.int64)
    own = (ranks >= 0) & (ranks < nprocs)
    rank_bytes: np.ndarray = np.bincount(ranks[own], weights=moved[own], minlength=nprocs).astype(np.float64)
    rank_time: np.ndarray = np.bincount(ranks[own], weights=spent[own], minlength=nprocs).astype(np.float64)
    for i in np.flatnonzero(ranks == -1):
        fast, slow = (int(c[i, list(cnames).index(f"POSIX_{k}_RANK")]) for k in ("FASTEST", "SLOWEST"))
        if not (0 <= fast < nprocs and 0 <= slow < nprocs) or fast == slow:
            rank_bytes += moved[i] / nprocs
            rank_time += spent[i] / nprocs
            continue
        for total, values, fast_v, slow_v in (
            (moved[i], rank_bytes, "POSIX_FASTEST_RANK_BYTES", "POSIX_SLOWEST_RANK_BYTES"),
            (spent[i], rank_time, "POSIX_F_FASTEST_RANK_TIME", "POSIX_F_SLOWEST_RANK_TIME"),
        ):
            table, names = (c, cnames) if fast_v in cnames else (f, fnames)
            a, b = float(_column(table, names, fast_v)[i]), float(_column(table, names, slow_v)[i])
            rest = max(total - a - b, 0.0) / max(nprocs - 2, 1) if nprocs > 2 else 0.0
            others = np.ones(nprocs, dtype=bool)
            others[[fast, slow]] = False
            values[others] += rest
            values[fast] += a
            values[slow] += b
    return rank_bytes, rank_time


def counter_detail(
    modules: Sequence[tuple[str, np.ndarray, Sequence[str], Sequence[str]]], nprocs: int
) -> CounterDetail:
    """The :class:`CounterDetail` of a log's counter modules: ``(module, records, cnames, fnames)`` each.

    ``records`` has the fields ``id``, ``rank``, ``counters`` and ``fcounters``, as darshan-util gives them.
    """
    sizes: dict[tuple[str, str], np.ndarray] = {}
    sequential = accesses = None
    meta_time = io_time = 0.0
    rank_bytes = rank_time = None
    for module, records, cnames, fnames in modules:
        if not len(records):
            continue
        if module in _SIZE_COUNTERS:
            sizes |= _sizes(module, records, cnames)
        if module in _TIME_MODULES:
            if module == "STDIO":
                records = records[~np.isin(records["id"], np.array(STREAM_IDS, dtype=np.uint64))]
            f = _counters(records, fnames, "fcounters")
            meta = _column(f, fnames, f"{module}_F_META_TIME").sum()
            meta_time += meta
            io_time += meta + sum(_column(f, fnames, f"{module}_F_{k}_TIME").sum() for k in ("READ", "WRITE"))
        if module == "POSIX":
            c = _counters(records, cnames, "counters")
            sequential = int(sum(_column(c, cnames, f"POSIX_SEQ_{k}").sum() for k in ("READS", "WRITES")))
            accesses = int(sum(_column(c, cnames, f"POSIX_{k}").sum() for k in ("READS", "WRITES")))
            rank_bytes, rank_time = _rank_spread(records, cnames, fnames, max(nprocs, 1))
    return CounterDetail(sizes, sequential, accesses, float(meta_time), float(io_time), rank_bytes, rank_time)
