"""Site traces written by hand for the storage-model tests: one row per request, and the helpers that read their
replays."""

import polars as pl
import pytest

MB = 1_000_000


def site(rows):
    """A site trace of ``rows``: (job_id, rank, start, end, size, phase, offset, file); an offset of None is a
    synthesised request."""
    return pl.DataFrame(
        {
            "job_id": [r[0] for r in rows],
            "rank": [r[1] for r in rows],
            "op": "write",
            "offset": pl.Series([r[6] for r in rows], dtype=pl.Int64),
            "size": [r[4] for r in rows],
            "start": [float(r[2]) for r in rows],
            "end": [float(r[3]) for r in rows],
            "file": pl.Series([r[7] for r in rows], dtype=pl.String),
            "phase": pl.Series([r[5] for r in rows], dtype=pl.Int64),
            "synthetic": [r[6] is None for r in rows],
        }
    )


def stream(job, n, *, phase=0, at=0.0, first=0, file="f"):
    """n 1 MB writes one after the other (each starts when the previous ended), from date ``at``."""
    return [(job, 0, at + k * 1e-3, at + (k + 1) * 1e-3, MB, phase, (first + k) * MB, file) for k in range(n)]


def three_jobs():
    """Jobs a, b (same set in the tests) and c, two phases of 4 requests on 2 ranks each, 0.5 s apart."""
    rows = []
    for j, (job, base) in enumerate([("a", 0.0), ("b", 0.5), ("c", 1.0)]):
        for phase, t in enumerate([base, base + 10]):
            for rank in (0, 1):
                rows += [
                    (job, rank, t + 0.1 * k, t + 0.1 * k + 0.3, (j + 1) * 100_000, phase, (4 * phase + k) * MB, job)
                    for k in range(4)
                ]
    return site(sorted(rows, key=lambda r: r[2]))


def dates(result, column):
    """A replay's ``column`` in the rows' order."""
    return result.requests.sort("row")[column].to_list()


def exactly(values):
    return pytest.approx(values, rel=1e-12, abs=1e-15)
