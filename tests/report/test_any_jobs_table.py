"""Any jobs table the schema accepts builds a report: extreme dates, sizes and rhythms, nulls and odd text."""

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosets.report import build_report
from iosets.schemas import JOBS, NOT_PERIODIC_CODES

FINITE = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False)
POSITIVE = st.floats(min_value=1e-300, max_value=1e300, allow_nan=False)
UNIT = st.floats(min_value=0.0, max_value=1.0)
TEXT = st.text(max_size=12)


@st.composite
def job_rows(draw):
    start = draw(st.none() | FINITE)
    end = draw(st.none() | (FINITE if start is None else st.floats(min_value=start, max_value=1e300)))
    return {
        "user": draw(st.none() | TEXT),
        "app": draw(st.none() | TEXT),
        "nprocs": draw(st.none() | st.integers(1, 2**40)),
        "start": start,
        "end": end,
        "bytes_read": draw(st.none() | st.floats(0, 1e300)),
        "bytes_written": draw(st.none() | st.floats(0, 1e300)),
        "io_time": draw(st.none() | st.floats(0, 1e300)),
        "w_iter": draw(st.none() | POSITIVE),
        "w_iter_confidence": draw(st.none() | UNIT),
        "alpha_io": draw(st.none() | UNIT),
        "not_periodic": draw(st.none() | st.sampled_from(NOT_PERIODIC_CODES)),
        "explanation": draw(st.none() | TEXT),
        "source": draw(st.none() | TEXT),
    }


@given(rows=st.lists(job_rows(), min_size=1, max_size=8))
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_every_valid_jobs_table_builds_a_page_with_every_job(rows):
    jobs = JOBS.validate(
        pl.DataFrame([{"job_id": f"j{i}", **row} for i, row in enumerate(rows)], infer_schema_length=None)
    )
    page = build_report(jobs).html
    assert page.startswith("<!DOCTYPE html>")
    for job_id in jobs["job_id"]:
        assert f'data-value="{job_id}"' in page
