"""The "What each scheduler would do" section: the replay's and the tuning's numbers, gains and losses by hand."""

import json

import numpy as np
import polars as pl
import pytest

from iosets.report._baseline import baseline_of
from iosets.report._document import ReportInputs
from iosets.report._palette import set_colour
from iosets.report._scheduler import both_sides, scheduler_order, scheduler_section, tied_ranks
from iosets.schemas import JOBS, RECOMMENDED_JOBS, TRACE_REPLAY_JOBS, TRACE_REPLAY_SCHEDULERS, TUNE_RANKING

JOB_IDS = ["a", "b", "c"]
RUNTIMES = {"fcfs": [10.0, 20.0, 30.0], "iosets-wfq": [8.0, 25.0, 30.0], "wfq": [10.0, 21.0, 36.0]}
# Against fcfs: iosets-wfq a -20 %, b +25 %, c 0; wfq a 0, b +5 %, c +20 %.


def replay_jobs(runtimes=RUNTIMES):
    rows = [
        (job, scheduler, runtime, runtime, 10.0, runtime / 10.0, 1.0, runtime - 10.0)
        for scheduler, values in runtimes.items()
        for job, runtime in zip(JOB_IDS, values, strict=True)
    ]
    columns = ["job_id", "scheduler", "recorded_runtime", "runtime", "alone_runtime", "stretch", "io_slowdown", "wait"]
    return TRACE_REPLAY_JOBS.validate(pl.DataFrame(rows, schema=columns, orient="row"))


def replay_schedulers():
    frame = pl.DataFrame(
        {
            "scheduler": ["fcfs", "iosets-wfq", "wfq"],
            "utilization": [0.61, 0.72, 0.65],
            "utilization_bound": [0.8, 0.8, 0.8],
            "io_slowdown": [1.9, 1.3, None],
            "max_stretch": [3.0, 2.5, 2.9],
            "mean_stretch": [1.14, 1.11, 1.2],
            "p99_stretch": [2.9, 2.4, 2.8],
            "throughput": [1.5e9, 1.7e9, 1.6e9],
            "window_start": [0.0] * 3,
            "window_end": [100.0] * 3,
        }
    )
    return TRACE_REPLAY_SCHEDULERS.validate(frame)


def recommendation():
    frame = pl.DataFrame(
        {
            "job_id": JOB_IDS,
            "set": [0, 1, 1],
            "priority": [1.0, 0.1, 0.1],
            "conservative": [False] * 3,
            "wfq_weight": [10, 1, 1],
            "rbfq_reservation": [None] * 3,
            "rbfq_weight": [10.0, 1.0, 1.0],
            "rbfq_limit": [None] * 3,
        }
    )
    return RECOMMENDED_JOBS.validate(frame)


def tune():
    frame = pl.DataFrame(
        {
            "rank": [1, 2, 3],
            "mapping": ["set-10", "gmm", "fair-share"],
            "n_sets": [3, 2, 3],
            "utilization": [0.72, 0.7, 0.6],
            "io_slowdown": [1.3, 1.4, 1.9],
            "max_stretch": [2.5, 2.6, 3.0],
            "idealised_rank": [2, 1, 3],
        }
    )
    return TUNE_RANKING.validate(frame)


def jobs():
    return JOBS.validate(pl.DataFrame({"job_id": JOB_IDS}))


def full_inputs(**changes):
    given = {
        "jobs": jobs(),
        "recommendation": recommendation(),
        "replay_jobs": replay_jobs(),
        "replay_schedulers": replay_schedulers(),
        "tune": tune(),
    }
    return ReportInputs(**(given | changes))


def table(section, table_id):
    return next(t for t in section.tables if t.id == table_id)


def figure(section, figure_id):
    return next(f for f in section.figures if f.id == figure_id)


def test_order_and_baseline():
    inputs = full_inputs()
    assert scheduler_order(inputs) == ["fcfs", "iosets-wfq", "wfq"]
    assert baseline_of(inputs) == "fcfs"
    assert baseline_of(full_inputs(baseline="wfq")) == "wfq"
    wfq_first = {"wfq": RUNTIMES["wfq"], "rbfq": RUNTIMES["fcfs"]}
    assert baseline_of(full_inputs(replay_jobs=replay_jobs(wfq_first), replay_schedulers=None)) == "wfq"
    assert baseline_of(ReportInputs(jobs=jobs())) is None


def test_comparison_table_and_bars_equal_the_per_policy_table():
    section = scheduler_section(full_inputs())
    compare = table(section, "scheduler-compare").frame
    assert compare.equals(replay_schedulers().select(compare.columns))
    plot = figure(section, "scheduler-compare-plot")
    bars = {trace["name"]: trace for trace in plot.data if trace["type"] == "bar"}
    assert bars["Utilization"]["x"] == ["fcfs", "iosets-wfq", "wfq"]
    assert bars["Utilization"]["y"] == [0.61, 0.72, 0.65]
    assert bars["IO-slowdown"]["y"] == [1.9, 1.3, None]
    assert bars["throughput (B/s)"]["y"] == [1.5e9, 1.7e9, 1.6e9]
    # stretches and IO-slowdown are 1 at best: their axes start at 1 (1.212 and 1.188 no longer look equal)
    assert plot.layout["yaxis2"]["range"] == pytest.approx([1.0, 1.9 + 0.09])  # IO-slowdown, None left out
    assert plot.layout["yaxis3"]["range"] == pytest.approx([1.0, 3.0 + 0.2])  # Max Stretch
    assert plot.layout["yaxis"]["rangemode"] == "tozero"  # Utilization
    (bound,) = [trace for trace in plot.data if trace["name"] == "upper bound"]
    assert bound["y"] == [0.8, 0.8, 0.8] and bound["mode"] == "markers"


def test_gains_and_losses_by_hand():
    section = scheduler_section(full_inputs())
    extremes = table(section, "scheduler-extremes").frame
    assert extremes.select("scheduler", "side", "job_id", "set", "change").rows() == [
        ("iosets-wfq", "gain", "a", 0, -2.0),
        ("iosets-wfq", "loss", "b", 1, 5.0),
        ("wfq", "loss", "c", 1, 6.0),
        ("wfq", "loss", "b", 1, 1.0),
    ]
    assert extremes["relative_change"].to_list() == pytest.approx([-0.2, 0.25, 0.2, 0.05])
    bars = figure(section, "scheduler-extremes-iosets-wfq").data[0]
    assert bars["y"] == ["b", "a"] and bars["x"] == pytest.approx([25.0, -20.0])
    assert bars["marker"]["color"] == [set_colour(1), set_colour(0)]


def test_mean_change_per_set_by_hand():
    section = scheduler_section(full_inputs())
    per_set = table(section, "scheduler-sets").frame
    assert per_set.select("scheduler", "set", "jobs", "longer", "shorter").rows() == [
        ("iosets-wfq", 0, 1, 0, 1),
        ("iosets-wfq", 1, 2, 1, 0),
        ("wfq", 0, 1, 0, 0),
        ("wfq", 1, 2, 1, 0),
    ]
    assert per_set["mean_change"].to_list() == pytest.approx([-2.0, 2.5, 0.0, 3.5])
    assert per_set["mean_relative_change"].to_list() == pytest.approx([-0.2, 0.125, 0.0, 0.125])
    plot = figure(section, "scheduler-sets-plot")
    assert [trace["name"] for trace in plot.data] == ["iosets-wfq", "wfq"]
    assert plot.data[0]["y"] == pytest.approx([-20.0, 12.5])


def test_reading_gives_the_key_numbers():
    reading = scheduler_section(full_inputs()).reading
    assert "The baseline is fcfs (the default baseline" in reading
    assert "Under iosets-wfq, mean stretch 1.110 against 1.140 under fcfs" in reading
    assert "of 3 jobs, 1 runs more than 10 % longer and 1 more than 10 % shorter" in reading
    assert "Set 0 gains most (mean runtime change -20.0 %), set 1 pays most (+12.5 %)" in reading
    assert "utilization is 0.720 (upper bound 0.800)" in reading
    assert "The tuning ranks set-10 first (3 sets; utilization 0.720, Max Stretch 2.500) among 3 candidate" in reading
    assert "differs for 2 of 3 mappings" in reading


def test_reading_reports_both_sides():
    # iosets-wfq: better mean stretch than wfq (1.11 < 1.20), but wfq beats it on Max Stretch and p99 (by > 1 %)
    schedulers = replay_schedulers().with_columns(
        max_stretch=pl.Series([3.0, 2.5, 2.0]), p99_stretch=pl.Series([2.9, 2.4, 2.1])
    )
    reading = scheduler_section(full_inputs(replay_schedulers=schedulers)).reading
    assert (
        "iosets-wfq is best or tied with every other scheduler on Utilization, IO-slowdown and mean stretch; "
        "wfq beats it on Max Stretch (2.000 against 2.500) and p99 stretch (2.100 against 2.400)."
    ) in reading


def test_both_sides_counts_a_change_within_one_percent_as_a_tie():
    frame = pl.DataFrame(
        {
            "scheduler": ["a", "b"],
            "utilization": [0.500, 0.504],  # +0.8 %: a tie
            "io_slowdown": [1.30, 1.30],  # equal: a tie
            "max_stretch": [2.00, 2.03],  # b 1.5 % worse: a is better
            "mean_stretch": [1.10, 1.0],  # b better by 9.1 %
            "p99_stretch": [None, 1.5],  # undefined for a: not judged
        }
    )
    assert both_sides(frame, "a") == (
        "a is best or tied with every other scheduler on Utilization, IO-slowdown and Max Stretch; "
        "b beats it on mean stretch (1.000 against 1.100)."
    )
    assert both_sides(frame, "b") == (  # a's undefined p99 beats nothing
        "b is best or tied with every other scheduler on Utilization, IO-slowdown, mean stretch and p99 stretch; "
        "a beats it on Max Stretch (2.000 against 2.030)."
    )


def test_a_named_baseline_is_the_one_compared_with():
    section = scheduler_section(full_inputs(baseline="wfq"))
    assert "The baseline is wfq (the baseline named by --baseline" in section.reading
    assert "Under iosets-wfq, mean stretch 1.110 against 1.200 under wfq" in section.reading
    extremes = table(section, "scheduler-extremes")
    assert extremes.title.endswith("against wfq")
    # against wfq: iosets-wfq a 8/10 - 1 = -20 %, b 25/21 - 1, c 30/36 - 1; fcfs a 0, b 20/21 - 1, c 30/36 - 1
    rows = extremes.frame.filter(pl.col("scheduler") == "iosets-wfq").sort("job_id")
    assert rows["relative_change"].to_list() == pytest.approx([-0.2, 25 / 21 - 1, 30 / 36 - 1])


def test_tied_candidates_share_a_rank():
    frame = pl.DataFrame(
        {
            "rank": [1, 2, 3, 4],
            "mapping": ["set-5", "set-10", "set-2", "fair-share"],
            "n_sets": [1, 1, 2, 3],
            "utilization": [0.99727, 0.99727, 0.997265, 0.9967],  # set-2 within 1e-4 of set-5
            "io_slowdown": [1.0, 1.0, 1.0011, 1.18],  # set-2 within 1 %, fair-share 18 % worse
            "max_stretch": [1.0, 1.0, 1.000006, 1.0008],
        }
    )
    ranking = TUNE_RANKING.validate(frame)
    assert tied_ranks(ranking)["tied_rank"].to_list() == [1, 1, 1, 4]
    section = scheduler_section(ReportInputs(jobs=jobs(), tune=ranking))
    assert table(section, "scheduler-tune").frame["rank"].to_list() == [1, 1, 1, 4]
    assert (
        "The tuning ties 3 mappings for first among 4 candidate mappings: set-5 (1 set), set-10 (1 set) and "
        "set-2 (2 sets) (utilization 0.997, Max Stretch 1.000); it does not tell them apart."
    ) in section.reading


def test_sets_that_do_not_change_are_not_ranked():
    same = {"fcfs": RUNTIMES["fcfs"], "iosets-wfq": [10.0, 20.1, 30.0]}  # b +0.5 %: within 1 %
    reading = scheduler_section(full_inputs(replay_jobs=replay_jobs(same), replay_schedulers=None)).reading
    assert "No set's mean runtime changes beyond ±1 %." in reading
    assert "gains most" not in reading and "fares worst" not in reading


def test_stretch_ecdf_is_reduced_and_exact():
    rng = np.random.default_rng(1)
    n = 1000
    stretch = {scheduler: 1 + rng.exponential(0.2 * (k + 1), n) for k, scheduler in enumerate(["fcfs", "wfq"])}
    frame = pl.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)] * 2,
            "scheduler": ["fcfs"] * n + ["wfq"] * n,
            "recorded_runtime": 1.0,
            "runtime": np.concatenate(list(stretch.values())),
            "alone_runtime": 1.0,
            "stretch": np.concatenate(list(stretch.values())),
            "io_slowdown": 1.0,
            "wait": 0.0,
        }
    )
    inputs = ReportInputs(jobs=jobs(), replay_jobs=TRACE_REPLAY_JOBS.validate(frame))
    plot = figure(scheduler_section(inputs), "scheduler-stretch")
    assert [trace["name"] for trace in plot.data] == ["fcfs", "wfq"]
    for trace in plot.data:
        values = np.sort(stretch[trace["name"]])
        assert len(trace["x"]) <= 200
        assert trace["x"][0] == values[0] and trace["x"][-1] == values[-1] and trace["y"][-1] == 1.0
        at = np.searchsorted(values, trace["x"], side="right") / n
        assert trace["y"] == pytest.approx(at.tolist())


def test_missing_both_names_the_three_commands():
    section = scheduler_section(ReportInputs(jobs=jobs()))
    assert section.missing is not None
    for command in (
        "iosets ingest LOGS --site -o site.parquet",
        "iosets replay-trace site.parquet --rec rec.parquet --compare fcfs,wfq,iosets-wfq -o perjob.parquet",
        "iosets tune JOBS -o ranking.parquet",
    ):
        assert command in section.missing


def test_tuning_alone_says_what_the_replay_needs():
    section = scheduler_section(ReportInputs(jobs=jobs(), tune=tune()))
    assert section.missing is None and [t.id for t in section.tables] == ["scheduler-tune"]
    assert section.figures == ()
    assert "iosets replay-trace site.parquet" in section.reading
    assert table(section, "scheduler-tune").frame["mapping"].to_list() == ["set-10", "gmm", "fair-share"]


def test_replay_alone_says_what_the_tuning_needs():
    periodic = JOBS.validate(pl.DataFrame({"job_id": JOB_IDS, "w_iter": [5.0, 50.0, 60.0], "alpha_io": [0.1] * 3}))
    section = scheduler_section(full_inputs(tune=None, jobs=periodic))
    assert section.missing is None
    assert "No tuning given: `iosets tune JOBS -o ranking.parquet`" in section.reading
    assert "iosets tune" not in scheduler_section(full_inputs(tune=None)).reading  # no periodic job: tune fails
    assert "scheduler-compare" in [t.id for t in section.tables]


def test_one_policy_has_no_gains_table():
    inputs = full_inputs(replay_jobs=replay_jobs({"fcfs": RUNTIMES["fcfs"]}), replay_schedulers=None, tune=None)
    section = scheduler_section(inputs)
    assert [f.id for f in section.figures] == ["scheduler-stretch"]
    assert "one scheduler, fcfs: mean stretch 2.000 over 3 jobs" in section.reading


def test_policy_names_are_escaped_in_plots():
    runtimes = {"fcfs": RUNTIMES["fcfs"], "<i>x</i>": RUNTIMES["wfq"]}
    section = scheduler_section(full_inputs(replay_jobs=replay_jobs(runtimes), replay_schedulers=None, tune=None))
    text = json.dumps([f.data for f in section.figures])
    assert "<i>" not in text and "&lt;i&gt;x&lt;/i&gt;" in text
