"""The verdict: every number computed here by hand from small replay, recommendation and tuning tables."""

import numpy as np
import polars as pl
import pytest
from reading import read_page
from typer.testing import CliRunner

from iosets.cli import app
from iosets.errors import InputError
from iosets.report import build_report
from iosets.report._busy import overlapped_share
from iosets.report._document import ReportInputs
from iosets.report._verdict import verdict_section
from iosets.schemas import JOBS, RECOMMENDED_JOBS, TRACE_REPLAY_JOBS, TRACE_REPLAY_SCHEDULERS, TUNE_RANKING

JOB_IDS = ["a", "b", "c", "d"]

METRICS = {
    #               utilization, io_slowdown, max_stretch, mean_stretch, p99_stretch
    "fcfs": (0.60, 2.0, 3.0, 1.200, 2.5),
    "wfq": (0.50, 2.2, 3.3, 1.300, 2.6),
    "iosets-wfq": (0.66, 1.5, 3.6, 1.206, 2.5),
}
# iosets-wfq against fcfs: utilization 0.66 / 0.60 - 1 = +10 % (better), IO-slowdown 1.5 / 2 - 1 = -25 % (better),
# Max Stretch 3.6 / 3 - 1 = +20 % (worse), mean stretch 1.206 / 1.2 - 1 = +0.5 % (within 1 %: no change),
# p99 equal (no change).


def schedulers(metrics=METRICS):
    names = ["utilization", "io_slowdown", "max_stretch", "mean_stretch", "p99_stretch"]
    rows = [
        {"scheduler": name, **dict(zip(names, values, strict=True)), "utilization_bound": 0.9, "throughput": 1e9}
        for name, values in metrics.items()
    ]
    frame = pl.DataFrame(rows).with_columns(window_start=pl.lit(0.0), window_end=pl.lit(100.0))
    return TRACE_REPLAY_SCHEDULERS.validate(frame)


RECORDED = [100.0, 100.0, 100.0, 100.0]
ALONE = [100.0, 110.0, 95.0, 140.0]  # |alone / recorded - 1|: 0, 0.10, 0.05, 0.40


def replay_jobs(alone=ALONE):
    rows = [
        (job, scheduler, recorded, alone_runtime * 1.2, alone_runtime, 1.2, 1.0, 0.2 * alone_runtime)
        for scheduler in METRICS
        for job, recorded, alone_runtime in zip(JOB_IDS, RECORDED, alone, strict=True)
    ]
    columns = ["job_id", "scheduler", "recorded_runtime", "runtime", "alone_runtime", "stretch", "io_slowdown", "wait"]
    return TRACE_REPLAY_JOBS.validate(pl.DataFrame(rows, schema=columns, orient="row"))


def jobs(**columns):
    base = {
        "job_id": JOB_IDS,
        "user": ["u1", "u1", "u2", "u3"],
        "app": ["ior", "ior", "wrf", "lammps"],
        "start": [1.7e9, 1.7e9 + 50, 1.7e9 + 20, 1.7e9 + 30],
        "end": [1.7e9 + 100, 1.7e9 + 150, 1.7e9 + 120, 1.7e9 + 130],
        "bytes_read": [1e9, 2e9, None, 0.0],
        "bytes_written": [0.0, 1e9, 4e9, 2e9],
        "w_iter": [10.0, 12.0, 100.0, None],
        "w_iter_confidence": [0.9, 0.8, 0.3, 0.0],
        "alpha_io": [0.1, 0.2, 0.3, None],
        "not_periodic": [None, None, None, "irregular"],
        "source": ["dxt", "dxt", "heatmap", "dxt"],
    }
    return JOBS.validate(pl.DataFrame(base | columns))


def recommendation(table=None, wfq=(10_485_760, 10_485_760, 1_048_576, 1_048_576)):
    """SET-10: w_iter 10 and 12 s give set 1; c (confidence 0.3) and d (no w_iter) the conservative set 2."""
    frame = (table if table is not None else jobs()).with_columns(
        set=pl.Series([1, 1, 2, 2]),
        priority=pl.Series([0.1, 0.1, 0.01, 0.01]),
        conservative=pl.Series([False, False, True, True]),
        wfq_weight=pl.Series(list(wfq)),
        rbfq_reservation=pl.Series([None] * 4, dtype=pl.Float64),
        rbfq_weight=pl.Series([10.0, 10.0, 1.0, 1.0]),
        rbfq_limit=pl.Series([None] * 4, dtype=pl.Float64),
    )
    return RECOMMENDED_JOBS.validate(frame)


def tune(mappings=("set-10", "set-5", "fair-share"), n_sets=(1, 1, 2), utilization=(0.9, 0.8, 0.7)):
    frame = pl.DataFrame(
        {
            "rank": list(range(1, len(mappings) + 1)),
            "mapping": list(mappings),
            "n_sets": list(n_sets),
            "utilization": list(utilization),
            "io_slowdown": [1.0] * len(mappings),
            "max_stretch": [1.0] * len(mappings),
        }
    )
    return TUNE_RANKING.validate(frame)


def inputs(**changes):
    given = {
        "jobs": jobs(),
        "recommendation": recommendation(),
        "replay_jobs": replay_jobs(),
        "replay_schedulers": schedulers(),
        "tune": tune(),
    }
    return ReportInputs(**(given | changes))


def metrics_table(section):
    (table,) = [t for t in section.tables if t.id == "verdict-metrics"]
    return table


def test_the_change_of_each_metric_by_hand():
    section = verdict_section(inputs())
    assert section.id == "verdict" and section.missing is None
    table = metrics_table(section)
    assert table.title == "iosets-wfq (the recommendation) against fcfs (the baseline)"
    frame = table.frame
    assert frame["metric"].to_list() == ["Utilization", "IO-slowdown", "Max Stretch", "mean stretch", "p99 stretch"]
    assert frame["baseline"].to_list() == list(METRICS["fcfs"])
    assert frame["recommended"].to_list() == list(METRICS["iosets-wfq"])
    assert frame["change"].to_list() == pytest.approx([0.10, -0.25, 0.20, 0.005, 0.0])
    assert frame["reading"].to_list() == ["better", "better", "worse", "no change", "no change"]
    reading = section.reading
    assert "Utilization 0.600 → 0.660 (+10.0 %, better)" in reading
    assert "Max Stretch 3.000 → 3.600 (+20.0 %, worse)" in reading
    assert "mean stretch 1.200 → 1.206 (+0.5 %, no change)" in reading
    assert (
        "Better on 2 of 5 metrics (Utilization and IO-slowdown), worse on Max Stretch, no change on mean stretch "
        "and p99 stretch (within ±1 % of the baseline's value)."
    ) in reading
    assert reading.startswith(
        "In short: iosets-wfq (the recommendation) against fcfs (the baseline): better on 2 of 5 metrics, worse on 1."
    )


def test_a_tie_is_reported_as_a_tie():
    same = {"fcfs": METRICS["fcfs"], "iosets-wfq": METRICS["fcfs"]}
    section = verdict_section(inputs(replay_schedulers=schedulers(same)))
    assert metrics_table(section).frame["reading"].to_list() == ["no change"] * 5
    assert "No metric changes (within ±1 % of the baseline's value): a tie" in section.reading
    assert "no change on any of the 5 metrics (a tie)" in section.reading


def test_the_named_baseline_is_the_one_compared_with():
    section = verdict_section(inputs(baseline="wfq"))
    table = metrics_table(section)
    assert table.title == "iosets-wfq (the recommendation) against wfq (the baseline)"
    assert table.frame["baseline"].to_list() == list(METRICS["wfq"])
    # 0.66 / 0.5, 1.5 / 2.2, 3.6 / 3.3, 1.206 / 1.3, 2.5 / 2.6, each minus 1
    expected = [0.66 / 0.5 - 1, 1.5 / 2.2 - 1, 3.6 / 3.3 - 1, 1.206 / 1.3 - 1, 2.5 / 2.6 - 1]
    assert table.frame["change"].to_list() == pytest.approx(expected)
    assert "Against wfq (the baseline named by --baseline: the policy the site runs today)" in section.reading


def test_evidence_shares_of_jobs_and_bytes():
    reading = verdict_section(inputs()).reading
    # a and b are confident: 2 of 4 jobs; bytes a 1e9 + b 3e9 = 4e9 of 4e9 + c 4e9 + d 2e9 = 10e9: 40 %
    assert "50.0 % of the jobs (2 of 4 jobs) rest on a confident period" in reading
    assert "they move 40.0 % of the bytes" in reading
    assert "Their periods come from dxt (2 jobs)." in reading
    assert "The 2 others are on thin evidence (irregular 1, low confidence or no w_iter 1)" in reading


def test_the_model_checks_grade_is_the_model_checks():
    distances = np.abs(np.array(ALONE) / np.array(RECORDED) - 1)
    median, p90 = np.quantile(distances, 0.5), np.quantile(distances, 0.9)  # 0.075, 0.31: above 25 %
    reading = verdict_section(inputs()).reading
    assert f"median {100 * median:.1f} % and p90 {100 * p90:.1f} % (threshold 25.0 %)" in reading
    assert "Model check: not trusted" in reading and "`iosets calibrate site.parquet -o dev.json`" in reading
    trusted = verdict_section(inputs(replay_jobs=replay_jobs([100.0, 101.0, 99.0, 100.0]))).reading
    assert "Model check: trusted; over 4 jobs replayed alone" in trusted


def test_tuning_and_recommendation_agree_and_the_set_counts_are_explained():
    reading = verdict_section(inputs()).reading
    assert "Tuning: it ranks set-10 first; the recommendation's set-10 is among them: they agree." in reading
    assert (
        "The tuning counts 1 set and the recommendation 2: the tuning replays only jobs with a known period, which "
        "fall in 1 set; the recommendation adds the conservative set"
    ) in reading


def test_a_disagreement_is_said_with_the_one_used_and_why():
    ranking = tune(("set-5", "set-10", "fair-share"), n_sets=(2, 1, 3))
    reading = verdict_section(inputs(tune=ranking)).reading
    assert (
        "Tuning and recommendation disagree: the tuning ranks set-5 first (2 sets) and ranks the recommendation's "
        "set-10 at rank 2, while the recommendation has 2 sets. The verdict judges the recommendation, because the "
        "trace replay replayed its sets on the site's own requests; the tuning replayed 3 of 4 jobs as idealised "
        "periodic jobs."
    ) in reading  # a, b, c have a w_iter and an alpha_io (tune_selection); d has neither
    assert "`iosets recommend jobs.parquet --mapping set-5 -o rec.parquet`" in reading


def test_fair_share_first_is_said_as_one_class_per_job():
    ranking = tune(("fair-share", "set-10"), n_sets=(3, 1), utilization=(0.9, 0.8))
    reading = verdict_section(inputs(tune=ranking)).reading
    assert "the tuning ranks fair-share first (one class per job: 3 jobs) and ranks the recommendation's set-10" in (
        reading
    )
    assert "FAIR-SHARE is no mapping to recommend: the replay's wfq (one class per job) runs it." in reading
    assert "--mapping fair-share" not in reading


def test_tied_candidates_agree_with_the_recommendation():
    ranking = tune(("set-5", "set-10", "fair-share"), utilization=(0.9, 0.9, 0.7))
    reading = verdict_section(inputs(tune=ranking)).reading
    assert "Tuning: it ranks set-5 and set-10 (tied) first; the recommendation's set-10 is among them" in reading


def test_saturated_wfq_weights_are_a_warning():
    saturated = recommendation(wfq=(2**31 - 1, 2**31 - 1, 1_048_576, 1_048_576))
    reading = verdict_section(inputs(recommendation=saturated)).reading
    assert "WFQ weights saturate: set 1 hits 2,147,483,647 bytes per round" in reading
    assert "(the replay's iosets-wfq used them as they are)" in reading
    assert "WFQ weights saturate" not in verdict_section(inputs()).reading


def test_overlap_share_by_hand():
    def share(start, end):
        return overlapped_share(
            pl.DataFrame({"start": start, "end": end}, schema={"start": pl.Float64, "end": pl.Float64})
        )

    assert share([0.0, 90.0, 200.0], [100.0, 110.0, 300.0]) == pytest.approx(20 / 220)
    assert share([0.0, 0.0], [10.0, 10.0]) == 1.0
    assert share([5.0], [5.0]) == 0.0


def test_barely_overlapping_jobs_and_a_tuning_on_few_jobs_are_warnings():
    start = [1.7e9, 1.7e9 + 90, 1.7e9 + 200, 1.7e9 + 400]
    end = [1.7e9 + 100, 1.7e9 + 110, 1.7e9 + 300, 1.7e9 + 500]  # 320 s of runs, 20 s shared: 6.25 %
    table = jobs(start=start, end=end, alpha_io=[0.1, None, None, None])
    reading = verdict_section(inputs(jobs=table, recommendation=recommendation(table))).reading
    assert "The jobs barely overlap: 6.2 % of their run time is spent with another job running" in reading
    assert "between 2023-11-14 22:13 and 2023-11-14 22:21" in reading
    # tune_selection keeps the periodic jobs with an alpha_io: only a
    assert "The tuning used few jobs: it replays only the periodic jobs with an alpha_io, 1 of 4 jobs" in reading
    assert "barely overlap" not in verdict_section(inputs()).reading  # the default jobs overlap 65 % of their time


def test_missing_inputs_say_what_was_not_judged_and_the_command():
    section = verdict_section(ReportInputs(jobs=jobs()))
    reading = section.reading
    assert section.tables == ()
    assert "Not judged: which mapping. No recommendation given: `iosets recommend jobs.parquet -o rec.parquet`" in (
        reading
    )
    assert "It needs a trace replay: `iosets recommend jobs.parquet -o rec.parquet`, then `iosets ingest" in reading
    assert "`iosets tune jobs.parquet -o ranking.parquet`" in reading


def test_no_periodic_job_gets_no_tune_advice():
    table = jobs(w_iter=[None] * 4, not_periodic=["irregular"] * 4)
    reading = verdict_section(ReportInputs(jobs=table)).reading
    assert "iosets tune" not in reading
    assert "The tuning replays periodic jobs with an alpha_io, and this jobs table has none" in reading


def test_a_replay_without_the_recommended_scheduler_says_so():
    only = replay_jobs().filter(pl.col("scheduler") != "iosets-wfq")
    section = verdict_section(inputs(replay_jobs=only, replay_schedulers=None))
    assert section.tables == ()
    assert "The replay holds fcfs and wfq: none applies the recommendation's sets (iosets-wfq or rbfq)." in (
        section.reading
    )


def test_a_baseline_that_applies_the_sets_is_said():
    section = verdict_section(inputs(baseline="iosets-wfq"))
    assert section.tables == ()
    assert "The baseline, iosets-wfq, is itself the scheduler that applies the recommendation's sets" in (
        section.reading
    )


def test_without_w_iter_the_commands_start_with_analyze():
    reading = verdict_section(ReportInputs(jobs=JOBS.validate(pl.DataFrame({"job_id": ["a"]})))).reading
    assert "The jobs table has no w_iter: `iosets analyze LOGS -o jobs.parquet`" in reading
    assert "It needs a trace replay: `iosets analyze LOGS -o jobs.parquet`, `iosets recommend jobs.parquet" in reading
    assert "iosets tune" not in reading


def test_one_job_reads_right():
    one = jobs().head(1)
    rec = recommendation(jobs()).head(1)
    reading = verdict_section(ReportInputs(jobs=one, recommendation=rec)).reading
    assert "Recommended: SET-10 (set s has priority 10^-s), its one job in set 1." in reading
    assert "100.0 % of the jobs (1 of 1 job) rest on a confident period" in reading
    for broken in ("1 jobs", "of 1 jobs", "1 sets"):
        assert broken not in reading


def test_the_verdict_is_the_first_section_and_an_unknown_baseline_is_an_error():
    given = {"jobs": jobs(), "recommendation": recommendation(), "replay": {"jobs": replay_jobs()}}
    report = build_report(**given)
    assert report.sections[0].id == "verdict" and report.sections[4].id == "impact"
    with pytest.raises(InputError, match=r"baseline 'sjf': not a scheduler of the trace replay; it holds fcfs, wfq"):
        build_report(**given, baseline="sjf")
    with pytest.raises(InputError, match=r"baseline 'sjf': not a scheduler iosets replays; expected one of fcfs"):
        build_report(jobs(), baseline="sjf")


def test_the_baseline_flag_through_the_cli(tmp_path):
    jobs().write_parquet(tmp_path / "jobs.parquet")
    recommendation().write_parquet(tmp_path / "rec.parquet")
    replay_jobs().write_parquet(tmp_path / "perjob.parquet")
    schedulers().write_parquet(tmp_path / "perjob.schedulers.parquet")
    args = ["report", str(tmp_path / "jobs.parquet"), "--rec", str(tmp_path / "rec.parquet")]
    args += ["--replay", str(tmp_path / "perjob.parquet"), "-o", str(tmp_path / "report.html")]
    result = CliRunner().invoke(app, [*args, "--baseline", "wfq"])
    assert result.exit_code == 0, result.output
    page = read_page((tmp_path / "report.html").read_text(encoding="utf-8"))
    assert list(page.sections)[0] == "verdict"
    values = page.tables["verdict-metrics"].column("baseline")
    assert [value for value, _ in values] == [str(v) for v in METRICS["wfq"]]
    wrong = CliRunner().invoke(app, [*args, "--baseline", "sjf"])
    assert wrong.exit_code == 1
    assert wrong.stderr == (
        f"error: baseline 'sjf': not a scheduler of {tmp_path / 'perjob.parquet'}; it holds fcfs, wfq, iosets-wfq\n"
    )
