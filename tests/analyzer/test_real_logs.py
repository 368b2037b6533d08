"""The jobs-table rows of two real DXT logs (LBNL samples, tests/data/darshan), checked against their raw segments.

The raw check does not use iosets: pydarshan's segments of both DXT modules, their union computed here
with a plain sort-and-sweep. Both jobs do I/O nearly all the time, so neither may get a period.
"""

from pathlib import Path

import pytest

darshan = pytest.importorskip("darshan")

from iosets.analyzer import analyze_log  # noqa: E402

DATA = Path(__file__).parents[1] / "data" / "darshan"


def _raw_union(path: Path) -> tuple[list[tuple[float, float]], dict]:
    """The union of every DXT_POSIX and DXT_MPIIO segment as disjoint runs, and the bytes written per module."""
    report = darshan.DarshanReport(str(path), read_all=False)
    intervals, written = [], {}
    for module in ("DXT_POSIX", "DXT_MPIIO"):
        report.mod_read_all_dxt_records(module)
        written[module] = 0
        for record in report.records[module].to_df():
            for kind in ("write_segments", "read_segments"):
                segments = record[kind]
                if len(segments):
                    intervals += zip(segments["start_time"], segments["end_time"], strict=True)
                    if kind == "write_segments":
                        written[module] += int(segments["length"].sum())
    runs: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if runs and start <= runs[-1][1]:
            runs[-1] = (runs[-1][0], max(runs[-1][1], end))
        else:
            runs.append((start, end))
    return runs, written


@pytest.mark.parametrize(
    ("name", "runtime", "phases"),
    [("jlbez_IO_test5.darshan", 159.0, 5), ("jlbez_8a_benchmark_write_parallel.darshan", 12.0, 2)],
)
def test_real_io_bound_jobs_get_no_period(name, runtime, phases):
    path = DATA / name
    row = analyze_log(path)
    runs, written = _raw_union(path)
    busy = sum(end - start for start, end in runs) / runtime
    gaps = sorted(b[0] - a[1] for a, b in zip(runs, runs[1:], strict=False))
    assert busy > 0.9  # raw: the job is in I/O over 90 % of its run
    # alpha_io is the time in phases: the union plus the short gaps inside phases, never less than the union
    assert busy <= row["alpha_io"] <= busy + sum(gaps[: len(gaps) - (phases - 1)]) / runtime + 1e-9
    assert row["n_phases"] == phases  # split at the phases - 1 longest gaps
    assert (row["w_iter"], row["not_periodic"], row["rhythm_from"]) == (None, "io_bound", "DXT_MPIIO+DXT_POSIX")
    assert row["bytes_written"] >= written["DXT_POSIX"]  # POSIX (every byte traced) plus STDIO's few
    assert row["bytes_written"] - written["DXT_POSIX"] < 1e5
