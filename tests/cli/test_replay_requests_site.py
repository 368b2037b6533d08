"""The chain on real logs: `iosets ingest --site` -> `iosets replay-requests`, and with `--rec REC --class-by set`.

The logs are real darshan-runtime runs (tests/data/darshan-runtime): DXT jobs, a STDIO-only job whose requests are
rebuilt from its HEATMAP bins (rank -1, no offset), and one job id run twice (two steps, two jobs).
"""

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from iosets._io import read_frame
from iosets.cli import app
from iosets.replay import Device
from iosets.schemas import REQUEST_CLASSES

pytest.importorskip("darshan")

runner = CliRunner()
DATA = Path(__file__).parents[1] / "data" / "darshan-runtime"
LOGS = [
    DATA / "corpus" / "stdio_only.darshan",  # no DXT: HEATMAP bins
    DATA / "corpus" / "p02_w2_a0.05.darshan",
    DATA / "corpus" / "p03_w5_a0.02.darshan",
    DATA / "corpus" / "read_then_write.darshan",
    DATA / "steps" / "steps_b_run0.darshan",  # job id 2241, run twice: steps 0 and 1
    DATA / "steps" / "steps_b_run1.darshan",
]


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """The site trace of LOGS (`ingest --site`), its jobs table and its recommendation (`recommend`)."""
    folder = tmp_path_factory.mktemp("chain")
    site = folder / "site.parquet"
    done = runner.invoke(app, ["ingest", "--site", *map(str, LOGS), "-o", str(site)])
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["recommend", str(folder / "site.jobs.parquet"), "-o", str(folder / "rec.parquet")])
    assert done.exit_code == 0, done.output
    return folder


def recorded_bytes(folder: Path) -> dict[str, float]:
    """Each job's bytes as its logs' counters recorded them (the jobs table), not as the site trace holds them."""
    jobs = read_frame(folder / "site.jobs.parquet")
    return dict(zip(jobs["job_id"], (jobs["bytes_read"] + jobs["bytes_written"]).cast(pl.Float64), strict=True))


def replay(*args: str) -> tuple[dict, object]:
    done = runner.invoke(app, ["replay-requests", *args, "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout), done


def test_the_site_trace_replays_with_its_heatmap_stand_ins_counted(chain):
    site = read_frame(chain / "site.parquet")
    jobs = read_frame(chain / "site.jobs.parquet")
    assert jobs.filter(pl.col("source") == "heatmap")["job_id"].to_list() == ["3011"]
    rebuilt = site.filter(pl.col("job_id") == "3011")
    assert rebuilt.height > 0 and set(rebuilt["rank"]) == {-1} and rebuilt["offset"].null_count() == rebuilt.height
    metrics, done = replay(str(chain / "site.parquet"), "-o", str(chain / "per-job.parquet"))
    n = rebuilt.height
    assert metrics["stand_ins"] == {"no_rank": n, "no_offset": n}
    assert (
        f"note: of {site.height} requests, {n} with rank -1 (their job's one stream) and {n} with no offset "
        "(each pays the device's seek)"
    ) in done.stderr
    # one class per job, each with the bytes its logs recorded; classes that are jobs are not sets
    assert {c["class"]: c["bytes"] for c in metrics["classes"]} == recorded_bytes(chain)
    assert {c["set"] for c in metrics["classes"]} == {None}
    assert sum(c["requests"] for c in metrics["classes"]) == site.height


@pytest.mark.parametrize("scheduler", ["fcfs", "iosets-wfq", "rbfq"])
def test_classes_by_set_hold_the_bytes_of_their_jobs(chain, scheduler):
    rec = read_frame(chain / "rec.parquet")
    steps = rec.filter(pl.col("job_id").str.starts_with("2241."))["job_id"].sort().to_list()
    assert steps == ["2241.0", "2241.1"]
    # the second step in a set of its own: the join tells the steps of one job id apart
    other = int(rec["set"].max()) + 1
    rec = rec.with_columns(pl.when(pl.col("job_id") == "2241.1").then(other).otherwise(pl.col("set")).alias("set"))
    rec.write_parquet(chain / "rec-steps.parquet")
    out = chain / f"by-set-{scheduler}.parquet"
    args = [str(chain / "site.parquet"), "--rec", str(chain / "rec-steps.parquet"), "--class-by", "set"]
    metrics, done = replay(*args, "--scheduler", scheduler, "-o", str(out))
    expected: dict[int, float] = {}
    for job, moved in recorded_bytes(chain).items():
        job_set = rec.filter(pl.col("job_id") == job)["set"].item()
        expected[job_set] = expected.get(job_set, 0.0) + moved
    assert {int(c["class"]): c["bytes"] for c in metrics["classes"]} == expected
    assert other in expected
    # the classes table says its classes are sets (the report colours them as sets)
    classes = REQUEST_CLASSES.validate(read_frame(chain / f"by-set-{scheduler}.classes.parquet"))
    assert classes["set"].to_list() == classes["class"].cast(pl.Int64).to_list() == sorted(expected)
    given = {"fcfs": None, "iosets-wfq": "weights", "rbfq": "weights, reservations, limits"}[scheduler]
    assert (given is None) == (f"note: {scheduler}: " not in done.stderr)
    if given is not None:
        assert f"note: {scheduler}: {given} of each set from {chain / 'rec-steps.parquet'}" in done.stderr
    assert "warning" not in done.stderr


def test_a_job_absent_from_the_recommendation_goes_to_its_conservative_set(chain):
    rec = read_frame(chain / "rec.parquet")
    conservative = int(rec["set"].max())
    rec.filter(pl.col("job_id") != "3011").write_parquet(chain / "rec-without.parquet")
    args = [str(chain / "site.parquet"), "--rec", str(chain / "rec-without.parquet"), "--class-by", "set"]
    metrics, done = replay(*args)
    assert (
        f"1 job(s) of the requests not in the recommendation go to its conservative set {conservative}: 3011"
        in done.stderr
    )
    expected: dict[int, float] = {}
    for job, moved in recorded_bytes(chain).items():
        job_set = conservative if job == "3011" else rec.filter(pl.col("job_id") == job)["set"].item()
        expected[job_set] = expected.get(job_set, 0.0) + moved
    assert {int(c["class"]): c["bytes"] for c in metrics["classes"]} == expected


def test_class_by_set_needs_a_recommendation_or_a_set_column(chain, tmp_path):
    done = runner.invoke(app, ["replay-requests", str(chain / "site.parquet"), "--class-by", "set"])
    assert done.exit_code == 1
    assert "has no column 'set'; give --rec REC to class requests by their job's set" in done.stderr
    with_sets = read_frame(chain / "site.parquet").with_columns(set=pl.lit(0))
    with_sets.write_parquet(tmp_path / "sets.parquet")
    args = ["replay-requests", str(tmp_path / "sets.parquet"), "--rec", str(chain / "rec.parquet")]
    done = runner.invoke(app, args)
    assert done.exit_code == 1
    assert "requests: already have a set column" in done.stderr


def test_a_csv_site_trace_is_read_as_a_site_trace(chain, tmp_path):
    site = read_frame(chain / "site.parquet")
    site.write_csv(tmp_path / "site.csv")
    metrics, _ = replay(str(tmp_path / "site.csv"))
    assert metrics["stand_ins"]["no_offset"] == site["offset"].null_count() > 0


def test_a_csv_recommendation_keeps_its_job_ids_as_text(chain, tmp_path):
    # read as numbers, 2241.0 and 2241.1 would be other names (or one: 2241.10 and 2241.1)
    rec = read_frame(chain / "rec.parquet")
    rec.write_csv(tmp_path / "rec.csv")
    args = [str(chain / "site.parquet"), "--class-by", "set"]
    from_csv, done = replay(*args, "--rec", str(tmp_path / "rec.csv"))
    assert "warning" not in done.stderr
    assert from_csv == replay(*args, "--rec", str(chain / "rec.parquet"))[0]


def test_replay_trace_reads_a_csv_recommendation_s_job_ids_as_text(chain, tmp_path):
    read_frame(chain / "rec.parquet").write_csv(tmp_path / "rec.csv")
    (tmp_path / "dev.json").write_text(json.dumps(Device().to_dict()))
    outputs = []
    for rec in (chain / "rec.parquet", tmp_path / "rec.csv"):
        args = [str(chain / "site.parquet"), "--rec", str(rec), "--device", str(tmp_path / "dev.json")]
        done = runner.invoke(app, ["replay-trace", *args, "--compare", "fcfs,iosets-wfq", "--json"])
        assert done.exit_code == 0, done.output
        assert "not in the recommendation" not in done.stderr
        outputs.append(json.loads(done.stdout))
    assert outputs[0] == outputs[1]


def test_an_explicit_weight_replaces_the_recommendation_s(chain):
    args = [str(chain / "site.parquet"), "--rec", str(chain / "rec.parquet"), "--class-by", "set"]
    sets = sorted(read_frame(chain / "rec.parquet")["set"].unique().to_list())
    weights = [f"--weight={s}=1" for s in sets]
    equal, done = replay(*args, "--scheduler", "rbfq", *weights)
    assert f"note: rbfq: reservations, limits of each set from {chain / 'rec.parquet'}" in done.stderr
    # Jain's index divides each set's throughput by its weight: the weights given, not the recommendation's
    assert equal["jain_index"] != replay(*args, "--scheduler", "rbfq")[0]["jain_index"]
