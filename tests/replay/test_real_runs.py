"""The trace replay against real runs of this kind of machine (issue #21, item 5): the test of record.

contention-light (tests/data/darshan-runtime/contention-light/README.md): three periodic writers alone, then
together, twice, with the programs' own truth. The device is calibrated on one repetition and judged on the
other.
"""

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from iosets.analyzer import site_trace
from iosets.replay import calibrate, replay_trace

LIGHT = Path(__file__).parent.parent / "data" / "darshan-runtime" / "contention-light"
TRUTH = json.loads((LIGHT / "contention_truth.json").read_text())
JOBS = ("cj1", "cj2", "cj3")
FIRST_ID = {("alone", 0): 5001, ("together", 0): 5004, ("alone", 1): 5007, ("together", 1): 5010}


def site(part: str, rep: int) -> pl.DataFrame:
    """The site trace of one repetition's runs, alone or together."""
    return site_trace(sorted((LIGHT / part).glob(f"*.r{rep}.darshan")), workers=1).requests


def job_name(part: str, rep: int, job_id: str) -> str:
    return JOBS[int(job_id) - FIRST_ID[(part, rep)]]


@pytest.fixture(scope="module")
def calibrated():
    """Per repetition: the device fitted on its alone runs and together runs."""
    return {rep: calibrate(pl.concat([site("alone", rep), site("together", rep)]).sort("start")) for rep in (0, 1)}


@pytest.mark.parametrize("rep", [0, 1])
def test_each_job_alone_is_replayed_within_5_percent_of_its_recorded_phases(calibrated, rep):
    replay = replay_trace(site("alone", rep), device=calibrated[rep].device)
    ratios = replay.phases.with_columns(
        ratio=(pl.col("end") - pl.col("start")) / (pl.col("recorded_end") - pl.col("recorded_start"))
    )
    medians = ratios.group_by("job_id").agg(pl.col("ratio").median()).sort("job_id")
    print(f"\nr{rep} device {calibrated[rep].device}\n{medians}")
    assert medians.height == 3
    assert np.abs(medians["ratio"].to_numpy() - 1).max() <= 0.05


@pytest.mark.parametrize("rep", [0, 1])
def test_no_contention_is_invented_where_the_runs_had_none(calibrated, rep):
    """Measured stretch below 1.05 for every job here: no predicted stretch above 1.3 (the other repetition's
    device: calibrated on runs it does not predict)."""
    device = calibrated[1 - rep].device
    replay = replay_trace(site("together", rep), device=device)
    for row in replay.jobs.iter_rows(named=True):
        name = job_name("together", rep, row["job_id"])
        measured = next(r for r in TRUTH["runs"] if r["rep"] == rep and r["job"] == name)
        print(
            f"r{rep} {name}: stretch predicted {row['stretch']:.3f} measured {measured['stretch']:.3f}; "
            f"I/O slowdown predicted {row['io_slowdown']:.3f} measured {measured['io_slowdown']:.3f}"
        )
        assert measured["stretch"] < 1.05
        assert row["stretch"] <= 1.3
