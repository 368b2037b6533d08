"""Site traces written by hand for the storage-model tests: one row per request."""

import polars as pl


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
