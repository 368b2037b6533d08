"""The fuzz corpus generator: deterministic per seed, mutants as the manifest says, manifest round-trips."""

import ast
import hashlib
import re
import struct
import zlib
from pathlib import Path

import polars as pl
import pytest
from corpus import (
    KIND_WEIGHTS,
    MANIFEST_NAME,
    MANIFEST_SCHEMA,
    apply_edits,
    default_sources,
    make_corpus,
    parse_layout,
    read_manifest,
    rebuild,
    write_manifest,
)

SOURCES = default_sources()
SMALL = {p: w for p, w in SOURCES.items() if p.stat().st_size < 200_000}  # fast: the wheel's example logs
DXT = next(p for p in SOURCES if p.name == "dxt.darshan")
IOR = next(p for p in SOURCES if p.name == "ior_hdf5_example.darshan")


@pytest.fixture
def corpus300(darshan_fuzz_corpus):
    """The default corpus the end-to-end test will use: 300 mutants, seed 0 (conftest.py)."""
    return darshan_fuzz_corpus


def _files(out: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.darshan"))}


def test_same_seed_same_corpus_other_seed_other_corpus(tmp_path):
    a = make_corpus(tmp_path / "a", 40, random_state=7, sources=SMALL)
    b = make_corpus(tmp_path / "b", 40, random_state=7, sources=SMALL)
    c = make_corpus(tmp_path / "c", 40, random_state=8, sources=SMALL)
    assert a.equals(b)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert a["sha256"].to_list() != c["sha256"].to_list()
    assert len(set(a["sha256"]) & set(c["sha256"])) < 10  # a few truncations may coincide


def test_mutant_i_depends_only_on_seed_and_i(tmp_path):
    small = make_corpus(tmp_path / "s", 12, random_state=3, sources=SMALL)
    big = make_corpus(tmp_path / "b", 30, random_state=3, sources=SMALL)
    assert small.equals(big.head(12))


def test_writes_n_files_and_the_manifest(corpus300):
    out, m = corpus300
    files = sorted(p.name for p in out.glob("*.darshan"))
    assert len(files) == 300 == m.height
    assert files == sorted(m["file"])
    assert m["index"].to_list() == list(range(300))
    assert (out / MANIFEST_NAME).is_file()
    for row in m.iter_rows(named=True):
        data = (out / row["file"]).read_bytes()
        assert len(data) == row["size"]
        assert hashlib.sha256(data).hexdigest() == row["sha256"]
        assert row["sha256"] != row["source_sha256"]  # every mutant differs from its source


def test_default_corpus_mixes_every_kind_and_source_and_stays_small(corpus300):
    _, m = corpus300
    assert set(m["kind"]) == set(KIND_WEIGHTS)
    assert set(m["source"]) == {p.name for p in SOURCES}
    assert m["size"].sum() < 60e6
    assert m.filter(pl.col("source").is_in(["dxt.darshan", "ior_hdf5_example.darshan"])).height > 150


def _changed(a: bytes, b: bytes) -> list[int]:
    return [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]


def _check_row(row: dict, data: bytes) -> None:
    """A mutant is its source with the manifest's edits, as its kind says."""
    src = Path(row["source_path"]).read_bytes()
    lay = parse_layout(src)
    edits = [(e["offset"], bytes.fromhex(e["old"]), bytes.fromhex(e["new"])) for e in row["edits"]]
    for off, old, _ in edits:
        assert src[off : off + len(old)] == old
    assert rebuild(row) == data
    kind = row["kind"]
    if kind.startswith("truncate"):
        assert edits == []
        assert row["truncate_at"] == len(data) < len(src)
        assert data == src[: row["truncate_at"]]
        if kind == "truncate_boundary":
            starts = {r.start for r in lay.regions} | {r.end for r in lay.regions} | {8, 16}
            inner = row["value"].startswith("start of") and "stream" in row["value"]
            assert inner or row["truncate_at"] in starts
        return
    assert row["truncate_at"] is None
    if kind.startswith("flip"):
        assert len(data) == len(src)
        assert _changed(src, data) == sorted(off for off, _, _ in edits)
        for off, old, new in edits:
            assert len(old) == len(new) == 1 and old != new and data[off] == new[0]
        if kind in ("flip_header", "flip_map"):
            assert all(off < lay.header_size for off, _, _ in edits)
        if kind == "flip_map":
            (off,) = (e[0] for e in edits)
            assert lay.mod_map_field - 16 <= off < lay.mod_ver_field
        return
    if kind.startswith("header_"):
        assert len(data) == len(src)
        assert all(off + len(old) <= lay.header_size for off, old, _ in edits)
        assert set(_changed(src, data)) <= {off + i for off, old, _ in edits for i in range(len(old))}
    if kind == "header_magic":
        assert [e[0] for e in edits] == [8]
        assert struct.unpack_from("<q", data, 8)[0] != 6567223
    elif kind == "header_version":
        assert data[:8].split(b"\0")[0].decode() == ast.literal_eval(row["value"])  # value: the repr
    elif kind == "header_comp":
        assert data[16] == int(row["value"].split()[0]) != src[16]
    elif kind == "header_region":
        for off, _, new in edits:
            assert struct.unpack_from("<Q", data, off)[0] == struct.unpack("<Q", new)[0]
        if not row["value"].startswith("alias"):
            assert struct.unpack_from("<Q", data, edits[0][0])[0] == int(row["value"].split(": ")[1])
    elif kind == "header_modver":
        (off,) = (e[0] for e in edits)
        assert struct.unpack_from("<I", data, off)[0] == int(row["value"].split(": ")[1])
    elif kind == "record_count":
        m = re.fullmatch(r"(DXT_\w+) stream@(\d+) record (\d+)\.(write_count|read_count)", row["field"])
        start, record, which = int(m.group(2)), int(m.group(3)), m.group(4)
        want = int(re.search(r"= (-?\d+)\)$", row["value"]).group(1))
        raw = zlib.decompressobj().decompress(data[start:])  # the edited stream, recompressed in place
        pos = 0
        for _ in range(record):
            w, r = struct.unpack_from("<qq", raw, pos + 88)
            pos += 104 + 32 * (w + r)
        got = struct.unpack_from("<q", raw, pos + (88 if which == "write_count" else 96))[0]
        assert got == want
        region = m.group(1)
        old_len = parse_layout(src).region(region).length
        new_len = parse_layout(data).region(region).length
        assert new_len - old_len == len(data) - len(src)  # the header map follows the splice


def test_each_mutant_differs_from_its_source_as_the_manifest_says(corpus300):
    out, m = corpus300
    seen = set()
    for row in m.iter_rows(named=True):
        _check_row(row, (out / row["file"]).read_bytes())
        seen.add(row["kind"])
    assert seen == set(KIND_WEIGHTS)


def test_manifest_round_trips(corpus300, tmp_path):
    out, m = corpus300
    assert read_manifest(out).equals(m)
    write_manifest(m, tmp_path / "copy.json")
    back = read_manifest(tmp_path / "copy.json")
    assert back.schema == pl.Schema(MANIFEST_SCHEMA)
    assert back.equals(m)
    assert back.filter(pl.col("kind") == "flip")["edits"].list.len().min() >= 1


def test_apply_edits_checks_the_source_and_splices():
    data = bytes(range(16))
    assert apply_edits(data, [(2, b"\x02\x03", b"XYZ")]) == b"\x00\x01XYZ" + bytes(range(4, 16))
    assert apply_edits(data, [{"offset": 0, "old": "00", "new": "ff"}], truncate_at=4) == b"\xff\x01\x02\x03"
    with pytest.raises(ValueError, match="edit at 5"):
        apply_edits(data, [(5, b"\x00", b"\x01")])


def test_layout_names_match_pydarshan():
    b = pytest.importorskip("darshan.backend.cffi_backend")
    for path in (DXT, IOR):
        lay = parse_layout(path.read_bytes())
        log = b.log_open(str(path))
        try:
            mods = b.log_get_modules(log)
        finally:
            b.log_close(log)
        assert {r.name: r.length for r in lay.regions if r.slot is not None} == {k: v["len"] for k, v in mods.items()}
    assert parse_layout(DXT.read_bytes()).header_size == 360
    assert [r.name for r in parse_layout(IOR.read_bytes()).regions][:3] == ["header", "job", "name_map"]
