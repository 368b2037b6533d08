"""Read and write the ops interchange table (CSV or Parquet)."""

from pathlib import Path

import polars as pl

from .._io import read_frame, write_frame
from ..errors import InputError

OPS_SCHEMA = {
    "job_id": pl.String,
    "rank": pl.Int64,
    "op": pl.String,
    "offset": pl.Int64,
    "size": pl.Int64,
    "start": pl.Float64,
    "end": pl.Float64,
    "file": pl.String,
}
"""Column types of the ops table; ``end`` and ``file`` are optional."""
REQUIRED = ("job_id", "rank", "op", "offset", "size", "start")


def read_ops(path) -> pl.DataFrame:
    """Read an ops table from ``.csv`` or ``.parquet``, checking columns and types.

    Returns a frame with the DESIGN.md columns (``end`` and ``file`` optional) plus any extra columns.
    """
    path = Path(path)
    frame = read_frame(path, what="ops table", schema_overrides=OPS_SCHEMA)
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: missing columns {missing}; expected {list(REQUIRED)}")
    if "end" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, pl.Float64).alias("end"))
    try:
        return frame.cast({k: v for k, v in OPS_SCHEMA.items() if k in frame.columns})
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"{path}: bad column type ({str(exc).splitlines()[0]})") from None


def write_ops(ops: pl.DataFrame, path) -> Path:
    """Write an ops table atomically as ``.csv`` or ``.parquet``."""
    return write_frame(ops, path)
