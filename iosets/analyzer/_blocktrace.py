"""Block-trace ingesters: blkparse text, MSR Cambridge CSV, SPC (UMass) CSV and ops tables.

Every reader returns the ops interchange table of DESIGN.md. Parsing is vectorised with polars:
CSV formats are read by ``pl.read_csv`` with an explicit schema and validated column-wise; only when
that fast path fails are the raw lines split and checked, to name the first bad line (or, with
``errors="skip"``, every bad line).
"""

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from .._validation import check_choice
from ..errors import InputError
from ._ops import OPS_SCHEMA, read_ops

__all__ = ["SkipReport", "read_blocktrace"]

FORMATS = ("auto", "blkparse", "msr", "spc", "ops")
CLASS_BY = {
    "blkparse": ("device", "process"),
    "msr": ("device", "host"),
    "spc": ("device", "asu"),
    "ops": ("device",),
}
SECTOR = 512
FILETIME_TICKS = 10_000_000  # 100 ns ticks per second
OUT_COLUMNS = list(OPS_SCHEMA)


@dataclass
class SkipReport:
    """Malformed lines that ``errors="skip"`` left out: 1-based line numbers and messages."""

    path: str
    lines: list[int] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    @property
    def n_skipped(self) -> int:
        """Number of skipped lines."""
        return len(self.lines)


def read_blocktrace(
    path, *, format: str = "auto", class_by: str = "device", errors: str = "raise", return_report: bool = False
) -> pl.DataFrame | tuple[pl.DataFrame, SkipReport]:
    """Read a block trace into the ops table (one row per completed request).

    Parameters
    ----------
    path : str or Path
        The trace file.
    format : {'auto', 'blkparse', 'msr', 'spc', 'ops'}, default='auto'
        'blkparse': blkparse default text output (completions ``C``; issue time from the
        matching ``Q``, else ``D``). 'msr': MSR Cambridge CSV (filetime stamps, bytes, response
        time in 100 ns ticks). 'spc': SPC/UMass CSV (ASU, LBA in 512-byte blocks, size in bytes,
        r/w, seconds). 'ops': an ops table (CSV or Parquet). 'auto' sniffs the first line.
    class_by : {'device', 'process', 'host', 'asu'}, default='device'
        What becomes ``job_id``: the device ('8,0'; MSR 'host_disk'; SPC ASU), the blkparse
        process ('name:pid' of the queueing process), the MSR host or the SPC ASU. 'ops'
        tables keep their own ``job_id`` and accept only 'device'.
    errors : {'raise', 'skip'}, default='raise'
        'raise': the first malformed line raises ``InputError`` naming the file and line.
        'skip': malformed lines are left out and a warning says how many.
    return_report : bool, default=False
        Also return the :class:`SkipReport` of the lines left out (empty with 'raise').

    Returns
    -------
    pl.DataFrame, or (pl.DataFrame, SkipReport) with ``return_report``
        Columns ``job_id`` str, ``rank`` int (device id: disk number, ASU, or the Linux dev_t
        ``major << 20 | minor``), ``op`` 'read'|'write', ``offset`` and ``size`` in bytes,
        ``start`` and ``end`` in seconds since the trace's first request (``end`` null for SPC),
        ``file`` (null). Sorted by ``start``. blkparse: ``start`` is the request's ``Q`` (else
        ``D``) time, or its completion time when the trace holds neither. Ops tables keep their
        stored times and columns.

    Examples
    --------
    >>> from importlib import resources
    >>> path = resources.files("iosets.datasets.data") / "sample.spc.csv"
    >>> read_blocktrace(path).columns
    ['job_id', 'rank', 'op', 'offset', 'size', 'start', 'end', 'file']
    """
    check_choice(format, "format", FORMATS)
    check_choice(class_by, "class_by", ("device", "process", "host", "asu"))
    check_choice(errors, "errors", ("raise", "skip"))
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    fmt = sniff_format(path) if format == "auto" else format
    if class_by not in CLASS_BY[fmt]:
        raise InputError(
            f"class_by={class_by!r} does not apply to format {fmt!r}; expected one of {', '.join(CLASS_BY[fmt])}"
        )
    report = SkipReport(str(path))
    reader = {"blkparse": _read_blkparse, "msr": _read_msr, "spc": _read_spc, "ops": _read_ops}
    frame = reader[fmt](path, class_by, errors, report)
    if report.n_skipped:
        warnings.warn(
            f"{path}: skipped {report.n_skipped} malformed lines; first: {report.messages[0]}",
            stacklevel=2,
        )
    return (frame, report) if return_report else frame


# ---------------------------------------------------------------------------------------- sniffing

_BLK_HEAD = (
    r"^\s*(?P<maj>\d+),(?P<min>\d+)\s+\d+\s+\d+\s+(?P<time>\d+\.\d+)\s+"
    r"(?P<pid>\d+)\s+(?P<act>[A-Za-z]{1,2})\s+(?P<rwbs>\S+)(?P<rest>\s.*)?$"
)
_BLK_CHECK = r"^\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d+\s+\d+\s+[A-Za-z]{1,2}\s+\S"
_BLK_IO = r"^\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d+\s+\d+\s+[CDQ]\s"
_BLK_DATA = r"^(?P<sector>\d+) \+ (?P<nsec>\d+)(?: \(\s*\d+\))? \[(?P<proc>.*)\]\s*$"


def sniff_format(path: Path) -> str:
    """Guess a trace's format from its extension and first non-blank line."""
    if path.suffix == ".parquet":
        return "ops"
    with open(path, "rb") as fh:
        head = fh.read(4096).decode("utf-8", errors="replace")
    first = next((ln.strip() for ln in head.splitlines() if ln.strip()), "")
    fields = [f.strip().lower() for f in first.split(",")]
    if pl.Series([first]).str.contains(_BLK_CHECK).item():
        return "blkparse"
    if "job_id" in fields and "op" in fields:
        return "ops"
    msr_row = len(fields) == 7 and fields[3] in ("read", "write")
    if fields[:2] == ["timestamp", "hostname"] or msr_row:
        return "msr"
    if len(fields) >= 5 and fields[3] in ("r", "w"):
        return "spc"
    raise InputError(
        f"{path}: cannot tell the trace format from its first line {first[:80]!r}; "
        "pass format='blkparse'|'msr'|'spc'|'ops'"
    )


# ------------------------------------------------------------------------------- shared helpers


def _lines(path: Path) -> pl.DataFrame:
    """The file's lines with their 1-based numbers (blank lines are null); no Python loop."""
    try:  # one column with a separator that text lines never hold: the parallel CSV reader
        frame = pl.read_csv(
            path,
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


def _got(col: str) -> pl.Expr:
    return pl.col(col).fill_null("").str.slice(0, 60)


def _check(raw: pl.DataFrame, specs) -> pl.DataFrame:
    """Type the string columns of ``raw`` per ``specs``; add ``reason`` (null when the row is good).

    ``specs`` is a sequence of ``(column, kind, arg)``: kind 'uint' (integer >= 0), 'float'
    (finite >= 0), 'str' (non-empty), 'op' (``arg`` maps lowercase values to 'read'/'write').
    """
    typed, reasons = [], []
    for name, kind, arg in specs:
        col = pl.col(name).str.strip_chars()
        if kind == "uint":
            value = col.cast(pl.Int64, strict=False)
            bad = value.is_null() | (value < 0)
            what = f"expected an integer >= 0 {name}"
        elif kind == "float":
            value = col.cast(pl.Float64, strict=False)
            bad = value.is_null() | ~value.is_finite() | (value < 0)
            what = f"expected a number >= 0 {name}"
        elif kind == "str":
            value = col
            bad = value.is_null() | (value == "")
            what = f"expected a non-empty {name}"
        else:
            value = col.str.to_lowercase().replace_strict(arg, default=None, return_dtype=pl.String)
            bad = value.is_null()
            what = "expected " + "|".join(f"'{k}'" for k in arg)
        typed.append(value.alias(name))
        reasons.append((bad, pl.format(f"{what}, got '{{}}'", _got(name))))
    chain = pl.when(reasons[0][0]).then(reasons[0][1])
    for bad, msg in reasons[1:]:
        chain = chain.when(bad).then(msg)
    return raw.with_columns(*typed, chain.otherwise(None).alias("reason"))


def _split_bad(path: Path, checked: pl.DataFrame, errors: str, report: SkipReport, where: str = "line") -> pl.DataFrame:
    """Raise on the first row with a ``reason`` or, when skipping, record and drop the bad rows."""
    bad = checked.filter(pl.col("reason").is_not_null()).sort("lineno")
    if bad.height:
        messages = [f"{path} {where} {n}: {r}" for n, r in zip(bad["lineno"], bad["reason"])]
        if errors == "raise":
            raise InputError(messages[0])
        report.lines.extend(bad["lineno"].to_list())
        report.messages.extend(messages)
    return checked.filter(pl.col("reason").is_null()).drop("reason")


def _csv_slow(path: Path, names, specs, *, header: bool) -> pl.DataFrame:
    """Split the raw lines on commas and check every field, keeping line numbers."""
    lines = _lines(path).filter(pl.col("line").is_not_null())
    if header:
        lines = lines.slice(1)
    parts = pl.col("line").str.split(",")
    raw = lines.select(
        "lineno",
        "line",
        parts.list.len().alias("_n"),
        *[parts.list.get(i, null_on_oob=True).alias(n) for i, n in enumerate(names)],
    )
    checked = _check(raw, specs)
    count = pl.format(f"expected {len(names)} comma-separated fields, got {{}}", pl.col("_n"))
    return checked.with_columns(
        pl.when(pl.col("_n") != len(names)).then(count).otherwise(pl.col("reason")).alias("reason")
    ).drop("_n", "line")


def _read_csv(path: Path, names, specs, schema, *, header: bool, errors: str, report):
    """Fast typed read; on any failure fall back to the line-by-line check (vectorised)."""
    try:
        frame = pl.read_csv(path, has_header=header, schema=schema, quote_char=None)
        ok, typed = [], []
        for name, kind, arg in specs:
            col = pl.col(name)
            if kind == "uint":
                ok.append(col.is_not_null() & (col >= 0))
            elif kind == "float":
                ok.append(col.is_not_null() & col.is_finite() & (col >= 0))
            elif kind == "str":
                ok.append(col.is_not_null() & (col.str.strip_chars() != ""))
                typed.append(col.str.strip_chars())
            else:
                low = col.str.strip_chars().str.to_lowercase()
                ok.append(low.is_in(list(arg)))
                typed.append(low.replace_strict(arg, return_dtype=pl.String).alias(name))
        if frame.select(pl.all_horizontal(ok).all()).item() is not False:
            return frame.with_columns(typed)
    except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError):
        pass
    checked = _csv_slow(path, names, specs, header=header)
    return _split_bad(path, checked, errors, report).drop("lineno")


def _finish(frame: pl.DataFrame) -> pl.DataFrame:
    return (
        frame.with_columns(pl.lit(None, pl.String).alias("file"))
        .select(pl.col(c).cast(t) for c, t in OPS_SCHEMA.items())
        .sort("start", maintain_order=True)
    )


def _first_line(path: Path) -> str:
    with open(path, "rb") as fh:
        for raw in fh:
            if raw.strip():
                return raw.decode("utf-8", errors="replace").strip()
    return ""


# ------------------------------------------------------------------------------------------ MSR

_MSR_NAMES = ["Timestamp", "Hostname", "DiskNumber", "Type", "Offset", "Size", "ResponseTime"]
_MSR_SPECS = [
    ("Timestamp", "uint", None),
    ("Hostname", "str", None),
    ("DiskNumber", "uint", None),
    ("Type", "op", {"read": "read", "write": "write"}),
    ("Offset", "uint", None),
    ("Size", "uint", None),
    ("ResponseTime", "uint", None),
]
_MSR_SCHEMA = {n: pl.String if n in ("Hostname", "Type") else pl.Int64 for n in _MSR_NAMES}


def _read_msr(path: Path, class_by: str, errors: str, report: SkipReport) -> pl.DataFrame:
    header = _first_line(path).lower().startswith("timestamp")
    frame = _read_csv(path, _MSR_NAMES, _MSR_SPECS, _MSR_SCHEMA, header=header, errors=errors, report=report)
    t0 = frame["Timestamp"].min() if frame.height else 0
    since = pl.col("Timestamp") - t0
    job = pl.col("Hostname") if class_by == "host" else pl.format("{}_{}", pl.col("Hostname"), pl.col("DiskNumber"))
    return _finish(
        frame.select(
            job.alias("job_id"),
            pl.col("DiskNumber").alias("rank"),
            pl.col("Type").alias("op"),
            pl.col("Offset").alias("offset"),
            pl.col("Size").alias("size"),
            (since.cast(pl.Float64) / FILETIME_TICKS).alias("start"),
            ((since + pl.col("ResponseTime")).cast(pl.Float64) / FILETIME_TICKS).alias("end"),
        )
    )


# ------------------------------------------------------------------------------------------ SPC

_SPC_NAMES = ["ASU", "LBA", "Size", "Opcode", "Timestamp"]
_SPC_SPECS = [
    ("ASU", "uint", None),
    ("LBA", "uint", None),
    ("Size", "uint", None),
    ("Opcode", "op", {"r": "read", "w": "write"}),
    ("Timestamp", "float", None),
]
_SPC_SCHEMA = dict(zip(_SPC_NAMES, [pl.Int64, pl.Int64, pl.Int64, pl.String, pl.Float64]))


def _read_spc(path: Path, class_by: str, errors: str, report: SkipReport) -> pl.DataFrame:
    header = _first_line(path).lower().startswith("asu")
    frame = _read_csv(path, _SPC_NAMES, _SPC_SPECS, _SPC_SCHEMA, header=header, errors=errors, report=report)
    t0 = frame["Timestamp"].min() if frame.height else 0.0
    return _finish(
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


# ------------------------------------------------------------------------------------------ ops

_OPS_SPECS = [
    ("job_id", "str", None),
    ("rank", "uint", None),
    ("op", "op", {"read": "read", "write": "write"}),
    ("offset", "uint", None),
    ("size", "uint", None),
    ("start", "float", None),
]


def _read_ops(path: Path, class_by: str, errors: str, report: SkipReport) -> pl.DataFrame:
    try:
        frame = read_ops(path)
        ok = frame.select(
            pl.all_horizontal(pl.col(c).is_not_null() for c, _, _ in _OPS_SPECS)
            & pl.col("op").is_in(["read", "write"])
            & (pl.col("rank") >= 0)
            & (pl.col("offset") >= 0)
            & (pl.col("size") >= 0)
            & (pl.col("start") >= 0)
        ).to_series()
        if ok.all():
            return frame
    except InputError as exc:
        if path.suffix == ".parquet" or "missing columns" in str(exc):
            raise
    if path.suffix == ".parquet":
        raw = pl.read_parquet(path).with_row_index("lineno", offset=1)
        raw = raw.with_columns(pl.col(c).cast(pl.String) for c, _, _ in _OPS_SPECS)
        where = "row"
    else:
        raw = pl.read_csv(path, infer_schema=False).with_row_index("lineno", offset=2)
        where = "line"
    raw = raw.with_columns(pl.col("lineno").cast(pl.Int64))
    checked = _check(raw, _OPS_SPECS)
    if "end" in raw.columns and raw.schema["end"] == pl.String:
        end = pl.col("end").str.strip_chars()
        bad_end = end.is_not_null() & (end != "") & end.cast(pl.Float64, strict=False).is_null()
        msg = pl.format("expected a number or nothing for end, got '{}'", _got("end"))
        checked = checked.with_columns(
            pl.when(pl.col("reason").is_null() & bad_end).then(msg).otherwise("reason").alias("reason")
        )
    good = _split_bad(path, checked, errors, report, where)
    types = {c: t for c, t in OPS_SCHEMA.items() if c in good.columns}
    good = good.drop("lineno").cast(types, strict=False)
    if "end" not in good.columns:
        good = good.with_columns(pl.lit(None, pl.Float64).alias("end"))
    return good


# ------------------------------------------------------------------------------------- blkparse


def _read_blkparse(path: Path, class_by: str, errors: str, report: SkipReport) -> pl.DataFrame:
    lines = _lines(path)
    summary = lines.filter(pl.col("line").str.contains(r"^(CPU\d+|Total) \("))["lineno"]
    if summary.len():
        lines = lines.filter(pl.col("lineno") < summary.min())
    lines = lines.filter(pl.col("line").is_not_null())
    # Cheap capture-free checks over every line; captures only on the C/D/Q lines.
    event = "expected a blkparse event 'maj,min cpu seq seconds pid action rwbs ...', got '{}'"
    head_ok = pl.col("line").str.contains(_BLK_CHECK)
    bad_head = lines.filter(~head_ok).select("lineno", pl.format(event, _got("line")).alias("reason"))
    ev = (
        lines.lazy()
        .filter(head_ok & pl.col("line").str.contains(_BLK_IO))
        .with_columns(pl.col("line").str.extract_groups(_BLK_HEAD).alias("h"))
        .unnest("h")
        .with_columns(pl.col("rest").str.strip_chars())
        .with_columns(pl.col("rest").str.extract_groups(_BLK_DATA).alias("d"))
        .unnest("d")
        .collect(engine="streaming")  # morsel-parallel regex work
    )
    is_io = pl.col("act").is_in(["C", "D", "Q"])
    data = "expected 'sector + count [process]' after '{} {}', got '{}'"
    reason = (
        pl.when(pl.col("rest").str.contains(r"^\d+ \+") & pl.col("sector").is_null())
        .then(pl.format(data, "act", "rwbs", _got("rest")))
        .otherwise(None)
    )
    checked = pl.concat([ev.with_columns(reason.alias("reason")), bad_head], how="diagonal")
    ev = _split_bad(path, checked, errors, report)
    op = (
        pl.when(pl.col("rwbs").str.contains("W"))
        .then(pl.lit("write"))
        .when(pl.col("rwbs").str.contains("R"))
        .then(pl.lit("read"))
        .otherwise(None)
    )
    io = (
        ev.filter(is_io & pl.col("sector").is_not_null())
        .select(
            pl.col("maj").cast(pl.Int64),
            pl.col("min").cast(pl.Int64),
            pl.col("time").cast(pl.Float64),
            pl.col("pid").cast(pl.Int64),
            "act",
            op.alias("op"),
            pl.col("sector").cast(pl.Int64),
            pl.col("nsec").cast(pl.Int64),
            "proc",
            "lineno",
        )
        .filter(pl.col("op").is_not_null())
    )
    key = ["maj", "min", "sector", "op"]
    done = (
        io.filter((pl.col("act") == "C") & (pl.col("nsec") > 0))
        .sort("time", "lineno")
        .with_columns(pl.col("time").shift(1).over(key).alias("prev"))
    )
    for act in ("Q", "D"):
        issued = (
            io.filter(pl.col("act") == act)
            .select(
                *key,
                pl.col("time").alias(f"{act}_t"),
                pl.col("pid").alias(f"{act}_pid"),
                pl.col("proc").alias(f"{act}_proc"),
            )
            .sort(f"{act}_t")
        )
        done = done.join_asof(
            issued,
            left_on="time",
            right_on=f"{act}_t",
            by=key,
            strategy="backward",
            check_sortedness=False,
        )
        stale = pl.col("prev").is_not_null() & (pl.col(f"{act}_t") <= pl.col("prev"))
        done = done.with_columns(
            pl.when(stale).then(None).otherwise(pl.col(c)).alias(c) for c in (f"{act}_t", f"{act}_pid", f"{act}_proc")
        )
    start = pl.coalesce("Q_t", "D_t", "time")
    t0 = done.select(start.min()).item() if done.height else 0.0
    if class_by == "process":
        pid = pl.coalesce("Q_pid", "D_pid")
        name = pl.coalesce("Q_proc", "D_proc")
        job = pl.when(pid.is_null()).then(pl.lit("unknown"))
        job = job.otherwise(pl.format("{}:{}", name, pid))
    else:
        job = pl.format("{},{}", "maj", "min")
    return _finish(
        done.select(
            job.alias("job_id"),
            (pl.col("maj") * (1 << 20) + pl.col("min")).alias("rank"),
            "op",
            (pl.col("sector") * SECTOR).alias("offset"),
            (pl.col("nsec") * SECTOR).alias("size"),
            (start - t0).alias("start"),
            (pl.col("time") - t0).alias("end"),
        )
    )
