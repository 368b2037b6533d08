"""Seeded corpus of corrupt Darshan logs: byte-level mutants of good logs, with a manifest.

``make_corpus(out_dir, n, random_state=0)`` writes ``n`` mutants of good Darshan logs into
``out_dir`` and returns the manifest (a Polars frame, also written to ``out_dir/manifest.json``).
Every mutant is its source log with a list of byte edits applied, then optionally truncated; the
manifest row holds the source (file name, path, SHA-256), the mutation kind, the edited header
field and value where there is one, the edits (offset in the source, old bytes, new bytes, hex)
and the truncation length, so ``rebuild(row)`` reproduces the file without the generator.

Mutant ``i`` depends only on ``(random_state, i)`` and the sources, so a corpus of 10 is the first
10 mutants of a corpus of 300 with the same seed.

The log layout (header fields, regions, zlib streams) is read by
``iosets.analyzer._ingest._darshan_layout``, the parser iosets runs before darshan-util.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from iosets.analyzer._ingest._darshan_layout import MAGIC_NR as DARSHAN_MAGIC
from iosets.analyzer._ingest._darshan_layout import Layout, Region, parse_layout, zlib_streams

__all__ = [
    "DEFAULT_SOURCE_WEIGHTS",
    "KIND_WEIGHTS",
    "MANIFEST_NAME",
    "MANIFEST_SCHEMA",
    "Layout",
    "Region",
    "apply_edits",
    "default_sources",
    "make_corpus",
    "make_mutant",
    "parse_layout",
    "read_manifest",
    "rebuild",
    "write_manifest",
]

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "iosets-fuzz-corpus/1"
REAL_LOGS = Path(__file__).resolve().parents[1] / "data" / "darshan"  # vendored with their licences

KIND_WEIGHTS: dict[str, float] = {
    "flip": 16,  # 1-4 random bytes anywhere, XOR a random non-zero mask
    "flip_header": 6,  # 1-2 bytes inside the uncompressed header
    "flip_map": 8,  # one byte of a present region's offset or length field in the header map table
    "flip_region": 12,  # 1-2 bytes inside a region (job, name map, a module; DXT favoured), often a stream start
    "truncate": 10,  # cut at a random length
    "truncate_boundary": 10,  # cut exactly at a region (or zlib stream) boundary
    "header_magic": 4,  # magic number zeroed, byte-swapped, off by one, random
    "header_version": 6,  # version string of another format, unknown or empty
    "header_comp": 5,  # compression type bzip2 / none / invalid
    "header_region": 13,  # a region offset or length set out of the file, zero, huge, overlapping, aliased
    "header_modver": 3,  # a module version set to 0 / newer / huge
    "record_count": 7,  # a DXT record's write/read count rewritten (stream decompressed, edited, recompressed)
}
"""Mutation kinds and their default relative weights."""

DEFAULT_SOURCE_WEIGHTS: dict[str, float] = {
    "dxt.darshan": 0.35,  # 99 kB, format 3.10, DXT_POSIX in one 81 kB zlib stream
    "ior_hdf5_example.darshan": 0.35,  # 4 kB, format 3.21, DXT_POSIX and DXT_MPIIO, 4 streams each
    "example.darshan": 0.08,  # 11 kB, 3.10, POSIX / MPI-IO / LUSTRE / STDIO (no DXT: a control)
    "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan": 0.08,  # 2 kB, 3.21, H5F/H5D
    "noposix.darshan": 0.07,  # 16 kB, 3.10, LUSTRE and STDIO only
    "jlbez_8a_benchmark_write_parallel.darshan": 0.025,  # 1.2 MB real log, 384 ranks, DXT both modules
    "jlbez_IO_test5.darshan": 0.025,  # 1.8 MB real log; its DXT_POSIX region exceeds darshan-util's 1 MiB buffer
}
"""Default sources (file name -> weight). Small logs dominate to keep the corpus fast and small
(300 mutants: about 35 MB, written in under a second); the two smaller real logs bring many
writer-rank streams and a region larger than darshan-util's 1 MiB staging buffer. The largest real
log (jeanbez_8_benchmark_parallel, 3.6 MB) exercises the same code paths and is left out;
sample-badost.darshan (460 kB, no DXT) too."""

MANIFEST_SCHEMA = {
    "index": pl.Int64,
    "file": pl.String,
    "source": pl.String,
    "source_path": pl.String,
    "source_sha256": pl.String,
    "source_size": pl.Int64,
    "kind": pl.String,
    "region": pl.String,
    "field": pl.String,
    "value": pl.String,
    "edits": pl.List(pl.Struct({"offset": pl.Int64, "old": pl.String, "new": pl.String})),
    "truncate_at": pl.Int64,
    "size": pl.Int64,
    "sha256": pl.String,
    "random_state": pl.Int64,
    "description": pl.String,
}
"""Manifest columns. ``edits`` offsets are in the source; ``old``/``new`` are hex (a splice when
their lengths differ); ``truncate_at`` (null: none) applies after the edits; ``region`` is the
log region the mutation lands in or targets; ``field``/``value`` name an edited header or record
field and its new value (null for plain flips and truncations)."""


def default_sources() -> dict[Path, float]:
    """The default source logs that exist on this machine, with their weights."""
    spec = importlib.util.find_spec("darshan")
    dirs = [REAL_LOGS]
    if spec is not None and spec.submodule_search_locations:
        dirs.insert(0, Path(next(iter(spec.submodule_search_locations))) / "examples" / "example_logs")
    out = {}
    for name, weight in DEFAULT_SOURCE_WEIGHTS.items():
        path = next((d / name for d in dirs if (d / name).is_file()), None)
        if path is not None:
            out[path] = weight
    if not out:
        raise FileNotFoundError("no Darshan source logs found (is the darshan wheel installed?)")
    return out


# ----------------------------------------------------------------------------- mutations


@dataclass
class _Source:
    label: str
    path: Path
    data: bytes
    layout: Layout
    sha256: str

    @property
    def dxt(self) -> list[Region]:
        return [r for r in self.layout.regions if r.name.startswith("DXT_")]


@dataclass
class _Mutation:
    kind: str
    region: str | None
    edits: list[tuple[int, bytes, bytes]]
    truncate_at: int | None = None
    field: str | None = None
    value: str | None = None
    description: str = ""


def _u64(data: bytes, off: int, value: int) -> tuple[int, bytes, bytes]:
    return (off, data[off : off + 8], struct.pack("<Q", value % 2**64))


def _u32(data: bytes, off: int, value: int) -> tuple[int, bytes, bytes]:
    return (off, data[off : off + 4], struct.pack("<I", value % 2**32))


def _xor(data: bytes, pos: int, rng: random.Random) -> tuple[int, bytes, bytes]:
    return (pos, data[pos : pos + 1], bytes([data[pos] ^ rng.randrange(1, 256)]))


def _pick_region(src: _Source, rng: random.Random, regions: list[Region]) -> Region:
    """A region, DXT regions three times as likely."""
    return rng.choices(regions, weights=[3 if r.name.startswith("DXT_") else 1 for r in regions])[0]


def _flip(src: _Source, rng: random.Random) -> _Mutation:
    n = rng.choice((1, 1, 1, 2, 3, 4))
    pos = sorted(rng.sample(range(src.layout.size), n))
    edits = [_xor(src.data, p, rng) for p in pos]
    return _Mutation("flip", src.layout.region_at(pos[0]), edits, description=f"{n} random byte(s) XORed")


def _flip_header(src: _Source, rng: random.Random) -> _Mutation:
    n = rng.choice((1, 1, 2))
    pos = sorted(rng.sample(range(src.layout.header_size), n))
    return _Mutation("flip_header", "header", [_xor(src.data, p, rng) for p in pos], description="header byte(s) XORed")


def _flip_map(src: _Source, rng: random.Random) -> _Mutation:
    lay = src.layout
    reg = _pick_region(src, rng, lay.mapped_regions())
    which = rng.choice(("off", "len"))
    byte = rng.randrange(8)
    pos = lay.map_field(reg.slot, which) + byte
    field = f"{'name_map' if reg.slot is None else f'mod_map[{reg.slot}]'}.{which}"
    return _Mutation(
        "flip_map", reg.name, [_xor(src.data, pos, rng)], field=field, value=f"byte {byte} XORed", description=""
    )


def _flip_region(src: _Source, rng: random.Random) -> _Mutation:
    reg = _pick_region(src, rng, [r for r in src.layout.data_regions() if r.length > 0])
    if rng.random() < 0.35:  # near the start of one of the region's zlib streams (zlib header, first block)
        streams = zlib_streams(src.data, reg) or [(reg.start, reg.end)]
        start, end = rng.choice(streams)
        first = start + rng.randrange(min(8, end - start))
        where = "stream start"
    else:
        first = rng.randrange(reg.start, reg.end)
        where = "anywhere"
    pos = [first]
    if rng.random() < 0.3 and first + 1 < reg.end:
        pos.append(rng.randrange(first + 1, reg.end))
    edits = [_xor(src.data, p, rng) for p in pos]
    return _Mutation("flip_region", reg.name, edits, value=where, description=f"byte(s) XORed in {reg.name}")


def _truncate(src: _Source, rng: random.Random) -> _Mutation:
    at = rng.randrange(1, src.layout.size)
    return _Mutation("truncate", src.layout.region_at(at), [], truncate_at=at, description=f"cut to {at} bytes")


def _truncate_boundary(src: _Source, rng: random.Random) -> _Mutation:
    lay = src.layout
    points: dict[int, str] = {8: "after header.version_string", 16: "after header.magic_nr"}
    for r in lay.regions:
        points.setdefault(r.start, f"start of {r.name}")
        points.setdefault(r.end, f"end of {r.name}")
    if rng.random() < 0.3:  # a zlib stream boundary inside a module region
        mods = [r for r in lay.mapped_regions() if r.name != "name_map"]
        reg = _pick_region(src, rng, mods)
        inner = {s: f"start of {reg.name} stream {i}" for i, (s, _) in enumerate(zlib_streams(src.data, reg)) if i}
        points = inner or points
    choices = sorted(p for p in points if 0 < p < lay.size)
    at = rng.choice(choices)
    return _Mutation(
        "truncate_boundary", lay.region_at(at), [], truncate_at=at, value=points[at], description=f"cut at {points[at]}"
    )


def _header_magic(src: _Source, rng: random.Random) -> _Mutation:
    value, label = rng.choice(
        (
            (0, "zero"),
            (int.from_bytes(struct.pack(">q", DARSHAN_MAGIC), "little"), "byte-swapped"),
            (DARSHAN_MAGIC + 1, "off by one"),
            (rng.getrandbits(64), "random"),
        )
    )
    return _Mutation("header_magic", "header", [_u64(src.data, 8, value)], field="magic_nr", value=label)


def _header_version(src: _Source, rng: random.Random) -> _Mutation:
    options = [
        v for v in ("3.41", "3.21", "3.10", "3.00", "3.20", "3.4", "2.06", "9.99", "") if v != src.layout.version
    ]
    new = rng.choice(options)
    raw = new.encode().ljust(8, b"\0")
    return _Mutation("header_version", "header", [(0, src.data[:8], raw)], field="version_string", value=repr(new))


def _header_comp(src: _Source, rng: random.Random) -> _Mutation:
    value, label = rng.choice(((1, "1 bzip2"), (2, "2 none"), (3, "3 invalid"), (255, "255 invalid")))
    return _Mutation("header_comp", "header", [(16, src.data[16:17], bytes([value]))], field="comp_type", value=label)


def _header_region(src: _Source, rng: random.Random) -> _Mutation:
    lay, data = src.layout, src.data
    mapped = lay.mapped_regions()
    used = {r.slot for r in mapped}
    free = [s for s in range(1, min(lay.nslots, len(lay.slot_names))) if s not in used]
    if free and rng.random() < 0.15:  # give an absent module the bytes of another region (type confusion)
        slot = rng.choice(free)
        other = _pick_region(src, rng, mapped)
        edits = [
            _u64(data, lay.map_field(slot, "off"), other.start),
            _u64(data, lay.map_field(slot, "len"), other.length),
        ]
        return _Mutation(
            "header_region",
            lay.slot_name(slot),
            edits,
            field=f"mod_map[{slot}]",
            value=f"alias of {other.name}",
            description=f"absent module {lay.slot_name(slot)} pointed at the {other.name} region",
        )
    reg = _pick_region(src, rng, mapped)
    which = rng.choice(("off", "len"))
    old = reg.start if which == "off" else reg.length
    others = [r for r in lay.regions if r.name != reg.name]
    nxt = next((r for r in sorted(lay.regions, key=lambda r: r.start) if r.start >= reg.end), None)
    candidates = [
        (0, "zero"),
        ((lay.size + rng.randrange(1, 4096)) if which == "off" else lay.size, "past end of file"),
        (rng.choice((2**31 - 1, 2**31, 2**32 + old, 2**63 - 1, 2**64 - 1)), "huge"),
        (old + rng.choice((-16, -1, 1, 16)), "off by a few"),
        (old // 2 if which == "len" else rng.choice(others).start, "overlap"),
    ]
    if which == "len" and nxt is not None:
        candidates.append((old + nxt.length, "overlap"))  # runs into the next region
    value, label = rng.choice(candidates)
    value = max(value, 0)
    if value == old:
        value, label = 0, "zero"
    field = f"{'name_map' if reg.slot is None else f'mod_map[{reg.slot}]'}.{which}"
    return _Mutation(
        "header_region",
        reg.name,
        [_u64(data, lay.map_field(reg.slot, which), value)],
        field=field,
        value=f"{label}: {value}",
        description=f"{reg.name} region {which} {old} -> {value}",
    )


def _header_modver(src: _Source, rng: random.Random) -> _Mutation:
    lay = src.layout
    reg = _pick_region(src, rng, [r for r in lay.mapped_regions() if r.slot is not None])
    off = lay.mod_ver_field + 4 * reg.slot
    (old,) = struct.unpack_from("<I", src.data, off)
    value, label = rng.choice(((0, "zero"), (old + 1, "newer"), (old + 100, "much newer"), (2**32 - 1, "huge")))
    return _Mutation(
        "header_modver",
        reg.name,
        [_u32(src.data, off, value)],
        field=f"mod_ver[{reg.slot}]",
        value=f"{label}: {value}",
    )


def _record_count(src: _Source, rng: random.Random) -> _Mutation:
    """Rewrite one DXT record's write or read count inside its zlib stream, then fix the header map."""
    lay, data = src.layout, src.data
    reg = rng.choice(src.dxt)
    start, end = rng.choice(zlib_streams(data, reg))
    raw = bytearray(zlib.decompress(data[start:end]))
    heads, pos = [], 0
    while pos + 104 <= len(raw):
        heads.append(pos)
        w, r = struct.unpack_from("<qq", raw, pos + 88)
        pos += 104 + 32 * (w + r)
    head = rng.choice(heads)
    which = rng.choice(("write_count", "read_count"))
    at = head + (88 if which == "write_count" else 96)
    (old,) = struct.unpack_from("<q", raw, at)
    (other,) = struct.unpack_from("<q", raw, head + (96 if which == "write_count" else 88))
    # darshan-util mallocs 104 + 32 * (write_count + read_count) bytes (int64 arithmetic, unchecked)
    total, label = rng.choice(
        (
            (2**59 + 1, "sum 2**59+1: x32 wraps to 32 bytes"),
            (2**58, "sum 2**58: x32 wraps negative"),
            (2**26, "sum 2**26: x32 = 2**31, negative as int"),
            (2**32, "sum 2**32"),
            (-1, "sum -1: malloc(72) for a 104-byte record"),
            (-3, "sum -3: malloc(8) for a 104-byte record"),
            (old + other + 1, "one more"),
            (old + other + 1000, "1000 more"),
            (other if old else other + 1, "zero" if old else "one"),
        )
    )
    value = total - other
    struct.pack_into("<q", raw, at, value)
    new = zlib.compress(bytes(raw))
    old_stream = data[start:end]
    lo = 0  # trim the common prefix and suffix so the edit stays small
    while lo < min(len(new), len(old_stream)) and new[lo] == old_stream[lo]:
        lo += 1
    hi = 0
    while hi < min(len(new), len(old_stream)) - lo and new[-1 - hi] == old_stream[-1 - hi]:
        hi += 1
    edits = [(start + lo, old_stream[lo : len(old_stream) - hi], new[lo : len(new) - hi])]
    delta = len(new) - len(old_stream)
    if delta:  # the region grows or shrinks: fix its length and move every later region
        edits.append(_u64(data, lay.map_field(reg.slot, "len"), reg.length + delta))
        for r in lay.mapped_regions():
            if r.start > start:
                edits.append(_u64(data, lay.map_field(r.slot, "off"), r.start + delta))
    record = heads.index(head)
    return _Mutation(
        "record_count",
        reg.name,
        sorted(edits),
        field=f"{reg.name} stream@{start} record {record}.{which}",
        value=f"{label} ({which} = {value})",
        description=f"{which} {old} -> {value} (stream recompressed, {delta:+d} bytes)",
    )


_KINDS = {
    "flip": _flip,
    "flip_header": _flip_header,
    "flip_map": _flip_map,
    "flip_region": _flip_region,
    "truncate": _truncate,
    "truncate_boundary": _truncate_boundary,
    "header_magic": _header_magic,
    "header_version": _header_version,
    "header_comp": _header_comp,
    "header_region": _header_region,
    "header_modver": _header_modver,
    "record_count": _record_count,
}


def apply_edits(data: bytes, edits: Iterable, truncate_at: int | None = None) -> bytes:
    """Apply byte edits ``(offset, old, new)`` (source offsets; bytes or hex), then truncate.

    Raises ValueError when an edit's ``old`` bytes are not those of ``data`` (wrong source).
    """
    out = bytearray(data)
    norm = []
    for e in edits:
        off, old, new = (e["offset"], e["old"], e["new"]) if isinstance(e, Mapping) else e
        old = bytes.fromhex(old) if isinstance(old, str) else old
        new = bytes.fromhex(new) if isinstance(new, str) else new
        norm.append((int(off), old, new))
    for off, old, new in sorted(norm, key=lambda e: e[0], reverse=True):
        if bytes(out[off : off + len(old)]) != old:
            raise ValueError(f"edit at {off}: source holds {out[off : off + len(old)].hex()}, expected {old.hex()}")
        out[off : off + len(old)] = new
    if truncate_at is not None:
        del out[truncate_at:]
    return bytes(out)


def _load_source(path: Path) -> _Source:
    data = path.read_bytes()
    return _Source(path.name, path, data, parse_layout(data), hashlib.sha256(data).hexdigest())


def _normalize_sources(sources) -> dict[Path, float]:
    if sources is None:
        return default_sources()
    if isinstance(sources, Mapping):
        return {Path(p): float(w) for p, w in sources.items()}
    return {Path(p): 1.0 for p in sources}


def make_mutant(index: int, *, random_state: int, sources, kinds: Mapping[str, float] | None = None):
    """Mutant ``index`` of the corpus seeded ``random_state``: ``(row, bytes)`` (row without ``file``).

    ``sources`` maps a path to its weight (or lists paths: equal weights); ``kinds`` maps a kind
    to its weight (default ``KIND_WEIGHTS``).
    """
    loaded = _loaded_sources(_normalize_sources(sources))
    return _make(index, random_state, loaded, dict(KIND_WEIGHTS if kinds is None else kinds))


_CACHE: dict[Path, tuple[float, _Source]] = {}


def _loaded_sources(weights: Mapping[Path, float]) -> list[tuple[_Source, float]]:
    out = []
    for path, weight in weights.items():
        mtime = path.stat().st_mtime
        hit = _CACHE.get(path)
        if hit is None or hit[0] != mtime:
            hit = (mtime, _load_source(path))
            _CACHE[path] = hit
        out.append((hit[1], weight))
    labels = [s.label for s, _ in out]
    if len(set(labels)) != len(labels):
        raise ValueError(f"source file names must be unique: {labels}")
    return out


def _make(index: int, random_state: int, loaded: list[tuple[_Source, float]], kinds: dict[str, float]):
    unknown = set(kinds) - set(_KINDS)
    if unknown:
        raise ValueError(f"unknown mutation kinds {sorted(unknown)}; known: {sorted(_KINDS)}")
    rng = random.Random(f"iosets-fuzz:{random_state}:{index}")
    src = rng.choices([s for s, _ in loaded], weights=[w for _, w in loaded])[0]
    usable = {k: w for k, w in kinds.items() if w > 0 and (k != "record_count" or src.dxt)}
    if not usable:
        raise ValueError(f"no mutation kind applies to {src.label}")
    for _attempt in range(20):
        kind = rng.choices(list(usable), weights=list(usable.values()))[0]
        mut = _KINDS[kind](src, rng)
        out = apply_edits(src.data, mut.edits, mut.truncate_at)
        if out != src.data:
            break
    else:  # pragma: no cover - every kind changes the log
        raise RuntimeError(f"mutant {index} equals its source")
    row = {
        "index": index,
        "source": src.label,
        "source_path": str(src.path),
        "source_sha256": src.sha256,
        "source_size": len(src.data),
        "kind": mut.kind,
        "region": mut.region,
        "field": mut.field,
        "value": mut.value,
        "edits": [{"offset": o, "old": a.hex(), "new": b.hex()} for o, a, b in mut.edits],
        "truncate_at": mut.truncate_at,
        "size": len(out),
        "sha256": hashlib.sha256(out).hexdigest(),
        "random_state": random_state,
        "description": mut.description or f"{mut.field} = {mut.value}",
    }
    return row, out


def make_corpus(
    out_dir,
    n: int = 300,
    *,
    random_state: int = 0,
    sources=None,
    kinds: Mapping[str, float] | None = None,
) -> pl.DataFrame:
    """Write ``n`` mutants of good Darshan logs into ``out_dir`` and return the manifest.

    Parameters
    ----------
    out_dir : str or Path
        Created if missing; receives ``NNNN_<kind>_<source>.darshan`` files and ``manifest.json``.
    n : int
        Number of mutants.
    random_state : int
        Seed: the same seed, sources and kinds give the same files.
    sources : mapping of path -> weight, or sequence of paths, optional
        Good logs to mutate (default: ``default_sources()``).
    kinds : mapping of kind -> weight, optional
        Mutation kinds to draw from (default: ``KIND_WEIGHTS``).

    Returns
    -------
    polars.DataFrame
        One row per mutant, columns ``MANIFEST_SCHEMA`` (``file`` is relative to ``out_dir``).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    loaded = _loaded_sources(_normalize_sources(sources))
    kinds = dict(KIND_WEIGHTS if kinds is None else kinds)
    rows = []
    for i in range(n):
        row, data = _make(i, random_state, loaded, kinds)
        stem = Path(row["source"]).stem[:24]
        row["file"] = f"{i:04d}_{row['kind']}_{stem}.darshan"
        (out_dir / row["file"]).write_bytes(data)
        rows.append(row)
    frame = pl.DataFrame(rows, schema=MANIFEST_SCHEMA)
    write_manifest(frame, out_dir / MANIFEST_NAME)
    return frame


def write_manifest(frame: pl.DataFrame, path) -> None:
    """Write a manifest frame as JSON (``{"format": ..., "mutants": [row, ...]}``)."""
    doc = {"format": MANIFEST_FORMAT, "mutants": frame.select(list(MANIFEST_SCHEMA)).to_dicts()}
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")


def read_manifest(path) -> pl.DataFrame:
    """Read a manifest written by ``write_manifest`` (a corpus directory or the JSON file)."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    doc = json.loads(path.read_text())
    if doc.get("format") != MANIFEST_FORMAT:
        raise ValueError(f"{path}: not a {MANIFEST_FORMAT} manifest")
    return pl.DataFrame(doc["mutants"], schema=MANIFEST_SCHEMA)


def rebuild(row: Mapping, source_path=None) -> bytes:
    """The mutant bytes of a manifest row, rebuilt from its source log (checked by SHA-256)."""
    src = Path(source_path or row["source_path"]).read_bytes()
    if hashlib.sha256(src).hexdigest() != row["source_sha256"]:
        raise ValueError(f"{row['source']}: source log differs from the one the corpus was made from")
    out = apply_edits(src, row["edits"], row["truncate_at"])
    if hashlib.sha256(out).hexdigest() != row["sha256"]:  # pragma: no cover - apply_edits is exact
        raise ValueError(f"mutant {row['index']}: rebuilt bytes differ from the recorded hash")
    return out
