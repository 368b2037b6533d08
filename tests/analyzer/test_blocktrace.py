"""Block-trace ingesters: blkparse, MSR Cambridge, SPC/UMass and requests tables into the requests table."""

from importlib import resources

import polars as pl
import pytest

from iosets.analyzer import read_blocktrace, sniff_format
from iosets.errors import InputError

DATA = resources.files("iosets.datasets.data")
DEV80 = (8 << 20) + 0
DEV816 = (8 << 20) + 16

BLKPARSE = """\
  8,0    3        1     0.000000000   697  A   W 223490 + 8 <- (8,5) 23802
  8,0    3        2     1.000001829   697  Q   W 223490 + 8 [kjournald]
  8,0    3        3     1.000005724   697  G   W 223490 + 8 [kjournald]
  8,0    3        4     1.000007200   697  P   N [kjournald]
  8,0    3       11     1.000034929   697  D   W 223490 + 8 [kjournald]
  8,0    1        1     1.000100000  1200  D  RA 1000 + 16 [cat]
  8,0    1        2     1.004276637     0  C   W 223490 + 8 [0]
  8,0    1        3     1.005000000     0  C  RA 1000 + 16 [0]
  8,16   0        1     1.006000000     0  C  WS 50 + 2 [0]
  8,0    0        9     1.007000000   697  Q FWS [kjournald]
  8,0    0       10     1.008000000   697  Q   W 223490 + 8 [kjournald]
  8,0    0       11     1.009000000     0  C   W 223490 + 8 [0]
CPU0 (8,0):
 Reads Queued:           1,        8KiB\t Writes Queued:           1,        4KiB
Total (8,0):
"""

MSR = """\
128166372003061629,hm,1,Read,3218436096,65536,10022
128166372003071629,hm,0,Write,4096,512,20000
128166372013061629,src1,2,write,0,4096,1
"""

SPC = """\
0,303567,3584,w,0.000000
1,55590,3072,r,0.000000
0,303574,512,W,0.026214
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def rows(frame):
    return frame.select("job_id", "rank", "op", "offset", "size").rows()


def test_blkparse_completions_with_issue_times(tmp_path):
    ops = read_blocktrace(write(tmp_path, "t.blkparse", BLKPARSE))
    assert ops.columns == ["job_id", "rank", "op", "offset", "size", "start", "end", "file"]
    assert rows(ops) == [
        ("8,0", DEV80, "write", 223490 * 512, 4096),
        ("8,0", DEV80, "read", 512000, 8192),
        ("8,16", DEV816, "write", 25600, 1024),
        ("8,0", DEV80, "write", 223490 * 512, 4096),
    ]
    t0 = 1.000001829  # first request: the Q of sector 223490
    assert ops["start"].to_list() == pytest.approx([0.0, 1.0001 - t0, 1.006 - t0, 1.008 - t0])
    ends = [1.004276637 - t0, 1.005 - t0, 1.006 - t0, 1.009 - t0]
    assert ops["end"].to_list() == pytest.approx(ends)
    assert ops["file"].null_count() == 4


def test_blkparse_class_by_process(tmp_path):
    ops = read_blocktrace(write(tmp_path, "t.txt", BLKPARSE), format="blkparse", class_by="process")
    # Q gives the process, else D; a completion with neither is 'unknown'
    assert ops["job_id"].to_list() == ["kjournald:697", "cat:1200", "unknown", "kjournald:697"]
    assert ops["rank"].to_list() == [DEV80, DEV80, DEV816, DEV80]


def test_msr_filetime_and_response_time(tmp_path):
    ops = read_blocktrace(write(tmp_path, "hm_1.csv", MSR))
    assert rows(ops) == [
        ("hm_1", 1, "read", 3218436096, 65536),
        ("hm_0", 0, "write", 4096, 512),
        ("src1_2", 2, "write", 0, 4096),
    ]
    assert ops["start"].to_list() == [0.0, 0.001, 1.0]
    assert ops["end"].to_list() == [0.0010022, 0.003, 1.0000001]
    host = read_blocktrace(write(tmp_path, "hm_1.csv", MSR), class_by="host")
    assert host["job_id"].to_list() == ["hm", "hm", "src1"]


def test_msr_header_line_is_accepted(tmp_path):
    head = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n"
    ops = read_blocktrace(write(tmp_path, "m.csv", head + MSR), format="msr")
    assert ops.height == 3 and ops["start"].to_list() == [0.0, 0.001, 1.0]


def test_spc_blocks_and_opcodes(tmp_path):
    ops = read_blocktrace(write(tmp_path, "Financial1.spc", SPC))
    assert rows(ops) == [
        ("0", 0, "write", 303567 * 512, 3584),
        ("1", 1, "read", 55590 * 512, 3072),
        ("0", 0, "write", 303574 * 512, 512),
    ]
    assert ops["start"].to_list() == [0.0, 0.0, 0.026214]
    assert ops["end"].null_count() == 3
    asu = read_blocktrace(write(tmp_path, "f.csv", SPC), format="spc", class_by="asu")
    assert asu["job_id"].to_list() == ["0", "1", "0"]


def test_ops_table_passes_through(tmp_path):
    text = "job_id,rank,op,offset,size,start,end\na,0,read,0,10,0.5,0.7\n"
    path = write(tmp_path, "ops.csv", text)
    ops = read_blocktrace(path)
    assert ops.select("job_id", "rank", "op", "offset", "size", "start", "end").rows() == [
        ("a", 0, "read", 0, 10, 0.5, 0.7)
    ]


@pytest.mark.parametrize(
    ("name", "fmt", "n", "groups"),
    [
        ("sample.blkparse.txt", "blkparse", 66, {("8,0", "read"): 30, ("8,16", "write"): 36}),
        ("sample.msr.csv", "msr", 320, {("hm_0", "read"): 128, ("hm_1", "write"): 192}),
        ("sample.spc.csv", "spc", 400, {("0", "write"): 250, ("1", "read"): 150}),
    ],
)
def test_samples_are_sniffed_and_load(name, fmt, n, groups):
    with resources.as_file(DATA / name) as path:
        assert sniff_format(path) == fmt
        ops = read_blocktrace(path)
    assert ops.height == n
    assert {(j, o): c for j, o, c in ops.group_by("job_id", "op").len().rows()} == groups
    assert ops["start"].min() == 0.0 and ops["start"].is_sorted()
    assert (ops["size"] > 0).all() and set(ops["op"]) <= {"read", "write"}


def test_sample_blkparse_periodic_writer():
    with resources.as_file(DATA / "sample.blkparse.txt") as path:
        ops = read_blocktrace(path, class_by="process")
    ckpt = ops.filter(pl.col("job_id") == "ckpt:4242")
    bursts = ckpt["start"].gather_every(6).diff().drop_nulls()
    assert bursts.to_list() == pytest.approx([10.0] * 5)
    assert (ckpt["size"] == 1024 * 512).all()


def test_malformed_lines_name_file_and_line(tmp_path):
    bad_msr = MSR.replace("Write", "rd", 1)
    with pytest.raises(InputError, match=r"bad\.csv line 2: expected 'read'\|'write', got 'rd'"):
        read_blocktrace(write(tmp_path, "bad.csv", bad_msr), format="msr")
    bad_spc = SPC + "0,12,512,w\n"
    with pytest.raises(InputError, match=r"bad\.spc line 4: expected 5 comma-separated"):
        read_blocktrace(write(tmp_path, "bad.spc", bad_spc), format="spc")
    bad_spc = SPC.replace("55590", "x5590")
    with pytest.raises(InputError, match=r"line 2: expected an integer >= 0 LBA, got 'x5590'"):
        read_blocktrace(write(tmp_path, "bad.spc", bad_spc), format="spc")
    bad_blk = BLKPARSE.replace("C  RA 1000 + 16", "C  RA 1000 + x6")
    with pytest.raises(InputError, match=r"bad\.txt line 8: expected 'sector \+ count"):
        read_blocktrace(write(tmp_path, "bad.txt", bad_blk))
    bad_blk = BLKPARSE.replace("  8,16   0        1     1.006", "  8,16   0        1     1,006")
    with pytest.raises(InputError, match=r"bad\.txt line 9: expected a blkparse event 'maj,min"):
        read_blocktrace(write(tmp_path, "bad.txt", bad_blk))


def test_skip_keeps_good_rows_and_reports_lines(tmp_path):
    text = MSR + "128166372013061630,hm,1,Read,0,-4,1\ngarbage\n" + MSR.splitlines()[0] + "\n"
    path = write(tmp_path, "skip.csv", text)
    with pytest.warns(UserWarning, match="skipped 2 malformed lines"):
        ops, report = read_blocktrace(path, format="msr", errors="skip", return_report=True)
    assert ops.height == 4
    assert report.lines == [4, 5]
    assert report.n_skipped == 2
    assert report.messages == [
        f"{path} line 4: expected an integer >= 0 Size, got '-4'",
        f"{path} line 5: expected 7 comma-separated fields, got 1",
    ]
    bad_blk = BLKPARSE.replace("C  RA 1000 + 16", "C  RA 1000 + x6")
    with pytest.warns(UserWarning):
        blk, report = read_blocktrace(write(tmp_path, "b.txt", bad_blk), errors="skip", return_report=True)
    assert report.lines == [8] and blk.height == 3


def test_skip_report_is_empty_on_clean_input(tmp_path):
    ops, report = read_blocktrace(write(tmp_path, "s.csv", SPC), errors="skip", return_report=True)
    assert ops.height == 3 and report.lines == [] and report.n_skipped == 0
    assert read_blocktrace(write(tmp_path, "s.csv", SPC), return_report=True)[1].n_skipped == 0


def test_bad_parameters(tmp_path):
    path = write(tmp_path, "s.csv", SPC)
    with pytest.raises(InputError, match="class_by='host' does not apply to format 'spc'"):
        read_blocktrace(path, class_by="host")
    with pytest.raises(InputError, match="unknown format 'csv'"):
        read_blocktrace(path, format="csv")
    with pytest.raises(InputError, match="cannot tell the trace format"):
        read_blocktrace(write(tmp_path, "x.txt", "hello world\n"))
    with pytest.raises(InputError, match="no such file"):
        read_blocktrace(tmp_path / "missing.csv")


def test_blkparse_stale_issue_is_not_reused_and_elapsed_is_read(tmp_path):
    text = """\
  8,0    0        1     2.000000000   10  Q   R 64 + 8 [dd]
  8,0    0        2     2.000500000    0  C   R 64 + 8 (  500000) [0]
  8,0    0        3     2.100000000    0  C   R 64 + 8 [0]
  8,0    0        4     2.200000000   10  m   N cfq10 alloced
"""
    ops = read_blocktrace(write(tmp_path, "s.txt", text), class_by="process")
    assert ops.select("job_id", "offset", "size").rows() == [
        ("dd:10", 32768, 4096),
        ("unknown", 32768, 4096),
    ]
    assert ops["start"].to_list() == pytest.approx([0.0, 0.1])
    assert ops["end"].to_list() == pytest.approx([0.0005, 0.1])


def test_blkparse_stray_text_before_summary_is_an_error(tmp_path):
    text = BLKPARSE.replace("  8,16   0        1", "oops\n  8,16   0        1")
    with pytest.raises(InputError, match=r"s\.txt line 9: expected a blkparse event .*got 'oops'"):
        read_blocktrace(write(tmp_path, "s.txt", text), format="blkparse")


def test_ops_skip_reports_lines(tmp_path):
    text = "job_id,rank,op,offset,size,start\na,0,read,0,10,0.0\nb,0,rd,zero,10,1.0\n"
    text += "c,1,write,5,5,2.0\n"
    path = write(tmp_path, "ops.csv", text)
    with pytest.raises(InputError, match=r"ops\.csv line 3: op: expected 'read'\|'write', got 'rd'"):
        read_blocktrace(path)
    with pytest.warns(UserWarning, match="skipped 1 malformed lines"):
        ops, report = read_blocktrace(path, errors="skip", return_report=True)
    assert ops.select("job_id", "op", "offset").rows() == [("a", "read", 0), ("c", "write", 5)]
    assert report.lines == [3]
