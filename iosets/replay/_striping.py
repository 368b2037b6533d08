"""Files striped over storage targets: requests split at stripe boundaries into one part per target.

A file of layout (stripe_size, stripe_count, first_target) keeps stripe j (bytes
[j * stripe_size, (j + 1) * stripe_size)) on target (first_target + j % stripe_count) % targets,
at offset (j // stripe_count) * stripe_size of that target's object of the file. A request
touches stripes a .. b; it becomes one part per target it touches (min(b - a + 1,
stripe_count) parts), whose bytes are those of its stripes on that target and whose
offset is that of its first byte in the target's object (contiguous there). A request of
unknown offset, or of no file (a rank stream), is one part on its stream's first target.
Vectorised: no Python loop per request.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ..errors import InputError
from ..schemas import Column, TableSchema
from ._device import Device

LAYOUT = TableSchema(
    "layout",
    "Striping of files over storage targets (Lustre's stripe size, stripe count and first OST), one row per "
    "file; the trace replay's files without a row take the device's defaults.",
    (
        Column("file", pl.String, "File name, as the site requests' `file`."),
        Column("stripe_size", pl.Int64, "Bytes per stripe.", check=pl.col("stripe_size") >= 1, expect="bytes >= 1"),
        Column(
            "stripe_count",
            pl.Int64,
            "Targets the file is striped over (at most the device's targets).",
            check=pl.col("stripe_count") >= 1,
            expect="an integer >= 1",
        ),
        Column(
            "first_target",
            pl.Int64,
            "Target of the file's first stripe (taken modulo the device's targets); null: round robin.",
            required=False,
            nullable=True,
            check=pl.col("first_target") >= 0,
            expect="an integer >= 0",
        ),
    ),
)
"""The ``layout`` frame :func:`iosets.replay.replay_trace` takes."""

_INT64_MAX = np.iinfo(np.int64).max
_BLOCK = 1 << 16  # requests split at once: their temporaries stay in cache, reused rather than faulted in anew


@dataclass(frozen=True)
class StreamLayouts:
    """Per stream (file streams first, in sorted file order): ``stripe_size``, ``stripe_count`` (targets
    it is striped over) and ``first_target``, int64 arrays; ``n_files`` streams are files."""

    stripe_size: np.ndarray
    stripe_count: np.ndarray
    first_target: np.ndarray
    n_files: int


@dataclass(frozen=True)
class Parts:
    """Requests split into parts, in request order, the parts of a request consecutive.

    Attributes
    ----------
    counts : numpy.ndarray (int64)
        Each request's number of parts.
    starts : numpy.ndarray (int64)
        Each request's first part.
    first : numpy.ndarray (int64)
        Each part's first part (of its request), as ``_engine.replay_trace`` takes it.
    target : numpy.ndarray (int32)
    offset : numpy.ndarray (int64)
        Offset of the part's first byte in its target's object of the file (-1: unknown).
    size : numpy.ndarray (float64)
        Bytes.
    """

    counts: np.ndarray
    starts: np.ndarray
    first: np.ndarray
    target: np.ndarray
    offset: np.ndarray
    size: np.ndarray

    @property
    def n(self) -> int:
        """Number of parts."""
        return self.target.size

    def spread(self, values: np.ndarray) -> np.ndarray:
        """Per-request ``values`` repeated for each of the request's parts."""
        return np.repeat(values, self.counts)


def stream_layouts(files: pl.Series, n_streams: int, device: Device, layout: pl.DataFrame | None) -> StreamLayouts:
    """Each stream's layout: the ``layout`` row of its file, else the device's defaults.

    ``files`` names the file streams 0 .. len(files) - 1; the other streams (ranks) take the
    defaults. A default first target is (stream * stripe_count) % targets: round robin, as
    Lustre allocates. Stripe counts are capped at the device's targets and first targets
    taken modulo them.
    """
    targets = device.targets
    stream = np.arange(n_streams, dtype=np.int64)
    size = np.full(n_streams, device.stripe_size, dtype=np.int64)
    count = np.full(n_streams, min(device.stripe_count, targets), dtype=np.int64)
    first = (stream * count) % targets
    if layout is not None:
        rows = _checked(layout)
        known = pl.DataFrame({"file": files, "_stream": np.arange(files.len(), dtype=np.int64)}).join(
            rows, on="file", how="inner"
        )
        at = known["_stream"].to_numpy()
        size[at] = known["stripe_size"].to_numpy()
        count[at] = np.minimum(known["stripe_count"].to_numpy(), targets)
        given = known["first_target"]
        chosen = given.fill_null(0).to_numpy() % targets
        first[at] = np.where(given.is_null().to_numpy(), (at * count[at]) % targets, chosen)
    return StreamLayouts(size, count, first, files.len())


def _checked(layout: pl.DataFrame) -> pl.DataFrame:
    """The layout rows, typed; InputError naming the row and column of a bad value or a repeated file."""
    rows = LAYOUT.validate(layout, source="layout").select(LAYOUT.names)
    repeated = rows.with_row_index("_row").filter(~pl.col("file").is_first_distinct())
    if repeated.height:
        row, name = int(repeated["_row"][0]), repeated["file"][0]
        raise InputError(f"layout row {row}: file: expected one row per file, got {name!r} again")
    return rows


def split_requests(
    offset: np.ndarray, size: np.ndarray, stream: np.ndarray, layouts: StreamLayouts, targets: int
) -> Parts:
    """The parts of each request (module docstring) on ``targets`` targets.

    Blocks of requests are counted, then written into the parts' arrays, allocated once
    (a large array's first touch costs more than the arithmetic here).

    Parameters
    ----------
    offset : numpy.ndarray (int64)
        Each request's offset in its file, -1 when unknown.
    size : numpy.ndarray (float64)
        Bytes.
    stream : numpy.ndarray (int32)
        Each request's stream; streams below ``layouts.n_files`` are files.
    layouts : StreamLayouts
    targets : int

    Returns
    -------
    Parts
    """
    blocks = [slice(at, at + _BLOCK) for at in range(0, offset.size, _BLOCK)]
    counts = np.empty(offset.size, np.int64)
    for block in blocks:
        counts[block] = _Stripes(offset[block], size[block], stream[block], layouts).counts
    starts = np.cumsum(counts) - counts
    total = int(starts[-1] + counts[-1]) if counts.size else 0
    parts = Parts(
        counts=counts,
        starts=starts,
        first=np.repeat(starts, counts) if total > offset.size else starts,
        target=np.empty(total, np.int32),
        offset=np.empty(total, np.int64),
        size=np.empty(total, np.float64),
    )
    for block in blocks:
        _Stripes(offset[block], size[block], stream[block], layouts).write(parts, starts[block], targets)
    return parts


class _Stripes:
    """A block of requests over their files' stripes: each one's first stripe ``a``, the bytes of it
    before the request (``head``), its last stripe ``a + span``, and its number of parts."""

    def __init__(self, offset: np.ndarray, size: np.ndarray, stream: np.ndarray, layouts: StreamLayouts):
        self.offset, self.size = offset, size
        self.stripe = _per_request(layouts.stripe_size, stream)
        self.count = _per_request(layouts.stripe_count, stream)
        self.first_target = layouts.first_target[stream]
        self.known = (offset >= 0) & (stream < layouts.n_files)
        start = np.where(self.known, offset, 0)  # an unknown place counts as byte 0 of its first target
        self.a, self.head = _divmod(start, self.stripe)
        whole = size.astype(np.int64)
        # parts beyond one: a known place, whole bytes, and offset + size + stripe within int64
        self.splits = self.known & (size > 0) & (whole == size) & (whole <= _INT64_MAX - self.stripe - start)
        self.end = start + np.where(self.splits, whole, 0)
        self.span = np.maximum((self.end - 1) // self.stripe - self.a, 0)
        self.counts = np.minimum(self.span + 1, self.count)

    def write(self, parts: Parts, starts: np.ndarray, targets: int) -> None:
        """Writes the block's parts into ``parts``, the requests' first parts at ``starts``."""
        rounds, column = _divmod(self.a, self.count)  # the first stripe's place in the file's targets
        tail = (self.a + self.span + 1) * self.stripe - self.end  # the last stripe's bytes after the request
        parts.target[starts] = _wrap(self.first_target + column, targets)
        parts.offset[starts] = np.where(self.known, rounds * self.stripe + self.head, self.offset)
        parts.size[starts] = np.where(
            self.splits, _bytes(self.span, self.count, self.stripe, self.head, tail, 0), self.size
        )
        several = np.flatnonzero(self.counts > 1)
        if not several.size:
            return
        extra = self.counts[several] - 1
        r = np.repeat(several, extra)  # the request of each part after a first one, and the part's rank k >= 1
        k = np.arange(r.size, dtype=np.int64) - np.repeat(np.cumsum(extra) - extra, extra) + 1
        at = starts[r] + k
        count, stripe = _at(self.count, r), _at(self.stripe, r)
        rounds, column = _divmod(self.a[r] + k, count)
        parts.target[at] = _wrap(self.first_target[r] + column, targets)
        parts.offset[at] = rounds * stripe
        parts.size[at] = _bytes(self.span[r], count, stripe, 0, tail[r], k)


def _per_request(per_stream: np.ndarray, stream: np.ndarray) -> np.ndarray | int:
    """Each request's value of a per-stream array; one int when all streams share it (a scalar divisor
    divides an array several times faster)."""
    if per_stream.size and (per_stream == per_stream[0]).all():
        return int(per_stream[0])
    return per_stream[stream]


def _at(values: np.ndarray | int, index: np.ndarray) -> np.ndarray | int:
    return values if isinstance(values, int) else values[index]


def _divmod(x: np.ndarray, divisor: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """``np.divmod`` for x >= 0 and divisors > 0, in a division and a product (several times faster)."""
    quotient = x // divisor
    return quotient, x - quotient * divisor


def _wrap(target: np.ndarray, targets: int) -> np.ndarray:
    """``target % targets`` for targets in [0, 2 targets)."""
    return np.where(target >= targets, target - targets, target)


def _bytes(span, count, stripe, head, tail, k) -> np.ndarray:
    """Bytes of part k of requests over stripes a .. a + span: its stripes (a + k, a + k + count, ...),
    less the head of the first stripe (part 0) and the tail of the last (part span % count)."""
    stripes, last = _divmod(span - k, count)
    return ((stripes + 1) * stripe - head - np.where(last == 0, tail, 0)).astype(np.float64)


def site_layout(files: pl.DataFrame | None) -> tuple[pl.DataFrame | None, int | None]:
    """The ``layout`` frame of a site trace's files table (:data:`iosets.schemas.SITE_FILES`, one row per file:
    the first job's) and the largest file system's targets it names; (None, None) without a files table.

    Examples
    --------
    >>> files = pl.DataFrame({"file": ["a", "a"], "job_id": ["1", "2"], "stripe_size": [1 << 20] * 2,
    ...     "stripe_count": [4, 4], "first_target": [7, 7], "fs_targets": [248, 248]})
    >>> layout, targets = site_layout(files)
    >>> layout.height, targets
    (1, 248)
    """
    if files is None or files.is_empty():
        return None, None
    layout = files.sort("file", "job_id").unique("file", keep="first", maintain_order=True)
    targets = layout["fs_targets"].drop_nulls().to_list() if "fs_targets" in layout.columns else []
    frame = LAYOUT.validate(layout.select("file", "stripe_size", "stripe_count", "first_target"), source="files")
    return frame, max(targets) if targets else None
