"""Any input to a block-trace or requests reader is a valid requests table or an InputError naming the file (and line).

Property-based (Hypothesis): random text lines shaped like each format, random bytes, random CSV
and Parquet tables of mixed types. A bounded, derandomized number of examples keeps this fast.
"""

import re
import warnings

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosets.analyzer import read_blocktrace, read_requests
from iosets.errors import InputError
from iosets.schemas import REQUESTS

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,  # the same examples on every run
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
OPS_NAMES = REQUESTS.names[:7]  # job_id rank op offset size start end

# Values of every kind a field may hold: integers of any size and sign, floats, words, blanks.
INTEGERS = st.integers(min_value=-(2**70), max_value=2**70).map(str)
SMALL = st.integers(min_value=0, max_value=5000).map(str)
FLOATS = st.floats(allow_nan=True, allow_infinity=True).map(repr)
WORDS = st.sampled_from(["", " ", "x", "read", "write", "Read", "W", "r", "erase", "nan", "-inf", "1e400", "0x10"])
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r,"), max_size=12)
FIELD = st.one_of(SMALL, INTEGERS, FLOATS, WORDS, TEXT)


def _check(read, path) -> None:
    """The property: a valid requests table, or one line of InputError that names the file (and line or row)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # errors="skip" warns about what it left out
            ops = read(path)
    except InputError as exc:
        message = str(exc)
        assert "\n" not in message
        assert re.match(rf"{re.escape(str(path))}(?: (?:line|row) \d+)?: \S", message), message
        return
    assert set(REQUESTS.names[:8]) <= set(ops.columns)  # the file's own order, end and file added when absent
    assert REQUESTS.validate(ops, source="t").equals(ops)


def _blkparse_event(maj, minor, time, pid, action, rwbs, sector, count, process):
    return f"  {maj},{minor}  1  {pid}  {time}  {pid}  {action}  {rwbs} {sector} + {count} [{process}]"


BLKPARSE_LINE = st.one_of(
    st.builds(
        _blkparse_event,
        st.one_of(st.sampled_from(["8", "259"]), INTEGERS),
        st.one_of(st.sampled_from(["0", "16"]), INTEGERS),
        st.one_of(st.floats(min_value=0, max_value=1e4).map(lambda t: f"{t:.9f}"), st.sampled_from(["9" * 400 + ".0"])),
        st.one_of(SMALL, INTEGERS),
        st.sampled_from(["Q", "D", "C", "A", "G", "I", "M", "P", "CC"]),
        st.sampled_from(["W", "R", "RA", "WS", "FWS", "N", "D"]),
        st.one_of(SMALL, INTEGERS),
        st.one_of(SMALL, INTEGERS),
        TEXT,
    ),
    TEXT,
    st.sampled_from(["CPU0 (8,0):", "Total (8,0):", ""]),
)


def _csv_lines(width: int):
    return st.lists(st.lists(FIELD, min_size=width - 1, max_size=width + 1).map(",".join), max_size=25)


@pytest.fixture
def trace(tmp_path):
    return tmp_path / "trace"


@SETTINGS
@given(lines=st.lists(BLKPARSE_LINE, max_size=30), skip=st.booleans())
def test_blkparse_lines(trace, lines, skip):
    trace.write_text("\n".join(lines) + "\n")
    _check(lambda p: read_blocktrace(p, format="blkparse", errors="skip" if skip else "raise"), trace)


@SETTINGS
@given(lines=_csv_lines(7), header=st.booleans(), skip=st.booleans())
def test_msr_lines(trace, lines, header, skip):
    head = ["Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"] if header else []
    trace.write_text("\n".join(head + lines) + "\n")
    _check(lambda p: read_blocktrace(p, format="msr", errors="skip" if skip else "raise"), trace)


@SETTINGS
@given(lines=_csv_lines(5), skip=st.booleans())
def test_spc_lines(trace, lines, skip):
    trace.write_text("\n".join(lines) + "\n")
    _check(lambda p: read_blocktrace(p, format="spc", errors="skip" if skip else "raise"), trace)


@SETTINGS
@given(data=st.binary(max_size=600), fmt=st.sampled_from(["blkparse", "msr", "spc", "ops"]))
def test_random_bytes(tmp_path, data, fmt):
    path = tmp_path / ("t.csv" if fmt == "ops" else "t.trace")
    path.write_bytes(data)
    _check(lambda p: read_blocktrace(p, format=fmt), path)


COLUMNS = [*OPS_NAMES, "file", "phase", "extra"]
NAMES = st.one_of(  # all the required columns (in any order, with others) half of the time
    st.lists(st.sampled_from(COLUMNS[6:]), unique=True).flatmap(lambda more: st.permutations(OPS_NAMES[:6] + more)),
    st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=9, unique=True),
)
GOOD = {  # values each column accepts (random ones are drawn as often)
    "job_id": (pl.String, st.sampled_from(["a", "b", "job 1"])),
    "op": (pl.String, st.sampled_from(["read", "write"])),
    "start": (pl.Float64, st.floats(min_value=0, max_value=1e3)),
    "end": (pl.Float64, st.floats(min_value=0, max_value=1e3)),
    "file": (pl.String, TEXT),
} | {
    name: (pl.Int64, st.integers(min_value=0, max_value=5000)) for name in ("rank", "offset", "size", "phase", "extra")
}
COLUMN_VALUES = {
    pl.Int64: st.integers(min_value=-(2**63), max_value=2**63 - 1),
    pl.Float64: st.floats(allow_nan=True, allow_infinity=True),
    pl.String: st.one_of(WORDS, TEXT),
    pl.Boolean: st.booleans(),
}


def _cell(name: str):
    """A CSV field for column ``name``: a value it accepts, or any field."""
    return st.one_of(GOOD[name][1].map(str), FIELD)


@SETTINGS
@given(names=NAMES, data=st.data())
def test_ops_csv_tables(tmp_path, names, data):
    rows = data.draw(st.lists(st.tuples(*(_cell(n) for n in names)).map(",".join), max_size=20))
    path = tmp_path / "ops.csv"
    path.write_text("\n".join([",".join(names), *rows]) + "\n")
    _check(read_requests, path)


@st.composite
def _tables(draw) -> pl.DataFrame:
    """A table with some of the ops columns (and others), each of its own type or a random one, with nulls."""
    names = draw(NAMES)
    height = draw(st.integers(min_value=0, max_value=12))
    columns = {}
    for name in names:
        dtype, values = draw(st.one_of(st.just(GOOD[name]), st.sampled_from(list(COLUMN_VALUES.items()))))
        cells = draw(st.lists(st.one_of(st.none(), values), min_size=height, max_size=height))
        columns[name] = pl.Series(name, cells, dtype=dtype)
    return pl.DataFrame(columns)


@SETTINGS
@given(table=_tables())
def test_ops_parquet_tables(tmp_path, table):
    path = tmp_path / "ops.parquet"
    table.write_parquet(path)
    _check(read_requests, path)


@SETTINGS
@given(table=_tables())
def test_ops_tables_that_pass_keep_their_values(tmp_path, table):
    """When a random table is accepted, the reader returned its values, typed, not others."""
    path = tmp_path / "ops.parquet"
    table.write_parquet(path)
    try:
        ops = read_requests(path)
    except InputError:
        return
    for name in set(OPS_NAMES) & set(table.columns):
        assert ops[name].to_list() == table[name].cast(REQUESTS.polars[name]).to_list()
