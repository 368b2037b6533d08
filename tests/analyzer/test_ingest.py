"""The ingest registry: format sniffing, the one entry for every format, and what a new format needs."""

import shutil
from importlib import resources
from pathlib import Path

import polars as pl
import pytest

from iosets.analyzer import INGESTERS, Ingester, ingest, read_blocktrace, read_darshan, sniff_format
from iosets.errors import InputError

darshan = pytest.importorskip("darshan")

DATA = resources.files("iosets.datasets.data")
EXAMPLES = Path(darshan.__file__).parent / "examples" / "example_logs"


def test_registry_lists_every_format_in_sniffing_order():
    assert list(INGESTERS) == ["darshan", "blkparse", "ops", "msr", "spc"]
    assert {name: ingester.class_by for name, ingester in INGESTERS.items()} == {
        "darshan": ("job",),
        "blkparse": ("device", "process"),
        "ops": ("device",),
        "msr": ("device", "host"),
        "spc": ("device", "asu"),
    }
    assert all(name == ingester.name and ingester.description for name, ingester in INGESTERS.items())


def test_darshan_logs_are_sniffed_by_suffix_or_magic_number(tmp_path):
    assert sniff_format(EXAMPLES / "example.darshan") == "darshan"
    renamed = tmp_path / "job1234.log"
    shutil.copy(EXAMPLES / "dxt.darshan", renamed)
    assert sniff_format(renamed) == "darshan"
    assert ingest(renamed).equals(read_darshan(EXAMPLES / "dxt.darshan").requests)


def test_ops_tables_are_sniffed_by_suffix_or_header(tmp_path):
    (tmp_path / "t.parquet").write_bytes(b"")  # the suffix decides, the content is not read
    assert sniff_format(tmp_path / "t.parquet") == "ops"
    (tmp_path / "t.csv").write_text("job_id,rank,op,offset,size,start\n")
    assert sniff_format(tmp_path / "t.csv") == "ops"


def test_unknown_and_missing_files(tmp_path):
    (tmp_path / "x.txt").write_text("\n\nhello world\n")
    with pytest.raises(InputError, match=r"first line 'hello world'; pass format='darshan'\|'blkparse'\|'ops'"):
        sniff_format(tmp_path / "x.txt")
    with pytest.raises(InputError, match="nope.csv: no such file"):
        sniff_format(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="nope.csv: no such file"):
        ingest(tmp_path / "nope.csv", format="msr")


def test_darshan_dxt_ops_with_the_job_id():
    ops = ingest(EXAMPLES / "dxt.darshan", format="darshan", class_by="job")
    assert ops.height == 7623 and ops["job_id"].unique().to_list() == ["1537455"]


def test_darshan_log_without_dxt_has_no_ops():
    with pytest.raises(InputError, match=r"example\.darshan: no DXT module, so no request-level trace"):
        ingest(EXAMPLES / "example.darshan")


def test_class_by_is_checked_per_format():
    with resources.as_file(DATA / "sample.msr.csv") as path:
        assert ingest(path)["job_id"].unique().sort().to_list() == ["hm_0", "hm_1"]
        assert ingest(path, class_by="host")["job_id"].unique().to_list() == ["hm"]
        with pytest.raises(InputError, match="class_by='asu' does not apply to format 'msr'; expected one of device"):
            ingest(path, class_by="asu")
    with pytest.raises(InputError, match="class_by='device' does not apply to format 'darshan'; expected one of job"):
        ingest(EXAMPLES / "dxt.darshan", class_by="device")
    with pytest.raises(InputError, match="unknown class_by 'rank'"):
        ingest(EXAMPLES / "dxt.darshan", class_by="rank")
    with pytest.raises(InputError, match="unknown format 'recorder'; expected one of auto, darshan, blkparse"):
        ingest(EXAMPLES / "dxt.darshan", format="recorder")


def test_read_blocktrace_refuses_darshan_logs():
    with pytest.raises(InputError, match=r"dxt\.darshan: a Darshan log .*not a block trace; read it with ingest\(\)"):
        read_blocktrace(EXAMPLES / "dxt.darshan")
    with pytest.raises(InputError, match="unknown format 'darshan'"):
        read_blocktrace(EXAMPLES / "dxt.darshan", format="darshan")


def test_skip_warns_and_reports_from_ingest(tmp_path):
    path = tmp_path / "ops.csv"
    path.write_text("job_id,rank,op,offset,size,start,end\na,0,read,0,10,0.5,0.7\nb,0,read,0,10,2.0,1.0\n")
    with pytest.warns(UserWarning, match="skipped 1 malformed lines; first: .* line 3: end: expected a date >= start"):
        ops, report = ingest(path, errors="skip", return_report=True)
    assert ops["job_id"].to_list() == ["a"]
    assert report.lines == [3] and report.messages == [f"{path} line 3: end: expected a date >= start, got 1.0"]


def test_parquet_rows_are_skipped_by_row_number(tmp_path):
    frame = pl.DataFrame(
        {"job_id": ["a", "b", "c"], "rank": [0, -1, 0], "op": ["read"] * 3, "offset": 0, "size": 5, "start": 1.0}
    )
    frame.write_parquet(tmp_path / "o.parquet")
    with pytest.warns(UserWarning):
        ops, report = ingest(tmp_path / "o.parquet", errors="skip", return_report=True)
    assert ops["job_id"].to_list() == ["a", "c"]
    assert report.lines == [1] and report.messages[0].endswith(
        "o.parquet row 1: rank: expected an integer >= 0, got -1"
    )


def _toy_reader(path, class_by, errors, report):
    """A one-request-per-line format: 'W size start' or 'R size start'."""
    words = pl.read_csv(path, has_header=False, separator=" ", new_columns=["op", "size", "start"])
    return words.select(
        pl.lit(path.stem).alias("job_id"),
        pl.lit(0).alias("rank"),
        pl.col("op").replace_strict({"W": "write", "R": "read"}),
        pl.lit(0).alias("offset"),
        "size",
        pl.col("start").cast(pl.Float64),
    )


def test_a_new_format_is_one_ingester_in_the_registry(tmp_path, monkeypatch):
    toy = Ingester("toy", "toy trace", _toy_reader, class_by=("file",), suffixes=(".toy",))
    monkeypatch.setitem(INGESTERS, "toy", toy)
    path = tmp_path / "run7.toy"
    path.write_text("W 4096 0.5\nR 512 1.5\n")
    ops = ingest(path)
    assert ops.columns == ["job_id", "rank", "op", "offset", "size", "start", "end", "file"]
    assert ops.select("job_id", "op", "size", "start").rows() == [
        ("run7", "write", 4096, 0.5),
        ("run7", "read", 512, 1.5),
    ]
    path.write_text("W -1 0.5\n")
    with pytest.raises(InputError, match=r"run7\.toy row 0: size: expected bytes >= 0, got -1"):  # checked for it
        ingest(path)
