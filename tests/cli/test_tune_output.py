"""``iosets tune -o``: the ranking written equals the one printed, with and without ``--site``."""

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from iosets._io import read_frame
from iosets.cli import app
from iosets.datasets import make_figure_workload
from iosets.replay import Device
from iosets.schemas import TUNE_RANKING

runner = CliRunner()
MB = 10**6
DEVICE = Device(bandwidth=1e8, overhead=0.0, seek=0.0)  # a 1 MB request takes 0.01 s


@pytest.fixture(scope="module")
def jobs_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("jobs") / "jobs.parquet"
    make_figure_workload("fig10", 50.0, random_state=0).to_jobs().write_parquet(path)
    return path


def periodic(job_id: str, w_iter: float, n_requests: int, n_phases: int, first: float) -> list[dict]:
    """``n_requests`` 1 MB requests back to back at the start of each ``w_iter`` period."""
    return [
        {"job_id": job_id, "rank": 0, "op": "write", "offset": (k * n_requests + i) * MB, "size": MB,
         "start": first + k * w_iter + i * 0.01, "end": first + k * w_iter + (i + 1) * 0.01, "file": job_id,
         "phase": k, "synthetic": False}
        for k in range(n_phases) for i in range(n_requests)
    ]  # fmt: skip


@pytest.fixture(scope="module")
def site_files(tmp_path_factory):
    """A short-period job s (0.2 s of I/O every 10 s) and two long ones that collide (4 s every 100 s)."""
    folder = tmp_path_factory.mktemp("site")
    rows = periodic("s", 10.0, 20, 20, 0.0) + periodic("b1", 100.0, 400, 2, 5.0) + periodic("b2", 100.0, 400, 2, 7.0)
    pl.DataFrame(rows).sort("start").write_parquet(folder / "site.parquet")
    jobs = pl.DataFrame({"job_id": ["s", "b1", "b2"], "w_iter": [10.0, 100.0, 100.0], "alpha_io": [0.02, 0.04, 0.04]})
    jobs.write_parquet(folder / "jobs.parquet")
    (folder / "device.json").write_text(json.dumps(DEVICE.to_dict()))
    return folder


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_the_written_ranking_is_the_printed_one(jobs_file, tmp_path, suffix):
    out = tmp_path / f"ranking{suffix}"
    result = runner.invoke(app, ["tune", str(jobs_file), "--bases", "2,10", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    written = TUNE_RANKING.validate(read_frame(out))
    assert written.columns == TUNE_RANKING.names
    assert written.to_dicts() == json.loads(result.stdout)
    assert written["rank"].to_list() == list(range(1, written.height + 1))
    assert written["idealised_rank"].null_count() == written.height  # no --site: no second ranking


def test_the_site_ranking_is_written_with_its_idealised_rank(site_files, tmp_path):
    out = tmp_path / "ranking.csv"
    args = ["tune", str(site_files / "jobs.parquet"), "--site", str(site_files / "site.parquet"), "--bases", "10"]
    args += ["--no-gmm", "--device", str(site_files / "device.json"), "-o", str(out), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    written = TUNE_RANKING.validate(read_frame(out))
    printed = json.loads(result.stdout)["ranking"]
    assert written.to_dicts() == printed
    # SET-10: s alone in a high-priority set, b1 and b2 in one; both rankings put it first
    assert written.select("rank", "mapping", "n_sets", "idealised_rank").rows() == [
        (1, "set-10", 2, 1),
        (2, "fair-share", 3, 2),
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--horizon", "100"], "--horizon does not apply with --site"),
        (["--overlap"], "--overlap does not apply with --site"),
        (["--bandwidth", "1e9"], "--bandwidth does not apply with --site"),
    ],
)
def test_options_of_the_idealised_replay_are_refused_with_site(site_files, tmp_path, extra, message):
    args = ["tune", str(site_files / "jobs.parquet"), "--site", str(site_files / "site.parquet"), *extra]
    result = runner.invoke(app, [*args, "-o", str(tmp_path / "ranking.parquet")])
    assert result.exit_code == 1
    assert message in result.stderr
    assert not (tmp_path / "ranking.parquet").exists()


@pytest.mark.parametrize("extra", [["--device", "device.json"], ["--mapping", "set-2"], ["--dask", "local"]])
def test_options_of_the_site_replay_are_refused_without_it(jobs_file, extra):
    result = runner.invoke(app, ["tune", str(jobs_file), *extra])
    assert result.exit_code == 1
    assert f"{extra[0]} applies only with --site SITE" in result.stderr
