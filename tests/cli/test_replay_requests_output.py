"""``iosets replay-requests -o``: the per-request results and, beside them, the per-class table."""

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from iosets._io import read_frame, write_frame
from iosets.cli import app
from iosets.schemas import REQUEST_CLASSES, REQUEST_RESULTS

runner = CliRunner()


@pytest.fixture
def ops_file(tmp_path):
    """Classes a (two requests: 3000 and 1000 bytes) and b (one of 4000 bytes), all issued at 0."""
    path = tmp_path / "ops.csv"
    pl.DataFrame(
        {
            "job_id": ["a", "b", "a"],
            "rank": [0, 1, 0],
            "op": "write",
            "offset": [0, 0, 3000],
            "size": [3000, 4000, 1000],
            "start": 0.0,
        }
    ).write_csv(path)
    return path


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_results_and_classes_agree_and_name_the_scheduler(ops_file, tmp_path, suffix):
    out = tmp_path / f"result{suffix}"
    args = ["replay-requests", str(ops_file), "--scheduler", "wfq", "-o", str(out), "--json"]
    result = runner.invoke(app, [*args, *(f"--device={pair}" for pair in ("bandwidth=1000", "overhead=0", "seek=0"))])
    assert result.exit_code == 0, result.output
    results = REQUEST_RESULTS.validate(read_frame(out))
    classes = REQUEST_CLASSES.validate(read_frame(tmp_path / f"result.classes{suffix}"))
    assert results.columns == REQUEST_RESULTS.names and classes.columns == REQUEST_CLASSES.names
    assert sorted(results.select("row", "class", "size").rows()) == [(0, "a", 3000), (1, "b", 4000), (2, "a", 1000)]
    per_class = results.group_by("class").agg(pl.col("size").sum().cast(pl.Float64).alias("bytes")).sort("class")
    assert per_class.rows() == classes.select("class", "bytes").rows() == [("a", 4000.0), ("b", 4000.0)]
    assert classes["share"].to_list() == [0.5, 0.5]
    assert set(results["scheduler"]) == set(classes["scheduler"]) == {"wfq"}
    # the classes table is the --json one, with the scheduler's name
    printed = json.loads(result.stdout)["classes"]
    assert classes.drop("scheduler").to_dicts() == printed
    # the device serves 8000 bytes at 1000 B/s, one request at a time: the last completes at 8 s
    assert results["complete"].max() == pytest.approx(8.0)


def test_the_tables_survive_a_write_and_a_read(ops_file, tmp_path):
    out = tmp_path / "result.parquet"
    assert runner.invoke(app, ["replay-requests", str(ops_file), "-o", str(out)]).exit_code == 0
    for path, schema in [(out, REQUEST_RESULTS), (tmp_path / "result.classes.parquet", REQUEST_CLASSES)]:
        frame = schema.validate(read_frame(path))
        assert schema.validate(read_frame(write_frame(frame, tmp_path / "again.csv"))).equals(frame)


def test_an_unwritable_classes_table_is_refused_before_the_replay(ops_file, tmp_path):
    (tmp_path / "result.classes.csv").mkdir()
    result = runner.invoke(app, ["replay-requests", str(ops_file), "-o", str(tmp_path / "result.csv")])
    assert result.exit_code == 1
    assert "result.classes.csv: is a folder; expected a file name for the per-class results" in result.stderr
    assert not (tmp_path / "result.csv").exists()
