"""Atomic file writes: a temp file in the target's folder, then a rename."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import InputError

if TYPE_CHECKING:
    import polars as pl


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path that replaces ``path`` only if the block succeeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_frame(frame: pl.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``frame`` atomically as ``.parquet`` or ``.csv``, chosen by the suffix."""
    path = Path(path)
    if path.suffix not in (".parquet", ".csv"):
        raise InputError(f"{path}: expected a .parquet or .csv file name")
    with atomic_path(path) as tmp:
        frame.write_parquet(tmp) if path.suffix == ".parquet" else frame.write_csv(tmp)
    return path


def read_frame(path: str | os.PathLike, *, what: str = "table", schema_overrides=None) -> pl.DataFrame:
    """Read a ``.parquet`` or ``.csv`` table, naming the file and the reason when it cannot be read."""
    import polars as pl

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        if path.suffix == ".parquet":
            return pl.read_parquet(path)
        return pl.read_csv(path, schema_overrides=schema_overrides)
    except (pl.exceptions.PolarsError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{path}: not a readable {what} ({first})") from None
