"""Impact by user and app: each group's counts, mean and p99 change computed here by hand from a small replay."""

import numpy as np
import polars as pl
import pytest

from iosets.report._document import ReportInputs
from iosets.report._impact import impact_section, job_changes
from iosets.schemas import JOBS, TRACE_REPLAY_JOBS

JOB_IDS = ["a", "b", "c", "d"]
STRETCH = {
    "fcfs": [1.0, 2.0, 1.5, 1.2],
    "iosets-wfq": [0.9, 2.01, 1.8, 1.2],  # a -10 % (better), b +0.5 % (unchanged), c +20 % (worse), d 0 (unchanged)
    "wfq": [1.0, 1.0, 1.5, 1.3],  # a 0, b -50 %, c 0, d +8.3 %
}


def replay_jobs(stretch=STRETCH, ids=JOB_IDS):
    rows = [
        (job, scheduler, 10.0, 10.0 * value if value else 10.0, 10.0, value, 1.0, 0.0)
        for scheduler, values in stretch.items()
        for job, value in zip(ids, values, strict=True)
    ]
    columns = ["job_id", "scheduler", "recorded_runtime", "runtime", "alone_runtime", "stretch", "io_slowdown", "wait"]
    return TRACE_REPLAY_JOBS.validate(pl.DataFrame(rows, schema=columns, orient="row"))


def jobs(users=("u1", "u1", "u2", "u3"), apps=("ior", "ior", "wrf", None)):
    return JOBS.validate(pl.DataFrame({"job_id": JOB_IDS, "user": list(users), "app": list(apps)}))


def section_of(**changes):
    return impact_section(ReportInputs(**({"jobs": jobs(), "replay_jobs": replay_jobs()} | changes)))


def impact_table(section):
    (table,) = section.tables
    assert table.id == "impact-table" and table.interactive
    return table.frame


def group(frame, scheduler, by, name):
    rows = frame.filter((pl.col("scheduler") == scheduler) & (pl.col("by") == by) & (pl.col("name") == name))
    assert rows.height == 1
    return rows.row(0, named=True)


def test_each_groups_counts_mean_and_p99_by_hand():
    section = section_of()
    assert section.id == "impact" and section.missing is None
    frame = impact_table(section)
    a, b, c = 0.9 / 1.0 - 1, 2.01 / 2.0 - 1, 1.8 / 1.5 - 1
    u1 = group(frame, "iosets-wfq", "user", "u1")
    assert (u1["jobs"], u1["better"], u1["worse"], u1["unchanged"], u1["undefined"]) == (2, 1, 0, 1, 0)
    assert u1["mean_change"] == pytest.approx((a + b) / 2)
    assert u1["p99_change"] == pytest.approx(np.quantile([a, b], 0.99))
    u2 = group(frame, "iosets-wfq", "user", "u2")
    assert (u2["jobs"], u2["worse"], u2["mean_change"]) == (1, 1, pytest.approx(c))
    assert group(frame, "iosets-wfq", "app", "ior") == {**u1, "by": "app", "name": "ior"}
    unknown = group(frame, "iosets-wfq", "app", "(unknown)")  # d's app is not named
    assert (unknown["jobs"], unknown["unchanged"], unknown["mean_change"]) == (1, 1, 0.0)
    wfq_u1 = group(frame, "wfq", "user", "u1")  # a 0, b 1 / 2 - 1
    assert (wfq_u1["better"], wfq_u1["unchanged"], wfq_u1["mean_change"]) == (1, 1, pytest.approx(-0.25))
    # the baseline is never a row; policies in the replay's order, users before apps, most jobs first
    assert frame["scheduler"].unique(maintain_order=True).to_list() == ["iosets-wfq", "wfq"]
    assert frame.filter(pl.col("scheduler") == "iosets-wfq")["name"].to_list() == [
        "u1",
        "u2",
        "u3",
        "ior",
        "(unknown)",
        "wrf",
    ]


def test_reading_names_who_gains_and_who_pays():
    reading = section_of().reading
    assert "Against fcfs (the default baseline" in reading
    assert "under iosets-wfq: of 4 jobs, 1 better, 1 worse, 2 unchanged." in reading
    a, b = 0.9 - 1, 2.01 / 2 - 1
    mean_u1, p99_u1 = (a + b) / 2, np.quantile([a, b], 0.99)
    assert (
        f"By user (3 users): u1 gains most (mean {100 * mean_u1:+.1f} %, p99 {100 * p99_u1:+.1f} %, 2 jobs) and u2 "
        "pays most (mean +20.0 %, p99 +20.0 %, 1 job)."
    ) in reading
    assert "Under wfq: of 4 jobs, 1 better, 1 worse, 2 unchanged." in reading  # b -50 %, d +8.3 %


def test_figure_is_each_policys_mean_change_per_group():
    (figure,) = section_of().figures
    assert [trace["name"] for trace in figure.data] == ["iosets-wfq", "wfq"]
    first = figure.data[0]
    assert first["y"] == ["user u1", "user u2", "user u3", "app ior", "app wrf"]  # d's unnamed app: table only
    mean_u1 = ((0.9 - 1) + (2.01 / 2 - 1)) / 2
    assert first["x"] == pytest.approx([100 * mean_u1, 20.0, 0.0, 100 * mean_u1, 20.0])
    assert "Jobs whose app is not named are in the table only." in figure.note
    assert figure.layout["shapes"][0]["x0"] == -1.0 and figure.layout["shapes"][0]["x1"] == 1.0


def test_a_named_baseline_changes_every_number():
    frame = impact_table(section_of(baseline="wfq"))
    assert frame["scheduler"].unique(maintain_order=True).to_list() == ["fcfs", "iosets-wfq"]
    # against wfq, iosets-wfq: a 0.9 / 1 - 1, b 2.01 / 1 - 1, c 1.8 / 1.5 - 1, d 1.2 / 1.3 - 1
    u3 = group(frame, "iosets-wfq", "user", "u3")
    assert (u3["better"], u3["mean_change"]) == (1, pytest.approx(1.2 / 1.3 - 1))
    u1 = group(frame, "iosets-wfq", "user", "u1")
    assert u1["mean_change"] == pytest.approx(((0.9 - 1) + (2.01 - 1)) / 2)


def test_one_job_and_one_user_read_right():
    one = JOBS.validate(pl.DataFrame({"job_id": ["a"], "user": ["alice"], "app": ["ior"]}))
    replay = replay_jobs({"fcfs": [1.0], "iosets-wfq": [0.8]}, ids=["a"])
    section = impact_section(ReportInputs(jobs=one, replay_jobs=replay))
    reading = section.reading
    assert "under iosets-wfq: its one job is better (-20.0 %)" in reading
    assert "The only job belongs to one user, alice: mean change -20.0 %." in reading
    assert "The only job belongs to one app, ior" in reading
    for broken in ("1 jobs", "of 1 job,", "1 users"):
        assert broken not in reading


def test_undefined_stretches_and_unnamed_users_are_said():
    stretch = {"fcfs": [1.0, None, 1.5, 1.2], "wfq": [1.0, 1.0, 1.5, 1.3]}
    table = JOBS.validate(pl.DataFrame({"job_id": JOB_IDS}))
    section = impact_section(ReportInputs(jobs=table, replay_jobs=replay_jobs(stretch)))
    changes = job_changes(ReportInputs(jobs=table, replay_jobs=replay_jobs(stretch)))
    assert changes is not None and changes["change"].null_count() == 1
    assert "of 4 jobs, 0 better, 1 worse, 2 unchanged, 1 without a stretch to compare" in section.reading
    assert "The jobs table names no user: the users cannot be told apart." in section.reading
    assert section.figures == ()  # nothing named to draw: the sentence says so
    row = group(impact_table(section), "wfq", "user", "(unknown)")
    assert (row["jobs"], row["undefined"]) == (4, 1)


def test_without_a_replay_or_with_one_scheduler():
    missing = impact_section(ReportInputs(jobs=jobs()))
    assert missing.missing is not None and "iosets replay-trace site.parquet" in missing.missing
    alone = section_of(replay_jobs=replay_jobs({"fcfs": STRETCH["fcfs"]}))
    assert alone.figures == () and alone.tables == ()
    assert alone.reading.startswith("The replay holds one scheduler, fcfs: there is no other policy to compare")


def test_the_figure_is_bounded_whatever_the_number_of_users():
    n = 300
    ids = [f"j{i}" for i in range(n)]
    table = JOBS.validate(pl.DataFrame({"job_id": ids, "user": [f"u{i}" for i in range(n)], "app": ["x"] * n}))
    stretch = {"fcfs": [1.0] * n, "wfq": [1.0 + i / n for i in range(n)]}
    section = impact_section(ReportInputs(jobs=table, replay_jobs=replay_jobs(stretch, ids=ids)))
    (figure,) = section.figures
    assert len(figure.data[0]["y"]) == 12 + 1  # 12 users, the one app
    assert "The 12 users and the 12 apps with the most jobs" in figure.note
    assert impact_table(section).height == n + 1
