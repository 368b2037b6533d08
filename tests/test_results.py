"""Results own their tables: each writes its main table and side files, reads them back equal, and names bad files."""

import polars as pl
import pytest

from iosets.analyzer import Analysis, SiteTrace
from iosets.errors import InputError
from iosets.recommender import Recommendation, recommend, set_summary
from iosets.replay import Device, RequestResults, SchedulerComparison, Tuning, compare_schedulers, replay_requests
from iosets.schemas import ANALYSIS_ERRORS, MODULE_TOTALS

JOBS = pl.DataFrame({"job_id": ["a", "b"], "w_iter": [10.0, 100.0], "alpha_io": [0.1, 0.2]})

SITE = pl.DataFrame(
    {
        "job_id": ["a", "a", "b", "b"],
        "rank": [0] * 4,
        "op": ["write"] * 4,
        "offset": [0, 10**6, 0, 10**6],
        "size": [10**6] * 4,
        "start": [0.0, 6.0, 0.0, 6.0],
        "end": [1.0, 7.0, 1.0, 7.0],
        "file": ["fa", "fa", "fb", "fb"],
        "phase": [0, 1, 0, 1],
        "synthetic": [False] * 4,
    }
)


def test_a_result_names_its_files_beside_the_main_one(tmp_path):
    assert Analysis.paths(tmp_path / "jobs.csv") == {
        "jobs": tmp_path / "jobs.csv",
        "errors": tmp_path / "jobs.errors.csv",
        "modules": tmp_path / "jobs.modules.csv",
        "detail": tmp_path / "jobs.detail.csv",
        "sizes": tmp_path / "jobs.sizes.csv",
        "activity": tmp_path / "jobs.activity.csv",
    }
    assert list(SchedulerComparison.paths(tmp_path / "p.parquet")) == ["jobs", "phases", "schedulers", "shares"]


def test_an_analysis_round_trips_and_an_empty_side_table_removes_the_stale_file(tmp_path):
    errors = pl.DataFrame({"path": ["x.darshan"], "reason": ["x.darshan: not a Darshan log"]})
    first = Analysis(jobs=JOBS, errors=errors, modules=MODULE_TOTALS.empty())
    done = first.write(tmp_path / "jobs.parquet")
    assert done.written == [tmp_path / "jobs.parquet", tmp_path / "jobs.errors.parquet"] and done.removed == []
    back = Analysis.read(tmp_path / "jobs.parquet")
    assert back.jobs.select(JOBS.columns).equals(JOBS) and back.errors.equals(errors) and back.modules.height == 0
    again = Analysis(jobs=JOBS, errors=ANALYSIS_ERRORS.empty(), modules=MODULE_TOTALS.empty())
    assert again.write(tmp_path / "jobs.parquet").removed == [tmp_path / "jobs.errors.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jobs.parquet"]
    assert Analysis.read(tmp_path / "jobs.parquet")["errors"].height == 0


def test_a_request_replay_writes_size_scheduler_and_classes(tmp_path):
    ops = SITE.select("job_id", "rank", "op", "offset", "size", "start", "end").with_columns(
        pl.Series("size", [100, 200, 300, 400])
    )
    replayed = replay_requests(ops, "wfq")
    replayed.write(tmp_path / "r.csv")
    back = RequestResults.read(tmp_path / "r.csv")
    assert back.requests.sort("row")["size"].to_list() == [100, 200, 300, 400]
    assert set(back.requests["scheduler"]) == {"wfq"} and set(back.classes["scheduler"]) == {"wfq"}
    assert back.classes.sort("class")["bytes"].to_list() == [300.0, 700.0]
    assert back.requests.equals(replayed.results.requests)


def test_a_scheduler_comparison_round_trips(tmp_path):
    rec = recommend(JOBS)
    comparison = compare_schedulers(SITE, rec, ["fcfs", "wfq"], device=Device(bandwidth=1e6, overhead=0, seek=0))
    comparison.write(tmp_path / "perjob.parquet")
    back = SchedulerComparison.read(tmp_path / "perjob.parquet")
    assert list(comparison) == ["jobs", "phases", "schedulers", "shares"]
    for name in comparison:
        assert back[name].equals(comparison[name]), name
    (tmp_path / "perjob.shares.parquet").unlink()
    with pytest.raises(InputError, match=r"perjob\.shares\.parquet: no such file \(the per-set shares written beside"):
        SchedulerComparison.read(tmp_path / "perjob.parquet")
    assert SchedulerComparison.read_tables(tmp_path / "perjob.parquet", partial=True)["shares"] is None


def test_a_bad_side_table_names_its_file_row_and_column(tmp_path):
    rec = recommend(JOBS)
    Recommendation.of(rec).write(tmp_path / "rec.parquet")
    sets = pl.read_parquet(tmp_path / "rec.sets.parquet").with_columns(pl.Series("n_jobs", [1, -1]))
    sets.write_parquet(tmp_path / "rec.sets.parquet")
    with pytest.raises(InputError, match=r"rec\.sets\.parquet row 1: n_jobs: expected"):
        Recommendation.read(tmp_path / "rec.parquet")


def test_a_recommendation_without_its_set_table_recomputes_it(tmp_path):
    rec = recommend(JOBS)
    Recommendation.of(rec).write(tmp_path / "rec.csv")
    (tmp_path / "rec.sets.csv").unlink()
    back = Recommendation.read(tmp_path / "rec.csv")
    assert back.sets.equals(set_summary(back.jobs)) and back.sets["set"].to_list() == [1, 2]


def test_a_tuning_without_an_idealised_ranking_has_no_tau(tmp_path):
    ranking = pl.DataFrame(
        {
            "rank": [1, 2],
            "mapping": ["set-10", "fair-share"],
            "n_sets": [2, 2],
            "utilization": [0.5, 0.4],
            "io_slowdown": [1.0, 1.2],
            "max_stretch": [1.5, 2.0],
        }
    )
    Tuning(ranking=ranking).write(tmp_path / "tune.parquet")
    assert not (tmp_path / "tune.idealised.parquet").exists()
    back = Tuning.read(tmp_path / "tune.parquet")
    assert back.idealised is None and back.top_trace == "set-10" and back.top_idealised is None
    assert back.kendall_tau != back.kendall_tau  # NaN


def test_a_site_trace_round_trips_with_its_jobs(tmp_path):
    site = SiteTrace(requests=SITE, jobs=JOBS)
    site.write(tmp_path / "site.parquet")
    back = SiteTrace.read(tmp_path / "site.parquet")
    assert back.requests.equals(SITE) and back.jobs is not None and back.jobs.select(JOBS.columns).equals(JOBS)
    (tmp_path / "site.jobs.parquet").unlink()
    assert SiteTrace.read(tmp_path / "site.parquet").jobs is None


def test_an_unknown_table_name_is_a_key_error():
    with pytest.raises(KeyError, match="Analysis has no table 'jobz'; it has jobs, errors, modules"):
        Analysis(jobs=JOBS, errors=ANALYSIS_ERRORS.empty(), modules=MODULE_TOTALS.empty())["jobz"]
