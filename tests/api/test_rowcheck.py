"""`check_job` holds the jobs table's rules as ``JOBS.validate`` does, with the same messages."""

import math

import polars as pl
import pytest

from iosets.api._rowcheck import CHECKS, check_job, check_values
from iosets.datasets import make_job_history
from iosets.errors import InputError
from iosets.schemas import JOBS, NOT_PERIODIC_CODES

NUMBERS = (-2.0, -1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 1e300)


def validated(row: dict) -> tuple[dict | None, str | None]:
    """``JOBS.validate`` of ``row`` as the service ran it on each post: (the row, None) or (None, the message)."""
    full = {name: row.get(name) for name in JOBS.names}
    try:
        frame = JOBS.validate(pl.DataFrame([full], schema=JOBS.polars), source=f"job {full['job_id']!r}")
    except InputError as exc:
        return None, str(exc)
    return frame.row(0, named=True), None


def checked(row: dict) -> tuple[dict | None, str | None]:
    try:
        return check_job(row), None
    except InputError as exc:
        return None, str(exc)


def values_of(name: str) -> list:
    dtype = JOBS[name].dtype
    if dtype == pl.String:
        return [*NOT_PERIODIC_CODES, "periodic", ""]
    if dtype == pl.Int64:
        return [int(value) for value in NUMBERS if value == int(value) and abs(value) < 2**62]
    return list(NUMBERS)


def test_every_jobs_check_has_its_python_rule():
    assert set(CHECKS) == {column.name for column in JOBS.columns if column.check is not None}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_each_rule_answers_as_jobs_validate(name):
    rows = [{"job_id": "j1", name: value} for value in values_of(name)]
    if name == "end":  # end >= start, when there is a start
        rows += [{"job_id": "j1", "start": 1.0, "end": value} for value in NUMBERS]
    broken = 0
    for row in rows:
        assert checked(row) == validated(row), row
        broken += validated(row)[1] is not None
    assert 0 < broken < len(rows)  # each rule both holds and breaks on these values


def test_a_missing_job_id_and_a_non_finite_number_are_refused_as_jobs_validate():
    assert checked({"job_id": None})[1] == "job None row 0: job_id: expected a value (not null), got null"
    row = {"job_id": "j1", "runtime": math.inf}
    assert checked(row) == validated(row) == (None, "job 'j1' row 0: runtime: expected a finite number, got inf")


def test_the_first_broken_column_is_named_and_good_rows_come_back_whole():
    row = {"job_id": "j1", "nprocs": 0, "w_iter": -1.0}  # both broken: nprocs comes first in JOBS
    assert checked(row) == validated(row) == (None, "job 'j1' row 0: nprocs: expected >= 1, got 0")
    history = make_job_history(50, n_apps=3, n_users=2, random_state=0)
    for job in history.select([name for name in JOBS.names if name in history.columns]).to_dicts():
        assert checked(job) == validated(job)
        assert checked(job)[0] is not None


@pytest.mark.parametrize("name", sorted(set(CHECKS) - {"end"}))  # end's rule needs the row's start
def test_a_value_alone_keeps_its_columns_rule_as_in_a_row(name):
    for value in values_of(name):
        in_row = checked({"job_id": "j1", name: value})[1]
        try:
            check_values({name: value})
            alone = None
        except InputError as exc:
            alone = str(exc)
        assert alone == (None if in_row is None else in_row.removeprefix("job 'j1' row 0: ")), value
