"""The trace replay against real runs of this kind of machine (issue #21, item 5): the test of record.

- contention-light (tests/data/darshan-runtime/contention-light/README.md): three periodic writers alone, then
  together, twice, on a disk whose contention is below its own noise: the device is calibrated on one
  repetition and must not invent contention on the other. The disk's speed drifted over the runs' two minutes
  (its README measures it): each job alone is reproduced by a device calibrated on its own run, not the three
  jobs of a repetition by one device.
- jobs4r3 and jobs4r5 (tests/data/darshan-runtime/validate/README.md): two experiments, a day apart, of
  `iosets validate --darshan` runs of the IO-SETS paper's Fig. 4 scenario, 4 jobs sharing a 200 MB/s block-I/O
  throttle, three and five repetitions: in each the device is calibrated on the run of one job alone and the
  contention of each repetition is predicted from its trace.
"""

import functools
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from iosets.analyzer import site_trace
from iosets.replay import FIT_PARAMETERS, calibrate, replay_trace
from iosets.replay._evidence import found_idle

DATA = Path(__file__).parent.parent / "data" / "darshan-runtime"
LIGHT = DATA / "contention-light"
VALIDATE = DATA / "validate"
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
    "runs, the jobs' median phase ratios are r0 1.047, 0.987, 0.930 and r1 1.015, 0.498, 1.088 (cj1, cj2, cj3). "
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


@functools.cache
def own_site(experiment: str, run: str) -> pl.DataFrame:
    """The site trace of one run of an experiment (``calibration`` or ``system-<repetition>``)."""
    return site_trace([VALIDATE / experiment / run], workers=1).requests


@functools.cache
def own_calibration(experiment: str, *, sliced: bool = True):
    """The calibration on the logs of the experiment's run of one job alone (a continuous bucket, no slice, unless
    ``sliced``)."""
    fit = FIT_PARAMETERS if sliced else tuple(name for name in FIT_PARAMETERS if name != "slice")
    return calibrate(own_site(experiment, "calibration"), fit=fit)


@pytest.mark.parametrize(("experiment", "n_phases"), [("jobs4r3", 2), ("jobs4r5", 1)])
def test_the_job_alone_is_replayed_within_5_percent_of_its_recorded_phases(experiment, n_phases):
    device = own_calibration(experiment).device
    replay = replay_trace(own_site(experiment, "calibration"), device=device)
    ratio = (replay.phases["end"] - replay.phases["start"]) / (
        replay.phases["recorded_end"] - replay.phases["recorded_start"]
    )
    print(f"\n{experiment}: own device {device.describe()}; alone phase ratios {ratio.to_list()}")
    assert replay.phases.height == n_phases and abs(ratio.median() - 1) <= 0.05


@pytest.mark.parametrize("experiment", ["jobs4r3", "jobs4r5"])
def test_under_the_throttle_the_bandwidth_is_what_the_requests_found_idle_show(experiment):
    """The phases of a job alone last what the 200 MB/s throttle lets through, whatever the disk's speed: the
    bandwidth is the median rate of the requests found idle (every request here: one rank, one after the other),
    the disk's own (~0.4-0.5 ms per MiB), not the throttle's rate the phases would pull it down to (jobs4r5's flat
    200 MB/s device); the rate, the bytes over the time of the requests from their phase's first wait on, is the
    throttle's within 2.5 % (blk-throttle grants it per 100 ms slice, so the first slice's bytes pass at once)."""
    requests = own_site(experiment, "calibration").sort("start")
    start, end, size = (requests[name].to_numpy() for name in ("start", "end", "size"))
    calibration = own_calibration(experiment, sliced=False)
    how = {p.name: p for p in calibration.parameters}
    print(f"\n{experiment}: {calibration.device.describe()}")
    assert found_idle(start, end).all()
    assert calibration.device.bandwidth == pytest.approx(np.median(size / (end - start)), rel=1e-12)
    assert how["bandwidth"].how == "fitted" and how["bandwidth"].evidence == requests.height
    assert how["bandwidth"].reason.startswith(f"the median rate of {requests.height} requests found idle")
    assert calibration.device.bandwidth > 5 * calibration.device.rate
    assert calibration.device.rate == pytest.approx(200e6, rel=0.025)
    assert how["rate"].how == how["burst"].how == "fitted"


@pytest.mark.parametrize("experiment", ["jobs4r3", "jobs4r5"])
def test_the_alone_run_shows_blk_throttles_slices(experiment):
    """200 MB/s in 100 ms slices (Linux 6.18, HZ 250): fitted with the slice, the budget is 20 MB within what the
    requests tell, below the 20 000 768 B of a high-frequency job's phase, whose last request waits a slice."""
    got = own_calibration(experiment)
    assert got.device.slice == pytest.approx(0.1, rel=1e-3) and got.device.burst == 0.0
    assert 19.99e6 < got.device.rate * got.device.slice < 20_000_768


def measured_stretch(experiment: str) -> dict[tuple[int, str], float]:
    """Each job's measured stretch per repetition (its runtime over compute + bytes / B, the programs' clocks)."""
    checks = json.loads((VALIDATE / experiment / "validation.json").read_text())["darshan"]["jobs"]
    return {(check["repetition"], check["job_id"]): check["stretch"]["measured"] for check in checks}


def own_predictions(experiment: str, device) -> list[tuple[int, str, float, float]]:
    """(repetition, job, measured stretch, predicted stretch) of every job of the experiment's runs, replayed on
    ``device``: the predicted stretch is the measured one times the replay's runtime over the recorded one (both
    stretches are over the same ideal, compute + bytes / B)."""
    measured = measured_stretch(experiment)
    rows = []
    for rep in sorted({rep for rep, _ in measured}):
        replay = replay_trace(own_site(experiment, f"system-{rep}"), device=device)
        for row in replay.jobs.sort("job_id").iter_rows(named=True):
            job = OWN_JOBS[int(row["job_id"]) - 1]
            rows.append(
                (rep, job, measured[(rep, job)], measured[(rep, job)] * row["runtime"] / row["recorded_runtime"])
            )
    return rows


def judged_errors(rows: list[tuple[int, str, float, float]]) -> list[tuple[str, float]]:
    """(job, predicted / measured - 1) of the jobs whose measured contention (stretch - 1) exceeds the spread of
    their repetitions' measured stretches, each printed."""
    spread = {job: np.ptp([m for _, j, m, _ in rows if j == job]) for job in OWN_JOBS}
    judged = []
    for rep, job, measured, predicted in rows:
        counted = measured - 1 > spread[job]
        print(
            f"run {rep} {job}: measured stretch {measured:.3f} (spread {spread[job]:.3f}), predicted {predicted:.3f} "
            f"({(predicted / measured - 1) * 100:+.1f} %){'' if counted else ', not judged'}"
        )
        if counted:
            judged.append((job, predicted / measured - 1))
    return judged


@pytest.mark.parametrize("experiment", ["jobs4r3", "jobs4r5"])
def test_contention_is_predicted_within_8_percent_where_the_runs_measured_more_than_their_spread(experiment):
    """What holds on both experiments with the device calibrated on the job alone (the slice found there): where a
    job's measured contention (stretch - 1) exceeds the spread of its repetitions, its predicted stretch within 8 %
    of the measured one. A continuous bucket (no slice) is off by up to 11 % (jobs4r3) and 15 % (jobs4r5)."""
    judged = judged_errors(own_predictions(experiment, own_calibration(experiment).device))
    assert len(judged) >= 6 and max(abs(error) for _, error in judged) <= 0.08


@pytest.mark.xfail(
    strict=True,
    reason="issue #21's criterion, not met on either experiment. With the slice fitted on the job alone: jobs4r3 "
    "run 2 h1 -7.4 %, l0 -6.0 %, l1 -7.5 % (that run moved 188 MB/s through the 200 MB/s throttle while busy, "
    "with 300-430 ms stalls no other run has); jobs4r5 every h job within 3.4 %, l within 3.5 % but run 1 l0 "
    "+7.2 %. Without the slice (a continuous bucket) jobs4r3's h jobs are 2-11 % above and jobs4r5's 10-15 % below",
)
@pytest.mark.parametrize("experiment", ["jobs4r3", "jobs4r5"])
def test_contention_is_predicted_within_5_percent_where_the_runs_measured_more_than_their_spread(experiment):
    judged = judged_errors(own_predictions(experiment, own_calibration(experiment).device))
    assert len(judged) >= 6 and max(abs(error) for _, error in judged) <= 0.05
