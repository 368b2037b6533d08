"""`iosets recommend` warns in one line when the sets' reservations are scaled down; `iosets tune` says what it used."""

import json
from datetime import UTC, datetime

import polars as pl
from typer.testing import CliRunner

from iosets.cli import app
from iosets.replay import tune

runner = CliRunner()

# Three sets whose largest jobs reserve 12, 10 and 7 GB/s (safety 1) on 20 GB/s
OVERBOOKED = "job_id,w_iter,alpha_io\na,2,0.6\nb,2.5,0.2\nc,20,0.5\nd,25,0.2\ne,200,0.35\nf,250,0.1\n"


def test_recommend_prints_the_scaled_down_reservations_as_one_warning_line(tmp_path, table_rows):
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(OVERBOOKED)
    result = runner.invoke(app, ["recommend", str(jobs), "--bandwidth", "20e9", "--safety", "1"])
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "warning: RBFQ reservations of sets 0 (12.0 GB/s), 1 (10.0 GB/s), 2 (7.0 GB/s) sum to 29.0 GB/s, "
        "1.45x the bandwidth (20.0 GB/s); scaled down to fit\n"
    )
    title = "set-10: 6 jobs, 0 on thin evidence (the conservative set or a lower one)"
    reservations = [row[6] for row in table_rows(result.stdout, title)]
    assert (
        reservations
        == [f"{r * 1000 / 1.45:.1f} MB/s" for r in (12, 10, 7)]
        == ["8275.9 MB/s", "6896.6 MB/s", "4827.6 MB/s"]
    )


def epoch(*fields) -> float:
    return datetime(*fields, tzinfo=UTC).timestamp()


def dated_jobs(tmp_path):
    """Two jobs overlapping in 2019, one alone in 2024, one not periodic, one without alpha_io."""
    path = tmp_path / "jobs.parquet"
    pl.DataFrame(
        {
            "job_id": ["a", "b", "c", "d", "e"],
            "w_iter": [10.0, 20.0, 30.0, None, 40.0],
            "alpha_io": [0.1, 0.2, 0.1, 0.3, None],
            "start": [epoch(2019, 3, 2), epoch(2019, 3, 2, 12), epoch(2024, 5, 10), None, None],
            "end": [epoch(2019, 3, 3), epoch(2019, 3, 4), epoch(2024, 5, 11), None, None],
        }
    ).write_parquet(path)
    return path


def test_tune_prints_the_jobs_it_used_before_the_table(tmp_path):
    path = dated_jobs(tmp_path)
    result = runner.invoke(app, ["tune", str(path), "--bases", "10", "--no-gmm"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:3] == [
        "used 3 of 5 jobs; left out: 1 not periodic (no w_iter 1), 1 without alpha_io",
        "replayed together as one concurrent workload; their recorded runs span 2019-03-02 .. 2024-05-11 "
        "and at most 2 ran at the same time",
        "Mappings replayed on jobs.parquet",
    ]


def test_tune_json_keeps_stdout_json_and_overlap_says_which_instant(tmp_path):
    path = dated_jobs(tmp_path)
    result = runner.invoke(app, ["tune", str(path), "--bases", "10", "--no-gmm", "--overlap", "--json"])
    assert result.exit_code == 0, result.output
    expected = tune(pl.read_parquet(path), bases=[10.0], gmm=False, overlap=True)
    assert json.loads(result.stdout) == expected.to_dicts()
    assert result.stderr.splitlines() == [
        "used 2 of 5 jobs; left out: 1 not periodic (no w_iter 1), 1 without alpha_io, "
        "1 not running at the busiest instant",
        "replayed the 2 jobs running at the busiest instant, 2019-03-02 12:00:00 UTC",
    ]
