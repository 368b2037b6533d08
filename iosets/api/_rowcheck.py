"""`check_job`: the jobs table's rules (:data:`iosets.schemas.JOBS`) on one posted row, in Python.

``JOBS.validate`` builds a Polars frame and evaluates every rule as an expression: 3 to 10 ms of the
service's CPU per post, more than the rest of the post together. The wire models
(:mod:`iosets.api._models`) have typed each value already (integers within int64, finite numbers,
text), so what is left are the JOBS rules themselves: a value where one is required, a finite number,
and each column's ``check``. :data:`CHECKS` restates each ``check`` in Python; ``tests/api/test_rowcheck.py``
holds every rule equal to ``JOBS.validate`` on its boundary values and fails when a JOBS column gains a
``check`` missing here. The messages are ``JOBS.validate``'s, word for word.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import polars as pl

from ..errors import InputError
from ..schemas import JOBS, NOT_PERIODIC_CODES, Column, _show

CHECKS: dict[str, Callable[[Any, dict[str, Any]], bool]] = {
    "nprocs": lambda value, row: value >= 1,
    "nodes": lambda value, row: value >= 1,
    "end": lambda value, row: row.get("start") is None or value >= row["start"],
    "runtime": lambda value, row: value >= 0,
    "bytes_read": lambda value, row: value >= 0,
    "bytes_written": lambda value, row: value >= 0,
    "io_time": lambda value, row: value >= 0,
    "reads": lambda value, row: value >= 0,
    "writes": lambda value, row: value >= 0,
    "w_iter": lambda value, row: value > 0,
    "w_iter_confidence": lambda value, row: 0 <= value <= 1,
    "alpha_io": lambda value, row: 0 <= value <= 1,
    "n_phases": lambda value, row: value >= 0,
    "not_periodic": lambda value, row: value in NOT_PERIODIC_CODES,
    "resolution": lambda value, row: value >= 0,
    "n_logs": lambda value, row: value >= 1,
}
"""Column -> its JOBS ``check`` on a non-null value (``row``: the whole row, for ``end >= start``)."""


def broken_rule(column: Column, value: Any, row: dict[str, Any]) -> str | None:
    """What ``column``'s JOBS rule expects when ``value`` (in ``row``) breaks it; None when it holds."""
    if value is None:
        return None if column.nullable else "a value (not null)"
    if column.dtype == pl.Float64 and not math.isfinite(value):
        return "a finite number"
    if column.check is not None and not CHECKS[column.name](value, row):
        return column.expect
    return None


def check_job(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` (typed by a wire model) with every JOBS column, missing ones null; InputError at the first broken rule.

    The rules and the message are those of ``JOBS.validate`` on a one-row frame, source ``job <job_id>``.
    """
    row = {name: row.get(name) for name in JOBS.names}
    for column in JOBS.columns:
        expect = broken_rule(column, row[column.name], row)
        if expect is not None:
            raise InputError(
                f"job {row['job_id']!r} row 0: {column.name}: expected {expect}, got {_show(row[column.name])}"
            )
    return row


def check_values(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (some JOBS columns, typed by a wire model, no row around them) if each keeps its column's rule.

    InputError ``column: expected ..., got ...`` at the first broken one, in ``values``' order: the
    check of a value sent beside a row the service has yet to build (an upload's ``nodes``).
    """
    for name, value in values.items():
        expect = broken_rule(JOBS[name], value, values)
        if expect is not None:
            raise InputError(f"{name}: expected {expect}, got {_show(value)}")
    return values
