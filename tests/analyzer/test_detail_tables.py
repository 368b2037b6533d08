"""Each job's detail (request sizes, access order, ranks, I/O over time) against what real programs did."""

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from iosets.analyzer import Analysis, analyze
from iosets.analyzer._detail import ACTIVITY_BINS, cumulative_bytes, requests_details
from iosets.analyzer._ingest._darshan_detail import SIZE_BUCKETS

RUNTIME = Path(__file__).parents[1] / "data" / "darshan-runtime"
CORPUS = json.loads((RUNTIME / "corpus" / "ground_truth.json").read_text())["jobs"]
FORKED = json.loads((RUNTIME / "forked" / "ground_truth.json").read_text())["jobs"][0]


def _bucket_of(size: int) -> str:
    return next(name for name, low, high in SIZE_BUCKETS if size >= low and (high is None or size <= high))


@pytest.fixture(scope="module")
def corpus() -> Analysis:
    return analyze([RUNTIME / "corpus", RUNTIME / "forked"])


@pytest.mark.parametrize("truth", [j for j in CORPUS if j["name"] != "stdio_only"], ids=lambda j: j["name"])
def test_the_size_histogram_holds_every_request_the_program_made_in_its_bucket(corpus, truth):
    sizes = corpus.sizes.filter(pl.col("job_id") == truth["job_id"], pl.col("module") == "POSIX")
    request = truth["params"]["req"]
    writes = sizes.filter(pl.col("op") == "write")
    # every write is the program's request size: one bucket, all of them
    assert writes.select("bucket", "requests").rows() == [(_bucket_of(request), truth["bytes_written"] // request)]
    assert sizes["requests"].sum() == truth["requests"]
    detail = corpus.detail.filter(pl.col("job_id") == truth["job_id"]).row(0, named=True)
    assert detail["requests"] == truth["requests"]
    assert detail["small_requests"] == (truth["requests"] if request <= 100 * 1024 else 0)


def test_a_1_mib_request_is_in_darshans_100k_1m_bucket_and_is_not_small(corpus):
    truth = next(j for j in CORPUS if j["name"] == "p01_w0.5_a0.2")
    assert _bucket_of(1 << 20) == "100K_1M"
    detail = corpus.detail.filter(pl.col("job_id") == truth["job_id"]).row(0, named=True)
    assert (detail["requests"], detail["small_requests"]) == (1600, 0)


@pytest.mark.parametrize("truth", [*CORPUS, FORKED], ids=lambda j: j["name"])
def test_the_activity_bins_hold_the_programs_bytes_inside_its_phases(corpus, truth):
    bins = corpus.activity.filter(pl.col("job_id") == truth["job_id"])
    assert 0 < bins.height <= ACTIVITY_BINS
    moved = bins["bytes_read"] + bins["bytes_written"]
    assert moved.sum() == pytest.approx(truth["bytes_read"] + truth["bytes_written"], rel=1e-9)
    width = corpus.detail.filter(pl.col("job_id") == truth["job_id"])["activity_bin"].item()
    assert bins["end"].max() <= ACTIVITY_BINS * width * (1 + 1e-9)
    # a bin with bytes overlaps one of the program's own phases (within a bin: clocks and HEATMAP bins differ)
    phases = np.array(truth["phases"])
    near = [
        bool(((phases[:, 0] < e + width) & (phases[:, 1] > s - width)).any())
        for s, e in bins.select("start", "end").rows()
    ]
    inside = moved.filter(pl.Series(near)).sum()
    assert inside >= 0.99 * moved.sum()


def test_a_job_of_four_forked_logs_spreads_its_bytes_over_four_ranks(corpus):
    detail = corpus.detail.filter(pl.col("job_id") == FORKED["job_id"]).row(0, named=True)
    assert detail["ranks"] == FORKED["nprocs_doing_io"] == 4
    # the processes share the phases evenly: the same bytes on every rank
    each = FORKED["bytes_written"] / FORKED["params"]["processes"]
    assert detail["slowest_rank_bytes"] == detail["fastest_rank_bytes"] == each
    assert detail["slowest_rank_time"] >= detail["fastest_rank_time"] > 0
    assert detail["requests"] == FORKED["requests"]


def test_sequential_requests_are_darshans_count(corpus):
    truth = next(j for j in CORPUS if j["name"] == "p07_w1_small64k")
    detail = corpus.detail.filter(pl.col("job_id") == truth["job_id"]).row(0, named=True)
    # one file written front to back: all but a handful sequential (Darshan counts POSIX_SEQ_WRITES = 5118 of 5120)
    assert detail["accesses"] == truth["requests"] == 5120
    assert detail["sequential"] == 5118


def test_the_detail_tables_round_trip_beside_the_jobs_table(corpus, tmp_path):
    written = corpus.write(tmp_path / "jobs.parquet")
    names = {p.name for p in written.written}
    assert {"jobs.detail.parquet", "jobs.sizes.parquet", "jobs.activity.parquet"} <= names
    back = Analysis.read(tmp_path / "jobs.parquet")
    assert back.detail.equals(corpus.detail) and back.sizes.equals(corpus.sizes)
    assert back.activity.equals(corpus.activity)


def test_a_requests_tables_detail_counts_its_requests_sizes_order_and_ranks():
    # rank 0: 4 KiB requests front to back then one seek back; rank 1: two 2 MiB requests
    ops = pl.DataFrame(
        {
            "job_id": ["j"] * 6,
            "rank": [0, 0, 0, 0, 1, 1],
            "op": ["write", "write", "write", "write", "read", "read"],
            "offset": [0, 4096, 8192, 0, 0, 2 << 20],
            "size": [4096, 4096, 4096, 4096, 2 << 20, 2 << 20],
            "start": [10.0, 11.0, 12.0, 13.0, 10.0, 14.0],
            "end": [10.5, 11.5, 12.5, 13.5, 12.0, 16.0],
            "file": ["f"] * 6,
        }
    )
    tables = requests_details(ops)
    sizes = tables["sizes"].sort("op")
    assert sizes.select("op", "bucket", "requests", "bytes").rows() == [
        ("read", "1M_4M", 2, float(4 << 20)),
        ("write", "1K_10K", 4, 4 * 4096.0),
    ]
    detail = tables["detail"].row(0, named=True)
    assert (detail["requests"], detail["small_requests"]) == (6, 4)
    assert (detail["sequential"], detail["accesses"]) == (5, 6)  # the seek back to 0 is the random one
    assert detail["meta_time"] is None
    assert (detail["fastest_rank_bytes"], detail["slowest_rank_bytes"]) == (4 * 4096.0, float(4 << 20))
    assert (detail["fastest_rank_time"], detail["slowest_rank_time"]) == (2.0, 4.0)
    activity = tables["activity"]
    assert activity["bytes_read"].sum() == pytest.approx(4 << 20)
    assert activity["bytes_written"].sum() == pytest.approx(4 * 4096)
    assert activity["start"].min() == 0.0 and activity["end"].max() == pytest.approx(6.0)


def test_cumulative_bytes_spreads_a_request_evenly_over_its_duration():
    grid = np.array([0.0, 1.0, 2.5, 4.0, 10.0])
    got = cumulative_bytes(np.array([0.0, 3.0]), np.array([4.0, 3.0]), np.array([400.0, 7.0]), grid)
    assert got.tolist() == [0.0, 100.0, 250.0, 407.0, 407.0]


MPI = json.loads((RUNTIME / "mpi" / "ground_truth.json").read_text())["jobs"]


@pytest.mark.parametrize("truth", [j for j in MPI if j["params"]["transfer"] >= 4096], ids=lambda j: j["name"])
def test_mpi_io_jobs_have_their_aggregate_sizes_beside_posix(truth):
    analysis = analyze([RUNTIME / "mpi" / name for name in truth["log"]])
    sizes = analysis.sizes.filter(pl.col("job_id") == truth["job_id"])
    bucket = _bucket_of(truth["params"]["transfer"])
    # IOR's MPI-IO writes of one transfer size each, all in its bucket; POSIX sees the same requests below
    for module in ("MPI-IO", "POSIX"):
        rows = sizes.filter(pl.col("module") == module, pl.col("op") == "write")
        assert rows.select("bucket", "requests").rows() == [(bucket, truth["requests"])]
    detail = analysis.detail.row(0, named=True)
    assert (detail["size_module"], detail["ranks"]) == ("POSIX", truth["nprocs"])
    assert detail["slowest_rank_bytes"] == detail["fastest_rank_bytes"] == truth["bytes_written"] / truth["nprocs"]


def test_a_block_trace_gets_its_detail_from_its_requests():
    from importlib import resources

    from iosets.analyzer import read_blocktrace

    with resources.as_file(resources.files("iosets.datasets.data") / "sample.msr.csv") as msr:
        analysis = analyze([msr], workers=1)
        ops = read_blocktrace(msr)
    assert sorted(analysis.detail["job_id"]) == sorted(analysis.jobs["job_id"])
    assert set(analysis.sizes["module"]) == {"requests"}
    for job_id, frame in ops.partition_by("job_id", as_dict=True).items():
        sizes = analysis.sizes.filter(pl.col("job_id") == job_id[0])
        assert sizes["requests"].sum() == frame.height
        assert sizes["bytes"].sum() == frame["size"].sum()
        moved = analysis.activity.filter(pl.col("job_id") == job_id[0])
        assert (moved["bytes_read"] + moved["bytes_written"]).sum() == pytest.approx(frame["size"].sum())
