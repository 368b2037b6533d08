"""Readers never crash and never lie: every bad value is an InputError naming the file and the line or row."""

import sys
from pathlib import Path

import darshan
import polars as pl
import pytest
from typer.testing import CliRunner

from iosets.analyzer import analyze, ingest, read_blocktrace, read_darshan, read_requests, write_requests
from iosets.analyzer._ingest._text import MAX_SECTOR
from iosets.datasets import load_sample_traces
from iosets.errors import InputError
from iosets.replay import replay_requests

OPS_HEADER = "job_id,rank,op,offset,size,start,end\n"
Q = "  8,0    3        2     1.000001829   697  Q   W {sector} + 8 [kjournald]\n"
C = "  8,0    1        3     1.004276637     0  C   W {sector} + 8 [0]\n"


def _message(read, path) -> str:
    with pytest.raises(InputError) as error:
        read(path)
    return str(error.value)


# ----------------------------------------------------------------------------- requests tables


def test_an_ops_csv_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "ops.csv"
    path.write_bytes(OPS_HEADER.encode() + b"a,0,read,0,10,0.5,0.7\n\xff\xfe,0,read,0,10,0.7,0.9\n")
    expected = f"{path} line 3: not UTF-8 text (byte 0xff)"
    assert _message(read_requests, path) == _message(ingest, path) == expected
    assert analyze([path], workers=1).errors.rows() == [(str(path), expected)]


def test_an_ops_csv_with_a_ragged_line_or_an_open_quote_names_the_line(tmp_path):
    path = tmp_path / "ops.csv"
    path.write_text(OPS_HEADER + "a,0,read,0,10,0.5,0.7\na,0,read,0,10,0.5,0.7,9\n")
    assert _message(read_requests, path) == f"{path} line 3: expected 7 comma-separated fields (as the header), got 8"
    path.write_text(OPS_HEADER + 'a,0,read,0,10,0.5,0.7\n"a,0,read,0,10,0.5,0.7\n')
    assert _message(read_requests, path) == f"{path} line 3: unexpected end of data"


BAD_VALUES = [
    ("start", float("nan"), "start: expected a finite number, got NaN"),
    ("start", float("inf"), "start: expected a finite number, got inf"),
    ("start", -1.0, "start: expected a date >= 0, got -1.0"),
    ("end", 0.1, "end: expected a date >= start, got 0.1"),
    ("offset", -8, "offset: expected bytes >= 0, got -8"),
    ("op", "erase", "op: expected 'read'|'write', got 'erase'"),
]


@pytest.mark.parametrize(
    ("column", "value", "message"), BAD_VALUES, ids=[m.split(":")[0] + str(v) for _, v, m in BAD_VALUES]
)
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_every_reader_of_ops_tables_rejects_a_bad_value_by_line_or_row(tmp_path, column, value, message, suffix):
    frame = pl.DataFrame(
        {"job_id": ["a", "b"], "rank": [0, 0], "op": ["read"] * 2, "offset": [0, 0], "size": [5, 5]}
        | {"start": [0.5, 0.5], "end": [0.7, 0.7]}
    ).with_columns(pl.when(pl.int_range(pl.len()) == 1).then(pl.lit(value)).otherwise(pl.col(column)).alias(column))
    path = write_requests(frame, tmp_path / f"ops{suffix}")
    where = "row 1" if suffix == ".parquet" else "line 3"
    expected = f"{path} {where}: {message}"
    for read in (read_requests, ingest, read_blocktrace):
        assert _message(read, path) == expected
    assert analyze([path], workers=1).errors["reason"].to_list() == [expected]


def test_a_file_name_with_brackets_is_a_name_not_a_pattern(tmp_path):
    ops = tmp_path / "x[ab]y.csv"
    ops.write_text(OPS_HEADER + "a,0,read,0,10,0.5,0.7\n")
    (tmp_path / "xay.csv").write_text(OPS_HEADER + "decoy,0,read,0,10,0.5,0.7\ndecoy,0,read,0,10,0.5,0.7\n")
    assert read_requests(ops)["job_id"].to_list() == ["a"]
    trace = tmp_path / "m[1].csv"
    trace.write_bytes(load_sample_traces().paths["msr"].read_bytes())
    (tmp_path / "m1.csv").write_text("128166372003061629,decoy,1,Read,0,512,10\n")
    assert read_blocktrace(trace, format="msr").height == 320
    assert read_blocktrace(trace, format="msr", errors="skip").height == 320


# ----------------------------------------------------------------------------- block traces


@pytest.mark.parametrize(
    ("sector", "shown"),
    [("99999999999999999999", "99999999999999999999"), (str(MAX_SECTOR + 1), str(MAX_SECTOR + 1))],
    ids=["beyond_int64", "offset_beyond_int64"],
)
def test_a_blkparse_sector_whose_offset_does_not_fit_names_the_line(tmp_path, sector, shown):
    path = tmp_path / "t.blkparse"
    path.write_text(Q.format(sector=100) + C.format(sector=100) + Q.format(sector=sector) + C.format(sector=sector))
    expected = f"{path} line 3: sector {shown} is too large: its bytes do not fit in 64 bits"
    assert _message(read_blocktrace, path) == expected
    with pytest.warns(UserWarning, match="skipped 2 malformed lines"):
        ops, report = read_blocktrace(path, errors="skip", return_report=True)
    assert report.lines == [3, 4] and ops["offset"].to_list() == [100 * 512]


def test_a_blkparse_sector_at_the_limit_is_read(tmp_path):
    path = tmp_path / "t.blkparse"
    path.write_text(Q.format(sector=MAX_SECTOR) + C.format(sector=MAX_SECTOR))
    assert read_blocktrace(path)["offset"].to_list() == [MAX_SECTOR * 512]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            "  8,0    1   3  1.0     0  C   W 100 + 99999999999999999999 [0]\n",
            "sector count 99999999999999999999 is too large: its bytes do not fit in 64 bits",
        ),
        (
            "  4096,0 1   3  1.0     0  C   W 100 + 8 [0]\n",
            "device '4096,0' is not a Linux device number (major < 4096, minor < 1048576)",
        ),
        (
            "  8,0    1   3  1.0 99999999999999999999  C   W 100 + 8 [0]\n",
            "pid 99999999999999999999 does not fit in 64 bits",
        ),
        ("  8,0    1   3  " + "9" * 400 + ".0  0  C   W 100 + 8 [0]\n", "time 999999999999"),
    ],
    ids=["count", "device", "pid", "time"],
)
def test_other_blkparse_numbers_that_do_not_fit_name_the_line(tmp_path, line, reason):
    path = tmp_path / "t.blkparse"
    path.write_text(Q.format(sector=100) + line)
    assert _message(read_blocktrace, path).startswith(f"{path} line 2: {reason}")


def test_an_spc_lba_whose_offset_does_not_fit_is_rejected_not_wrapped(tmp_path):
    path = tmp_path / "t.spc"
    path.write_text(f"0,{2**55},512,w,0.0\n0,1,512,r,0.1\n")  # 2**55 x 512 = 2**64: wrapped to offset 0 before
    assert _message(lambda p: read_blocktrace(p, format="spc"), path) == (
        f"{path} line 1: expected LBA <= {MAX_SECTOR} (a 512-byte block whose byte offset fits in 64 bits), "
        f"got '{2**55}'"
    )
    path.write_text(f"0,{MAX_SECTOR},512,w,0.0\n")
    assert read_blocktrace(path, format="spc")["offset"].to_list() == [MAX_SECTOR * 512]


def test_an_msr_response_time_at_the_int64_limit_does_not_wrap(tmp_path):
    path = tmp_path / "t.msr.csv"
    path.write_text(f"128166372003061629,hm,1,Read,0,512,{2**63 - 1}\n128166372003071629,hm,1,Write,0,512,10\n")
    ops = read_blocktrace(path)
    assert ops["start"].to_list() == [0.0, 0.001]
    assert ops["end"].to_list() == [pytest.approx((2**63 - 1) / 1e7), pytest.approx(0.001001)]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("fmt", ["blkparse", "msr", "spc"])
def test_an_ingested_block_trace_written_and_read_back_replays(tmp_path, fmt, suffix):
    samples = load_sample_traces()
    ops = ingest(samples.paths[fmt])
    assert ops.equals(samples.requests[fmt]) and ops["file"].null_count() == ops.height  # block traces name no file
    back = read_requests(write_requests(ops, tmp_path / f"{fmt}{suffix}"))
    assert back.equals(ops)
    replay = replay_requests(back)
    assert replay.requests().height == ops.height
    per_class = dict(replay.metrics.classes.select("class", "bytes").iter_rows())
    assert per_class == {job: float(size) for job, size in ops.group_by("job_id").agg(pl.col("size").sum()).iter_rows()}


# ----------------------------------------------------------------------------- Darshan and Dask


def test_a_darshan_job_that_ends_before_it_starts_is_rejected(tmp_path):
    from darshan_writer import posix_record, write_log

    path = tmp_path / "backwards.darshan"
    job = {"uid": 1, "jobid": 77, "nprocs": 2, "start": (1700000100, 0), "end": (1700000000, 500000000)}
    write_log(
        path, job=job, exe="/bin/app", mounts=[("/", "ext4")], names={1: "/f"}, records={"POSIX": [posix_record(1, 0)]}
    )
    expected = (
        f"{path}: corrupt job record: the job ends 99.5 s before it starts (start 1700000100.000, end 1700000000.500)"
    )
    assert _message(read_darshan, path) == expected
    assert analyze([path], workers=1).errors.rows() == [(str(path), expected)]


def test_without_dask_the_message_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed raises ImportError
    with pytest.raises(InputError) as error:
        analyze([tmp_path], dask="local")
    assert str(error.value) == "--dask needs Dask: pip install 'iosets[dask]'"
    from iosets.cli import app

    result = CliRunner().invoke(app, ["analyze", str(tmp_path), "--dask", "local", "-o", str(tmp_path / "j.parquet")])
    assert result.exit_code == 1
    assert "pip install 'iosets[dask]'" in result.output


def test_any_exception_of_pydarshan_is_an_input_error_naming_the_log(monkeypatch):
    from iosets.analyzer._ingest import _darshan

    def overflow(backend, path):
        raise OverflowError("cannot fit 'int' into an index-sized integer")

    monkeypatch.setattr(_darshan, "_read_all", overflow)
    path = Path(darshan.__file__).parent / "examples" / "example_logs" / "dxt.darshan"
    with pytest.raises(InputError) as error:
        read_darshan(path, isolated=False)
    assert str(error.value) == (
        f"{path}: cannot read Darshan log (OverflowError: cannot fit 'int' into an index-sized integer)"
    )
