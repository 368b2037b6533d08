"""The layout of a Darshan log, read in Python: header, region map, and the checks made before darshan-util.

darshan-util trusts the header map and the record counts of a log, and some lies crash it
(docs/darshan-util-crashes.md). :func:`parse_layout` reads the header and rejects a map that
cannot be right; :func:`check_regions` decompresses the regions it is given and walks the
records whose counts darshan-util would trust. Both raise :class:`LayoutError` with a reason (no file name).

No region inflates past its cap (:func:`inflate_cap`), checked while inflating: the header declares only each
region's compressed length (no record counts, no inflated sizes), so the cap is that length times the highest
ratio real Darshan data reaches, with a floor and a ceiling. A region past it raises :class:`InflateError`
(a decompression bomb?) before darshan-util, which would inflate it again, ever sees the log.

Header of formats "3.00" to "3.21" (16 module slots; "3.41" has 64, a 64-bit partial flag and
every later field moved: see :func:`parse_layout`)::

    0    char     version_string[8]      "3.21\\0\\0\\0\\0"
    8    int64    magic_nr               6567223 (byte-swapped: a log of a big-endian machine)
    16   uint8    comp_type              0 zlib, 1 bzip2, 2 none
    20   uint32   partial_flag
    24   uint64   name_map.off, .len
    40   uint64   mod_map[16].off, .len
    296  uint32   mod_ver[16]
    360  ...      job region (compressed), then the name map, then each module's region

A region is a concatenation of compressed streams (one per writer rank). A DXT record is 104
bytes (``write_count`` at 88, ``read_count`` at 96) followed by that many 32-byte segments.
"""

from __future__ import annotations

import bz2
import struct
import zlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass

__all__ = [
    "INFLATE_CEILING",
    "INFLATE_FLOOR",
    "INFLATE_RATIO",
    "MAGIC_NR",
    "MODULES",
    "RISKY_REGIONS",
    "VERSIONS",
    "InflateError",
    "Layout",
    "LayoutError",
    "Region",
    "check_regions",
    "inflate_cap",
    "parse_layout",
    "region_content",
    "zlib_streams",
]

MAGIC_NR = 6567223
"""``darshan_header.magic_nr``, in the writer's byte order."""

VERSIONS = ("3.00", "3.10", "3.20", "3.21", "3.41")
"""Log format versions darshan-util 3.5 opens."""

COMPRESSION = {0: "zlib", 1: "bzip2", 2: "none"}
"""``comp_type`` values."""

MODULES = (
    "NULL",
    "POSIX",
    "MPI-IO",
    "H5F",
    "H5D",
    "PNETCDF_FILE",
    "PNETCDF_VAR",
    "BG/Q",
    "LUSTRE",
    "STDIO",
    "DXT_POSIX",
    "DXT_MPIIO",
    "MDHIM",
    "APXC",
    "APMPI",
    "HEATMAP",
    "DFS",
    "DAOS",
)
"""Module names per header slot of format 3.41, as darshan-util 3.5 names them (it shifts older formats' slots)."""
_MODS_32X = MODULES[:6] + MODULES[7:17]  # 3.20, 3.21: one PNETCDF slot
_MODS_3XX = MODULES[:4] + (MODULES[5],) + MODULES[7:18]  # 3.00, 3.10: no H5D slot either

# Records of variable length: (header bytes, offsets of the int64 counts, bytes per counted item).
_VARIABLE_RECORDS = {
    "DXT_POSIX": (104, (88, 96), 32),  # write and read segments
    "DXT_MPIIO": (104, (88, 96), 32),
    "HEATMAP": (48, (24, 24), 8),  # nbins write bins, then nbins read bins
}
RISKY_REGIONS = ("DXT_POSIX", "DXT_MPIIO", "HEATMAP", "BG/Q")
"""Regions whose records darshan-util reads with unchecked counts (the name map too, when it is read)."""
_BGQ_V1_RECORD = 120  # darshan-util loops forever on a version-1 BG/Q region that is not a multiple of it


INFLATE_RATIO = {"DXT_POSIX": 16, "DXT_MPIIO": 16}
"""Inflated bytes per compressed byte a region may reach, by region (others: :data:`INFLATE_RATIO_OTHER`).

In the 95 real logs of the tests and the darshan wheel, DXT regions inflate at most 4.2 times (segments of
offsets, lengths and dates), every other region at most 31 times (a HEATMAP region); zlib reaches 1032."""
INFLATE_RATIO_OTHER = 128
INFLATE_FLOOR = 1 << 20
"""Bytes any region may inflate to, whatever its compressed length (a small region compresses little anyway)."""
INFLATE_CEILING = 1 << 30
"""Bytes no region may inflate past (1 GiB), whatever its compressed length."""


class LayoutError(ValueError):
    """The log's layout cannot be right; the message says why (without the file name)."""


class InflateError(LayoutError):
    """A region inflates past its cap (:func:`inflate_cap`): a decompression bomb, or no Darshan data."""


@dataclass(frozen=True)
class Region:
    """A byte range of a log: ``header``, ``job``, ``name_map`` or a module's region."""

    name: str
    start: int
    end: int
    slot: int | None = None  # header slot of a module region

    @property
    def length(self) -> int:
        return self.end - self.start

    @property
    def label(self) -> str:
        """How messages name it: 'module DXT_POSIX region', 'name map region', 'job region'."""
        what = f"module {self.name}" if self.slot is not None else self.name.replace("_", " ")
        return f"{what} region"

    def span(self) -> str:
        return f"[offset {self.start}, length {self.length}]"


@dataclass(frozen=True)
class Layout:
    """Where a Darshan log keeps its header fields and regions."""

    version: str
    byte_order: str  # '<' or '>' (struct prefix)
    comp_type: int
    size: int
    header_size: int
    nslots: int
    partial_off: int
    partial_size: int
    name_map_field: int
    mod_map_field: int
    mod_ver_field: int
    slot_names: tuple[str, ...]
    regions: tuple[Region, ...]
    mod_versions: dict[str, int]

    def map_field(self, slot: int | None, which: str) -> int:
        """Header offset of a region's ``off`` or ``len`` field (slot None: the name map)."""
        base = self.name_map_field if slot is None else self.mod_map_field + 16 * slot
        return base + (8 if which == "len" else 0)

    def slot_name(self, slot: int) -> str:
        return self.slot_names[slot] if slot < len(self.slot_names) else f"slot{slot}"

    def region(self, name: str) -> Region:
        return next(r for r in self.regions if r.name == name)

    def data_regions(self) -> list[Region]:
        """Every region but the header."""
        return [r for r in self.regions if r.name != "header"]

    def mapped_regions(self) -> list[Region]:
        """Regions that have a header map entry: the name map and the modules."""
        return [r for r in self.regions if r.name not in ("header", "job")]

    def region_at(self, offset: int) -> str:
        """Name of the region holding ``offset`` (``past_end`` beyond the last one)."""
        return next((r.name for r in self.regions if r.start <= offset < r.end), "past_end")


def _byte_order(data: bytes) -> str:
    if len(data) < 16:
        raise LayoutError(f"not a readable Darshan log (only {len(data)} bytes)")
    for order in "<>":
        if struct.unpack_from(f"{order}q", data, 8)[0] == MAGIC_NR:
            return order
    magic = struct.unpack_from("<q", data, 8)[0]
    raise LayoutError(f"not a readable Darshan log (magic number {magic}, expected {MAGIC_NR})")


def parse_layout(data: bytes) -> Layout:
    """Header fields and region map of a Darshan log; raises LayoutError when they cannot be right.

    Checked: the magic number, a version darshan-util reads, the compression type, and every
    region (job, name map, modules) inside the file, after the header and overlapping no other.
    """
    order = _byte_order(data)
    raw = data[:8].split(b"\0", 1)[0]
    version = raw.decode("ascii", "replace")
    if version not in VERSIONS:
        raise LayoutError(
            f"unsupported Darshan log format version {version!r} (darshan-util reads {', '.join(VERSIONS)})"
        )
    names: tuple[str, ...] = MODULES
    if version == "3.41":
        nslots, partial_off, partial_size, name_field = 64, 24, 8, 32
    else:
        nslots, partial_off, partial_size, name_field = 16, 20, 4, 24
        names = _MODS_32X if version >= "3.20" else _MODS_3XX
    mod_field = name_field + 16
    ver_field = mod_field + 16 * nslots
    header_size = ver_field + 4 * nslots
    if len(data) < header_size:
        raise LayoutError(f"truncated in the header ({len(data)} of {header_size} bytes)")
    comp_type = data[16]
    if comp_type not in COMPRESSION:
        raise LayoutError(f"unknown compression type {comp_type} (expected 0 zlib, 1 bzip2 or 2 none)")
    name_off, name_len = struct.unpack_from(f"{order}QQ", data, name_field)
    mods = struct.unpack_from(f"{order}{2 * nslots}Q", data, mod_field)
    versions = struct.unpack_from(f"{order}{nslots}I", data, ver_field)
    regions = [Region("job", header_size, max(name_off, header_size))]
    if name_len:
        regions.append(Region("name_map", name_off, name_off + name_len))
    for slot in range(nslots):
        off, length = mods[2 * slot], mods[2 * slot + 1]
        if length:
            regions.append(Region(names[slot] if slot < len(names) else f"slot{slot}", off, off + length, slot))
    _check_map(regions, name_off, header_size, len(data))
    return Layout(
        version=version,
        byte_order=order,
        comp_type=comp_type,
        size=len(data),
        header_size=header_size,
        nslots=nslots,
        partial_off=partial_off,
        partial_size=partial_size,
        name_map_field=name_field,
        mod_map_field=mod_field,
        mod_ver_field=ver_field,
        slot_names=names,
        regions=(Region("header", 0, header_size), *regions),
        mod_versions={r.name: versions[r.slot] for r in regions if r.slot is not None},
    )


def _check_map(regions: list[Region], name_off: int, header_size: int, size: int) -> None:
    """The regions tile the file after the header, as darshan writes them: no overlap, no gap, no overrun."""
    if name_off <= header_size:
        raise LayoutError(
            f"no job region: the name map starts at offset {name_off}, within the header ({header_size} bytes)"
        )
    for r in regions:
        if r.start < header_size:
            raise LayoutError(f"{r.label} {r.span()} starts within the header ({header_size} bytes)")
        if r.end > size:
            raise LayoutError(f"{r.label} {r.span()} extends past the end of the file ({size} bytes)")
    ordered = sorted(regions, key=lambda r: (r.start, r.end))
    for a, b in zip(ordered, ordered[1:], strict=False):
        if b.start < a.end:
            raise LayoutError(f"{b.label} {b.span()} overlaps the {a.label} {a.span()}")
        if b.start > a.end:
            raise LayoutError(f"bytes {a.end} to {b.start} lie in no region (between the {a.label} and the {b.label})")
    if ordered[-1].end < size:
        last = ordered[-1]
        raise LayoutError(f"bytes {last.end} to {size} lie in no region (after the {last.label}, the last one)")


def inflate_cap(region: Region) -> tuple[int, str]:
    """The bytes ``region`` may inflate to, and where that cap comes from (for messages).

    Its compressed length times its :data:`INFLATE_RATIO`, at least :data:`INFLATE_FLOOR`, at most
    :data:`INFLATE_CEILING`.

    Examples
    --------
    >>> inflate_cap(Region("DXT_POSIX", 360, 360 + 250_000, slot=10))
    (4000000, '16 x its 250000 compressed bytes')
    """
    ratio = INFLATE_RATIO.get(region.name, INFLATE_RATIO_OTHER)
    by_ratio = ratio * region.length
    if by_ratio > INFLATE_CEILING:
        return INFLATE_CEILING, f"the ceiling of every region; {ratio} x its {region.length} compressed bytes is more"
    if by_ratio < INFLATE_FLOOR:
        return INFLATE_FLOOR, f"the floor of every region; {ratio} x its {region.length} compressed bytes is less"
    return by_ratio, f"{ratio} x its {region.length} compressed bytes"


def _past_cap(region: Region) -> InflateError:
    cap, why = inflate_cap(region)
    return InflateError(f"{region.label} {region.span()} inflates past {cap} bytes (cap: {why}): a decompression bomb?")


def zlib_streams(data: bytes, region: Region) -> list[tuple[int, int]]:
    """``(start, end)`` of each zlib stream in a region (stops at the first one that does not end within the cap)."""
    out = []
    pos, room = region.start, inflate_cap(region)[0]
    while pos < region.end:
        d = zlib.decompressobj()
        try:
            room -= len(d.decompress(data[pos : region.end], room + 1))
            while d.unconsumed_tail and room >= 0:
                room -= len(d.decompress(d.unconsumed_tail, room + 1))
        except zlib.error:
            break
        if not d.eof or room < 0:
            break
        end = region.end - len(d.unused_data)
        out.append((pos, end))
        pos = end
    return out


def _decompressor(comp_type: int):
    return zlib.decompressobj() if comp_type == 0 else bz2.BZ2Decompressor()


def _has_output(d, comp_type: int) -> bool:
    """A decompressor stopped by ``max_length`` that holds more output for the input it was given."""
    return bool(d.unconsumed_tail) if comp_type == 0 else not d.needs_input


def _inflate(data: bytes, region: Region, comp_type: int) -> Iterator[bytes]:
    """The region's streams, inflated piece by piece; InflateError as soon as they pass the region's cap."""
    chunk = memoryview(data)[region.start : region.end]
    cap = inflate_cap(region)[0]
    if comp_type == 2:
        if len(chunk) > cap:
            raise _past_cap(region)
        yield bytes(chunk)
        return
    pos = total = 0
    while pos < len(chunk):  # one stream per turn, fed in growing blocks (unused_data copies what is left)
        d = _decompressor(comp_type)
        fed, block = pos, 256
        while not d.eof:
            try:
                if _has_output(d, comp_type):  # zlib hands back the input it did not reach; bz2 keeps it
                    piece = d.decompress(d.unconsumed_tail if comp_type == 0 else b"", cap - total + 1)
                elif fed < len(chunk):
                    piece = d.decompress(chunk[fed : fed + block], cap - total + 1)
                    fed = min(fed + block, len(chunk))
                    block = min(2 * block, 1 << 16)
                else:
                    raise LayoutError(
                        f"{region.label} {region.span()} ends inside a compressed stream (truncated or cut short)"
                    )
            except (zlib.error, OSError, EOFError) as exc:
                raise LayoutError(
                    f"{region.label} {region.span()} is corrupt in the stream at byte {region.start + pos} "
                    f"({COMPRESSION[comp_type]}: {exc})"
                ) from None
            total += len(piece)
            if total > cap:
                raise _past_cap(region)
            yield piece
        pos = fed - len(d.unused_data)


def region_content(data: bytes, region: Region, comp_type: int) -> bytes:
    """The decompressed bytes of a region: its streams, which must fill it exactly (else LayoutError).

    Raises InflateError, while inflating, when they pass the region's cap (:func:`inflate_cap`).
    """
    return b"".join(_inflate(data, region, comp_type))


def _check_inflation(data: bytes, region: Region, comp_type: int) -> None:
    """InflateError if the region passes its cap; its other faults are left to whoever reads it."""
    try:
        for _ in _inflate(data, region, comp_type):
            pass
    except InflateError:
        raise
    except LayoutError:
        return


def _check_names(content: bytes, region: Region) -> None:
    """Name records: an 8-byte id, then a NUL-terminated name, up to the last byte."""
    pos = 0
    while pos < len(content):
        end = content.find(b"\0", pos + 8)
        if len(content) - pos <= 9 or end < 0:  # darshan-util asserts on a last record of 9 bytes or fewer
            raise LayoutError(f"{region.label} {region.span()} ends inside a name record ({len(content) - pos} bytes)")
        pos = end + 1


def _check_records(content: bytes, region: Region, order: str) -> None:
    """Variable-length records: counts >= 0 whose items fit in what is left of the region."""
    head, fields, unit = _VARIABLE_RECORDS[region.name]
    count = struct.Struct(f"{order}q")
    pos = k = 0
    while pos < len(content):
        if len(content) - pos < head:
            raise LayoutError(f"{region.label} {region.span()} ends inside record {k} ({len(content) - pos} bytes)")
        counts = [count.unpack_from(content, pos + f)[0] for f in fields]
        if min(counts) < 0:
            raise LayoutError(f"{region.name} record {k} has a negative count {min(counts)}")
        need = head + unit * sum(counts)
        if need > len(content) - pos:
            raise LayoutError(
                f"{region.name} record {k} claims {sum(counts)} items of {unit} bytes, "
                f"more than the {len(content) - pos - head} bytes left in the region"
            )
        pos += need
        k += 1


def check_regions(data: bytes, layout: Layout, names: Collection[str] | None = None) -> None:
    """Check that every region inflates within its cap, and the records darshan-util would trust in some.

    Raises InflateError when any region inflates past its cap (:func:`inflate_cap`). Of the regions in
    ``names`` (None: all), raises LayoutError when one is corrupt, cut short or longer than its streams,
    when the name map ends inside a record, when a DXT or HEATMAP record claims more items than its
    region holds, or when a version-1 BG/Q region does not hold whole records.
    """
    for region in layout.data_regions():
        if names is not None and region.name not in names:
            _check_inflation(data, region, layout.comp_type)
            continue
        content = region_content(data, region, layout.comp_type)
        if region.name == "name_map" and layout.version != "3.00":
            _check_names(content, region)
        elif region.name in _VARIABLE_RECORDS:
            _check_records(content, region, layout.byte_order)
        elif region.name == "BG/Q" and layout.mod_versions.get("BG/Q") == 1 and len(content) % _BGQ_V1_RECORD:
            raise LayoutError(
                f"{region.label} {region.span()} holds {len(content)} bytes, "
                f"not a whole number of {_BGQ_V1_RECORD}-byte version-1 records"
            )
