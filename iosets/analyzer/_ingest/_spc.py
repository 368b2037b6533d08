"""SPC (UMass trace repository) block traces: ASU, LBA in 512-byte blocks, bytes, r/w, seconds."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ._base import Ingester, SkipReport
from ._text import SECTOR, Spec, file_first_line, finish, first_fields, read_checked_csv

_NAMES = ["ASU", "LBA", "Size", "Opcode", "Timestamp"]
_SPECS: list[Spec] = [
    ("ASU", "uint", None),
    ("LBA", "sector", None),
    ("Size", "uint", None),
    ("Opcode", "op", {"r": "read", "w": "write"}),
    ("Timestamp", "float", None),
]
_SCHEMA: dict[str, type[pl.DataType]] = dict(
    zip(_NAMES, [pl.Int64, pl.Int64, pl.Int64, pl.String, pl.Float64], strict=True)
)


def _read(path: Path, class_by: str, errors: str, report: SkipReport) -> pl.DataFrame:
    """One request per line; ``job_id`` and ``rank`` are the ASU; SPC records no completion (``end`` null)."""
    header = file_first_line(path).lower().startswith("asu")
    frame = read_checked_csv(path, _NAMES, _SPECS, _SCHEMA, header=header, errors=errors, report=report)
    t0 = frame["Timestamp"].min() if frame.height else 0.0
    return finish(
        frame.select(
            pl.col("ASU").cast(pl.String).alias("job_id"),
            pl.col("ASU").alias("rank"),
            pl.col("Opcode").alias("op"),
            (pl.col("LBA") * SECTOR).alias("offset"),
            pl.col("Size").alias("size"),
            (pl.col("Timestamp") - t0).alias("start"),
            pl.lit(None, pl.Float64).alias("end"),
        )
    )


def _sniff(head: bytes) -> bool:
    fields = first_fields(head)
    return len(fields) >= 5 and fields[3] in ("r", "w")


INGESTER = Ingester(
    "spc",
    "SPC / UMass block trace (CSV)",
    _read,
    class_by=("device", "asu"),
    sniff=_sniff,
)
