"""`tune_site`: candidate mappings ranked by closed-loop replay of a small site trace."""

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from iosets.cli import app
from iosets.errors import InputError
from iosets.replay import Device, replay_trace, trace_metrics, tune_site

MB = 10**6
DEVICE = Device(bandwidth=1e8, overhead=0.0, seek=0.0)  # a 1 MB request takes 0.01 s


def periodic(job_id: str, w_iter: float, io_seconds: float, n_phases: int, first: float) -> list[dict]:
    """1 MB requests back to back for ``io_seconds`` at the start of each ``w_iter`` period."""
    n = round(io_seconds / 0.01)
    return [
        {"job_id": job_id, "rank": 0, "op": "write", "offset": (k * n + i) * MB, "size": MB,
         "start": first + k * w_iter + i * 0.01, "end": first + k * w_iter + (i + 1) * 0.01, "file": job_id,
         "phase": k, "synthetic": False}
        for k in range(n_phases) for i in range(n)
    ]  # fmt: skip


@pytest.fixture(scope="module")
def site():
    """A short-period job s (1 s of I/O every 10 s) and two long ones b1, b2 (40 s every 200 s) that collide."""
    rows = periodic("s", 10.0, 1.0, 40, 0.0) + periodic("b1", 200.0, 40.0, 2, 5.0) + periodic("b2", 200.0, 40.0, 2, 7.0)
    jobs = pl.DataFrame({"job_id": ["s", "b1", "b2"], "w_iter": [10.0, 200.0, 200.0], "alpha_io": [0.1, 0.2, 0.2]})
    return pl.DataFrame(rows).sort("start"), jobs


def test_set10_beats_fair_share_on_jobs_of_very_different_periods(site):
    """SET-10 puts s alone in a high-priority set and b1, b2 in one set (one at a time): s is never slowed."""
    ops, jobs = site
    got = tune_site(ops, jobs, bases=[10.0], gmm=False, device=DEVICE)
    rows = {row["mapping"]: row for row in got.ranking.iter_rows(named=True)}
    assert got.ranking["mapping"].to_list() == ["set-10", "fair-share"]
    assert (rows["set-10"]["n_sets"], rows["fair-share"]["n_sets"]) == (2, 3)
    assert rows["set-10"]["utilization"] > rows["fair-share"]["utilization"]
    assert rows["set-10"]["max_stretch"] < rows["fair-share"]["max_stretch"]
    assert (got.top_trace, got.top_idealised, got.kendall_tau) == ("set-10", "set-10", 1.0)
    assert got.ranking["idealised_rank"].to_list() == [1, 2]


def test_rows_are_the_candidates_own_replays(site):
    ops, jobs = site
    got = tune_site(ops, jobs, bases=[10.0], gmm=False, current="set-100", device=DEVICE)
    fair = trace_metrics(replay_trace(ops, scheduler="wfq", device=DEVICE)).values()
    row = got.ranking.filter(pl.col("mapping") == "fair-share").row(0, named=True)
    assert row["utilization"] == fair["utilization"] and row["max_stretch"] == fair["max_stretch"]
    single = trace_metrics(
        replay_trace(ops, scheduler="iosets-wfq", classes={"s": 0, "b1": 0, "b2": 0}, device=DEVICE)
    ).values()
    row = got.ranking.filter(pl.col("mapping") == "set-100").row(0, named=True)  # w_iter 10 and 200: one set
    assert row["n_sets"] == 1 and row["utilization"] == single["utilization"]
    assert row["idealised_rank"] is None  # the idealised ranking tries the bases only


def test_every_candidate_replays_with_the_layout(site):
    ops, jobs = site
    apart = pl.DataFrame({"file": ["s", "b1", "b2"], "stripe_size": [MB] * 3, "stripe_count": [1] * 3,
                          "first_target": [0, 1, 2]})  # fmt: skip
    device = Device(bandwidth=1e8, overhead=0.0, seek=0.0, targets=3)
    got = tune_site(ops, jobs, bases=[10.0], gmm=False, device=device, layout=apart)
    rows = {row["mapping"]: row for row in got.ranking.iter_rows(named=True)}
    assert rows["fair-share"]["max_stretch"] == 1.0  # every job alone on its target
    # SET-10 still serves b1 and b2 (one set) one at a time, each on its own target
    sets = replay_trace(ops, scheduler="iosets-wfq", classes={"s": 0, "b1": 1, "b2": 1}, weights={0: 1.0, 1: 0.1},
                        device=device, layout=apart)  # fmt: skip
    assert rows["set-10"]["max_stretch"] == trace_metrics(sets).values()["max_stretch"] > 1.0
    shared = tune_site(ops, jobs, bases=[10.0], gmm=False, device=device, layout=apart.with_columns(first_target=0))
    assert shared.ranking.equals(tune_site(ops, jobs, bases=[10.0], gmm=False, device=DEVICE).ranking)


def test_local_processes_give_the_same_table(site):
    ops, jobs = site
    here = tune_site(ops, jobs, bases=[10.0, 100.0], gmm=False, device=DEVICE)
    pooled = tune_site(ops, jobs, bases=[10.0, 100.0], gmm=False, device=DEVICE, workers=2)
    assert pooled.ranking.equals(here.ranking)


def test_a_job_missing_from_the_jobs_table_is_named(site):
    ops, jobs = site
    with pytest.raises(InputError, match=r"no row for the site trace's jobs \['b2'\]"):
        tune_site(ops, jobs.filter(pl.col("job_id") != "b2"), bases=[10.0], gmm=False)


def test_dask_gives_the_same_table(site):
    ops, jobs = site
    here = tune_site(ops, jobs, bases=[10.0], gmm=False, device=DEVICE)
    on_dask = tune_site(ops, jobs, bases=[10.0], gmm=False, device=DEVICE, workers=1, dask="local")
    assert on_dask.ranking.equals(here.ranking)


def test_cli_ranks_by_the_trace(site, tmp_path):
    ops, jobs = site
    ops.write_parquet(tmp_path / "site.parquet")
    jobs.write_parquet(tmp_path / "jobs.parquet")
    (tmp_path / "device.json").write_text(json.dumps(DEVICE.to_dict()))
    args = ["tune", str(tmp_path / "jobs.parquet"), "--site", str(tmp_path / "site.parquet"), "--bases", "10"]
    args += ["--no-gmm", "--mapping", "set-100", "--device", str(tmp_path / "device.json")]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    expected = tune_site(ops, jobs, bases=[10.0], gmm=False, current="set-100", device=DEVICE)
    assert [row["mapping"] for row in printed["ranking"]] == expected.ranking["mapping"].to_list()
    assert printed["ranking"][0]["utilization"] == pytest.approx(expected.ranking["utilization"][0])
    assert printed["top_trace"] == "set-10" and printed["kendall_tau"] == pytest.approx(expected.kendall_tau)
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0 and "top set-10 (trace) vs set-10 (idealised)" in text.stdout
