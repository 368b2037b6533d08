"""analyze over good logs and 300 corrupt mutants: every good log as when alone, one row per mutant, no crash.

The mutants (``darshan_fuzz_corpus``: seed 0) include the triggers of every darshan-util crash of
docs/darshan-util-crashes.md. A mutant is bad when reading it alone fails; the batch must agree.
"""

import re
from pathlib import Path

import polars as pl
import pytest

from iosets.analyzer import analyze, ingest, read_darshan
from iosets.errors import InputError
from iosets.schemas import REQUESTS

darshan = pytest.importorskip("darshan")

GOOD = sorted(
    [*(Path(darshan.__file__).parent / "examples" / "example_logs").glob("*.darshan")]
    + list((Path(__file__).parents[1] / "data" / "darshan").glob("*.darshan"))
)


@pytest.fixture(scope="module")
def mutants(darshan_fuzz_corpus):
    out, manifest = darshan_fuzz_corpus
    return manifest.with_columns(pl.format("{}/{}", pl.lit(str(out)), "file").alias("path"))


@pytest.fixture(scope="module")
def batch(mutants):
    """The good logs and the mutants in one analyze call, on two worker processes."""
    return analyze([*GOOD, *mutants["path"]], workers=2, per_log=True)


@pytest.fixture(scope="module")
def alone(mutants):
    """Each mutant through the single-file entry: None when it reads, else the InputError message."""
    found = {}
    for path in mutants["path"]:
        try:
            read_darshan(path)
            found[path] = None
        except InputError as exc:
            found[path] = str(exc)
    return found


def test_good_logs_are_analysed_as_when_alone(batch):
    clean = analyze(GOOD, workers=1, per_log=True)
    assert clean.errors.height == 0 and clean.jobs.height == len(GOOD) == 8
    assert batch.jobs.filter(pl.col("path").is_in([str(p) for p in GOOD])).equals(clean.jobs)
    assert not set(batch.errors["path"]) & {str(p) for p in GOOD}


def test_every_mutant_gives_exactly_one_row(batch, mutants):
    rows = pl.concat([batch.jobs.select("path"), batch.errors.select("path")])
    per_path = dict(rows.group_by("path").len().iter_rows())
    assert {path: per_path.get(path, 0) for path in mutants["path"]} == dict.fromkeys(mutants["path"], 1)
    assert rows.height == len(GOOD) + mutants.height == 308


def test_a_mutant_fails_in_the_batch_exactly_when_it_fails_alone(batch, alone, seen_crash):
    in_batch = dict(batch.errors.iter_rows())
    assert set(in_batch) == {path for path, message in alone.items() if message is not None}
    for path, reason in in_batch.items():
        ours, theirs = seen_crash(reason), seen_crash(alone[path])
        if "darshan-util crashed" in ours:  # the signal may depend on the heap: the stage does not
            assert re.sub(r"signal \d+ \(\w+\)", "signal", ours) == re.sub(r"signal \d+ \(\w+\)", "signal", theirs)
        else:
            assert ours == theirs


def test_single_file_errors_are_one_line_naming_the_file(mutants, alone):
    for path, message in alone.items():
        if message is not None:
            assert "\n" not in message and message.startswith(f"{path}: ")
    for path in mutants["path"]:
        try:
            ops = ingest(path)  # what `iosets ingest` calls
        except InputError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(f"{path}: ")
        else:
            assert REQUESTS.validate(ops, source=path).equals(ops) and ops.height > 0


def test_the_known_crashes_are_contained_or_refused_before_darshan_util(batch, mutants, seen_crash):
    reasons = dict(batch.errors.iter_rows())
    relabelled = mutants.filter(
        (pl.col("kind") == "header_version")
        & (pl.col("source") == "dxt.darshan")
        & pl.col("value").is_in(["'3.20'", "'3.21'"])
    )
    assert relabelled.height == 6  # crash 3: the STDIO region read as LUSTRE
    for path in relabelled["path"]:
        assert seen_crash(reasons[path]) == f"{path}: darshan-util crashed: signal 11 (SIGSEGV) while reading LUSTRE"
    counts = mutants.filter(pl.col("kind") == "record_count")  # crashes 5 and 6: counts darshan-util trusts
    assert counts.height == 20
    for path in counts["path"]:
        assert re.fullmatch(rf"{re.escape(path)}: DXT_\w+ record \d+ (has a negative count|claims) .*", reasons[path])


def test_each_way_to_fail_is_represented(batch, mutants, seen_crash):
    reasons = batch.errors["reason"].map_elements(seen_crash, return_dtype=pl.String)
    families = {
        "refused before darshan-util": reasons.str.contains(r"region|header|Darshan log \(|compression type|version"),
        "darshan-util error": reasons.str.contains(r"\[darshan-util: "),
        "darshan-util crash": reasons.str.contains(r": darshan-util crashed: signal \d+ \(SIG\w+\) while reading "),
    }
    counts = {name: int(hit.sum()) for name, hit in families.items()}
    assert counts["refused before darshan-util"] > 150 and counts["darshan-util error"] > 10
    assert counts["darshan-util crash"] >= 3
    assert batch.jobs.height - len(GOOD) == mutants.height - batch.errors.height  # the rest read fine


def test_a_mutant_that_reads_gives_the_row_of_its_source(batch, mutants):
    """The edits darshan-util reads through (unused header slots, names of logs without DXT) change nothing."""
    sources = analyze(sorted(set(mutants["source_path"])), workers=1, per_log=True).jobs.rename({"path": "source_path"})
    read = batch.jobs.join(mutants.select("path", "source_path"), on="path", how="inner")
    assert read.height == batch.jobs.height - len(GOOD) > 0
    expected = read.select("path", "source_path").join(sources, on="source_path", how="left")
    assert read.drop("source_path").sort("path").equals(expected.select(read.columns[:-1]).sort("path"))
