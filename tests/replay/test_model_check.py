"""The model check: each job replayed alone against its recorded runtime, on a trace whose alone replay is known."""

import polars as pl
import pytest

from iosets.errors import InputError
from iosets.replay import (
    MODEL_CHECK_THRESHOLD,
    Device,
    SchedulerComparison,
    compare_schedulers,
    model_check,
    replay_trace,
)
from iosets.replay._model_check import UNTRUSTED


def replayed(known):
    """The per-job table of the AloneKnown trace (tests/conftest.py) replayed on its device."""
    return replay_trace(known.site, device=known.device).jobs


def test_the_jobs_table_has_each_jobs_alone_ratio(alone_known):
    jobs = replayed(alone_known)
    assert jobs.select("job_id", "recorded_runtime", "alone_runtime", "alone_ratio").rows() == [
        ("a", 2.0, 2.0, 1.0),
        ("b", 2.0, 1.0, 0.5),
        ("c", 1.0, 2.0, 2.0),
        ("d", 4.0, 5.0, 1.25),
        ("e", 0.0, 1.0, None),
    ]


def test_median_p90_and_verdict_by_hand(alone_known):
    check = model_check(replayed(alone_known))
    # |ratio - 1| of a, d, b, c: 0, 0.25, 0.5, 1 (e has none); p90 at rank 0.9 * 3 = 2.7: 0.5 + 0.7 * 0.5
    assert (check.n_jobs, check.median) == (4, 0.375)
    assert check.p90 == pytest.approx(0.85, rel=1e-12)
    assert check.threshold == MODEL_CHECK_THRESHOLD == 0.25
    assert not check.trusted
    assert check.warning == f"p90 of |alone / recorded - 1| is 85 %, above 25 %: {UNTRUSTED}"
    assert UNTRUSTED == "the model does not reproduce these jobs alone: contention predictions are not to be trusted"
    assert check.farthest(3)["job_id"].to_list() == ["c", "b", "d"]
    assert check.jobs["job_id"].to_list() == ["a", "b", "c", "d", "e"]  # every job, e with a null ratio


def test_a_replay_within_the_threshold_is_trusted_up_to_the_threshold_itself(alone_known):
    ratios = {"a": 1.0, "d": 1.25}  # p90 of 0 and 0.25: 0.225
    jobs = replayed(alone_known).filter(pl.col("job_id").is_in(list(ratios)))
    check = model_check(jobs)
    assert (check.median, check.p90, check.trusted, check.warning) == (0.125, pytest.approx(0.225), True, None)
    at_the_threshold = model_check(jobs.filter(job_id="d"))  # p90 0.25 exactly: not above it
    assert (at_the_threshold.p90, at_the_threshold.trusted) == (0.25, True)
    stricter = model_check(jobs, threshold=0.2)
    assert not stricter.trusted and stricter.warning.endswith(UNTRUSTED)


def test_no_job_with_a_recorded_runtime_cannot_be_checked_and_says_so(alone_known):
    check = model_check(replay_trace(alone_known.site.filter(job_id="e"), device=alone_known.device).jobs)
    assert (check.n_jobs, check.median, check.p90, check.trusted) == (0, None, None, False)
    assert check.warning.startswith("no job has a recorded runtime above 0: the model cannot be checked")


def test_the_comparison_checks_one_schedulers_rows_and_they_are_equal_under_each(alone_known):
    got = compare_schedulers(alone_known.site, alone_known.rec, ["fcfs", "wfq"], device=alone_known.device)
    ratios = got.jobs.pivot(on="scheduler", index="job_id", values="alone_ratio")
    assert ratios["fcfs"].to_list() == ratios["wfq"].to_list() == [1.0, 0.5, 2.0, 1.25, None]
    assert got.model_check.to_dict() == model_check(replayed(alone_known)).to_dict()
    assert got.model_check.to_dict()["jobs"][1] == {
        "job_id": "b",
        "recorded_runtime": 2.0,
        "alone_runtime": 1.0,
        "alone_ratio": 0.5,
    }


def test_compute_before_the_first_request_counts_in_neither_runtime(alone_known):
    # the site's jobs table says a and c started 5 s before their first request: no trace holds those 5 s
    starts = pl.DataFrame({"job_id": ["a", "c"], "start": [-5.0, 5.0]})
    got = compare_schedulers(alone_known.site, alone_known.rec, ["fcfs"], device=alone_known.device, site_jobs=starts)
    plain = compare_schedulers(alone_known.site, alone_known.rec, ["fcfs"], device=alone_known.device)
    assert got.jobs.select("job_id", "recorded_runtime", "alone_runtime", "alone_ratio").equals(
        plain.jobs.select("job_id", "recorded_runtime", "alone_runtime", "alone_ratio")
    )
    assert got.model_check.to_dict() == plain.model_check.to_dict()
    # the metrics do count it: under fcfs a runs [0, 3] (b's request between its two), alone [0, 2]; from its
    # start 5 s earlier its stretch is (3 + 5) / (2 + 5) instead of 3 / 2
    jobs = got.jobs.select("job_id", "runtime", "alone_runtime", "stretch").rows()
    assert jobs[:2] == [("a", 3.0, 2.0, 1.5), ("b", 2.0, 1.0, 2.0)]
    others = (1.5 + 2.0 + 1.0 + 1.0 + 1.0) / 5  # a, b, c, d, e from their first request
    assert plain.schedulers["mean_stretch"].item() == pytest.approx(others)
    assert got.schedulers["mean_stretch"].item() == pytest.approx((8 / 7 + 2.0 + 1.0 + 1.0 + 1.0) / 5)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_the_ratio_survives_a_write_and_a_read(alone_known, tmp_path, suffix):
    got = compare_schedulers(alone_known.site, alone_known.rec, ["fcfs", "iosets-wfq"], device=alone_known.device)
    got.write(tmp_path / f"perjob{suffix}")
    back = SchedulerComparison.read(tmp_path / f"perjob{suffix}")
    assert back.jobs.equals(got.jobs)
    assert back.model_check.to_dict() == got.model_check.to_dict()


def test_a_table_written_before_the_ratio_existed_is_still_checked(alone_known, tmp_path):
    got = compare_schedulers(alone_known.site, alone_known.rec, ["fcfs"], device=alone_known.device)
    got.write(tmp_path / "perjob.parquet")
    got.jobs.drop("alone_ratio").write_parquet(tmp_path / "perjob.parquet")
    back = SchedulerComparison.read(tmp_path / "perjob.parquet")
    assert "alone_ratio" not in back.jobs.columns
    assert back.model_check.to_dict() == got.model_check.to_dict()  # recomputed from the runtimes


def test_no_device_warns_and_names_calibrate(alone_known):
    with pytest.warns(UserWarning, match=r"no device given: .*iosets\.replay\.calibrate\(site_requests\)"):
        got = compare_schedulers(alone_known.site, alone_known.rec, ["fcfs"])
    # the library behaviour is kept: the default device
    assert got.jobs.equals(compare_schedulers(alone_known.site, alone_known.rec, ["fcfs"], device=Device()).jobs)


@pytest.mark.parametrize(
    ("jobs", "threshold", "message"),
    [
        ("not a frame", 0.25, "model check: expected a polars DataFrame of jobs, got str"),
        (pl.DataFrame({"job_id": ["a"], "recorded_runtime": [1.0]}), 0.25, "missing column\\(s\\) alone_runtime"),
        (
            pl.DataFrame({"job_id": ["a", "a"], "recorded_runtime": [1.0, 1.0], "alone_runtime": [1.0, 2.0]}),
            0.25,
            "expected one row per job, got job_id 'a' more than once \\(give one scheduler's rows\\)",
        ),
        (
            pl.DataFrame({"job_id": ["a", "b"], "recorded_runtime": [1.0, -1.0], "alone_runtime": [1.0, 2.0]}),
            0.25,
            "job 'b': recorded_runtime: expected seconds >= 0, got -1.0",
        ),
        (
            pl.DataFrame({"job_id": ["a"], "recorded_runtime": [1.0], "alone_runtime": [float("nan")]}),
            0.25,
            "job 'a': alone_runtime: expected seconds >= 0, got nan",
        ),
        (pl.DataFrame({"job_id": ["a"], "recorded_runtime": [1.0], "alone_runtime": [1.0]}), 0, "threshold"),
    ],
)
def test_bad_input_is_refused_by_name(jobs, threshold, message):
    with pytest.raises(InputError, match=message):
        model_check(jobs, threshold=threshold)


def test_a_site_replayed_on_the_device_it_was_made_on_reproduces_every_job():
    from iosets.datasets import make_iosets_workload, workload_site_requests

    # jobs compute before their first request (their release to their first I/O): in neither runtime
    workload = make_iosets_workload([(3, 40.0, 5.0), (2, 300.0, 30.0)], horizon=2000.0, random_state=0)
    site = workload_site_requests(workload, request_size=50_000_000)
    device = Device(bandwidth=workload.bandwidth, overhead=0.0, seek=0.0)
    starts = pl.DataFrame({"job_id": workload.ids, "start": workload.release})
    rec = pl.DataFrame({"job_id": workload.ids, "set": 0, "priority": 1.0, "wfq_weight": 1, "rbfq_weight": 1.0})
    rec = rec.with_columns(rbfq_reservation=pl.lit(None, pl.Float64), rbfq_limit=pl.lit(None, pl.Float64))
    check = compare_schedulers(site, rec, ["fcfs"], device=device, site_jobs=starts).model_check
    assert check.n_jobs == 5 and check.trusted
    assert check.jobs["alone_ratio"].to_list() == pytest.approx([1.0] * 5, rel=1e-12)
