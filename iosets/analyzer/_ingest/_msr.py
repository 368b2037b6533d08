"""MSR Cambridge block traces (CSV: Windows filetime stamps, bytes, response time in 100 ns ticks)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ._base import Ingester, SkipReport
from ._text import Spec, file_first_line, finish, first_fields, read_checked_csv

FILETIME_TICKS = 10_000_000  # 100 ns ticks per second

_NAMES = ["Timestamp", "Hostname", "DiskNumber", "Type", "Offset", "Size", "ResponseTime"]
_SPECS: list[Spec] = [
    ("Timestamp", "uint", None),
    ("Hostname", "str", None),
    ("DiskNumber", "uint", None),
    ("Type", "op", {"read": "read", "write": "write"}),
    ("Offset", "uint", None),
    ("Size", "uint", None),
    ("ResponseTime", "uint", None),
]
_SCHEMA: dict[str, type[pl.DataType]] = {n: pl.String if n in ("Hostname", "Type") else pl.Int64 for n in _NAMES}


def _read(path: Path, class_by: str, errors: str, report: SkipReport) -> pl.DataFrame:
    """One request per line; ``job_id`` is 'host_disk' (or the host), ``rank`` the disk number."""
    header = file_first_line(path).lower().startswith("timestamp")
    frame = read_checked_csv(path, _NAMES, _SPECS, _SCHEMA, header=header, errors=errors, report=report)
    t0 = frame["Timestamp"].min() if frame.height else 0
    since = pl.col("Timestamp") - t0
    job = pl.col("Hostname") if class_by == "host" else pl.format("{}_{}", pl.col("Hostname"), pl.col("DiskNumber"))
    return finish(
        frame.select(
            job.alias("job_id"),
            pl.col("DiskNumber").alias("rank"),
            pl.col("Type").alias("op"),
            pl.col("Offset").alias("offset"),
            pl.col("Size").alias("size"),
            (since.cast(pl.Float64) / FILETIME_TICKS).alias("start"),
            ((since.cast(pl.Float64) + pl.col("ResponseTime").cast(pl.Float64)) / FILETIME_TICKS).alias("end"),
        )
    )


def _sniff(head: bytes) -> bool:
    fields = first_fields(head)
    return fields[:2] == ["timestamp", "hostname"] or (len(fields) == 7 and fields[3] in ("read", "write"))


INGESTER = Ingester(
    "msr",
    "MSR Cambridge block trace (CSV)",
    _read,
    class_by=("device", "host"),
    sniff=_sniff,
)
