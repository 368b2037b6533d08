"""Every reader's output against its schema in iosets.schemas: exact columns and types, and validate passes."""

from importlib import resources
from pathlib import Path

import polars as pl
import pytest

from iosets.analyzer import INGESTERS, analyze, ingest, read_blocktrace, read_darshan, read_requests, write_requests
from iosets.datasets import make_backlogged_requests, make_periodic_requests
from iosets.schemas import ANALYSIS_ERRORS, JOBS, REQUESTS

darshan = pytest.importorskip("darshan")

DATA = resources.files("iosets.datasets.data")
EXAMPLES = Path(darshan.__file__).parent / "examples" / "example_logs"
EXAMPLE_LOGS = sorted(EXAMPLES.glob("*.darshan"))
DXT_LOGS = [p for p in EXAMPLE_LOGS if read_darshan(p).requests is not None]
OPS_COLUMNS = ["job_id", "rank", "op", "offset", "size", "start", "end", "file"]
SAMPLES = {
    "blkparse": ("sample.blkparse.txt", 66, ("device", "process")),
    "msr": ("sample.msr.csv", 320, ("device", "host")),
    "spc": ("sample.spc.csv", 400, ("device", "asu")),
}


def assert_follows(frame: pl.DataFrame, schema, columns: list[str]) -> None:
    """``frame`` has exactly ``columns`` first, with the schema's types, and the schema's validator leaves it as is."""
    assert frame.columns[: len(columns)] == columns
    assert {c: frame.schema[c] for c in columns} == {c: schema.polars[c] for c in columns}
    assert schema.validate(frame, source="t").equals(frame)


def test_dxt_examples_are_found():
    assert [p.name for p in DXT_LOGS] == ["dxt.darshan", "ior_hdf5_example.darshan"]


@pytest.mark.parametrize("name", ["ops.csv", "ops.parquet"])
def test_read_ops(tmp_path, name):
    written = make_backlogged_requests(40, 2, random_state=1).with_columns(pl.lit(7).alias("extra"))
    ops = read_requests(write_requests(written, tmp_path / name))
    assert_follows(ops, REQUESTS, OPS_COLUMNS)
    assert ops.columns == [*OPS_COLUMNS, "extra"] and ops.height == 40
    assert ops["size"].to_list() == written["size"].to_list()


def test_read_ops_fills_end_and_file(tmp_path):
    path = tmp_path / "ops.csv"
    path.write_text("start,job_id,rank,op,offset,size\n0.5,a,0,read,0,10\n")
    ops = read_requests(path)
    assert ops.columns == ["start", "job_id", "rank", "op", "offset", "size", "end", "file"]
    assert {c: ops.schema[c] for c in OPS_COLUMNS} == {c: REQUESTS.polars[c] for c in OPS_COLUMNS}
    assert REQUESTS.validate(ops).equals(ops)


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_read_blocktrace_samples(fmt):
    name, height, class_bys = SAMPLES[fmt]
    with resources.as_file(DATA / name) as path:
        for class_by in class_bys:
            ops = read_blocktrace(path, class_by=class_by)
            assert_follows(ops, REQUESTS, OPS_COLUMNS)
            assert ops.columns == OPS_COLUMNS and ops.height == height
            assert ops.equals(ingest(path, format=fmt, class_by=class_by))


@pytest.mark.parametrize("path", DXT_LOGS, ids=lambda p: p.name)
def test_read_darshan_dxt(path):
    ops = read_darshan(path).requests
    assert_follows(ops, REQUESTS, OPS_COLUMNS)
    assert ops.columns == OPS_COLUMNS and ops.height > 0
    assert ops.equals(ingest(path))


def test_every_ingester_output_follows_the_schema(tmp_path):
    inputs = {
        "darshan": EXAMPLES / "dxt.darshan",
        "ops": write_requests(make_periodic_requests(10.0, 0.1, 2, random_state=0)[0], tmp_path / "o.parquet"),
    }
    for fmt, (name, _, _) in SAMPLES.items():
        inputs[fmt] = Path(str(DATA / name))
    assert set(inputs) == set(INGESTERS)
    for fmt, path in inputs.items():
        ops = ingest(path)
        assert_follows(ops, REQUESTS, OPS_COLUMNS)
        assert ops.height > 0, fmt


def test_analyze_jobs_and_errors(tmp_path):
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(b"not a log")
    with resources.as_file(DATA / "sample.spc.csv") as spc:
        result = analyze([EXAMPLES, bad, spc], workers=1)
    assert_follows(result.jobs, JOBS, JOBS.names)
    assert result.jobs.columns == JOBS.names
    assert result.jobs.height == len(EXAMPLE_LOGS) + 2  # one row per log, one per ASU of the SPC trace
    assert sorted(result.jobs.filter(pl.col("source") == "ops")["job_id"]) == ["0", "1"]
    assert_follows(result.errors, ANALYSIS_ERRORS, ANALYSIS_ERRORS.names)
    assert result.errors.columns == ANALYSIS_ERRORS.names
    assert result.errors["path"].to_list() == [str(bad)]
