"""File layouts from Darshan's LUSTRE records: real logs cross-checked with pydarshan, logs written by darshan-util.

Each real log's values were read once with pydarshan (its record dicts: what darshan-parser prints) and are
asserted here exactly; every wheel log with LUSTRE records is also compared to pydarshan record by record.
"""

from pathlib import Path

import numpy as np
import polars as pl
import pytest

darshan = pytest.importorskip("darshan")

from darshan_writer import counter_record, dxt_record, lustre_record_v1, lustre_record_v2, write_log  # noqa: E402

from iosets.analyzer import SiteTrace, read_darshan, site_trace  # noqa: E402
from iosets.analyzer._ingest import _darshan_lustre  # noqa: E402
from iosets.analyzer._ingest._darshan_layout import parse_layout  # noqa: E402
from iosets.analyzer._ingest._darshan_lustre import read_file_layouts  # noqa: E402
from iosets.errors import InputError  # noqa: E402
from iosets.schemas import SITE_FILES  # noqa: E402

WHEEL = Path(darshan.__file__).parent
EXAMPLES = WHEEL / "examples" / "example_logs"
LBNL = Path("/work/shared/data/darshan/jeanbez_8_benchmark_parallel.darshan")
WITH_LUSTRE = sorted(p for p in WHEEL.rglob("*.darshan") if "LUSTRE" in parse_layout(p.read_bytes()).mod_versions)
MIB = 1 << 20
T0 = 1_700_000_000
NAMES = {101: "/scratch/a.dat", 102: "/scratch/b.dat", 103: "/scratch/c.dat", 104: "/scratch/d.dat"}


def _pydarshan(path) -> dict[str, tuple]:
    """File -> (stripe size, stripe count, OST ids) of each LUSTRE record's first component, from pydarshan."""
    with darshan.DarshanReport(str(path), read_all=False) as report:
        report.mod_read_all_lustre_records(dtype="dict")
        names = report.name_records
        seen = {}
        for record in report.records["LUSTRE"]:
            first = record["components"][0]
            counters = first["counters"]
            layout = (int(counters["LUSTRE_COMP_STRIPE_SIZE"]), int(counters["LUSTRE_COMP_STRIPE_COUNT"]))
            seen.setdefault(names[record["id"]], set()).add((*layout, tuple(first["ost_ids"])))
    assert all(len(found) == 1 for found in seen.values())  # the ranks' records of a file agree
    return {name: found.pop() for name, found in seen.items()}


def _layouts(path) -> dict[str, tuple]:
    found = read_darshan(path).layouts
    assert found is not None and found.refused == ()
    return {row[0]: row[1:] for row in found.table.rows()}


@pytest.mark.skipif(not LBNL.is_file(), reason="the shared LBNL logs are not on this machine")
def test_the_lbnl_log_holds_one_file_striped_over_64_of_248_osts():
    name = "/global/cscratch1/sd/jeanbez/paper/openPMD-api-build/../benchmarks/benchmark.h5"
    assert _layouts(LBNL) == {name: (32 * MIB, 64, 213, 248)}  # LUSTRE_STRIPE_SIZE, _WIDTH, _OST_ID_0, LUSTRE_OSTS
    size, count, osts = _pydarshan(LBNL)[name]  # 1024 records (one per rank), all alike
    assert (size, count, osts[0]) == (32 * MIB, 64, 213)
    assert len(set(osts)) == 64 and max(osts) < 248  # 64 distinct OSTs, each an index of the 248


def test_the_wheel_logs_layouts_are_their_lustre_records():
    assert _layouts(EXAMPLES / "example.darshan") == {
        "/scratch2/scratchdirs/glock/tokioabc-s.4478544/vpicio/vpicio.hdf5": (MIB, 24, 7, 24)  # over all 24 OSTs
    }
    assert _layouts(EXAMPLES / "ior_hdf5_example.darshan") == {
        "/global/cscratch1/sd/ssnyder/test123.h5": (MIB, 1, 106, 248)
    }


@pytest.mark.parametrize("path", WITH_LUSTRE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_wheel_log_agrees_with_pydarshan_file_by_file(path):
    ours = _layouts(path)
    theirs = _pydarshan(path)
    assert ours.keys() == theirs.keys()
    for name, (size, count, first, targets) in ours.items():
        assert (size, count, first) == (theirs[name][0], theirs[name][1], theirs[name][2][0]), name
        assert targets >= 1 and max(theirs[name][2]) < targets, name  # every OST of the file is one of the fs's


def test_a_log_without_lustre_records_has_no_layouts():
    assert read_darshan(EXAMPLES / "dxt.darshan").layouts is None


def _log(path, lustre, *, version, jobid=9, start=0):
    """A DXT job writing /scratch/a.dat (3 requests of 1 MiB) with LUSTRE records of the given version."""
    job = {"uid": 1, "jobid": jobid, "nprocs": 2, "start": (T0 + start, 0), "end": (T0 + start + 60, 0)}
    writes = [(k * MIB, MIB, 1.0 + k, 1.5 + k) for k in range(3)]
    records = {
        "POSIX": [counter_record("POSIX", 101, 0, {"POSIX_WRITES": 3, "POSIX_BYTES_WRITTEN": 3 * MIB})],
        "DXT_POSIX": [dxt_record(101, 0, writes=writes)],
        "LUSTRE": lustre,
    }
    mounts = [("/scratch", "lustre")]
    write_log(path, job=job, exe="/bin/app", mounts=mounts, names=NAMES, records=records, versions={"LUSTRE": version})
    return path


HOSTILE_V1 = [
    lustre_record_v1(101, 0, osts=16, stripe_size=4 * MIB, ost_ids=[3, 4]),
    lustre_record_v1(101, 1, osts=16, stripe_size=4 * MIB, ost_ids=[3, 4]),  # rank 1 agrees
    lustre_record_v1(102, -1, osts=16, stripe_size=-1, ost_ids=[5]),
    lustre_record_v1(103, -1, osts=16, stripe_size=MIB, ost_ids=[]),  # stripe count 0
    lustre_record_v1(104, 0, osts=16, stripe_size=MIB, ost_ids=[7, 8, 9, 10]),
    lustre_record_v1(104, 1, osts=16, stripe_size=MIB, ost_ids=[7, 8]),  # rank 1 says 2 stripes
]
HOSTILE_REASONS = [
    "LUSTRE record of /scratch/b.dat (rank -1): LUSTRE_STRIPE_SIZE: expected bytes > 0, got -1; the file has no layout",
    "LUSTRE record of /scratch/c.dat (rank -1): LUSTRE_STRIPE_WIDTH: expected an integer >= 1, got 0; "
    "the file has no layout",
    "LUSTRE records of /scratch/d.dat disagree on LUSTRE_STRIPE_WIDTH: 4 (rank 0) vs 2 (rank 1); "
    "the file has no layout",
]


def test_hostile_records_leave_their_files_without_layout_and_say_which_field(tmp_path):
    job = read_darshan(_log(tmp_path / "v1.darshan", HOSTILE_V1, version=1))
    assert job.layouts is not None and job.requests is not None and job.requests.height == 3  # the log is read
    assert job.layouts.table.rows() == [("/scratch/a.dat", 4 * MIB, 2, 3, 16)]
    assert list(job.layouts.refused) == HOSTILE_REASONS


def test_an_ost_outside_the_file_system_is_refused(tmp_path):
    lustre = [
        lustre_record_v1(101, 0, osts=16, stripe_size=MIB, ost_ids=[16]),
        lustre_record_v1(102, 0, osts=0, stripe_size=MIB, ost_ids=[0]),
    ]
    found = read_darshan(_log(tmp_path / "v1.darshan", lustre, version=1)).layouts
    assert found is not None and found.table.is_empty()
    assert list(found.refused) == [
        "LUSTRE record of /scratch/a.dat (rank 0): LUSTRE_OST_ID_0: expected an OST index below LUSTRE_OSTS 16, "
        "got 16; the file has no layout",
        "LUSTRE record of /scratch/b.dat (rank 0): LUSTRE_OSTS: expected an integer >= 1, got 0; "
        "the file has no layout",
    ]


def test_version_2_records_give_their_first_components_layout_and_no_ost_count(tmp_path):
    lustre = [
        lustre_record_v2(101, 0, [(MIB, 2, 0), (4 * MIB, 4, 0)], [5, 6, 1, 2, 3, 4]),  # a composite layout
        lustre_record_v2(102, 0, [(-1, 2, 0)], [5, 6]),  # an unused slot first
        lustre_record_v2(103, 0, [(MIB, 0, 2), (MIB, 4, 0)], [1, 2, 3, 4]),  # data on the MDT first
        lustre_record_v2(104, 0, [(8 * MIB, 1, 0)], [0]),
    ]
    found = read_darshan(_log(tmp_path / "v2.darshan", lustre, version=2)).layouts
    assert found is not None
    assert found.table.rows() == [("/scratch/a.dat", MIB, 2, 5, None), ("/scratch/d.dat", 8 * MIB, 1, 0, None)]
    assert list(found.refused) == [
        "LUSTRE record of /scratch/b.dat (rank 0): LUSTRE_COMP1_STRIPE_SIZE -1: its first layout component is an "
        "unused slot; the file has no layout",
        "LUSTRE record of /scratch/c.dat (rank 0): LUSTRE_COMP1_STRIPE_PATTERN 2: its data starts on the MDT, "
        "not on OSTs; the file has no layout",
    ]


def test_a_record_longer_than_its_region_ends_the_reading_and_darshan_util_refuses_the_log(tmp_path):
    lustre = [
        lustre_record_v1(101, 0, osts=16, stripe_size=MIB, ost_ids=[2]),
        lustre_record_v1(102, 0, osts=16, stripe_size=MIB, ost_ids=[3], stripe_width=1000),  # one id of 1000
    ]
    path = _log(tmp_path / "cut.darshan", lustre, version=1)
    data = path.read_bytes()
    found = read_file_layouts(data, parse_layout(data))
    assert found is not None and found.table.rows() == [("/scratch/a.dat", MIB, 1, 2, 16)]
    assert list(found.refused) == [
        "LUSTRE record 1 claims 1000 OST ids, more than the 8 bytes after its head in the region: it and the "
        "records after it are not read; their files have no layout"
    ]
    with pytest.raises(InputError, match=r"cut\.darshan: cannot read the LUSTRE module"):  # as before: no crash
        read_darshan(path)


@pytest.mark.parametrize("version", [1, 2])
def test_random_records_never_raise_and_each_file_is_kept_or_refused_once(version):
    reader = _darshan_lustre._records_v1 if version == 1 else _darshan_lustre._records_v2
    darshan_names = _darshan_lustre._V1_NAMES if version == 1 else _darshan_lustre._V2_NAMES
    rng = np.random.default_rng(21)
    kept = refused_files = 0
    for _ in range(500):
        words = rng.integers(-2, 12, size=int(rng.integers(0, 80)))  # small words: plausible ids, counts, sizes
        content = words.astype("<i8").tobytes() + bytes(int(rng.integers(0, 8)))  # maybe a partial last word
        records, framing = reader(content, "<")
        ids = set(records.rec_id.tolist())
        names = {rec_id: f"/scratch/{rec_id}" for rec_id in ids if rec_id % 3}  # some records have no name
        table, refused = _darshan_lustre._per_file(records, names, darshan_names)
        assert table.height + len(refused) == len(ids)  # every file once: a layout or a reason
        assert set(table["file"]) <= set(names.values()) and table["file"].is_unique().all()
        assert (table["stripe_size"] > 0).all() and (table["stripe_count"] >= 1).all()
        assert framing is None or framing.startswith(("LUSTRE record", "the LUSTRE region ends"))
        kept, refused_files = kept + table.height, refused_files + len(refused)
    assert kept > 0 and refused_files > 0  # both ways were taken


def test_the_site_trace_holds_the_layouts_of_its_files():
    site = site_trace([EXAMPLES / "ior_hdf5_example.darshan", EXAMPLES / "dxt.darshan"])
    assert site.files is not None
    assert site.files.rows() == [("/global/cscratch1/sd/ssnyder/test123.h5", "32324925", MIB, 1, 106, 248)]
    assert site.files.columns == SITE_FILES.names
    requests = site.requests.filter(pl.col("job_id") == "32324925")
    assert requests.height == 59 and requests["file"].unique().to_list() == [site.files["file"].item()]


def test_the_site_trace_lists_refused_layouts_with_its_skips(tmp_path):
    _log(tmp_path / "v1.darshan", HOSTILE_V1, version=1)
    site = site_trace([tmp_path])
    assert site.files is not None and site.files.rows() == [("/scratch/a.dat", "9", 4 * MIB, 2, 3, 16)]
    assert site.skipped.rows() == [("9", str(tmp_path / "v1.darshan"), reason) for reason in HOSTILE_REASONS]


def test_two_logs_of_a_job_that_disagree_on_a_file_leave_it_without_layout(tmp_path):
    first = _log(
        tmp_path / "p0.darshan", [lustre_record_v1(101, 0, osts=16, stripe_size=MIB, ost_ids=[1, 2])], version=1
    )
    second = _log(
        tmp_path / "p1.darshan",
        [
            lustre_record_v1(101, 0, osts=16, stripe_size=MIB, ost_ids=[1]),
            lustre_record_v1(102, 0, osts=16, stripe_size=MIB, ost_ids=[4]),
        ],
        version=1,
        start=2,
    )
    site = site_trace([first, second])
    assert site.jobs["job_id"].to_list() == ["9"]  # one job of two logs
    assert site.files is not None and site.files.rows() == [("/scratch/b.dat", "9", MIB, 1, 4, 16)]
    assert site.skipped.rows() == [
        (
            "9",
            str(second),
            f"LUSTRE records of /scratch/a.dat disagree on stripe_count with {first}: 1 here, 2 there; "
            "the file has no layout",
        )
    ]


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_the_files_table_round_trips_beside_the_site_trace(tmp_path, suffix):
    site = site_trace([EXAMPLES / "ior_hdf5_example.darshan"])
    done = site.write(tmp_path / f"site{suffix}")
    assert tmp_path / f"site.files{suffix}" in done.written
    back = SiteTrace.read(tmp_path / f"site{suffix}")
    assert back.files is not None and back.files.equals(site.files)
    assert back.requests.equals(site.requests)


def test_a_site_trace_without_lustre_records_has_no_files_table(tmp_path):
    (tmp_path / "site.files.parquet").write_bytes(b"an earlier run's")
    site = site_trace([EXAMPLES / "dxt.darshan"])
    assert site.files is None
    done = site.write(tmp_path / "site.parquet")
    assert done.removed == [tmp_path / "site.files.parquet"]  # no file outlives the run it describes
    assert SiteTrace.read(tmp_path / "site.parquet").files is None  # as an old site trace, written without it


def test_a_bad_files_table_names_its_file_row_and_column(tmp_path):
    site = site_trace([EXAMPLES / "ior_hdf5_example.darshan"])
    site.write(tmp_path / "site.csv")
    bad = pl.read_csv(tmp_path / "site.files.csv").with_columns(pl.lit(248).alias("first_target"))
    bad.write_csv(tmp_path / "site.files.csv")
    with pytest.raises(
        InputError, match=r"site\.files\.csv row 0: first_target: expected an integer >= 0, below fs_targets, got 248"
    ):
        SiteTrace.read(tmp_path / "site.csv")
    row = {"file": "f", "job_id": "j", "stripe_size": -1, "stripe_count": 0, "first_target": 0, "fs_targets": None}
    frame = pl.DataFrame([row], schema=SITE_FILES.polars)
    with pytest.raises(InputError, match=r"file layouts row 0: stripe_size: expected bytes > 0, got -1"):
        SITE_FILES.validate(frame)
