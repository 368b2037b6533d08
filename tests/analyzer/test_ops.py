"""Reading and writing the requests table: every value checked against the ops schema, errors named by line."""

import polars as pl
import pytest

from iosets.analyzer import read_requests, write_requests
from iosets.datasets import make_backlogged_requests
from iosets.errors import InputError
from iosets.schemas import REQUESTS

HEADER = "job_id,rank,op,offset,size,start,end\n"


@pytest.mark.parametrize("name", ["ops.csv", "ops.parquet"])
def test_round_trip(tmp_path, name):
    ops = make_backlogged_requests(50, 3, random_state=0)
    back = read_requests(write_requests(ops, tmp_path / name))
    assert back.select(ops.columns).equals(ops)


def test_missing_columns_are_named(tmp_path):
    path = tmp_path / "ops.csv"
    path.write_text("job_id,op,size,start\na,read,10,0.0\n")
    with pytest.raises(InputError, match=r"ops\.csv: missing column\(s\) rank, offset; expected job_id"):
        read_requests(path)


def test_malformed_row_names_the_file_and_line(tmp_path):
    path = tmp_path / "ops.csv"
    path.write_text("job_id,rank,op,offset,size,start\na,0,read,0,10,0.0\nb,0,read,zero,10,1.0\n")
    with pytest.raises(InputError, match=r"ops\.csv line 3: offset: expected an integer, got 'zero'$"):
        read_requests(path)


def test_end_column_is_added_when_absent(tmp_path):
    path = tmp_path / "ops.csv"
    path.write_text("job_id,rank,op,offset,size,start\na,0,read,0,10,0.5\n")
    ops = read_requests(path)
    assert ops["end"].null_count() == 1 and ops["start"].dtype == pl.Float64


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("a,0,erase,0,10,0.5,0.7", "op: expected 'read'|'write', got 'erase'"),
        ("a,0,read,0,-5,0.5,0.7", "size: expected bytes >= 0, got -5"),
        ("a,-1,read,0,5,0.5,0.7", "rank: expected an integer >= 0, got -1"),
        ("a,0,read,-8,5,0.5,0.7", "offset: expected bytes >= 0, got -8"),
        ("a,0,read,0,5,-0.5,0.7", "start: expected a date >= 0, got -0.5"),
        ("a,0,read,0,5,inf,", "start: expected a finite number, got inf"),
        ("a,0,read,0,5,0.5,0.2", "end: expected a date >= start, got 0.2"),
        ("a,0,read,0,2.5,0.5,0.7", "size: expected an integer, got '2.5'"),
        (",0,read,0,5,0.5,0.7", "job_id: expected a value (not null), got null"),
    ],
)
def test_values_break_the_schema_at_a_named_line(tmp_path, row, message):
    path = tmp_path / "ops.csv"
    path.write_text(HEADER + "a,0,write,0,4096,0.0,0.1\n" + row + "\n")
    with pytest.raises(InputError) as error:
        read_requests(path)
    assert str(error.value) == f"{path} line 3: {message}"


def test_zero_byte_requests_are_read(tmp_path):
    path = tmp_path / "ops.csv"
    path.write_text(HEADER + "a,0,write,0,0,0.0,0.0\na,0,write,0,4096,0.5,\n")
    ops = read_requests(path)
    assert ops["size"].to_list() == [0, 4096] and ops["end"].to_list() == [0.0, None]


def test_parquet_rows_are_named_as_the_schema_names_them(tmp_path):
    ops = make_backlogged_requests(5, 1, random_state=0).with_columns(
        pl.when(pl.int_range(pl.len()) == 3).then(-1).otherwise(pl.col("size")).alias("size")
    )
    path = write_requests(ops, tmp_path / "ops.parquet")
    with pytest.raises(InputError) as expected:
        REQUESTS.validate(ops, source=str(path))
    with pytest.raises(InputError) as found:
        read_requests(path)
    assert str(found.value) == str(expected.value) == f"{path} row 3: size: expected bytes >= 0, got -1"
