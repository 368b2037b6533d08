"""read_darshan counts every counter module once (the stacking rule), reads both DXT modules and names apps.

The logs are written at test time with darshan-util's own writer (darshan_writer.py); each
module's layout is first proven by reading it back with pydarshan. Every expected number is
computed by hand from the values put into the log.
"""

from pathlib import Path

import pytest

darshan = pytest.importorskip("darshan")

from darshan.backend import cffi_backend  # noqa: E402
from darshan_writer import (  # noqa: E402
    HEATMAP_RECORD_IDS,
    MOD_IDS,
    counter_record,
    dxt_record,
    heatmap_record,
    write_log,
)

from iosets.analyzer._ingest import ModuleTotals, read_darshan  # noqa: E402
from iosets.errors import InputError  # noqa: E402

JOB = {"uid": 501, "jobid": 77, "nprocs": 4, "start": (1700000000, 0), "end": (1700000100, 0)}
MOUNTS = [("/scratch", "lustre"), ("/", "ext4")]
GB = 1_000_000_000
HEATMAP_NAMES = {v: f"heatmap:{k}" for k, v in HEATMAP_RECORD_IDS.items()}
COUNTER_MODULES = ("POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "STDIO", "DFS", "DAOS")


def _log(tmp_path, records, *, name="job.darshan", job=None, exe="/opt/app/sim", **kw):
    """Write a log of ``records`` ({module: [record bytes]}) and return its path."""
    path = tmp_path / name
    names = {i: f"/scratch/f{i}" for i in range(1, 200)}
    write_log(path, job=job or JOB, exe=exe, mounts=MOUNTS, names=names, records=records, **kw)
    return path


def _rec(module, rec_id, rank, counters=None, fcounters=None, **extra):
    return counter_record(module, rec_id, rank, counters, fcounters, extra=extra or None)


def _totals(job) -> dict:
    return {m.module: m for m in job.modules}


# ----------------------------------------------------------------------------- the writer, checked by pydarshan


def _distinct(module: str, k: int) -> tuple[dict, dict]:
    """Every counter and fcounter of a module set to a value unique to it and to record ``k``."""
    cnames, fnames = cffi_backend.counter_names(module), cffi_backend.fcounter_names(module)
    return (
        {n: 1000 * (k + 1) + i for i, n in enumerate(cnames)},
        {n: 100.0 * (k + 1) + i / 4 for i, n in enumerate(fnames)},
    )


def _raw_fields(path, module: str, fields) -> list[tuple]:
    """Fields beyond the counters of each record, read through pydarshan's darshan-util bindings."""
    ffi, lib = cffi_backend.ffi, cffi_backend.libdutil
    log = cffi_backend.log_open(str(path))
    idx = cffi_backend.log_get_modules(log)[module]["idx"]
    buf = ffi.new("void **")
    out = []
    while lib.darshan_log_get_record(log["handle"], idx, buf) > 0:
        rec = ffi.cast(cffi_backend._structdefs[module], buf)[0]
        out.append(tuple(bytes(ffi.buffer(v)) if f.endswith("uuid") else v for f in fields for v in [getattr(rec, f)]))
        lib.darshan_free(buf[0])
        buf[0] = ffi.NULL
    cffi_backend.log_close(log)
    return out


EXTRAS = {
    "H5D": [{"file_rec_id": 31}, {"file_rec_id": 32}],
    "PNETCDF_VAR": [{"file_rec_id": 33}, {"file_rec_id": 34}],
    "DFS": [{"pool_uuid": b"P" * 16, "cont_uuid": b"C" * 16}, {"pool_uuid": b"p" * 16, "cont_uuid": b"c" * 16}],
    "DAOS": [
        {"pool_uuid": b"Q" * 16, "cont_uuid": b"D" * 16, "oid_hi": 7, "oid_lo": 8},
        {"pool_uuid": b"q" * 16, "cont_uuid": b"d" * 16, "oid_hi": 2**63 + 5, "oid_lo": 9},
    ],
}


@pytest.fixture(scope="module")
def every_module_log(tmp_path_factory):
    """Two records of each counter module, every counter distinct."""
    records = {
        m: [_rec(m, 10 * MOD_IDS[m] + k, k - 1, *_distinct(m, k), **(EXTRAS.get(m, [{}, {}])[k])) for k in range(2)]
        for m in COUNTER_MODULES
    }
    return _log(tmp_path_factory.mktemp("every"), records)


@pytest.mark.parametrize("module", COUNTER_MODULES)
def test_pydarshan_reads_written_counters_of(module, every_module_log):
    report = darshan.DarshanReport(str(every_module_log), read_all=True)
    assert report.modules[module]["idx"] == MOD_IDS[module]
    cnames, fnames = cffi_backend.counter_names(module), cffi_backend.fcounter_names(module)
    recs = list(report.records[module])
    assert [(r["id"], r["rank"]) for r in recs] == [(10 * MOD_IDS[module], -1), (10 * MOD_IDS[module] + 1, 0)]
    for k, rec in enumerate(recs):
        counters, fcounters = _distinct(module, k)
        assert dict(zip(cnames, rec["counters"].tolist(), strict=True)) == counters
        assert dict(zip(fnames, rec["fcounters"].tolist(), strict=True)) == fcounters
        if module in ("H5D", "PNETCDF_VAR"):
            assert rec["file_rec_id"] == EXTRAS[module][k]["file_rec_id"]


@pytest.mark.parametrize("module", ["DFS", "DAOS"])
def test_pydarshan_reads_written_object_ids_of(module, every_module_log):
    fields = tuple(EXTRAS[module][0])
    assert _raw_fields(every_module_log, module, fields) == [tuple(e[f] for f in fields) for e in EXTRAS[module]]


def test_writer_refuses_a_field_the_module_lacks():
    with pytest.raises(ValueError, match=r"POSIX records have no field \['oid_hi'\]"):
        counter_record("POSIX", 1, 0, extra={"oid_hi": 1})


def test_every_module_is_read(every_module_log):
    job = read_darshan(every_module_log)
    assert [m.module for m in job.modules] == list(COUNTER_MODULES)
    posix = _distinct("POSIX", 0)[0], _distinct("POSIX", 1)[0]
    t = _totals(job)["POSIX"]
    assert t.bytes_read == sum(c["POSIX_BYTES_READ"] for c in posix)
    assert t.writes == sum(c["POSIX_WRITES"] for c in posix)
    daos = _distinct("DAOS", 0)[0], _distinct("DAOS", 1)[0]
    reads = ("DAOS_OBJ_FETCHES", "DAOS_ARRAY_READS", "DAOS_KV_GETS")
    assert _totals(job)["DAOS"].reads == sum(c[n] for c in daos for n in reads)


# ----------------------------------------------------------------------------- 1, 2: STDIO


STDIO_RECS = [
    _rec(
        "STDIO",
        1,
        0,
        {"STDIO_BYTES_WRITTEN": 10 * GB, "STDIO_WRITES": 10_000, "STDIO_BYTES_READ": 1_000_000, "STDIO_READS": 10},
    ),
    _rec("STDIO", 2, 1, {"STDIO_BYTES_WRITTEN": 7 * GB, "STDIO_WRITES": 7_000}),
]


def test_stdio_only_log_counts_stdio(tmp_path):
    job = read_darshan(_log(tmp_path, {"STDIO": STDIO_RECS}))
    c = job.counters
    assert (c["bytes_written"], c["bytes_read"], c["writes"], c["reads"]) == (17 * GB, 1_000_000, 17_000, 10)
    assert c["modules"] == "STDIO"
    assert job.modules == (ModuleTotals("STDIO", 1_000_000, 17 * GB, 10, 17_000, 0.0, counted=True),)


def test_stdio_and_posix_add_up(tmp_path):
    posix = [
        _rec("POSIX", 3, -1, {"POSIX_BYTES_WRITTEN": 8 << 30, "POSIX_WRITES": 8192}),
        _rec("POSIX", 4, 2, {"POSIX_BYTES_READ": 4096, "POSIX_READS": 1}),
    ]
    job = read_darshan(_log(tmp_path, {"STDIO": STDIO_RECS, "POSIX": posix}))
    c = job.counters
    assert c["bytes_written"] == 17 * GB + (8 << 30)
    assert c["bytes_read"] == 1_000_000 + 4096
    assert (c["writes"], c["reads"]) == (17_000 + 8192, 10 + 1)
    assert c["modules"] == "POSIX,STDIO"
    assert all(m.counted for m in job.modules)


# ----------------------------------------------------------------------------- 3: MPI-IO over POSIX


def test_collective_mpiio_over_posix_counts_posix_once(tmp_path):
    mpiio = [
        _rec(
            "MPI-IO",
            5,
            -1,
            {
                "MPIIO_BYTES_WRITTEN": 4 * GB,
                "MPIIO_COLL_WRITES": 400,
                "MPIIO_BYTES_READ": 1_000_000,
                "MPIIO_INDEP_READS": 40,
                "MPIIO_NB_READS": 2,
            },
        )
    ]
    posix = [  # two aggregators write a little more (file header); data sieving reads more than asked
        _rec("POSIX", 5, 0, {"POSIX_BYTES_WRITTEN": 2_000_100_000, "POSIX_WRITES": 240, "POSIX_BYTES_READ": 3_000_000}),
        _rec("POSIX", 5, 1, {"POSIX_BYTES_WRITTEN": 2_000_100_000, "POSIX_WRITES": 240, "POSIX_READS": 30}),
    ]
    job = read_darshan(_log(tmp_path, {"MPI-IO": mpiio, "POSIX": posix}))
    c = job.counters
    assert c["bytes_written"] == 4_000_200_000  # the POSIX values, not 8 GB
    assert c["bytes_read"] == 3_000_000  # max(MPI-IO 1 MB, POSIX 3 MB)
    assert (c["writes"], c["reads"]) == (480, 42)  # max(400, 480), max(40 + 2, 30)
    assert c["modules"] == "MPI-IO>POSIX"
    t = _totals(job)
    assert t["MPI-IO"] == ModuleTotals("MPI-IO", 1_000_000, 4 * GB, 42, 400, 0.0, counted=False)
    assert t["POSIX"] == ModuleTotals("POSIX", 3_000_000, 4_000_200_000, 30, 480, 0.0, counted=True)


def test_mpiio_over_uninstrumented_storage_wins(tmp_path):
    mpiio = [_rec("MPI-IO", 5, -1, {"MPIIO_BYTES_WRITTEN": 4 * GB, "MPIIO_COLL_WRITES": 400})]
    posix = [_rec("POSIX", 6, 0, {"POSIX_BYTES_WRITTEN": 1000, "POSIX_WRITES": 1})]  # a small log file
    job = read_darshan(_log(tmp_path, {"MPI-IO": mpiio, "POSIX": posix}))
    assert (job.counters["bytes_written"], job.counters["writes"]) == (4 * GB, 400)
    assert {m.module: m.counted for m in job.modules} == {"POSIX": False, "MPI-IO": True}
    assert job.counters["modules"] == "MPI-IO>POSIX"


def test_a_tie_goes_to_the_lowest_layer(tmp_path):
    mpiio = [_rec("MPI-IO", 5, -1, {"MPIIO_BYTES_WRITTEN": GB})]
    posix = [_rec("POSIX", 5, -1, {"POSIX_BYTES_WRITTEN": GB})]
    job = read_darshan(_log(tmp_path, {"MPI-IO": mpiio, "POSIX": posix}))
    assert job.counters["bytes_written"] == GB
    assert {m.module: m.counted for m in job.modules} == {"POSIX": True, "MPI-IO": False}


# ----------------------------------------------------------------------------- 4: DFS and DAOS


def test_dfs_over_daos_counts_the_larger_per_direction(tmp_path):
    dfs = [
        _rec(
            "DFS",
            7,
            -1,
            {
                "DFS_BYTES_WRITTEN": 5 * GB,
                "DFS_WRITES": 500,
                "DFS_WRITEXS": 20,
                "DFS_NB_WRITES": 100,  # included in WRITES / WRITEXS
                "DFS_BYTES_READ": 2 * GB,
                "DFS_READS": 200,
            },
        )
    ]
    daos = [
        _rec(
            "DAOS",
            8,
            -1,
            {
                "DAOS_BYTES_WRITTEN": 5_000_010_000,  # DFS's data again, plus its directory objects
                "DAOS_ARRAY_WRITES": 520,
                "DAOS_OBJ_UPDATES": 10,
                "DAOS_KV_PUTS": 5,
                "DAOS_BYTES_READ": 1_900_000_000,
                "DAOS_ARRAY_READS": 190,
                "DAOS_OBJ_FETCHES": 3,
                "DAOS_KV_GETS": 7,
            },
        )
    ]
    posix = [_rec("POSIX", 9, 0, {"POSIX_BYTES_WRITTEN": 1000, "POSIX_WRITES": 1})]
    job = read_darshan(_log(tmp_path, {"DFS": dfs, "DAOS": daos, "POSIX": posix}))
    c = job.counters
    assert c["bytes_written"] == 1000 + 5_000_010_000  # POSIX + max(DFS, DAOS)
    assert c["bytes_read"] == 2 * GB  # DFS is the larger for reads
    assert (c["writes"], c["reads"]) == (1 + 535, 200)  # max(500 + 20, 520 + 10 + 5), max(200, 190 + 3 + 7)
    assert c["modules"] == "POSIX>DFS>DAOS"
    t = _totals(job)
    assert t["DFS"] == ModuleTotals("DFS", 2 * GB, 5 * GB, 200, 520, 0.0, counted=True)  # won the reads
    assert t["DAOS"] == ModuleTotals("DAOS", 1_900_000_000, 5_000_010_000, 200, 535, 0.0, counted=True)
    assert t["POSIX"].counted


def test_dfs_only_log_counts_its_bytes(tmp_path):
    dfs = [_rec("DFS", 7, r, {"DFS_BYTES_WRITTEN": 3 * GB, "DFS_BYTES_READ": GB, "DFS_READXS": 4}) for r in range(2)]
    job = read_darshan(_log(tmp_path, {"DFS": dfs}))
    c = job.counters
    assert (c["bytes_written"], c["bytes_read"], c["reads"]) == (6 * GB, 2 * GB, 8)
    assert c["modules"] == "DFS" and job.modules[0].counted


# ----------------------------------------------------------------------------- 5: HDF5 and PnetCDF


def test_hdf5_over_mpiio_over_posix_is_not_counted_twice(tmp_path):
    records = {
        "H5F": [_rec("H5F", 20, -1, {"H5F_OPENS": 4, "H5F_USE_MPIIO": 1})],
        "H5D": [_rec("H5D", 21, -1, {"H5D_BYTES_WRITTEN": GB, "H5D_WRITES": 40}, file_rec_id=20)],
        "MPI-IO": [_rec("MPI-IO", 20, -1, {"MPIIO_BYTES_WRITTEN": GB + 4096, "MPIIO_COLL_WRITES": 40})],
        "POSIX": [_rec("POSIX", 20, -1, {"POSIX_BYTES_WRITTEN": GB + 8192, "POSIX_WRITES": 300})],
    }
    job = read_darshan(_log(tmp_path, records))
    assert (job.counters["bytes_written"], job.counters["writes"]) == (GB + 8192, 300)
    assert job.counters["modules"] == "H5D>MPI-IO>POSIX"
    assert {m.module: m.counted for m in job.modules} == {"POSIX": True, "MPI-IO": False, "H5F": False, "H5D": False}


def test_hdf5_over_uninstrumented_storage_still_counts(tmp_path):
    records = {
        "H5F": [_rec("H5F", 20, -1, {"H5F_OPENS": 4})],
        "H5D": [_rec("H5D", 21, -1, {"H5D_BYTES_WRITTEN": 2 * GB, "H5D_WRITES": 40}, file_rec_id=20)],
        "POSIX": [_rec("POSIX", 22, 0, {"POSIX_BYTES_WRITTEN": 500, "POSIX_WRITES": 2})],
    }
    job = read_darshan(_log(tmp_path, records))
    assert (job.counters["bytes_written"], job.counters["writes"]) == (2 * GB, 40)
    assert job.counters["modules"] == "H5D>POSIX"
    assert {m.module: m.counted for m in job.modules} == {"POSIX": False, "H5F": True, "H5D": True}


def test_pnetcdf_file_bytes_are_not_data(tmp_path):
    records = {  # PnetCDF over a layer Darshan did not see: the variables' bytes, not the file's (+ header)
        "PNETCDF_FILE": [_rec("PNETCDF_FILE", 23, -1, {"PNETCDF_FILE_BYTES_WRITTEN": 3 * GB + 512})],
        "PNETCDF_VAR": [
            _rec("PNETCDF_VAR", 24, -1, {"PNETCDF_VAR_BYTES_WRITTEN": 3 * GB, "PNETCDF_VAR_COLL_WRITES": 12}),
            _rec("PNETCDF_VAR", 25, 3, {"PNETCDF_VAR_INDEP_WRITES": 2, "PNETCDF_VAR_NB_WRITES": 1}),
        ],
    }
    job = read_darshan(_log(tmp_path, records))
    assert (job.counters["bytes_written"], job.counters["writes"]) == (3 * GB, 15)
    assert job.counters["modules"] == "PNETCDF_VAR"
    assert _totals(job)["PNETCDF_FILE"] == ModuleTotals("PNETCDF_FILE", 0, 3 * GB + 512, 0, 0, 0.0, counted=True)


# ----------------------------------------------------------------------------- 6: I/O time per rank


def test_io_time_is_the_mean_of_per_rank_stacked_times(tmp_path):
    posix = [
        _rec(
            "POSIX", 1, 0, fcounters={"POSIX_F_READ_TIME": 0.5, "POSIX_F_WRITE_TIME": 0.25, "POSIX_F_META_TIME": 0.25}
        ),
        _rec("POSIX", 2, 1, fcounters={"POSIX_F_WRITE_TIME": 2.0}),
        _rec("POSIX", 3, 2, fcounters={"POSIX_F_META_TIME": 0.5}),
        _rec(  # shared: 12 s in all, 6 s on its slowest rank 2, the other 6 s spread over ranks 0, 1, 3
            "POSIX",
            4,
            -1,
            {"POSIX_SLOWEST_RANK": 2},
            {
                "POSIX_F_READ_TIME": 6.0,
                "POSIX_F_WRITE_TIME": 4.0,
                "POSIX_F_META_TIME": 2.0,
                "POSIX_F_SLOWEST_RANK_TIME": 6.0,
            },
        ),
    ]
    mpiio = [_rec("MPI-IO", 5, 1, fcounters={"MPIIO_F_WRITE_TIME": 5.0})]
    stdio = [
        _rec("STDIO", 6, 0, fcounters={"STDIO_F_WRITE_TIME": 0.5}),
        _rec("STDIO", 7, 3, fcounters={"STDIO_F_META_TIME": 1.5}),
    ]
    job = read_darshan(_log(tmp_path, {"POSIX": posix, "MPI-IO": mpiio, "STDIO": stdio}))
    # POSIX per rank [1 + 2, 2 + 2, 0.5 + 6, 0 + 2]; MPI-IO [0, 5, 0, 0]; STDIO [0.5, 0, 0, 1.5]
    # t_r = STDIO_r + max(MPI-IO_r, POSIX_r) = [3.5, 5, 6.5, 3.5]
    assert job.counters["io_time"] == (3.5 + 5 + 6.5 + 3.5) / 4
    assert job.counters["slowest_io_time"] == 6.5
    assert {m.module: m.io_time for m in job.modules} == {"POSIX": 15.5, "MPI-IO": 5.0, "STDIO": 2.0}


def test_shared_time_without_a_slowest_rank_is_spread_evenly(tmp_path):
    records = {
        "POSIX": [  # slowest rank unknown (-1): its 8 s go 2 s to each rank
            _rec("POSIX", 1, -1, {"POSIX_SLOWEST_RANK": -1}, {"POSIX_F_WRITE_TIME": 8.0}),
        ],
        "H5F": [_rec("H5F", 2, -1, fcounters={"H5F_F_META_TIME": 4.0})],  # no slowest-rank counters: 1 s each
        "H5D": [_rec("H5D", 3, 0, fcounters={"H5D_F_WRITE_TIME": 3.0})],
    }
    job = read_darshan(_log(tmp_path, records))
    # POSIX [2, 2, 2, 2]; H5F + H5D [1 + 3, 1, 1, 1] -> t = [4, 2, 2, 2]
    assert job.counters["io_time"] == 10 / 4
    assert job.counters["slowest_io_time"] == 4.0


def test_posix_only_io_time_is_the_total_over_nprocs(tmp_path):
    posix = [
        _rec("POSIX", 1, -1, {"POSIX_SLOWEST_RANK": 3}, {"POSIX_F_WRITE_TIME": 10.0, "POSIX_F_SLOWEST_RANK_TIME": 4.0}),
        _rec("POSIX", 2, 1, fcounters={"POSIX_F_READ_TIME": 2.0, "POSIX_F_META_TIME": -1.0}),  # -1: unknown
    ]
    job = read_darshan(_log(tmp_path, {"POSIX": posix}))
    assert job.counters["io_time"] == 12.0 / 4
    assert job.counters["slowest_io_time"] == 4.0  # rank 1: 2 + 6 / 3 = 4; rank 3: 4
    assert job.counters["modules"] == ""  # time but no bytes


def test_io_window_spans_every_module(tmp_path):
    records = {
        "POSIX": [
            _rec("POSIX", 1, 0, fcounters={"POSIX_F_WRITE_START_TIMESTAMP": 2.0, "POSIX_F_WRITE_END_TIMESTAMP": 5.0})
        ],
        "MPI-IO": [_rec("MPI-IO", 1, 0, fcounters={"MPIIO_F_CLOSE_END_TIMESTAMP": 9.0})],
        "STDIO": [_rec("STDIO", 2, 0, fcounters={"STDIO_F_OPEN_START_TIMESTAMP": 0.5})],
    }
    job = read_darshan(_log(tmp_path, records))
    assert (job.counters["first_io"], job.counters["last_io"]) == (0.5, 9.0)


def test_a_log_without_counter_modules(tmp_path):
    job = read_darshan(_log(tmp_path, {"DXT_POSIX": [dxt_record(1, 0, writes=[(0, 10, 1.0, 2.0)])]}))
    assert job.modules == ()
    assert job.counters == {
        "bytes_read": 0,
        "bytes_written": 0,
        "reads": 0,
        "writes": 0,
        "io_time": 0.0,
        "slowest_io_time": 0.0,
        "first_io": None,
        "last_io": None,
        "modules": "",
    }


# ----------------------------------------------------------------------------- 7: both DXT modules


def _dxt_log(tmp_path, partial=()):
    records = {
        "DXT_POSIX": [
            dxt_record(1, 0, writes=[(0, 100, 1.0, 1.5), (100, 100, 2.0, 2.5)], reads=[(0, 50, 3.0, 3.25)]),
            dxt_record(2, 1, writes=[(4096, 8, 1.25, 1.75)]),
        ],
        "DXT_MPIIO": [dxt_record(1, 0, writes=[(0, 200, 0.75, 2.75)], reads=[(0, 50, 2.875, 3.5)])],
    }
    return _log(tmp_path, records, partial=partial)


def test_both_dxt_modules_are_read(tmp_path):
    job = read_darshan(_dxt_log(tmp_path))
    assert set(job.dxt) == {"DXT_POSIX", "DXT_MPIIO"}
    cols = ("rank", "op", "offset", "size", "start", "end", "file")
    assert list(job.dxt["DXT_POSIX"].select(cols).iter_rows()) == [
        (0, "write", 0, 100, 1.0, 1.5, "/scratch/f1"),
        (0, "write", 100, 100, 2.0, 2.5, "/scratch/f1"),
        (0, "read", 0, 50, 3.0, 3.25, "/scratch/f1"),
        (1, "write", 4096, 8, 1.25, 1.75, "/scratch/f2"),
    ]
    assert list(job.dxt["DXT_MPIIO"].select(cols).iter_rows()) == [
        (0, "write", 0, 200, 0.75, 2.75, "/scratch/f1"),
        (0, "read", 0, 50, 2.875, 3.5, "/scratch/f1"),
    ]
    assert job.requests is job.dxt["DXT_POSIX"]
    assert job.source == "dxt" and job.partial_dxt is False


def test_a_partial_mpiio_trace_marks_the_job_partial(tmp_path):
    job = read_darshan(_dxt_log(tmp_path, partial=["DXT_MPIIO"]))
    assert job.partial_dxt is True and set(job.dxt) == {"DXT_POSIX", "DXT_MPIIO"}


def test_mpiio_trace_is_the_ops_without_posix_segments(tmp_path):
    records = {"DXT_POSIX": [dxt_record(1, 0)], "DXT_MPIIO": [dxt_record(1, 2, writes=[(0, 8, 1.0, 2.0)])]}
    job = read_darshan(_log(tmp_path, records))
    assert set(job.dxt) == {"DXT_MPIIO"}
    assert job.requests.rows() == [("77", 2, "write", 0, 8, 1.0, 2.0, "/scratch/f1")]


# ----------------------------------------------------------------------------- 8: app and step


def test_meta_names_the_script_and_the_step(tmp_path):
    exe = "/usr/bin/python3 -u /home/u/dlio/main.py workload=unet3d"
    job = {**JOB, "metadata": "lib_ver=3.5.0\nh=romio_no_indep_rw=true;cb_nodes=4\nSLURM_STEP_ID=3\n"}
    meta = read_darshan(_log(tmp_path, {"STDIO": STDIO_RECS}, job=job, exe=exe)).meta
    assert meta == {
        "job_id": "77",
        "user": "501",
        "app": "main.py",
        "exe": exe,
        "nprocs": 4,
        "start": 1700000000.0,
        "end": 1700000100.0,
        "runtime": 100.0,
        "step": "3",
    }


@pytest.mark.parametrize(
    "metadata, step",
    [
        ("lib_ver=3.5.0\nh=romio_no_indep_rw=true;cb_nodes=4\n", None),
        ("stepid=2\nstep=batch\n", "batch"),
        ("lib_ver=3.5.0\nstepid=0", "0"),
        ("", None),
    ],
)
def test_step_from_job_metadata(tmp_path, metadata, step):
    path = _log(tmp_path, {"STDIO": STDIO_RECS}, job={**JOB, "metadata": metadata})
    assert read_darshan(path).meta["step"] == step


# ----------------------------------------------------------------------------- HEATMAP stacking
# (no record is one bin shorter or longer than the first: darshan-util "corrects" those on read)


def test_heatmap_stacks_stdio_beside_the_larger_of_mpiio_and_storage(tmp_path):
    records = {
        "HEATMAP": [
            heatmap_record("POSIX", 0, 1.0, [10, 0, 30, 0], [1, 2, 3, 4]),
            heatmap_record("POSIX", 1, 1.0, [10, 0, 30, 0], [0, 0, 0, 4]),
            heatmap_record("MPIIO", 0, 1.0, [25, 5], [0, 9]),  # shorter: padded with zeros
            heatmap_record("STDIO", 2, 1.0, [1, 1, 1, 1], [0, 0, 0, 0]),
            heatmap_record("DFS", 3, 1.0, [0, 7], [5, 0]),
        ]
    }
    path = tmp_path / "hm.darshan"
    write_log(path, job=JOB, mounts=MOUNTS, names=HEATMAP_NAMES, records=records)
    width, read, write = read_darshan(path).heatmap
    # write: STDIO + max(MPIIO, POSIX + DFS) = 1 + max([25, 5, 0, 0], [20, 7, 60, 0])
    assert width == 1.0 and write.tolist() == [26, 8, 61, 1]
    # read: max([0, 9, 0, 0], [1 + 5, 2, 3, 8])
    assert read.tolist() == [6, 9, 3, 8]


def test_heatmap_modules_with_different_bin_widths_raise(tmp_path):
    records = {"HEATMAP": [heatmap_record("POSIX", 0, 0.5, [1], [1]), heatmap_record("STDIO", 0, 1.0, [1], [1])]}
    path = tmp_path / "widths.darshan"
    write_log(path, job=JOB, mounts=MOUNTS, names=HEATMAP_NAMES, records=records)
    with pytest.raises(InputError, match=r"HEATMAP modules have different bin widths \(POSIX 0\.5 s, STDIO 1 s\)"):
        read_darshan(path)


# ----------------------------------------------------------------------------- real logs


def test_real_hdf5_log_counts_posix_under_the_stack(jlbez_8a):
    job = read_darshan(jlbez_8a)
    t = _totals(job)
    assert job.counters["modules"] == "H5D>MPI-IO>POSIX"  # its only STDIO record is <STDOUT>: console text
    assert job.counters["bytes_written"] == t["POSIX"].bytes_written
    assert t["H5D"].bytes_written < t["MPI-IO"].bytes_written < t["POSIX"].bytes_written
    assert [m.module for m in job.modules if m.counted] == ["POSIX"]
    assert (t["STDIO streams"].bytes_written, t["STDIO streams"].counted) == (597, False)
    assert set(job.dxt) == {"DXT_POSIX", "DXT_MPIIO"}
    report = darshan.DarshanReport(str(jlbez_8a), read_all=True)
    for mod in ("DXT_POSIX", "DXT_MPIIO"):
        segments = sum(r["write_count"] + r["read_count"] for r in report.records[mod].to_df())
        assert job.dxt[mod].height == segments


@pytest.fixture
def jlbez_8a():
    return Path(__file__).parents[1] / "data" / "darshan" / "jlbez_8a_benchmark_write_parallel.darshan"


def test_module_totals_match_pydarshan_on_real_logs(jlbez_8a):
    report = darshan.DarshanReport(str(jlbez_8a), read_all=True)
    job = read_darshan(jlbez_8a)
    for t in job.modules:  # STDIO has one record, <STDOUT>: the standard-streams row is the whole module
        module = "STDIO" if t.module == "STDIO streams" else t.module
        pre = "MPIIO" if module == "MPI-IO" else module
        c = report.records[module].to_df()["counters"]
        f = report.records[module].to_df()["fcounters"]
        if t.module != "H5F":
            assert t.bytes_read == int(c[f"{pre}_BYTES_READ"].clip(lower=0).sum())
            assert t.bytes_written == int(c[f"{pre}_BYTES_WRITTEN"].clip(lower=0).sum())
        times = [f"{pre}_F_{k}_TIME" for k in ("READ", "WRITE", "META") if f"{pre}_F_{k}_TIME" in f]
        assert t.io_time == pytest.approx(float(f[times].clip(lower=0).to_numpy().sum()))


def test_a_record_of_a_rank_the_job_does_not_have_is_corrupt(tmp_path):
    records = {
        "POSIX": [
            counter_record("POSIX", 101, 1, {"POSIX_WRITES": 1}),
            counter_record("POSIX", 102, 999, {"POSIX_WRITES": 1}),
        ]
    }
    path = _log(tmp_path, records)
    with pytest.raises(InputError, match=r"job\.darshan: corrupt POSIX record 1: rank 999 in a job of 4 processes$"):
        read_darshan(path)
