"""The report's one number formatter: bytes, durations, dates, rates, ratios, shares and counts, with units.

Every table cell and every sentence of a report shows a number through this module. A table names a column's
kind in ``Table.formats`` (``{"bytes": "bytes", "start": "date"}``); :func:`format_value` turns a value of that
kind into its text. A kind is one of :data:`KINDS`; anything else is a Python format spec (``"{:.3f}"``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeGuard

EPOCH_FLOOR = 1e9
"""Dates below this (2001-09-09) are seconds since a trace's start, not since the epoch."""

_BYTE_UNITS = ("B", "kB", "MB", "GB", "TB", "PB", "EB")


def _finite(value: Any) -> TypeGuard[float]:
    """True for a number that is neither None, NaN nor infinite."""
    return value is not None and not isinstance(value, bool) and math.isfinite(value)


def _three_digits(value: float, unit: str) -> str:
    """``value`` with three significant digits and ``unit`` (``1.50 GB``, ``42.0 s``, ``250 ms``)."""
    return f"{value:#.3g} {unit}".replace(". ", " ")


def format_bytes(value: float | None) -> str:
    """A byte count in decimal units with three significant digits; ``-`` for None.

    Examples
    --------
    >>> format_bytes(1.5e9), format_bytes(512), format_bytes(None)
    ('1.50 GB', '512 B', '-')
    """
    if not _finite(value):
        return "-"
    power = 0
    while abs(value) >= 999.5 and power < len(_BYTE_UNITS) - 1:
        value /= 1000
        power += 1
    if power == 0:
        return f"{value:.0f} B"
    return _three_digits(value, _BYTE_UNITS[power])


def format_rate(value: float | None) -> str:
    """A bandwidth in bytes per second, decimal units, three significant digits.

    Examples
    --------
    >>> format_rate(2.5e9), format_rate(100e6), format_rate(None)
    ('2.50 GB/s', '100 MB/s', '-')
    """
    return "-" if not _finite(value) else f"{format_bytes(value)}/s"


def format_seconds(value: float | None) -> str:
    """A duration in the largest unit that keeps it >= 1 (us, ms, s, min, h, d), three significant digits.

    Examples
    --------
    >>> format_seconds(0.25), format_seconds(42), format_seconds(5400), format_seconds(3 * 86400)
    ('250 ms', '42.0 s', '1.50 h', '3.00 d')
    >>> format_seconds(0), format_seconds(2e-5), format_seconds(2290 * 86400)
    ('0 s', '20.0 us', '2,290 d')
    """
    if not _finite(value):
        return "-"
    if value == 0:
        return "0 s"
    if abs(value) >= 999.5 * 86400.0:  # no exponent: whole days with thousands separators
        return f"{value / 86400.0:,.0f} d"
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3)):
        if abs(value) >= size:
            return _three_digits(value / size, unit)
    return _three_digits(value * 1e6, "us")


def epoch_date(seconds: float, fmt: str = "%Y-%m-%d %H:%M") -> str | None:
    """``seconds`` since the epoch as a UTC date; None below :data:`EPOCH_FLOOR` or past what a calendar holds."""
    if not seconds >= EPOCH_FLOOR:
        return None
    try:
        return datetime.fromtimestamp(seconds, UTC).strftime(fmt)
    except (OverflowError, OSError, ValueError):  # past year 9999
        return None


def format_date(seconds: float | None) -> str:
    """A date since the epoch as ``YYYY-MM-DD HH:MM`` (UTC), else seconds (since a trace's start below
    :data:`EPOCH_FLOOR`, or too far for a calendar), ``-`` for none.

    Examples
    --------
    >>> format_date(1.7e9), format_date(37.3633), format_date(4313.63), format_date(None)
    ('2023-11-14 22:13', '37.36 s', '4,314 s', '-')
    """
    if seconds is None:
        return "-"
    return epoch_date(seconds) or f"{format_number(seconds)} s"


def format_number(value: float | None) -> str:
    """A plain number: integers with thousands separators, others with four significant digits (no trailing
    zeros) and no exponent between 1e-3 and 1e15.

    Examples
    --------
    >>> format_number(304689001200), format_number(8.64647e10), format_number(-20.5448), format_number(0.1)
    ('304,689,001,200', '86,464,700,000', '-20.54', '0.1')
    """
    if not _finite(value):
        return "-"
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e15:
        digits = max(0, 3 - math.floor(math.log10(magnitude)))
        text = f"{value:,.{digits}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{value:.4g}"


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def format_priority(value: float | None) -> str:
    """A priority: a power of ten (IO-SETS's 10^-set) beyond 10^+-3 as ``10`` with its exponent raised, else a
    plain number.

    Examples
    --------
    >>> format_priority(1e-6), format_priority(1e5), format_priority(0.01), format_priority(1.0), format_priority(0.3)
    ('10⁻⁶', '10⁵', '0.01', '1', '0.3')
    """
    if not _finite(value):
        return "-"
    if value > 0:
        exponent = round(math.log10(value))
        if abs(exponent) > 3 and math.isclose(value, 10.0**exponent, rel_tol=1e-9):
            return "10" + str(exponent).translate(_SUPERSCRIPT)
    return format_number(value)


def format_ratio(value: float | None) -> str:
    """A ratio near 1 (a stretch, a slowdown, a replayed/recorded runtime) with three decimals.

    Examples
    --------
    >>> format_ratio(1.2124), format_ratio(68.0), format_ratio(None)
    ('1.212', '68.000', '-')
    """
    return "-" if not _finite(value) else f"{value:.3f}"


def format_share(value: float | None) -> str:
    """A fraction of a whole (0-1) as a percentage with one decimal.

    Examples
    --------
    >>> format_share(0.1234), format_share(1.0), format_share(None)
    ('12.3 %', '100.0 %', '-')
    """
    return "-" if not _finite(value) else f"{100 * value:.1f} %"


def format_change(value: float | None) -> str:
    """A relative change (0.05: 5 % more) as a signed percentage with one decimal.

    Examples
    --------
    >>> format_change(0.0523), format_change(-0.2), format_change(0.0)
    ('+5.2 %', '-20.0 %', '0.0 %')
    """
    if not _finite(value):
        return "-"
    return "0.0 %" if round(100 * value, 1) == 0 else f"{100 * value:+.1f} %"


def format_count(value: float | None) -> str:
    """A count with thousands separators.

    Examples
    --------
    >>> format_count(1234567), format_count(None)
    ('1,234,567', '-')
    """
    return "-" if not _finite(value) else f"{round(value):,}"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` (thousands separated) and ``noun``, plural unless ``n`` is 1.

    Examples
    --------
    >>> counted(1, "job"), counted(3000, "job"), counted(2, "class", "classes")
    ('1 job', '3,000 jobs', '2 classes')
    """
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {plural or noun + 's'}"


KINDS: dict[str, Callable[[Any], str]] = {
    "bytes": format_bytes,
    "rate": format_rate,
    "seconds": format_seconds,
    "date": format_date,
    "number": format_number,
    "ratio": format_ratio,
    "priority": format_priority,
    "share": format_share,
    "change": format_change,
    "count": format_count,
}
"""The kinds a table column can be shown as, each with its formatter."""


def format_value(value: Any, kind: str | None = None) -> str:
    """A table cell's text: ``value`` shown as ``kind`` (one of :data:`KINDS`, or a Python format spec);
    '' for null; numbers without a kind as :func:`format_number`.

    Examples
    --------
    >>> format_value(1.5e9, "bytes"), format_value(0.5, "{:.2f}"), format_value(None, "bytes"), format_value("a")
    ('1.50 GB', '0.50', '', 'a')
    """
    if value is None:
        return ""
    if kind in KINDS:
        return KINDS[kind](value)
    if kind is not None:
        return kind.format(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return format_number(value)
    return str(value)


def listed(items: list[str]) -> str:
    """Items in a sentence: ``a``, ``a and b``, ``a, b and c``; ``""`` for none.

    Examples
    --------
    >>> listed(["set 0"]), listed(["set 0", "set 1"]), listed(["a", "b", "c"])
    ('set 0', 'set 0 and set 1', 'a, b and c')
    """
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + f" and {items[-1]}"
