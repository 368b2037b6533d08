"""Reading and writing the ops table."""

import polars as pl
import pytest

from iosets.analyzer import read_ops, write_ops
from iosets.datasets import make_backlogged_requests
from iosets.errors import InputError


@pytest.mark.parametrize("name", ["ops.csv", "ops.parquet"])
def test_round_trip(tmp_path, name):
    ops = make_backlogged_requests(50, 3, random_state=0)
    back = read_ops(write_ops(ops, tmp_path / name))
    assert back.select(ops.columns).equals(ops)


def test_missing_columns_are_named(tmp_path):
    path = tmp_path / "ops.csv"
    path.write_text("job_id,op,size,start\na,read,10,0.0\n")
    with pytest.raises(InputError, match=r"missing columns \['rank', 'offset'\]"):
        read_ops(path)


def test_malformed_row_names_the_file(tmp_path):
    path = tmp_path / "ops.csv"
    path.write_text("job_id,rank,op,offset,size,start\na,0,read,0,10,0.0\nb,0,read,zero,10,1.0\n")
    with pytest.raises(InputError, match="ops.csv: not a readable ops table"):
        read_ops(path)


def test_end_column_is_added_when_absent(tmp_path):
    path = tmp_path / "ops.csv"
    path.write_text("job_id,rank,op,offset,size,start\na,0,read,0,10,0.5\n")
    ops = read_ops(path)
    assert ops["end"].null_count() == 1 and ops["start"].dtype == pl.Float64
