"""read_inputs: files with their companions, frames and mappings; a bad input names its file, row and column."""

from dataclasses import dataclass

import polars as pl
import pytest

from iosets.errors import InputError
from iosets.report import read_inputs

JOBS = pl.DataFrame(
    {
        "job_id": ["0012", "b", "c", "d"],
        "app": ["x", "y", "y", "z"],
        "w_iter": [10.0, 100.0, None, 1000.0],
        "alpha_io": [0.1, 0.2, 0.05, 0.3],
    }
)
REC = JOBS.with_columns(
    set=pl.Series([1, 2, 3, 3]),
    priority=pl.Series([0.1, 0.01, 0.001, 0.001]),
    conservative=pl.Series([False, False, True, False]),
    wfq_weight=pl.Series([1000, 100, 1, 1]),
    rbfq_reservation=pl.Series([None, None, None, None], dtype=pl.Float64),
    rbfq_weight=pl.Series([100.0, 10.0, 1.0, 1.0]),
    rbfq_limit=pl.Series([None, None, None, None], dtype=pl.Float64),
)
PER_JOB = pl.DataFrame(
    {
        "job_id": ["0012", "b", "0012", "b"],
        "scheduler": ["fcfs", "fcfs", "wfq", "wfq"],
        "recorded_runtime": [10.0, 20.0, 10.0, 20.0],
        "runtime": [12.0, 21.0, 11.0, 22.0],
        "alone_runtime": [10.0, 20.0, 10.0, 20.0],
        "stretch": [1.2, 1.05, 1.1, 1.1],
        "io_slowdown": [1.5, 1.1, 1.2, 1.3],
        "wait": [2.0, 1.0, 1.0, 2.0],
    }
)
SHARES = pl.DataFrame({"scheduler": ["fcfs", "fcfs"], "set": [1, 2], "bytes": [3.0, 1.0], "share": [0.75, 0.25]})
RESULTS = pl.DataFrame(
    {
        "row": [0, 1],
        "class": ["a", "b"],
        "arrival": [0.0, 0.0],
        "dispatch": [0.0, 1.0],
        "complete": [1.0, 2.0],
        "unit": [0, 1],
        "size": [4096, 4096],
        "scheduler": ["fcfs", "fcfs"],
    }
)


def test_files_are_read_with_their_companions_and_named_in_sources(tmp_path):
    JOBS.write_csv(tmp_path / "jobs.csv")
    REC.write_parquet(tmp_path / "rec.parquet")
    PER_JOB.write_parquet(tmp_path / "perjob.parquet")
    SHARES.write_parquet(tmp_path / "perjob.shares.parquet")  # no phases or schedulers companion
    RESULTS.write_csv(tmp_path / "result.csv")
    inputs = read_inputs(
        tmp_path / "jobs.csv",
        recommendation=tmp_path / "rec.parquet",
        replay=str(tmp_path / "perjob.parquet"),
        requests=tmp_path / "result.csv",
    )
    assert inputs.jobs["job_id"].to_list() == ["0012", "b", "c", "d"]  # a CSV id keeps its leading zeros
    assert inputs.jobs["w_iter"].to_list() == [10.0, 100.0, None, 1000.0]
    assert "explanation" in inputs.jobs.columns and inputs.jobs["explanation"].null_count() == 4  # optional: nulls
    assert inputs.recommendation["set"].to_list() == [1, 2, 3, 3]
    assert inputs.replay_jobs.equals(PER_JOB)
    assert inputs.replay_shares.equals(SHARES)
    assert inputs.replay_phases is None and inputs.replay_schedulers is None  # a missing companion is no error
    assert inputs.requests["size"].to_list() == [4096, 4096] and inputs.request_classes is None
    assert inputs.site is None and inputs.tune is None
    assert inputs.sources == {
        "jobs": str(tmp_path / "jobs.csv"),
        "recommendation": str(tmp_path / "rec.parquet"),
        "replay_jobs": str(tmp_path / "perjob.parquet"),
        "replay_shares": str(tmp_path / "perjob.shares.parquet"),
        "requests": str(tmp_path / "result.csv"),
    }


def test_a_recommended_jobs_table_is_also_the_recommendation(tmp_path):
    REC.write_parquet(tmp_path / "rec.parquet")
    inputs = read_inputs(tmp_path / "rec.parquet")
    assert inputs.recommendation is inputs.jobs
    assert inputs.recommendation["priority"].to_list() == [0.1, 0.01, 0.001, 0.001]
    assert inputs.sources == {"jobs": str(tmp_path / "rec.parquet"), "recommendation": str(tmp_path / "rec.parquet")}


def test_a_mapping_or_a_comparison_object_gives_the_replay_tables():
    @dataclass(frozen=True)
    class Comparison:  # what compare_schedulers returns, less what the report does not read
        jobs: pl.DataFrame
        shares: pl.DataFrame

    from_object = read_inputs(JOBS, replay=Comparison(PER_JOB, SHARES))
    from_mapping = read_inputs(JOBS, replay={"jobs": PER_JOB, "shares": SHARES}, requests={"requests": RESULTS})
    for inputs in (from_object, from_mapping):
        assert inputs.replay_jobs.equals(PER_JOB) and inputs.replay_shares.equals(SHARES)
        assert inputs.replay_phases is None and inputs.sources == {}
    assert from_mapping.requests.equals(RESULTS)


def test_a_bad_value_names_the_file_the_row_and_the_column(tmp_path):
    REC.with_columns(pl.Series("priority", [0.1, 0.01, 0.001, -1.0])).write_parquet(tmp_path / "rec.parquet")
    with pytest.raises(InputError, match=r"rec\.parquet row 3: priority: expected a number > 0, got -1\.0$"):
        read_inputs(JOBS, recommendation=tmp_path / "rec.parquet")


def test_a_missing_column_names_the_file_and_the_column(tmp_path):
    PER_JOB.drop("stretch").write_csv(tmp_path / "perjob.csv")
    with pytest.raises(InputError, match=r"perjob\.csv: missing column\(s\) stretch; expected"):
        read_inputs(JOBS, replay=tmp_path / "perjob.csv")


def test_a_bad_companion_names_the_companion(tmp_path):
    PER_JOB.write_parquet(tmp_path / "perjob.parquet")
    SHARES.with_columns(pl.Series("share", [0.75, 1.5])).write_parquet(tmp_path / "perjob.shares.parquet")
    with pytest.raises(InputError, match=r"perjob\.shares\.parquet row 1: share: expected a number in \[0, 1\]"):
        read_inputs(JOBS, replay=tmp_path / "perjob.parquet")


def test_a_frame_given_in_python_is_named_by_its_table():
    with pytest.raises(InputError, match=r"^trace replay jobs row 0: runtime: expected a finite number, got inf$"):
        read_inputs(JOBS, replay=PER_JOB.with_columns(pl.lit(float("inf")).alias("runtime")))


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        (JOBS.head(0), r"^jobs: no job; the report needs at least one$"),
        (pl.concat([JOBS, JOBS.head(1)]), r"^jobs: job_id '0012' appears more than once$"),
        (JOBS.drop("job_id"), r"^jobs: missing column\(s\) job_id"),
    ],
)
def test_a_jobs_table_without_jobs_or_with_a_repeated_one_is_refused(jobs, message):
    with pytest.raises(InputError, match=message):
        read_inputs(jobs)


def test_an_unreadable_file_and_a_wrong_type_are_input_errors(tmp_path):
    (tmp_path / "jobs.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match=r"jobs\.parquet: not a readable jobs table"):
        read_inputs(tmp_path / "jobs.parquet")
    with pytest.raises(InputError, match=r"no such file"):
        read_inputs(tmp_path / "absent.csv")
    with pytest.raises(InputError, match=r"^tune: expected a \.parquet or \.csv path or a polars DataFrame, got int$"):
        read_inputs(JOBS, tune=3)
