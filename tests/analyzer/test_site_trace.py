"""The site trace: jobs' requests on one clock, with the analyzer's job ids and phases; logs written by darshan-util.

Every expected date, size and phase is computed here from the pattern put into the logs.
"""

import numpy as np
import polars as pl
import pytest

pytest.importorskip("darshan")

from darshan_writer import HEATMAP_RECORD_IDS, counter_record, dxt_record, heatmap_record, write_log  # noqa: E402

from iosets.analyzer import analyze, ingest, site_trace  # noqa: E402
from iosets.datasets import load_sample_traces  # noqa: E402
from iosets.errors import InputError  # noqa: E402
from iosets.schemas import SITE_REQUESTS  # noqa: E402

MIB = 1 << 20
T0 = 1_700_000_000
NAMES = {101: "/scratch/run/out.dat", HEATMAP_RECORD_IDS["POSIX"]: "heatmap:POSIX"}


def _write(path, *, jobid, start, records, runtime=100.0, nprocs=2):
    """A log of job ``jobid`` starting ``start`` s after T0 (whole seconds: its dates are exact)."""
    job = {
        "uid": 4242,
        "jobid": jobid,
        "nprocs": nprocs,
        "start": (T0 + start, 0),
        "end": (int(T0 + start + runtime), 0),
    }
    write_log(path, job=job, exe="/opt/app/sim", mounts=[("/scratch", "lustre")], names=NAMES, records=records)
    return path


def _posix(rank, written, read=0):
    counters = {"POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": written, "POSIX_READS": 1, "POSIX_BYTES_READ": read}
    return counter_record("POSIX", 101, rank, counters, {"POSIX_F_WRITE_TIME": 1.0})


PHASE_STARTS = (10.0, 40.0, 70.0)  # three bursts 30 s apart: phases 0, 1, 2


def _bursts(rank):
    """A rank's writes: in each burst four 0.25 s requests of 1 MiB, back to back, rank 1 a request later."""
    return [(j * MIB, MIB, t + 0.25 * (j + rank), t + 0.25 * (j + rank + 1)) for t in PHASE_STARTS for j in range(4)]


def _dxt_log(path, *, jobid, start):
    records = {
        "DXT_POSIX": [dxt_record(101, r, writes=_bursts(r)) for r in range(2)],
        "POSIX": [_posix(r, 12 * MIB) for r in range(2)],
    }
    return _write(path, jobid=jobid, start=start, records=records)


def _expected_dxt(job_id, start):
    """(job_id, rank, start, end, size, phase) of a DXT job's requests, dated on the site clock."""
    return sorted(
        (job_id, r, T0 + start + s, T0 + start + e, size, i // 4)  # four requests per burst
        for r in range(2)
        for i, (_, size, s, e) in enumerate(_bursts(r))
    )


def _rows(ops):
    return sorted(ops.select("job_id", "rank", "start", "end", "size", "phase").rows())


def test_two_jobs_100_s_apart_share_one_clock_with_their_phases(tmp_path):
    _dxt_log(tmp_path / "a.darshan", jobid=1, start=0)
    _dxt_log(tmp_path / "b.darshan", jobid=2, start=100)
    site = site_trace([tmp_path])
    assert _rows(site.requests) == sorted(_expected_dxt("1", 0) + _expected_dxt("2", 100))
    assert site.requests["start"].is_sorted() and site.requests.columns == SITE_REQUESTS.names
    assert site.requests["start"].min() == T0 + 10.0 and site.requests["start"].max() == T0 + 100 + 70.0 + 0.25 * 4
    assert site.jobs.select("job_id", "n_phases").rows() == [("1", 3), ("2", 3)]  # the analyzer's n_phases
    assert site.requests.filter(pl.col("job_id") == "1")["phase"].unique(maintain_order=True).to_list() == [0, 1, 2]
    assert not site.requests["synthetic"].any() and site.requests["file"].unique().to_list() == ["/scratch/run/out.dat"]
    assert site.skipped.is_empty() and site.errors.is_empty()


WIDTH = 1.0
WRITE_BINS = {2: 8 * MIB, 3: 8 * MIB, 20: 8 * MIB, 21: 8 * MIB, 30: 4096}  # bin 30: under 2 % of the busiest bin
READ_BINS = {3: MIB}


def _bins(values, n=40):
    out = np.zeros(n, dtype=np.int64)
    for i, v in values.items():
        out[i] = v
    return out


def _heatmap_log(path, *, jobid, start):
    """A job without DXT: bins per rank (rank 1 half of rank 0's bytes)."""
    records = {
        "HEATMAP": [
            heatmap_record("POSIX", 0, WIDTH, _bins(WRITE_BINS), _bins(READ_BINS)),
            heatmap_record("POSIX", 1, WIDTH, _bins(WRITE_BINS) // 2, _bins(READ_BINS) // 2),
        ],
        "POSIX": [_posix(0, 32 * MIB + 4096, MIB), _posix(1, 16 * MIB + 2048, MIB // 2)],
    }
    return _write(path, jobid=jobid, start=start, records=records)


def test_a_heatmap_only_job_gets_one_request_per_bin_and_direction(tmp_path):
    site = site_trace([_heatmap_log(tmp_path / "hm.darshan", jobid=5, start=30)])
    assert site.jobs.select("source", "n_phases").rows() == [("heatmap", 2)]
    phase = {2: 0, 3: 0, 20: 1, 21: 1, 30: None}  # bin 30 lies outside both phases
    expected = sorted(
        [("write", T0 + 30 + i * WIDTH, T0 + 30 + (i + 1) * WIDTH, v + v // 2, phase[i]) for i, v in WRITE_BINS.items()]
        + [
            ("read", T0 + 30 + i * WIDTH, T0 + 30 + (i + 1) * WIDTH, v + v // 2, phase[i]) for i, v in READ_BINS.items()
        ],
        key=lambda r: (r[1], r[0]),
    )
    got = site.requests.sort("start", "op").select("op", "start", "end", "size", "phase").rows()
    assert got == expected
    assert site.requests["size"].sum() == 1.5 * (32 * MIB + 4096 + MIB)  # every byte of the bins, once
    assert site.requests["synthetic"].all() and (site.requests["rank"] == -1).all()
    assert site.requests["offset"].null_count() == site.requests["file"].null_count() == site.requests.height == 6


def test_a_counters_only_job_is_skipped_with_its_reason(tmp_path):
    _dxt_log(tmp_path / "a.darshan", jobid=1, start=0)
    _write(tmp_path / "c.darshan", jobid=3, start=0, records={"POSIX": [_posix(0, MIB)]})
    site = site_trace([tmp_path])
    assert site.skipped.rows() == [
        ("3", str(tmp_path / "c.darshan"), "counters only: no DXT or HEATMAP record dates its I/O")
    ]
    assert site.jobs["job_id"].to_list() == ["1"] and site.requests["job_id"].unique().to_list() == ["1"]


def _process_log(path, *, start, jobid=7):
    """One process of a job: reads 8 MiB at 1 + 8 k s for 0.5 s, 12 steps."""
    reads = [(k * 8 * MIB, 8 * MIB, 1.0 + 8.0 * k, 1.5 + 8.0 * k) for k in range(12)]
    counters = {"POSIX_READS": 12, "POSIX_BYTES_READ": 96 * MIB}
    records = {
        "DXT_POSIX": [dxt_record(101, 0, reads=reads)],
        "POSIX": [counter_record("POSIX", 101, 0, counters, {"POSIX_F_READ_TIME": 6.0})],
    }
    return _write(path, jobid=jobid, start=start, records=records, nprocs=1)


def test_logs_of_one_job_are_one_job_with_the_jobs_table_id(tmp_path):
    _process_log(tmp_path / "p0.darshan", start=0)
    _process_log(tmp_path / "p1.darshan", start=2)
    _process_log(tmp_path / "p2.darshan", start=500)  # the same job id, a later run: job 7.1
    site = site_trace([tmp_path])
    jobs = analyze([tmp_path]).jobs
    assert site.jobs.equals(jobs)
    assert sorted(site.requests["job_id"].unique()) == sorted(jobs["job_id"]) == ["7.0", "7.1"]
    first = site.requests.filter(pl.col("job_id") == "7.0")
    expected = sorted((T0 + shift + 1.0 + 8.0 * k, k) for shift in (0, 2) for k in range(12))
    assert sorted(first.select("start", "phase").rows()) == expected  # the merged timeline's 12 phases
    assert jobs.filter(pl.col("job_id") == "7.0")["n_phases"].item() == 12


def test_the_window_keeps_whole_jobs_that_overlap_it(tmp_path):
    _dxt_log(tmp_path / "a.darshan", jobid=1, start=0)  # runs [T0, T0 + 100]
    _dxt_log(tmp_path / "b.darshan", jobid=2, start=1000)  # runs [T0 + 1000, T0 + 1100]
    late = site_trace([tmp_path], window=(T0 + 1050, T0 + 2000))
    assert late.jobs["job_id"].to_list() == ["2"] and _rows(late.requests) == _expected_dxt("2", 1000)
    edge = site_trace([tmp_path], window=(T0 + 95, T0 + 96))  # no request in it: job 1 still whole
    assert _rows(edge.requests) == _expected_dxt("1", 0)
    assert site_trace([tmp_path], window=(T0 + 200, T0 + 300)).requests.is_empty()


def test_block_traces_keep_their_dates_and_the_analyzers_phases():
    paths = list(load_sample_traces().paths.values())
    site = site_trace(paths)
    for path in paths:
        ops = ingest(path)
        mine = site.requests.filter(pl.col("job_id").is_in(ops["job_id"].unique().to_list()))
        assert sorted(mine["start"]) == sorted(ops["start"])
    phases = site.requests.group_by("job_id").agg(pl.col("phase").max() + 1, pl.col("phase").n_unique().alias("n"))
    joined = site.jobs.join(phases, on="job_id").select("n_phases", "phase", "n")
    assert joined.height == 6 and all(a == b == c for a, b, c in joined.rows())


def test_many_logs_are_read_in_worker_processes(tmp_path):
    for k in range(48):  # 48 traces: the worker pool, as analyze
        _write(
            tmp_path / f"j{k}.darshan",
            jobid=100 + k,
            start=k,
            records={"DXT_POSIX": [dxt_record(101, 0, writes=[(0, MIB, 0.5, 0.75)])], "POSIX": [_posix(0, MIB)]},
        )
    site = site_trace([tmp_path], workers=2)
    assert site.requests.select("job_id", "start", "phase").rows() == [
        (str(100 + k), T0 + k + 0.5, 0) for k in range(48)
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"window": (5.0, 1.0)}, r"window: expected finite start <= end, got \(5, 1\)"),
        ({"window": "a,b"}, r"window: expected \(start, end\) in seconds, got 'a,b'"),
        ({"workers": 0}, "workers"),
        ({"timeout": 0}, "timeout"),
    ],
)
def test_bad_arguments_are_input_errors(tmp_path, kwargs, message):
    with pytest.raises(InputError, match=message):
        site_trace([tmp_path], **kwargs)
