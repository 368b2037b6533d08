"""Decompression bombs forged from real Darshan logs: one region replaced by a zlib stream of zeros."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from iosets.analyzer._ingest._darshan_layout import parse_layout
from iosets.analyzer._pool import run_isolated

CORPUS = Path(__file__).parents[1] / "data" / "darshan-runtime" / "corpus"
GOOD = CORPUS / "p01_w0.5_a0.2.darshan"
"""The real log bombs are forged from (a DXT_POSIX region of 13 728 bytes)."""
OTHER_GOOD = CORPUS / "p02_w2_a0.05.darshan"
"""A second real log, of another job, analysed next to a bomb."""
_RESET_PEAK = "(open('/proc/self/clear_refs', 'w').write('5'), __import__('os').getpid())[1]"
_PEAK = "(__import__('os').getpid(), [int(x.split()[1]) << 10 for x in open('/proc/self/status') if 'VmHWM' in x][0])"


def zeros_stream(size: int) -> bytes:
    """One zlib stream that inflates to ``size`` zero bytes (about size / 1030 bytes)."""
    deflate, block, parts = zlib.compressobj(9), bytes(1 << 24), []
    for start in range(0, size, len(block)):
        parts.append(deflate.compress(block[: min(len(block), size - start)]))
    return b"".join([*parts, deflate.flush()])


def with_region(data: bytes, name: str, payload: bytes) -> bytes:
    """The log ``data``, region ``name``'s bytes replaced by ``payload``: its map entry and later offsets updated."""
    layout = parse_layout(data)
    region = layout.region(name)
    shift = len(payload) - region.length
    out = bytearray(data[: region.start] + payload + data[region.end :])
    word = f"{layout.byte_order}Q"
    for other in layout.mapped_regions():
        if other.start > region.start:
            struct.pack_into(word, out, layout.map_field(other.slot, "off"), other.start + shift)
    struct.pack_into(word, out, layout.map_field(region.slot, "len"), len(payload))
    return bytes(out)


def write_bomb(path: Path, inflated: int, *, region: str = "DXT_POSIX", source: Path = GOOD) -> Path:
    """Write at ``path`` the log ``source`` whose ``region`` is one stream of ``inflated`` zero bytes."""
    path.write_bytes(with_region(source.read_bytes(), region, zeros_stream(inflated)))
    return path


class WorkerPeak:
    """The growth of the shared reader worker's peak resident memory over a block (Linux: VmHWM, reset first).

    The reader worker is :func:`run_isolated`'s, this process's: the one ``analyze`` (fewer than 48 traces),
    ``ingest``, ``site_trace`` and the service read logs in.
    """

    def __enter__(self):
        self.pid = run_isolated(eval, _RESET_PEAK, name="reset")
        self.start = run_isolated(eval, _PEAK, name="peak")[1]
        return self

    def __exit__(self, *exc_info):
        pid, peak = run_isolated(eval, _PEAK, name="peak")
        assert pid == self.pid  # the bomb did not cost its worker: the same process measured
        self.growth = peak - self.start
