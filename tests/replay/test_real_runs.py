"""The trace replay against real runs of this kind of machine (issue #21, item 5): the test of record.

- contention-light (tests/data/darshan-runtime/contention-light/README.md): three periodic writers alone, then
  together, twice, on a disk whose contention is below its own noise: the device is calibrated on one
  repetition and must not invent contention on the other. The disk's speed drifted over the runs' two minutes
  (its README measures it): each job alone is reproduced by a device calibrated on its own run, not the three
  jobs of a repetition by one device.
- jobs4r3 (tests/data/darshan-runtime/validate/README.md): `iosets validate --darshan` runs of the IO-SETS
  paper's Fig. 4 scenario, 4 jobs sharing a 200 MB/s block-I/O throttle, three repetitions: the device is
  calibrated on the run of one job alone and the contention of each repetition is predicted from its trace.
"""

import functools
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from iosets.analyzer import site_trace
from iosets.replay import FIT_PARAMETERS, calibrate, replay_trace

DATA = Path(__file__).parent.parent / "data" / "darshan-runtime"
LIGHT = DATA / "contention-light"
OWN = DATA / "validate" / "jobs4r3"
OWN_JOBS = ("h0", "h1", "l0", "l1")  # Darshan job ids 1 to 4
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


@functools.cache
def alone_run(rep: int, job: str) -> pl.DataFrame:
    """The requests of one job's alone run."""
    return site("alone", rep).filter(pl.col("job_id") == str(FIRST_ID[("alone", rep)] + JOBS.index(job)))


def median_phase_ratio(requests: pl.DataFrame, device) -> float:
    """The median over a job's phases of its replayed (alone: the requests are one job's) over recorded duration."""
    phases = replay_trace(requests, device=device).phases
    return ((phases["end"] - phases["start"]) / (phases["recorded_end"] - phases["recorded_start"])).median()


@pytest.fixture(scope="module")
def alone_calibrated():
    """Per repetition: the device fitted on its three alone runs."""
    return {rep: calibrate(site("alone", rep)) for rep in (0, 1)}


@pytest.mark.parametrize("job", JOBS)
@pytest.mark.parametrize("rep", [0, 1])
def test_each_job_alone_is_replayed_within_5_percent_on_a_device_calibrated_on_its_own_run(rep, job):
    """What holds of issue #21's criterion here: a job alone, on the device calibrated on that run (the held-out
    error, the same job's other repetition on that device, is printed: the disk was 2 to 5 times faster in r1)."""
    own = calibrate(alone_run(rep, job)).device
    median = median_phase_ratio(alone_run(rep, job), own)
    held_out = median_phase_ratio(alone_run(1 - rep, job), own)
    print(f"\nr{rep} {job}: median phase ratio {median:.3f} on {own.describe()}; its r{1 - rep} run {held_out:.3f}")
    assert abs(median - 1) <= 0.05


@pytest.mark.xfail(
    strict=True,
    reason="issue #21's criterion, not met on contention-light: on the device calibrated on a repetition's alone "
    "runs, the jobs' median phase ratios are r0 1.044, 0.985, 0.928 and r1 1.015, 0.498, 1.088 (cj1, cj2, cj3). "
    "The disk's 1 MiB requests went through in 0.27 ms or stalled for 4 ms, on 26 % of r0's requests after the "
    "first phases and on 3.3, 6.4 and 0.5 % of r1's (cj1, cj2, cj3: no job's pattern orders these), a drift in "
    "time: the best device of the model gets r0 within 2 % (with the phase error of calibrate's, whose phases "
    "range 0.6-2.3x around either) and r1 within 20 % (tests/data/darshan-runtime/contention-light/README.md)",
)
@pytest.mark.parametrize("rep", [0, 1])
def test_every_job_alone_is_replayed_within_5_percent_on_its_repetitions_device(alone_calibrated, rep):
    device = alone_calibrated[rep].device
    medians = {job: median_phase_ratio(alone_run(rep, job), device) for job in JOBS}
    held_out = {job: median_phase_ratio(alone_run(rep, job), alone_calibrated[1 - rep].device) for job in JOBS}
    print(f"\nr{rep} on {device.describe()}: median phase ratio {medians}; on r{1 - rep}'s device {held_out}")
    assert all(abs(median - 1) <= 0.05 for median in medians.values())


@pytest.mark.parametrize("rep", [0, 1])
def test_the_same_jobs_phases_differ_more_than_the_jobs_do(rep):
    """The README's measurement: the disk's speed varied in time, not with the jobs' pattern. Phase rates (bytes
    over the phase's span) of one job spread more (pooled standard deviation of their logarithm) than the three
    jobs' median rates do, though the jobs differ 2.7 times in phase size and 3 times in compute gap."""
    within, medians = [], []
    for job in JOBS:
        span = pl.col("end").max() - pl.col("start").min()
        rate = np.log(alone_run(rep, job).group_by("phase").agg(pl.col("size").sum() / span)["size"].to_numpy())
        within.append(rate - rate.mean())
        medians.append(np.median(rate))
    spread_within = float(np.sqrt(np.mean(np.concatenate(within) ** 2)))
    print(f"\nr{rep}: phase rates' spread within a job {spread_within:.2f}, between the jobs {np.std(medians):.2f}")
    assert spread_within > np.std(medians)


@pytest.fixture(scope="module")
def own_device():
    """The device calibrated on the logs of the run of one job alone."""
    return calibrate(site_trace([OWN / "calibration"], workers=1).requests).device


def test_the_job_alone_is_replayed_within_5_percent_of_its_recorded_phases(own_device):
    replay = replay_trace(site_trace([OWN / "calibration"], workers=1).requests, device=own_device)
    ratio = (replay.phases["end"] - replay.phases["start"]) / (
        replay.phases["recorded_end"] - replay.phases["recorded_start"]
    )
    print(f"\nown device {own_device}; alone phase ratios {ratio.to_list()}")
    assert replay.phases.height == 2 and abs(ratio.median() - 1) <= 0.05


def test_the_alone_run_shows_blk_throttles_slices():
    """200 MB/s in 100 ms slices (Linux 6.18, HZ 250): fitted with the slice, the budget is 20 MB within what the
    requests tell, below the 20 000 768 B of a high-frequency job's phase, whose last request waits a slice."""
    got = calibrate(site_trace([OWN / "calibration"], workers=1).requests, fit=FIT_PARAMETERS)
    assert got.device.slice == pytest.approx(0.1, rel=1e-3) and got.device.burst == 0.0
    assert 19.99e6 < got.device.rate * got.device.slice < 20_000_768


def measured_stretch() -> dict[tuple[int, str], float]:
    """Each job's measured stretch per repetition (its runtime over compute + bytes / B, the programs' clocks)."""
    checks = json.loads((OWN / "validation.json").read_text())["darshan"]["jobs"]
    return {(check["repetition"], check["job_id"]): check["stretch"]["measured"] for check in checks}


def own_predictions(device) -> list[tuple[int, str, float, float]]:
    """(repetition, job, measured stretch, predicted stretch) of every job of the three runs, replayed on
    ``device``: the predicted stretch is the measured one times the replay's runtime over the recorded one (both
    stretches are over the same ideal, compute + bytes / B)."""
    measured = measured_stretch()
    rows = []
    for rep in (1, 2, 3):
        replay = replay_trace(site_trace([OWN / f"system-{rep}"], workers=1).requests, device=device)
        for row in replay.jobs.sort("job_id").iter_rows(named=True):
            job = OWN_JOBS[int(row["job_id"]) - 1]
            rows.append(
                (rep, job, measured[(rep, job)], measured[(rep, job)] * row["runtime"] / row["recorded_runtime"])
            )
    return rows


def test_contention_is_predicted_within_15_percent_and_the_low_frequency_jobs_within_5(own_device):
    """What holds today, where a job's measured contention (stretch - 1) exceeds the spread of its repetitions:
    its predicted stretch within 15 % of the measured one, within 5 % for the low-frequency jobs (l*)."""
    rows = own_predictions(own_device)
    spread = {job: np.ptp([m for _, j, m, _ in rows if j == job]) for job in OWN_JOBS}
    for rep, job, measured, predicted in rows:
        print(f"run {rep} {job}: measured stretch {measured:.3f} (spread {spread[job]:.3f}), predicted {predicted:.3f}")
        if measured - 1 > spread[job]:
            assert abs(predicted / measured - 1) <= (0.05 if job.startswith("l") else 0.15)


@pytest.mark.xfail(
    strict=True,
    reason="issue #21's criterion, not met: the high-frequency jobs (h*, 20 MB every 0.4 s) are predicted 7-13 % "
    "below their measured stretch. The device calibrated on the job alone fits the throttle as a token bucket of "
    "9 MB, but blk-throttle grants 20 MB per 100 ms slice, so a 20 000 768 B phase waits a whole slice for its "
    "last 768 B. Fitted with the slice (fit=FIT_PARAMETERS) every h job but one is within 5 % (run 2 h1 7.4 % "
    "below, run 3 h0 4.8 % above), but the l jobs of run 2 fall 6-7.5 % below (it moved 188 MB/s through the "
    "200 MB/s throttle while busy, with 300-430 ms stalls), which breaks the l jobs' 5 % of the test above",
)
def test_contention_is_predicted_within_5_percent_where_the_runs_measured_more_than_their_spread(own_device):
    rows = own_predictions(own_device)
    spread = {job: np.ptp([m for _, j, m, _ in rows if j == job]) for job in OWN_JOBS}
    judged = [abs(p / m - 1) for _, job, m, p in rows if m - 1 > spread[job]]
    assert len(judged) >= 6 and max(judged) <= 0.05
