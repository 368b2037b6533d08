"""The schema module: the validator's rules and messages, and docs/formats.md kept in sync."""

from pathlib import Path

import polars as pl
import pytest

from iosets.errors import InputError
from iosets.schemas import JOBS, RECOMMENDED_JOBS, REQUESTS, SCHEMAS, WORKLOAD_PHASES, formats_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs" / "formats.md"


def _ops(**columns) -> pl.DataFrame:
    base = {
        "job_id": ["a", "b"],
        "rank": [0, 1],
        "op": ["read", "write"],
        "offset": [0, 8],
        "size": [0, 4],
        "start": [0.0, 1.0],
    }
    return pl.DataFrame({**base, **columns})


def test_formats_doc_matches_the_schema_module():
    assert DOCS.read_text() == formats_markdown(), "regenerate: python -m iosets.schemas > docs/formats.md"


def test_every_schema_is_documented_with_every_column():
    text = formats_markdown()
    for schema in SCHEMAS.values():
        assert f"## {schema.name}" in text
        assert all(f"| `{c.name}` |" in text for c in schema.columns)
        assert all(c.doc for c in schema.columns)


def test_ops_validation_types_and_fills_optional_columns():
    ops = REQUESTS.validate(_ops())
    assert ops.schema["size"] == pl.Int64 and ops.schema["start"] == pl.Float64
    assert ops.columns[-2:] == ["end", "file"] and ops["end"].null_count() == 2
    assert "phase" not in ops.columns  # optional but never invented: iosets-wfq reads it when present


def test_zero_byte_requests_are_valid_ops():
    assert REQUESTS.validate(_ops(size=[0, 0]))["size"].to_list() == [0, 0]


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"op": ["read", "erase"]}, "t.csv row 1: op: expected 'read'\\|'write', got 'erase'"),
        ({"size": [1, -5]}, "t.csv row 1: size: expected bytes >= 0, got -5"),
        ({"offset": [-1, 0]}, "t.csv row 0: offset: expected bytes >= 0, got -1"),
        ({"start": [float("inf"), 1.0]}, "t.csv row 0: start: expected a finite number, got inf"),
        ({"start": [0.0, -2.0]}, "t.csv row 1: start: expected a date >= 0, got -2.0"),
        ({"end": [0.5, 0.5]}, "t.csv row 1: end: expected a date >= start, got 0.5"),
        ({"size": [1.0, 2.5]}, "t.csv row 1: size: expected an integer, got 2.5"),
        ({"rank": ["x", "1"]}, "t.csv row 0: rank: expected an integer, got 'x'"),
        ({"job_id": [None, "b"]}, r"t.csv row 0: job_id: expected a value \(not null\), got null"),
    ],
)
def test_ops_validation_names_row_column_rule_and_value(columns, message):
    with pytest.raises(InputError, match=message):
        REQUESTS.validate(_ops(**columns), source="t.csv")


def test_missing_columns_are_named():
    with pytest.raises(InputError, match="ops: missing column\\(s\\) op, size; expected job_id"):
        REQUESTS.validate(_ops().drop("op", "size"))


def test_row_offset_reports_file_lines():
    with pytest.raises(InputError, match="row 3: size"):
        REQUESTS.validate(_ops(size=[1, -1]), row_offset=2)


def test_jobs_values():
    jobs = pl.DataFrame({"job_id": ["a", "b"], "w_iter": [10.0, None], "alpha_io": [0.2, 1.5]})
    with pytest.raises(InputError, match=r"jobs row 1: alpha_io: expected a number in \[0, 1\], got 1.5"):
        JOBS.validate(jobs)
    ok = JOBS.validate(jobs.with_columns(pl.lit(0.5).alias("alpha_io")), require=["w_iter"])
    assert ok["w_iter"].to_list() == [10.0, None] and "user" in ok.columns
    with pytest.raises(InputError, match="missing column\\(s\\) w_iter"):
        JOBS.validate(jobs.drop("w_iter"), require=["w_iter"])
    with pytest.raises(InputError, match="w_iter: expected seconds > 0, got 0.0"):
        JOBS.validate(jobs.with_columns(pl.lit(0.0).alias("w_iter"), pl.lit(0.5).alias("alpha_io")))


def test_recommended_jobs_need_the_recommendation_columns():
    with pytest.raises(InputError, match="missing column\\(s\\) set, priority, conservative"):
        RECOMMENDED_JOBS.validate(pl.DataFrame({"job_id": ["a"]}))


def test_workload_phases_rules():
    phases = pl.DataFrame({"job": [0, 0], "t_cpu": [1.0, -1.0], "io_bytes": [1e6, 1e6]})
    with pytest.raises(InputError, match="workload phases row 1: t_cpu: expected seconds >= 0, got -1.0"):
        WORKLOAD_PHASES.validate(phases)
