"""The report's one number formatter: each kind of number with its unit, nulls as '-' or ''."""

import math

import pytest

from iosets.report._format import (
    KINDS,
    counted,
    format_bytes,
    format_change,
    format_date,
    format_number,
    format_rate,
    format_seconds,
    format_value,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "0 B"), (999, "999 B"), (1000, "1.00 kB"), (1.5e9, "1.50 GB"), (2.345e12, "2.35 TB"), (None, "-")],
)
def test_format_bytes(value, text):
    assert format_bytes(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0123, "12.3 ms"),
        (1, "1.00 s"),
        (90, "1.50 min"),
        (7200, "2.00 h"),
        (86400 * 1.5, "1.50 d"),
        (2.29e3 * 86400, "2,290 d"),
        (None, "-"),
        (math.nan, "-"),
    ],
)
def test_format_seconds(value, text):
    assert format_seconds(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (304_689_001_200, "304,689,001,200"),
        (8.64647e10, "86,464,700,000"),
        (-20.5448, "-20.54"),
        (0.123456, "0.1235"),
        (1234.5678, "1,235"),
        (12.0, "12"),
        (1e20, "1e+20"),
        (None, "-"),
        (math.inf, "-"),
    ],
)
def test_format_number_never_mixes_exponents_and_separators_in_one_range(value, text):
    assert format_number(value) == text


def test_dates_rates_changes_and_counts():
    assert format_date(1_640_995_200.0) == "2022-01-01 00:00"
    assert format_date(3.5) == "3.5 s"  # seconds since a trace's start
    assert format_rate(1.25e8) == "125 MB/s"
    assert (format_change(0.05), format_change(-0.0004)) == ("+5.0 %", "0.0 %")
    assert (counted(1, "job"), counted(0, "job"), counted(12_000, "job")) == ("1 job", "0 jobs", "12,000 jobs")


def test_a_cell_is_shown_by_its_kind_and_null_is_empty():
    assert format_value(1_640_995_200.0, "date") == "2022-01-01 00:00"
    assert format_value(0.5, "share") == "50.0 %"
    assert format_value(1.2124, "ratio") == "1.212"
    assert format_value(3, "{:03d}") == "003"
    assert format_value(None, "bytes") == ""
    assert format_value(8.64647e10) == "86,464,700,000"
    assert format_value(True) == "true"
    assert format_value(1e-99, "priority") == "10\u207b\u2079\u2079"
    assert set(KINDS) == {"bytes", "rate", "seconds", "date", "number", "ratio", "priority", "share", "change", "count"}
