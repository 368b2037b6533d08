"""Requests tables (CSV or Parquet): read and checked against the ops schema, written atomically."""

from __future__ import annotations

import contextlib
from pathlib import Path

import polars as pl

from ..._io import read_frame, write_frame
from ...errors import InputError
from ...schemas import REQUESTS
from ._base import Ingester, SkipReport
from ._text import csv_problem, first_fields, first_reason, split_bad

DType = pl.DataType | type[pl.DataType]
_TYPE_NAMES: dict[DType, str] = {pl.Int64: "an integer", pl.Float64: "a number", pl.String: "text"}
_FIRST_CSV_LINE = 2  # line 1 is the header


def write_requests(ops: pl.DataFrame, path) -> Path:
    """Write a requests table atomically as ``.csv`` or ``.parquet``."""
    return write_frame(ops, path)


def _read_table(path: Path) -> pl.DataFrame:
    """The file's table, typed as the ops schema when every CSV value parses, else with CSV columns as text."""
    if path.suffix == ".parquet":
        return read_frame(path, what="requests table")
    with contextlib.suppress(pl.exceptions.PolarsError):  # a value that does not parse: the row check names it
        return pl.read_csv(path, schema_overrides=REQUESTS.polars, glob=False)  # brackets in a name are not a pattern
    try:
        return pl.read_csv(path, infer_schema=False, glob=False)
    except (pl.exceptions.PolarsError, OSError) as exc:
        where = csv_problem(path)
        if where is not None:
            raise InputError(f"{path} {where}") from None
        raise InputError(f"{path}: not a readable requests table ({str(exc).strip().splitlines()[0]})") from None


def _typed(name: str, target: DType, dtype: pl.DataType) -> tuple[pl.Expr, pl.Expr]:
    """Column ``name`` of type ``dtype`` cast to ``target`` (null where it does not convert), and True where not."""
    raw = pl.col(name)
    source = raw.str.strip_chars() if dtype == pl.String else raw
    value = source.cast(target, strict=False)
    lost = value.is_null() & source.is_not_null()
    if target == pl.Int64 and dtype.is_float():
        lost = lost | (raw.is_finite() & (raw != raw.floor()))
    return value, lost


def _with_reasons(frame: pl.DataFrame, first: int) -> pl.DataFrame:
    """``frame`` typed as the ops schema, its rows numbered from ``first`` in ``lineno``, with in ``reason``
    the first rule of the schema the row breaks, column by column (null if none), worded as ``REQUESTS.validate``."""
    columns = [c for c in REQUESTS.columns if c.name in frame.columns and c.name in REQUESTS.polars]
    unparsed, casts, rules = [], [], []
    for column in columns:
        name, target, dtype = column.name, REQUESTS.polars[column.name], frame.schema[column.name]
        value, lost = _typed(name, target, dtype)
        unparsed.append(pl.when(lost).then(_message(name, _TYPE_NAMES[target], pl.col(name), dtype)).alias(f"_{name}"))
        casts.append(value.alias(name))
        typed = pl.col(name)
        rules.append((pl.col(f"_{name}").is_not_null(), pl.col(f"_{name}")))
        if not column.nullable:
            rules.append((typed.is_null(), _message(name, "a value (not null)", typed, target)))
        if target == pl.Float64:
            finite = typed.is_null() | typed.is_finite()
            rules.append((~finite, _message(name, "a finite number", typed, target)))
        if column.check is not None:
            keeps = typed.is_null() | column.check.fill_null(False)
            rules.append((~keeps, _message(name, column.expect, typed, target)))
    return (
        frame.with_row_index("lineno", offset=first)
        .with_columns(pl.col("lineno").cast(pl.Int64), *unparsed)
        .with_columns(casts)
        .with_columns(first_reason(rules).alias("reason"))
        .drop(f"_{c.name}" for c in columns)
    )


def _message(name: str, expect: str, value: pl.Expr, dtype: DType) -> pl.Expr:
    """'name: expected ..., got value', the value quoted if text, 'null' if missing."""
    shown = pl.format("'{}'", value) if dtype == pl.String else value.cast(pl.String)
    return pl.format(f"{name}: expected {expect}, got {{}}", shown.fill_null("null"))


def _read(path: Path, class_by: str, errors: str, report: SkipReport) -> pl.DataFrame:
    """The requests table of a CSV or Parquet file; its rows must keep the ops schema's rules.

    A bad row raises (or, with ``errors="skip"``, is left out) naming its CSV line or Parquet row.
    """
    frame = _read_table(path)
    try:
        return REQUESTS.validate(frame, source=str(path))
    except InputError:
        if not set(REQUESTS.required) <= set(frame.columns):
            raise  # missing columns: no row to blame
    parquet = path.suffix == ".parquet"
    checked = _with_reasons(frame, 0 if parquet else _FIRST_CSV_LINE)
    good = split_bad(path, checked, errors, report, "row" if parquet else "line").drop("lineno")
    return REQUESTS.validate(good, source=str(path))


def _sniff(head: bytes) -> bool:
    fields = first_fields(head)
    return "job_id" in fields and "op" in fields


INGESTER = Ingester(
    "ops",
    "requests table (CSV or Parquet)",
    _read,
    class_by=("device",),
    suffixes=(".parquet",),
    sniff=_sniff,
)
