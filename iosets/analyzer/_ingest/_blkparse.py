"""blkparse default text output: one request per completion ``C``, issued at its ``Q`` (else ``D``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ._base import Ingester, SkipReport
from ._text import MAX_SECTOR, SECTOR, finish, first_line, first_reason, numbered_lines, shown, split_bad

_MAJOR, _MINOR = 1 << 12, 1 << 20  # Linux dev_t: 12-bit major, 20-bit minor (rank = major << 20 | minor)

_HEAD = (
    r"^\s*(?P<maj>\d+),(?P<min>\d+)\s+\d+\s+\d+\s+(?P<time>\d+\.\d+)\s+"
    r"(?P<pid>\d+)\s+(?P<act>[A-Za-z]{1,2})\s+(?P<rwbs>\S+)(?P<rest>\s.*)?$"
)
_EVENT = r"^\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d+\s+\d+\s+[A-Za-z]{1,2}\s+\S"
_IO = r"^\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d+\s+\d+\s+[CDQ]\s"
_DATA = r"^(?P<sector>\d+) \+ (?P<nsec>\d+)(?: \(\s*\d+\))? \[(?P<proc>.*)\]\s*$"


def _events(path: Path, errors: str, report: SkipReport) -> pl.DataFrame:
    """The C, D and Q events with a 'sector + count [process]' payload, up to the summary."""
    lines = numbered_lines(path)
    summary = lines.filter(pl.col("line").str.contains(r"^(CPU\d+|Total) \("))["lineno"]
    if summary.len():
        lines = lines.filter(pl.col("lineno") < summary.min())
    lines = lines.filter(pl.col("line").is_not_null())
    # Cheap capture-free checks over every line; captures only on the C/D/Q lines.
    event = "expected a blkparse event 'maj,min cpu seq seconds pid action rwbs ...', got '{}'"
    head_ok = pl.col("line").str.contains(_EVENT)
    bad_head = lines.filter(~head_ok).select("lineno", pl.format(event, shown("line")).alias("reason"))
    ev = (
        lines.lazy()
        .filter(head_ok & pl.col("line").str.contains(_IO))
        .with_columns(pl.col("line").str.extract_groups(_HEAD).alias("h"))
        .unnest("h")
        .with_columns(pl.col("rest").str.strip_chars())
        .with_columns(pl.col("rest").str.extract_groups(_DATA).alias("d"))
        .unnest("d")
        .collect(engine="streaming")  # morsel-parallel regex work
    )
    checked = pl.concat([_typed(ev), bad_head], how="diagonal")
    ev = split_bad(path, checked, errors, report)
    op = (
        pl.when(pl.col("rwbs").str.contains("W"))
        .then(pl.lit("write"))
        .when(pl.col("rwbs").str.contains("R"))
        .then(pl.lit("read"))
        .otherwise(None)
    )
    return (
        ev.filter(pl.col("act").is_in(["C", "D", "Q"]) & pl.col("sector").is_not_null())
        .select("maj", "min", "time", "pid", "act", op.alias("op"), "sector", "nsec", "proc", "lineno")
        .filter(pl.col("op").is_not_null())
    )


def _typed(ev: pl.DataFrame) -> pl.DataFrame:
    """The C/D/Q events with numbers typed, and in ``reason`` why a line cannot be read (null if it can)."""
    as_int = {c: pl.col(c).cast(pl.Int64, strict=False) for c in ("maj", "min", "pid", "sector", "nsec")}
    time = pl.col("time").cast(pl.Float64, strict=False)
    has_data = pl.col("sector").is_not_null()
    rules = [
        (
            pl.col("rest").str.contains(r"^\d+ \+") & ~has_data,
            pl.format("expected 'sector + count [process]' after '{} {}', got '{}'", "act", "rwbs", shown("rest")),
        ),
        (
            as_int["maj"].is_null() | as_int["min"].is_null() | (as_int["maj"] >= _MAJOR) | (as_int["min"] >= _MINOR),
            pl.format(
                f"device '{{}},{{}}' is not a Linux device number (major < {_MAJOR}, minor < {_MINOR})", "maj", "min"
            ),
        ),
        (~time.is_finite(), pl.format("time {} is not a finite number of seconds", shown("time"))),
        (as_int["pid"].is_null(), pl.format("pid {} does not fit in 64 bits", shown("pid"))),
    ]
    for col, what in (("sector", "sector"), ("nsec", "sector count")):
        too_big = has_data & (as_int[col].is_null() | (as_int[col] > MAX_SECTOR))
        message = pl.format(f"{what} {{}} is too large: its bytes do not fit in 64 bits", shown(col))
        rules.append((too_big, message))
    return ev.with_columns(
        *(v.alias(c) for c, v in as_int.items()), time.alias("time"), first_reason(rules).alias("reason")
    )


def _read(path: Path, class_by: str, errors: str, report: SkipReport) -> pl.DataFrame:
    """Completions with their issue time and process; ``job_id`` is the device 'maj,min' or 'process:pid'."""
    io = _events(path, errors, report)
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
        job = pl.when(pid.is_null()).then(pl.lit("unknown")).otherwise(pl.format("{}:{}", name, pid))
    else:
        job = pl.format("{},{}", "maj", "min")
    return finish(
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


def _sniff(head: bytes) -> bool:
    return bool(pl.Series([first_line(head)]).str.contains(_EVENT).item())


INGESTER = Ingester(
    "blkparse",
    "blkparse text output (Linux blktrace)",
    _read,
    class_by=("device", "process"),
    sniff=_sniff,
)
