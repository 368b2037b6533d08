"""A decompression bomb costs an error row naming its region and cap, about what a good log of its size costs.

The bombs are forged here from a real log: its DXT_POSIX region replaced by one zlib stream of 256 MiB of zeros
(about 250 KB), far past the region's cap (16 times its compressed length, about 4 MB).
"""

import bz2
import zlib
from pathlib import Path

import pytest

pytest.importorskip("darshan")

from darshan_bomb import GOOD, OTHER_GOOD, WorkerPeak, write_bomb, zeros_stream  # noqa: E402

from iosets.analyzer import analyze, ingest, site_trace  # noqa: E402
from iosets.analyzer._ingest._darshan_layout import (  # noqa: E402
    INFLATE_CEILING,
    INFLATE_FLOOR,
    InflateError,
    LayoutError,
    Region,
    check_regions,
    inflate_cap,
    parse_layout,
    region_content,
    zlib_streams,
)
from iosets.analyzer._memory import MEMORY_ENV, worker_memory  # noqa: E402
from iosets.analyzer._pool import run_isolated  # noqa: E402
from iosets.analyzer._worker import analyze_chunk  # noqa: E402
from iosets.errors import InputError  # noqa: E402

INFLATED = 256 << 20
GROWTH = 200 << 20  # bytes a bomb may add to its worker's peak resident memory


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    return write_bomb(tmp_path_factory.mktemp("bomb") / "bomb.darshan", INFLATED)


def _message(path: Path) -> str:
    """What the bomb at ``path`` is refused with: its DXT_POSIX region, 16 times its compressed bytes."""
    region = parse_layout(path.read_bytes()).region("DXT_POSIX")
    return (
        f"{path}: module DXT_POSIX region {region.span()} inflates past {16 * region.length} bytes "
        f"(cap: 16 x its {region.length} compressed bytes): a decompression bomb?"
    )


# ---------------------------------------------------------------------------------------------- the cap


def test_the_cap_is_the_compressed_length_times_the_region_ratio_between_floor_and_ceiling():
    def region(name, length):
        return Region(name, 1000, 1000 + length, slot=1)

    assert inflate_cap(region("DXT_POSIX", 250_000)) == (4_000_000, "16 x its 250000 compressed bytes")
    assert inflate_cap(region("POSIX", 250_000)) == (32_000_000, "128 x its 250000 compressed bytes")
    assert inflate_cap(region("DXT_MPIIO", 1000)) == (
        INFLATE_FLOOR,
        "the floor of every region; 16 x its 1000 compressed bytes is less",
    )
    assert inflate_cap(region("HEATMAP", 100 << 20)) == (
        INFLATE_CEILING,
        "the ceiling of every region; 128 x its 104857600 compressed bytes is more",
    )


def test_every_region_of_the_real_logs_inflates_to_at_most_half_its_cap():
    import darshan

    logs = [
        *Path(__file__).parents[1].joinpath("data").rglob("*.darshan"),
        *Path(darshan.__file__).parent.rglob("*.darshan"),
    ]
    seen = 0
    for path in logs:
        data = path.read_bytes()
        try:
            layout = parse_layout(data)
        except LayoutError:
            continue  # the deliberately broken logs of other tests
        for region in layout.data_regions():
            try:
                inflated = len(region_content(data, region, layout.comp_type))
            except InflateError:
                raise
            except LayoutError:
                continue
            assert 2 * inflated <= inflate_cap(region)[0], (path.name, region.name, inflated)
            seen += 1
    assert seen > 300


@pytest.mark.parametrize("comp_type", [0, 1], ids=["zlib", "bzip2"])
def test_inflating_stops_at_the_cap_not_at_the_end_of_the_stream(comp_type):
    compress = zlib.compress if comp_type == 0 else bz2.compress
    stream = compress(bytes(64 << 20))
    data = bytes(100) + stream + compress(b"tail")
    region = Region("DXT_POSIX", 100, len(data), slot=10)
    cap = inflate_cap(region)[0]
    assert cap < 2 << 20  # the floor: a few MB, so the 64 MiB stream is cut early
    with pytest.raises(InflateError, match=rf"inflates past {cap} bytes \(cap: the floor of every region"):
        region_content(data, region, comp_type)
    fine = compress(b"x" * 5000) + compress(b"y" * 7)  # two streams within the cap: inflated whole
    assert region_content(bytes(10) + fine, Region("DXT_POSIX", 10, 10 + len(fine), 10), comp_type) == (
        b"x" * 5000 + b"y" * 7
    )


def test_a_bomb_in_a_region_not_otherwise_checked_is_caught_and_zlib_streams_stays_bounded(bomb, tmp_path):
    posix = write_bomb(tmp_path / "posix.darshan", INFLATED, region="POSIX")
    data = posix.read_bytes()
    layout = parse_layout(data)
    region = layout.region("POSIX")
    with pytest.raises(InflateError, match=rf"module POSIX region .* inflates past {128 * region.length} bytes"):
        check_regions(data, layout, ("DXT_POSIX",))  # POSIX is not among the regions whose records are checked
    data = bomb.read_bytes()
    assert zlib_streams(data, parse_layout(data).region("DXT_POSIX")) == []  # the stream does not end within the cap


# ---------------------------------------------------------------------------------------------- every entry


def test_analyze_gives_the_bomb_an_error_row_and_the_good_log_its_row(bomb):
    with WorkerPeak() as peak:
        analysis = analyze([bomb, GOOD])
    assert analysis.errors.rows() == [(str(bomb), _message(bomb))]
    assert analysis.jobs["path"].to_list() == [str(GOOD)]
    assert peak.growth < GROWTH


def test_analyze_in_worker_processes_gives_the_same_row(bomb):
    outcomes = analyze_chunk([str(bomb), str(GOOD)])  # the path of batches (48 traces or more) and of Dask
    assert outcomes[0] == ([], {"path": str(bomb), "reason": _message(bomb)})
    assert [row["path"] for row in outcomes[1][0]] == [str(GOOD)]


def test_ingest_refuses_the_bomb_with_its_cap(bomb):
    with WorkerPeak() as peak, pytest.raises(InputError) as error:
        ingest(bomb)
    assert str(error.value) == _message(bomb)
    assert peak.growth < GROWTH
    assert ingest(GOOD).height > 0


def test_a_site_trace_keeps_the_good_logs_and_lists_the_bomb(bomb):
    with WorkerPeak() as peak:
        site = site_trace([bomb, GOOD, OTHER_GOOD])
    assert site.errors.rows() == [(str(bomb), _message(bomb))]
    assert sorted(site.jobs["path"].to_list()) == sorted([str(GOOD), str(OTHER_GOOD)])
    assert peak.growth < GROWTH


def test_a_cap_far_below_the_bomb_is_what_bounds_it(bomb):
    region = parse_layout(bomb.read_bytes()).region("DXT_POSIX")
    assert region.length < 300_000 and 16 * region.length * 50 < INFLATED  # the bomb is 50 times past its cap


# ---------------------------------------------------------------------------------------------- the memory limit

_DATA_SIZE = "__import__('iosets.analyzer._memory', fromlist=['data_size']).data_size()"


def test_workers_run_under_a_data_memory_limit_and_passing_it_is_an_input_error():
    import resource

    soft, held = run_isolated(
        eval, "__import__('resource').getrlimit(__import__('resource').RLIMIT_DATA)[0], " + _DATA_SIZE, name="x"
    )
    budget = worker_memory()
    assert soft != resource.RLIM_INFINITY and held < soft <= held + budget  # what it held when forked, + the budget
    with pytest.raises(InputError) as error:
        run_isolated(bytearray, budget + 1, name="huge.darshan")  # refused at once: no page is touched
    assert str(error.value) == (
        f"huge.darshan: passed the worker's memory limit ({budget >> 20} MiB of data; {MEMORY_ENV} sets it)"
    )
    assert run_isolated(str.upper, "a", name="x") == "A"  # a fresh worker takes the next task


def test_the_memory_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(MEMORY_ENV, "512")
    assert worker_memory() == 512 << 20
    for bad in ("12", "1.5", "lots"):
        monkeypatch.setenv(MEMORY_ENV, bad)
        with pytest.raises(InputError, match=rf"{MEMORY_ENV}: expected a whole number of MiB >= 64, got '{bad}'"):
            worker_memory()
    monkeypatch.delenv(MEMORY_ENV)
    assert 0 < worker_memory() <= 8 << 30


def test_zeros_stream_inflates_to_the_size_asked():
    assert zlib.decompress(zeros_stream(3 << 20)) == bytes(3 << 20)
