"""File layouts from a Darshan log's LUSTRE records, read in Python from the log's bytes.

A job's Darshan log has a LUSTRE record per file it opened on Lustre (one per rank that opened it, or one for a
shared file): the file's stripe size, stripe count and OSTs, and in version 1 the file system's OST count.
darshan-util 3.5 drops ``LUSTRE_OSTS`` when it up-converts a version-1 record, and crashes on some version-2
records (docs/darshan-util-crashes.md, crash 3), so the records are read here, from the decompressed LUSTRE region
and name map, before darshan-util opens the log. A record that cannot be right gives its file no layout and a
reason that names the file and the field; nothing here raises.

Version 1 (darshan 3.1 to 3.4), int64 words in the writer's byte order::

    0   record id (uint64)    1  rank                2  LUSTRE_OSTS          3  LUSTRE_MDTS
    4   LUSTRE_STRIPE_OFFSET  5  LUSTRE_STRIPE_SIZE  6  LUSTRE_STRIPE_WIDTH  7  LUSTRE_OST_ID_0, _1 ... (one per stripe)

Version 2 (darshan 3.5)::

    0   record id (uint64)    1  rank                2  num_comps            3  num_stripes
    4   num_comps components of 9 words: LUSTRE_COMP<k>_STRIPE_SIZE, _STRIPE_COUNT, _STRIPE_PATTERN, _FLAGS,
        _EXT_START, _EXT_END, _MIRROR_ID, then a 16-byte pool name
    ... num_stripes OST ids, each component's in turn

A version-2 record has no OST count, and a file's layout is its first component's (the one that holds offset 0 of
a composite layout); a component of stripe size -1 is an unused slot (darshan-util drops it and those after it).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import polars as pl

from ._darshan_layout import Layout, LayoutError, region_content

__all__ = ["LAYOUT_SCHEMA", "FileLayouts", "read_file_layouts"]

LAYOUT_SCHEMA = {
    "file": pl.String,
    "stripe_size": pl.Int64,
    "stripe_count": pl.Int64,
    "first_target": pl.Int64,
    "fs_targets": pl.Int64,
}
"""Columns of :attr:`FileLayouts.table` (a log's; the site trace adds ``job_id``)."""
_FIELDS = ("stripe_size", "stripe_count", "first_target", "fs_targets")
_V1_NAMES = dict(
    zip(_FIELDS, ("LUSTRE_STRIPE_SIZE", "LUSTRE_STRIPE_WIDTH", "LUSTRE_OST_ID_0", "LUSTRE_OSTS"), strict=True)
)
"""Darshan's name of each layout field in a version-1 record (darshan-parser's)."""
_V2_NAMES = dict(
    zip(_FIELDS, ("LUSTRE_COMP1_STRIPE_SIZE", "LUSTRE_COMP1_STRIPE_COUNT", "LUSTRE_COMP1_OST_ID_0", ""), strict=True)
)
"""Darshan's name of each layout field in a version-2 record (darshan-parser's; no OST count)."""
_V1_HEAD, _V2_HEAD, _V2_COMP = 7, 4, 9  # words
_UNUSED = -1  # stripe size of an unused version-2 component slot
_PATTERN_MDT = 2  # LLAPI_LAYOUT_MDT: the component's data lives on the metadata target
_NO_LAYOUT = "; the file has no layout"


@dataclass(frozen=True)
class FileLayouts:
    """A log's file layouts: ``table`` (one row per file, :data:`LAYOUT_SCHEMA`), and why other files have none.

    ``refused`` holds one reason per file (or region) left without a layout, naming the file and the field:
    ``LUSTRE record of /scratch/a (rank 0): LUSTRE_STRIPE_SIZE: expected bytes > 0, got -1; the file has no layout``.
    """

    table: pl.DataFrame
    refused: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Records:
    """A LUSTRE region's records as arrays, one row per record."""

    rec_id: np.ndarray  # uint64: the file's record id
    rank: np.ndarray
    values: np.ndarray  # (n, 4) int64: stripe_size, stripe_count, first_target, fs_targets (0 where unknown)
    known: np.ndarray  # (n, 4) bool: False where the record has no such value
    problems: dict[int, str]  # record -> why it gives no layout, found before its fields are checked


def read_file_layouts(data: bytes, layout: Layout) -> FileLayouts | None:
    """The file layouts of a Darshan log's LUSTRE records; None when it has no LUSTRE region.

    Parameters
    ----------
    data : bytes
        The whole log.
    layout : Layout
        Its :func:`~._darshan_layout.parse_layout`.

    Returns
    -------
    FileLayouts or None
        A file has a layout when its records are all sound and agree: stripe size > 0, stripe count >= 1, first
        OST >= 0 and below the OST count, OST count >= 1 (version 1; null in version 2).
    """
    region = next((r for r in layout.regions if r.name == "LUSTRE"), None)
    if region is None:
        return None
    version = layout.mod_versions.get("LUSTRE")
    if version not in (1, 2):
        return _none(f"LUSTRE records of version {version}: iosets reads versions 1 and 2; no file has a layout")
    try:
        content = region_content(data, region, layout.comp_type)
        records, framing = (_records_v1 if version == 1 else _records_v2)(content, layout.byte_order)
        names = _names(data, layout, set(records.rec_id.tolist()))
    except LayoutError as exc:
        return _none(f"LUSTRE records not read: {exc}; no file has a layout")
    table, refused = _per_file(records, names, _V1_NAMES if version == 1 else _V2_NAMES)
    return FileLayouts(table, (*refused, *([framing] if framing else [])))


def _none(reason: str) -> FileLayouts:
    return FileLayouts(pl.DataFrame(schema=LAYOUT_SCHEMA), (reason,))


def _words(content: bytes, order: str) -> np.ndarray:
    """The region as native int64 words (records are whole words; a trailing partial word is left out)."""
    return np.frombuffer(content, dtype=np.dtype(f"{order}i8"), count=len(content) // 8).astype(np.int64)


def _at(words: np.ndarray, index: np.ndarray, where: np.ndarray) -> np.ndarray:
    """``words[index]`` where ``where`` holds, else 0 (``index`` may point past the words there)."""
    return np.where(where, words[np.where(where, index, 0)], 0) if where.any() else np.zeros(len(index), np.int64)


def _records_v1(content: bytes, order: str) -> tuple[_Records, str | None]:
    """Version-1 records, and why the region could not be read to its end (else None)."""
    width_at = struct.Struct(f"{order}q")
    starts: list[int] = []
    pos, size, framing = 0, len(content), None
    while size - pos >= 8 * _V1_HEAD:
        width = width_at.unpack_from(content, pos + 48)[0]
        if not 0 <= width <= (size - pos) // 8 - _V1_HEAD:
            framing = _cut(len(starts), f"{width} OST ids", size - pos - 8 * _V1_HEAD)
            break
        starts.append(pos // 8)
        pos += 8 * (_V1_HEAD + width)
    words = _words(content, order)
    at = np.asarray(starts, dtype=np.int64)
    count = words[at + 6]
    every = np.ones(len(at), dtype=bool)
    values = np.stack([words[at + 5], count, _at(words, at + 7, count > 0), words[at + 2]], axis=1)
    known = np.stack([every, every, count > 0, every], axis=1)
    return _Records(words[at].view(np.uint64), words[at + 1], values, known, {}), framing or _tail(size - pos)


def _records_v2(content: bytes, order: str) -> tuple[_Records, str | None]:
    """Version-2 records, and why the region could not be read to its end (else None)."""
    counts = struct.Struct(f"{order}2q")
    starts: list[int] = []
    comps: list[tuple[int, int]] = []
    pos, size, framing = 0, len(content), None
    while size - pos >= 8 * _V2_HEAD:
        n_comps, n_stripes = counts.unpack_from(content, pos + 16)
        left = (size - pos) // 8 - _V2_HEAD  # words after the record's head
        fits = n_stripes >= 0 and n_comps <= left // _V2_COMP and n_stripes <= left - _V2_COMP * n_comps
        if n_comps >= 1 and not fits:
            framing = _cut(len(starts), f"{n_comps} components and {n_stripes} OST ids", 8 * left)
            break
        starts.append(pos // 8)
        comps.append((n_comps, n_stripes))
        pos += 8 * (_V2_HEAD + (_V2_COMP * n_comps + n_stripes if n_comps >= 1 else 0))  # darshan-util reads no more
    words = _words(content, order)
    at = np.asarray(starts, dtype=np.int64)
    n_comps, n_stripes = np.asarray(comps, dtype=np.int64).reshape(-1, 2).T
    has = n_comps >= 1
    stripe_size, count, pattern = (_at(words, at + _V2_HEAD + k, has) for k in range(3))
    unused = has & (stripe_size == _UNUSED)
    on_mdt = has & ~unused & (pattern > 0) & ((pattern & _PATTERN_MDT) > 0)
    problems = {
        int(i): f"LUSTRE_NUM_COMPONENTS: expected an integer >= 1, got {n_comps[i]}" for i in np.flatnonzero(~has)
    }
    problems |= {
        int(i): "LUSTRE_COMP1_STRIPE_SIZE -1: its first layout component is an unused slot"
        for i in np.flatnonzero(unused)
    }
    problems |= {
        int(i): f"LUSTRE_COMP1_STRIPE_PATTERN {pattern[i]}: its data starts on the MDT, not on OSTs"
        for i in np.flatnonzero(on_mdt)
    }
    striped = has & (n_stripes >= 1) & (count >= 1)
    first = _at(words, at + _V2_HEAD + _V2_COMP * n_comps, striped)
    values = np.stack([stripe_size, count, first, np.zeros_like(at)], axis=1)
    known = np.stack([has, has, striped, np.zeros_like(has)], axis=1)
    return _Records(words[at].view(np.uint64), words[at + 1], values, known, problems), framing or _tail(size - pos)


def _cut(k: int, claim: str, left: int) -> str:
    return (
        f"LUSTRE record {k} claims {claim}, more than the {left} bytes after its head in the region: "
        "it and the records after it are not read; their files have no layout"
    )


def _tail(left: int) -> str | None:
    return f"the LUSTRE region ends inside a record ({left} bytes after the last whole one): not read" if left else None


def _names(data: bytes, layout: Layout, wanted: set[int]) -> dict[int, str]:
    """The names of the record ids in ``wanted``, as darshan-util reads the name map (first non-empty name kept)."""
    region = next((r for r in layout.regions if r.name == "name_map"), None)
    if region is None or not wanted:
        return {}
    content = region_content(data, region, layout.comp_type)
    rec_id = struct.Struct(f"{layout.byte_order}Q")
    name_len = struct.Struct(f"{layout.byte_order}I")
    names: dict[int, str] = {}
    pos = 0
    while len(content) - pos > 8:
        if layout.version == "3.00":  # id, uint32 length, name (no NUL)
            start = pos + 12
            end = start + name_len.unpack_from(content, pos + 8)[0] if start <= len(content) else -1
            step = end
        else:  # id, NUL-terminated name
            start = pos + 8
            end = content.find(b"\0", start)
            step = end + 1
        if not 0 <= end <= len(content):
            break
        key = rec_id.unpack_from(content, pos)[0]
        if key in wanted and not names.get(key):
            names[key] = content[start:end].decode("utf-8", "replace")
        pos = step
    return names


def _field_problem(values: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Per record, the index in :data:`_RULES` of the first rule its fields break; -1 when they break none."""
    size, count, first, targets = values.T
    has_size, has_count, has_first, has_targets = known.T
    broken = [
        has_size & (size <= 0),
        has_count & (count < 1),
        has_first & (first < 0),
        has_targets & (targets < 1),
        has_first & has_targets & (first >= targets),
    ]
    return np.select(broken, list(range(len(broken))), default=-1)


_RULES = (
    ("stripe_size", "bytes > 0"),
    ("stripe_count", "an integer >= 1"),
    ("first_target", "an OST index >= 0"),
    ("fs_targets", "an integer >= 1"),
    ("first_target", "an OST index below LUSTRE_OSTS {fs_targets}"),
)
"""The rules of :func:`_field_problem`: the field each checks and what it expects (its message's words)."""


def _per_file(records: _Records, names: dict[int, str], darshan: dict[str, str]) -> tuple[pl.DataFrame, list[str]]:
    """One row per file whose records are all sound and agree, in the order of their first records; one reason per
    other file."""
    rule = _field_problem(records.values, records.known)
    bad = rule >= 0
    bad[list(records.problems)] = True
    ids, first, inverse = np.unique(records.rec_id, return_index=True, return_inverse=True)
    differs = (
        (records.values != records.values[first][inverse]) | (records.known != records.known[first][inverse])
    ).any(axis=1)
    first_bad = _first_per_file(bad, inverse, len(ids))
    first_differs = _first_per_file(differs, inverse, len(ids))
    file_names = [names.get(rec_id) for rec_id in ids.tolist()]
    named = np.array([name is not None for name in file_names], dtype=bool)
    sound = named & (first_bad < 0) & (first_differs < 0)
    order = np.argsort(first, kind="stable")
    refused = [
        _refusal(
            records,
            int(ids[k]),
            file_names[k],
            (int(first[k]), int(first_bad[k]), int(first_differs[k])),
            rule,
            darshan,
        )
        for k in order[~sound[order]].tolist()
    ]
    kept = order[sound[order]]
    columns: dict[str, list | pl.Series] = {"file": [file_names[k] for k in kept.tolist()]}
    for f, name in enumerate(_FIELDS):
        value = pl.Series(name, records.values[first[kept], f], dtype=pl.Int64)
        columns[name] = value.scatter(np.flatnonzero(~records.known[first[kept], f]), None)
    return pl.DataFrame(columns, schema=LAYOUT_SCHEMA), refused


def _refusal(
    records: _Records, rec_id: int, name: str | None, found: tuple[int, int, int], rule: np.ndarray, darshan: dict
) -> str:
    """Why a file has no layout: no name, else its first unsound record's problem, else the first field two of its
    records differ on (``found``: its first record, its first unsound one, its first that differs, or -1)."""
    first, bad, differs = found
    if name is None:
        return f"LUSTRE record id {rec_id} has no name record{_NO_LAYOUT}"
    if bad >= 0:
        problem = records.problems.get(bad) or _message(int(rule[bad]), records.values[bad], darshan)
        return f"LUSTRE record of {name} (rank {records.rank[bad]}): {problem}{_NO_LAYOUT}"
    mask = (records.values[first] != records.values[differs]) | (records.known[first] != records.known[differs])
    field = int(np.flatnonzero(mask)[0])
    one, other = (_shown(records, r, field) for r in (first, differs))
    return (
        f"LUSTRE records of {name} disagree on {darshan[_FIELDS[field]]}: {one} (rank {records.rank[first]}) "
        f"vs {other} (rank {records.rank[differs]}){_NO_LAYOUT}"
    )


def _first_per_file(flag: np.ndarray, inverse: np.ndarray, n_files: int) -> np.ndarray:
    """Per file, its first record where ``flag`` holds; -1 when none does."""
    out = np.full(n_files, len(flag), dtype=np.int64)
    hit = np.flatnonzero(flag)
    np.minimum.at(out, inverse[hit], hit)
    return np.where(out < len(flag), out, -1)


def _shown(records: _Records, i: int, field: int) -> int | None:
    """A record's value of a field as Python gives it: an int, or None where the record has none."""
    return int(records.values[i, field]) if records.known[i, field] else None


def _message(rule: int, values: np.ndarray, darshan: dict[str, str]) -> str:
    """What a broken rule says: Darshan's name of the field, what it expects, the value found."""
    field, expect = _RULES[rule]
    column = _FIELDS.index(field)
    expect = expect.format(fs_targets=values[_FIELDS.index("fs_targets")])
    return f"{darshan[field]}: expected {expect}, got {values[column]}"
