"""The Darshan layout checks that run before darshan-util: every good log passes, every lie is named."""

import struct
import zlib
from pathlib import Path

import pytest

from iosets.analyzer._ingest._darshan_layout import (
    RISKY_REGIONS,
    VERSIONS,
    LayoutError,
    check_regions,
    parse_layout,
    zlib_streams,
)

darshan = pytest.importorskip("darshan")

WHEEL = Path(darshan.__file__).parent
GOOD = sorted(
    [*(WHEEL / "examples" / "example_logs").glob("*.darshan"), *(WHEEL / "tests" / "input").glob("*.darshan")]
    + list((Path(__file__).parents[1] / "data" / "darshan").glob("*.darshan"))
)
DXT = (WHEEL / "examples" / "example_logs" / "dxt.darshan").read_bytes()  # 3.10: job, names, POSIX, STDIO, DXT_POSIX
DXT_START, DXT_LEN, SIZE = 17944, 81054, 98998
MOD_MAP_310 = 40  # mod_map[16] of formats 3.00-3.21: (off, len) uint64 pairs; slot 1 POSIX, 7 STDIO, 8 DXT_POSIX


def _u64(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + struct.pack("<Q", value % 2**64) + data[offset + 8 :]


def _reason(data: bytes) -> str:
    with pytest.raises(LayoutError) as error:
        check_regions(data, parse_layout(data))
    return str(error.value)


def _dxt_count(value: int) -> bytes:
    """dxt.darshan with DXT_POSIX record 0's read_count set to ``value`` (stream recompressed, map updated)."""
    raw = bytearray(zlib.decompress(DXT[DXT_START:]))
    struct.pack_into("<q", raw, 96, value)
    stream = zlib.compress(bytes(raw))
    return _u64(DXT[:DXT_START] + stream, MOD_MAP_310 + 16 * 8 + 8, len(stream))


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_good_logs_pass_and_their_regions_tile_the_file(path):
    data = path.read_bytes()
    layout = parse_layout(data)
    check_regions(data, layout)
    assert layout.version in VERSIONS and layout.byte_order == "<" and layout.comp_type == 0
    regions = sorted(layout.regions, key=lambda r: r.start)
    assert [r.start for r in regions[1:]] == [r.end for r in regions[:-1]]
    assert (regions[0].start, regions[-1].end) == (0, len(data))
    for region in layout.data_regions():  # each region is a run of whole zlib streams
        assert zlib_streams(data, region)[-1][1] == region.end


def test_the_regions_of_a_log_and_its_module_versions():
    layout = parse_layout(DXT)
    assert [(r.name, r.start, r.length) for r in layout.regions] == [
        ("header", 0, 360),
        ("job", 360, 993),
        ("name_map", 1353, 4496),
        ("POSIX", 5849, 12028),
        ("STDIO", 17877, 67),
        ("DXT_POSIX", DXT_START, DXT_LEN),
    ]
    assert layout.mod_versions == {"POSIX": 4, "STDIO": 2, "DXT_POSIX": 1}


def test_a_big_endian_header_is_read_with_its_byte_order():
    swapped = bytearray(DXT)
    for offset in [8, *range(24, 296, 8)]:  # magic, name map, module map: uint64
        swapped[offset : offset + 8] = swapped[offset : offset + 8][::-1]
    for offset in range(296, 360, 4):  # module versions: uint32
        swapped[offset : offset + 4] = swapped[offset : offset + 4][::-1]
    layout = parse_layout(bytes(swapped))
    assert layout.byte_order == ">"
    assert layout.regions == parse_layout(DXT).regions and layout.mod_versions == parse_layout(DXT).mod_versions


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"x" * 10, "not a readable Darshan log (only 10 bytes)"),
        (_u64(DXT, 8, 0), "not a readable Darshan log (magic number 0, expected 6567223)"),
        (
            b"9.99" + DXT[4:],
            "unsupported Darshan log format version '9.99' (darshan-util reads 3.00, 3.10, 3.20, 3.21, 3.41)",
        ),
        (DXT[:200], "truncated in the header (200 of 360 bytes)"),
        (DXT[:16] + b"\x07" + DXT[17:], "unknown compression type 7 (expected 0 zlib, 1 bzip2 or 2 none)"),
        (
            _u64(DXT, MOD_MAP_310 + 16 * 8 + 8, DXT_LEN + 1000),
            f"module DXT_POSIX region [offset {DXT_START}, length {DXT_LEN + 1000}] extends past the end of the file "
            f"({SIZE} bytes)",
        ),
        (
            _u64(DXT, MOD_MAP_310 + 16 + 8, 12028 + 16),
            "module STDIO region [offset 17877, length 67] overlaps the module POSIX region "
            "[offset 5849, length 12044]",
        ),
        (
            _u64(DXT, MOD_MAP_310 + 16 + 8, 12028 - 16),
            "bytes 17861 to 17877 lie in no region (between the module POSIX region and the module STDIO region)",
        ),
        (
            DXT + b"\0" * 16,
            f"bytes {SIZE} to {SIZE + 16} lie in no region (after the module DXT_POSIX region, the last one)",
        ),
        (_u64(DXT, 24, 100), "no job region: the name map starts at offset 100, within the header (360 bytes)"),
        (
            _u64(_u64(DXT, MOD_MAP_310 + 16 * 2, 50), MOD_MAP_310 + 16 * 2 + 8, 10),
            "module MPI-IO region [offset 50, length 10] starts within the header (360 bytes)",
        ),
    ],
    ids=[
        "short",
        "magic",
        "version",
        "header_cut",
        "comp_type",
        "past_end",
        "overlap",
        "gap",
        "trailing",
        "no_job",
        "in_header",
    ],
)
def test_a_map_that_cannot_be_right_is_named(data, reason):
    with pytest.raises(LayoutError) as error:
        parse_layout(data)
    assert str(error.value) == reason


def test_a_corrupt_stream_is_named_with_its_region():
    flipped = bytearray(DXT)
    flipped[DXT_START + 5000] ^= 0xFF
    assert _reason(bytes(flipped)).startswith(
        f"module DXT_POSIX region [offset {DXT_START}, length {DXT_LEN}] is corrupt in the stream at byte {DXT_START} "
        "(zlib: Error -3"
    )
    cut_stream = _u64(DXT[:-100], MOD_MAP_310 + 16 * 8 + 8, DXT_LEN - 100)  # region and file shortened alike
    assert _reason(cut_stream) == (
        f"module DXT_POSIX region [offset {DXT_START}, length {DXT_LEN - 100}] ends inside a compressed stream "
        "(truncated or cut short)"
    )


def test_dxt_counts_darshan_util_would_trust_are_checked():
    assert _reason(_dxt_count(-1)) == "DXT_POSIX record 0 has a negative count -1"  # heap overflow (crash 5)
    left = len(zlib.decompress(DXT[DXT_START:])) - 104
    assert _reason(_dxt_count(2**59 + 1)) == (  # 32 x count wraps in darshan-util (crash 6)
        f"DXT_POSIX record 0 claims {2**59 + 1} items of 32 bytes, more than the {left} bytes left in the region"
    )
    check_regions(_dxt_count(18), parse_layout(_dxt_count(18)))  # the original count, recompressed, passes


def test_a_name_map_that_ends_inside_a_record_is_named():
    ior = bytearray((WHEEL / "examples" / "example_logs" / "ior_hdf5_example.darshan").read_bytes())
    ior[16] = 2  # comp_type none: the zlib name map read as raw records (darshan-util asserts, crash 2)
    assert _reason(bytes(ior)) == "name map region [offset 921, length 316] ends inside a name record (10 bytes)"


def test_a_bgq_version_1_region_that_darshan_util_loops_on_is_named():
    example = (WHEEL / "examples" / "example_logs" / "example.darshan").read_bytes()
    relabelled = b"3.21" + example[4:]  # its LUSTRE v1 region becomes BG/Q v1 (crash 4: never returns)
    assert _reason(relabelled) == (
        "module BG/Q region [offset 8151, length 87] holds 248 bytes, not a whole number of 120-byte version-1 records"
    )


def test_only_the_named_regions_are_decompressed():
    flipped = bytearray(DXT)
    flipped[2343] ^= 0x6F  # inside the name map (crash 1 when darshan-util reads it)
    layout = parse_layout(bytes(flipped))
    check_regions(bytes(flipped), layout, RISKY_REGIONS)  # the name map is not read without DXT: not checked
    with pytest.raises(LayoutError, match=r"^name map region \[offset 1353, length 4496\] is corrupt"):
        check_regions(bytes(flipped), layout, (*RISKY_REGIONS, "name_map"))
