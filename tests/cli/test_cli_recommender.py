"""`iosets recommend` and `iosets tune`: outputs equal the library's, bad input exits 1 with a message."""

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from iosets.cli import app
from iosets.datasets import make_figure_workload
from iosets.recommender import recommend, set_summary
from iosets.replay import tune

runner = CliRunner()


@pytest.fixture(scope="module")
def jobs_file(tmp_path_factory):
    workload = make_figure_workload("fig10", 50.0, random_state=0)
    path = tmp_path_factory.mktemp("jobs") / "jobs.parquet"
    workload.to_jobs().write_parquet(path)
    return path


def test_recommend_json_and_output_equal_the_api(jobs_file, tmp_path):
    out = tmp_path / "rec.parquet"
    args = ["recommend", str(jobs_file), "--bandwidth", "2e9", "--max-request", "65536", "-o", str(out), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    expected = recommend(pl.read_parquet(jobs_file), bandwidth=2e9, max_request=65536)
    assert json.loads(result.stdout) == set_summary(expected).to_dicts()
    assert pl.read_parquet(out).equals(expected)


def test_tune_prints_the_ranking_of_the_api(jobs_file):
    result = runner.invoke(app, ["tune", str(jobs_file), "--bases", "2,10", "--json"])
    assert result.exit_code == 0, result.output
    expected = tune(pl.read_parquet(jobs_file), bases=[2.0, 10.0])
    assert json.loads(result.stdout) == expected.to_dicts()
    table = runner.invoke(app, ["tune", str(jobs_file), "--bases", "2,10"])
    assert f"recommended: {expected['mapping'][0]}" in " ".join(table.stdout.split())


@pytest.mark.parametrize(
    "args, message",
    [
        (["recommend", "missing.parquet"], "missing.parquet: no such file"),
        (["recommend", "{jobs}", "--mapping", "set-x"], "'set-x'; expected one of set-10, set-b, gmm"),
        (["recommend", "{jobs}", "-o", "out.txt"], "expected a .parquet or .csv file name"),
        (["tune", "{jobs}", "--bases", "2,x"], "--bases: expected a number, got 'x'"),
        (["tune", "{bad}"], "missing column(s) job_id, w_iter, alpha_io"),
    ],
)
def test_bad_input_exits_1_with_the_reason(args, message, jobs_file, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    args = [a.format(jobs=jobs_file, bad=bad) for a in args]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert message in " ".join(result.stderr.split())


def test_export_writes_what_the_api_writes(jobs_file, tmp_path):
    rec_path = tmp_path / "rec.parquet"
    assert (
        runner.invoke(app, ["recommend", str(jobs_file), "--max-request", "65536", "-o", str(rec_path)]).exit_code == 0
    )
    result = runner.invoke(
        app,
        [
            "export",
            str(rec_path),
            "--format",
            "tbf",
            "--out",
            str(tmp_path),
            "--active",
            "j0,j20",
            "--rpc-capacity",
            "1100",
        ],
    )
    assert result.exit_code == 0, result.output
    script = (tmp_path / "iosets-tbf.sh").read_text()
    # j0 (set 1, p = 0.1) and j20 (set 2, p = 0.01) share 1100 RPC/s as 10:1
    assert "start iosets_s1_0 jobid={j0} rate=1000'" in script and "start iosets_s2_0 jobid={j20} rate=100'" in script
    agios = runner.invoke(app, ["export", str(rec_path), "--format", "agios", "--out", str(tmp_path / "agios")])
    assert agios.exit_code == 0, agios.output
    weights = (tmp_path / "agios" / "wfq.conf").read_text().split()
    assert weights[-3:] == ["6553600", "655360", "65536"]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--format", "xml"], "unknown export format 'xml'"),
        (["--format", "tbf"], "the tbf export needs option(s): active, rpc_capacity"),
        (["--format", "tbf", "--active", "nobody", "--rpc-capacity", "10"], "active job(s) not in the recommendation"),
    ],
)
def test_export_errors_exit_1(extra, message, jobs_file, tmp_path):
    rec_path = tmp_path / "rec.parquet"
    runner.invoke(app, ["recommend", str(jobs_file), "-o", str(rec_path)])
    result = runner.invoke(app, ["export", str(rec_path), "--out", str(tmp_path / "x"), *extra])
    assert result.exit_code == 1
    assert message in " ".join(result.stderr.split())


def test_recommend_for_a_new_job_prints_the_estimate_and_its_origin(tmp_path):
    from iosets.datasets import make_job_history
    from iosets.recommender import recommend_new_job

    history = make_job_history(400, n_apps=8, n_users=4, random_state=2)
    path = tmp_path / "history.parquet"
    history.write_parquet(path)
    name, user = history["app"][-1], history["user"][-1]
    args = ["recommend", "--history", str(path), "--for", f"app={name},user={user},nprocs=64", "--max-request", "65536"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    expected = recommend_new_job(history, app=name, user=user, nprocs="64", max_request=65536)
    assert json.loads(result.stdout) == expected
    text = " ".join(runner.invoke(app, args).stdout.split())
    assert f"set {expected['set']}, priority {expected['priority']:.3g}" in text
    assert "from the EWMA of the app's past jobs" in text
    unknown = runner.invoke(app, ["recommend", "--history", str(path), "--for", "app=brand_new,user=nobody"])
    conservative = recommend_new_job(history, app="brand_new", user="nobody")["set"]
    said = f"(conservative set {conservative}: no w_iter estimate (brand_new is not in the history"
    assert said in " ".join(unknown.stdout.split())
    assert "(conservative)" in unknown.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["recommend"], "give a jobs table, or --history H --for app=...,user=..."),
        (["recommend", "--for", "app=x,user=y"], "takes --history H and --for"),
        (["recommend", "--history", "{jobs}", "--for", "app"], "expected key=value items"),
        (["recommend", "--history", "{jobs}", "--for", "app=x,user=y"], "history: missing column(s) app, user, start"),
    ],
)
def test_new_job_errors_exit_1(args, message, jobs_file):
    result = runner.invoke(app, [a.format(jobs=jobs_file) for a in args])
    assert result.exit_code == 1
    assert message in " ".join(result.stderr.split())
