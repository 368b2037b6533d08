"""Vectorised line checks shared by the text ingesters: numbered lines, typed fields, bad-line reports.

CSV formats are read by ``pl.read_csv`` with an explicit schema and validated column-wise; only when
that fast path fails are the raw lines split and checked, to name the first bad line (or, with
``errors="skip"``, every bad line).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import polars as pl

from ...errors import InputError
from ...schemas import REQUESTS
from ._base import OPS_COLUMNS, SkipReport

Spec = tuple[str, str, dict[str, str] | None]
"""``(column, kind, arg)``: kind 'uint' (integer >= 0), 'sector' (a 512-byte block number whose byte
offset fits in 64 bits), 'float' (finite >= 0), 'str' (non-empty) or 'op' (``arg`` maps lowercase
values to 'read'/'write')."""

SECTOR = 512
MAX_SECTOR = (2**63 - 1) // SECTOR
"""The largest block number whose byte offset (x 512) fits in the requests table's int64."""


def first_line(head: bytes) -> str:
    """The first non-blank line of a file's first bytes, stripped."""
    text = head.decode("utf-8", errors="replace")
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def first_fields(head: bytes) -> list[str]:
    """The comma-separated fields of the first non-blank line, stripped and lowercase."""
    return [f.strip().lower() for f in first_line(head).split(",")]


def file_first_line(path: Path) -> str:
    """The first non-blank line of a file, stripped."""
    with open(path, "rb") as fh:
        for raw in fh:
            if raw.strip():
                return raw.decode("utf-8", errors="replace").strip()
    return ""


def csv_problem(path: Path) -> str | None:
    """Where a CSV file with a header line stops being readable, as 'line N: why'; None if nowhere.

    For messages only, once Polars has refused the file: bytes that are not UTF-8, a quote inside
    an unquoted field or one that never closes, a line with more or fewer fields than the header.
    """
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return f"line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x})"
    stray = _stray_quote(text)
    if stray is not None:
        return f"line {stray}: a quote inside an unquoted field"
    rows = csv.reader(io.StringIO(text, newline=""), strict=True)
    width = None
    try:
        for fields in rows:
            if not fields:
                continue
            if width is None:
                width = len(fields)
            elif len(fields) != width:
                return (
                    f"line {rows.line_num}: expected {width} comma-separated fields (as the header), got {len(fields)}"
                )
    except csv.Error as exc:
        return f"line {rows.line_num}: {exc}"
    return None


def _stray_quote(text: str) -> int | None:
    """The line of the first quote that neither opens a field nor sits in a quoted one (Polars refuses it)."""
    line, quoted, at_start, closed = 1, False, True, False
    for char in text:
        if quoted:
            quoted = char != '"'
            closed = not quoted
        elif char == '"':
            if not (at_start or closed):
                return line
            quoted, closed = True, False  # opens a field, or is the second quote of an escaped ""
        else:
            closed = False
        at_start = char in ",\n" or (at_start and char == "\r")
        line += char == "\n"
    return None


def numbered_lines(path: Path) -> pl.DataFrame:
    """The file's lines with their 1-based numbers (blank lines are null); no Python loop."""
    try:  # one column with a separator that text lines never hold: the parallel CSV reader
        frame = pl.read_csv(
            path,
            glob=False,  # a file name with brackets is a name, not a pattern
            has_header=False,
            separator="\x1f",
            quote_char=None,
            new_columns=["line"],
            schema_overrides=[pl.String],
        )
    except (pl.exceptions.PolarsError, UnicodeDecodeError):
        text = path.read_bytes().decode("utf-8", errors="replace")
        lines = pl.Series("line", [text]).str.split("\n").explode().str.strip_suffix("\r")
        frame = pl.DataFrame(lines)
        if text.endswith("\n"):
            frame = frame.head(frame.height - 1)
    frame = frame.with_columns(pl.when(pl.col("line").str.strip_chars() != "").then("line"))
    return frame.with_row_index("lineno", offset=1).with_columns(pl.col("lineno").cast(pl.Int64))


def shown(col: str) -> pl.Expr:
    """A field as quoted in messages: its first 60 characters."""
    return pl.col(col).fill_null("").str.slice(0, 60)


def check_fields(raw: pl.DataFrame, specs: list[Spec]) -> pl.DataFrame:
    """Type the string columns of ``raw`` per ``specs``; add ``reason`` (null when the row is good)."""
    typed, reasons = [], []
    for name, kind, arg in specs:
        col = pl.col(name).str.strip_chars()
        if kind in ("uint", "sector"):
            value = col.cast(pl.Int64, strict=False)
            bad = value.is_null() | (value < 0)
            what = f"expected an integer >= 0 {name}"
            if kind == "sector":
                too_big = f"expected {name} <= {MAX_SECTOR} (a 512-byte block whose byte offset fits in 64 bits)"
                reasons.append((~bad & (value > MAX_SECTOR), pl.format(f"{too_big}, got '{{}}'", shown(name))))
        elif kind == "float":
            value = col.cast(pl.Float64, strict=False)
            bad = value.is_null() | ~value.is_finite() | (value < 0)
            what = f"expected a number >= 0 {name}"
        elif kind == "str":
            value = col
            bad = value.is_null() | (value == "")
            what = f"expected a non-empty {name}"
        else:
            assert arg is not None
            value = col.str.to_lowercase().replace_strict(arg, default=None, return_dtype=pl.String)
            bad = value.is_null()
            what = "expected " + "|".join(f"'{k}'" for k in arg)
        typed.append(value.alias(name))
        reasons.append((bad, pl.format(f"{what}, got '{{}}'", shown(name))))
    return raw.with_columns(*typed, first_reason(reasons).alias("reason"))


def first_reason(rules: list[tuple[pl.Expr, pl.Expr]]) -> pl.Expr:
    """The message of the first ``(broken, message)`` rule a row breaks; null when it breaks none."""
    reason = pl.lit(None, pl.String)
    for broken, message in reversed(rules):
        reason = pl.when(broken).then(message).otherwise(reason)
    return reason


def split_bad(path: Path, checked: pl.DataFrame, errors: str, report: SkipReport, where: str = "line") -> pl.DataFrame:
    """Raise on the first row with a ``reason`` or, when skipping, record and drop the bad rows.

    ``checked`` numbers its rows in ``lineno``; the result keeps ``lineno`` and drops ``reason``.
    """
    bad = checked.filter(pl.col("reason").is_not_null()).sort("lineno")
    if bad.height:
        messages = [f"{path} {where} {n}: {r}" for n, r in zip(bad["lineno"], bad["reason"], strict=True)]
        if errors == "raise":
            raise InputError(messages[0])
        report.lines.extend(bad["lineno"].to_list())
        report.messages.extend(messages)
    return checked.filter(pl.col("reason").is_null()).drop("reason")


def _csv_slow(path: Path, names: list[str], specs: list[Spec], *, header: bool) -> pl.DataFrame:
    """Split the raw lines on commas and check every field, keeping line numbers."""
    lines = numbered_lines(path).filter(pl.col("line").is_not_null())
    if header:
        lines = lines.slice(1)
    parts = pl.col("line").str.split(",")
    raw = lines.select(
        "lineno",
        "line",
        parts.list.len().alias("_n"),
        *[parts.list.get(i, null_on_oob=True).alias(n) for i, n in enumerate(names)],
    )
    checked = check_fields(raw, specs)
    count = pl.format(f"expected {len(names)} comma-separated fields, got {{}}", pl.col("_n"))
    return checked.with_columns(
        pl.when(pl.col("_n") != len(names)).then(count).otherwise(pl.col("reason")).alias("reason")
    ).drop("_n", "line")


def read_checked_csv(
    path: Path,
    names: list[str],
    specs: list[Spec],
    schema: dict[str, type[pl.DataType]],
    *,
    header: bool,
    errors: str,
    report: SkipReport,
) -> pl.DataFrame:
    """A headerless (or one-header-line) CSV typed per ``specs``: fast typed read, else the line-by-line check."""
    try:
        frame = pl.read_csv(path, has_header=header, schema=schema, quote_char=None, glob=False)
        ok, typed = [], []
        for name, kind, arg in specs:
            col = pl.col(name)
            if kind == "uint":
                ok.append(col.is_not_null() & (col >= 0))
            elif kind == "sector":
                ok.append(col.is_not_null() & (col >= 0) & (col <= MAX_SECTOR))
            elif kind == "float":
                ok.append(col.is_not_null() & col.is_finite() & (col >= 0))
            elif kind == "str":
                ok.append(col.is_not_null() & (col.str.strip_chars() != ""))
                typed.append(col.str.strip_chars())
            else:
                assert arg is not None
                low = col.str.strip_chars().str.to_lowercase()
                ok.append(low.is_in(list(arg)))
                typed.append(low.replace_strict(arg, return_dtype=pl.String).alias(name))
        if frame.select(pl.all_horizontal(ok).all()).item() is not False:
            return frame.with_columns(typed)
    except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError):
        pass
    return split_bad(path, _csv_slow(path, names, specs, header=header), errors, report).drop("lineno")


def finish(frame: pl.DataFrame) -> pl.DataFrame:
    """The ops columns of a block trace in schema order (``file`` null), sorted by ``start``."""
    return (
        frame.with_columns(pl.lit(None, pl.String).alias("file"))
        .select(pl.col(c).cast(REQUESTS.polars[c]) for c in OPS_COLUMNS)
        .sort("start", maintain_order=True)
    )
