"""Recommendation section: the per-set table equals the recommender's, the conservative set is named, exports listed."""

import warnings

import polars as pl
import pytest

from iosets.recommender import AGIOS_MAX_WEIGHT, EXPORT_FORMATS, recommend, set_summary
from iosets.report._document import ReportInputs
from iosets.report._recommendation import (
    MISSING,
    conservative_set,
    export_table,
    mapping_of,
    recommendation_section,
)


@pytest.fixture
def recommended() -> pl.DataFrame:
    """SET-10 at 1 GB/s: w_iter 8 s and 95 s give sets 1 and 2, the job without w_iter the conservative set 3."""
    jobs = pl.DataFrame(
        {
            "job_id": ["a", "b", "c", "d"],
            "w_iter": [8.0, 95.0, None, 12.0],
            "alpha_io": [0.25, 0.125, None, 0.1],
        }
    )
    return recommend(jobs, bandwidth=1e9)


def _table(section, table_id):
    return next(table for table in section.tables if table.id == table_id).frame


def test_without_a_recommendation_the_section_says_what_to_run():
    section = recommendation_section(ReportInputs(jobs=pl.DataFrame({"job_id": ["a"]})))
    assert section.id == "recommendation"
    assert section.missing == "Run `iosets recommend JOBS -o rec.parquet`, then pass --rec rec.parquet" == MISSING
    assert section.figures == () and section.tables == ()


def test_set_table_equals_the_recommenders_summary(recommended):
    section = recommendation_section(ReportInputs(jobs=recommended, recommendation=recommended))
    sets = _table(section, "recommendation-sets")
    summary = set_summary(recommended)
    assert sets["set"].to_list() == summary["set"].to_list() == [1, 2, 3]
    assert sets["jobs"].to_list() == [2, 1, 1]
    # a set reserves its largest job's 1.5 x alpha_io x 1 GB/s: set 1 max(0.25, 0.1), set 2 0.125, set 3 none
    assert sets["RBFQ reservation"].to_list() == [375e6, 187.5e6, 0.0]
    assert sets["RBFQ limit"].to_list() == [None, None, None]
    assert sets["w_iter min"].to_list() == [8.0, 95.0, None]
    assert sets["w_iter max"].to_list() == [12.0, 95.0, None]
    assert sets["conservative jobs"].to_list() == [0, 0, 1]


def test_weights_table_replaces_the_log_axis_chart(recommended):
    section = recommendation_section(ReportInputs(jobs=recommended, recommendation=recommended))
    assert section.figures == ()
    weights = _table(section, "recommendation-weights")
    assert weights["set"].to_list() == [1, 2, 3]
    assert weights["priority"].to_list() == [0.1, 0.01, 0.001]
    assert weights["WFQ weight (B/round)"].to_list() == [104857600, 10485760, 1048576]
    assert weights["RBFQ weight"].to_list() == pytest.approx([100.0, 10.0, 1.0])
    # each set's share when all three do I/O at once: weight / sum of weights (100 + 10 + 1 = 111)
    assert weights["WFQ share"].to_list() == pytest.approx([100 / 111, 10 / 111, 1 / 111])
    assert weights["RBFQ share"].to_list() == pytest.approx([100 / 111, 10 / 111, 1 / 111])
    assert weights["capped"].to_list() == ["", "", ""]


def test_reading_names_the_conservative_set_and_the_numbers(recommended):
    section = recommendation_section(ReportInputs(jobs=recommended, recommendation=recommended))
    assert conservative_set(recommended) == 3
    assert "puts 4 jobs in 3 sets" in section.reading
    assert "1 job is on thin evidence (no confident w_iter, or not periodic): it goes to set 3" in section.reading
    assert "the conservative set" in section.reading
    assert "RBFQ weighs set 1 100 times set 3" in section.reading
    assert "104,857,600 against 1,048,576 bytes per round" in section.reading
    assert "RBFQ reserves 562 MB/s in all" in section.reading  # 375 + 187.5 MB/s, 3 digits (half to even)


def test_one_job_and_one_set_read_right():
    one = recommend(pl.DataFrame({"job_id": ["a"], "w_iter": [8.0]}))
    reading = recommendation_section(ReportInputs(jobs=one, recommendation=one)).reading
    assert reading.startswith("The recommendation puts its one job in set 1 (priority 0.1): with no other job,")
    two = recommend(pl.DataFrame({"job_id": ["a", "b"], "w_iter": [8.0, 9.0]}))
    reading = recommendation_section(ReportInputs(jobs=two, recommendation=two)).reading
    assert reading.startswith("The recommendation puts both jobs in one set, set 1: they do I/O one at a time")
    for broken in ("set 1 1 times set 1", "of 1 jobs", "1 jobs", "1 sets"):
        assert broken not in reading


def test_a_negative_set_is_explained():
    # SET-10: round(log10 0.2) = round(-0.7) = -1; 8 s gives set 1
    rec = recommend(pl.DataFrame({"job_id": ["a", "b"], "w_iter": [0.2, 8.0]}))
    assert rec["set"].to_list() == [-1, 1]
    reading = recommendation_section(ReportInputs(jobs=rec, recommendation=rec)).reading
    assert "Set -1: a negative set is a set like any other, not a job without a set." in reading
    assert "SET-10 numbers a job's set round(log10 w_iter)" in reading
    assert "start less than 316 ms apart" in reading  # 10^-0.5 s


def test_capped_wfq_weights_are_said_with_the_fix():
    # sets 0, 1, 2, 3, 4 (w_iter 1 s .. 10^4 s): priorities span 10^4, so with max_request 2^20 the two
    # highest sets' weights (2^20 x 10^4, 2^20 x 10^3 = 1,048,576,000 fits) -> only set 0 passes 2^31 - 1
    jobs = pl.DataFrame({"job_id": list("abcde"), "w_iter": [1.0, 10.0, 100.0, 1000.0, 10000.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        rec = recommend(jobs)
    section = recommendation_section(ReportInputs(jobs=rec, recommendation=rec))
    weights = _table(section, "recommendation-weights")
    assert weights["WFQ weight (B/round)"].to_list()[:2] == [AGIOS_MAX_WEIGHT, 1048576000]
    assert weights["capped"].to_list() == ["yes", "", "", "", ""]
    assert "The WFQ weight of set 0 is capped at 2,147,483,647 bytes per round" in section.reading
    assert "the priorities span 10,000 times" in section.reading
    assert "`iosets recommend JOBS --max-request 214748 -o rec.parquet`" in section.reading  # (2^31 - 1) // 10^4


def test_mapping_of_reads_the_base_from_the_priorities(recommended):
    assert mapping_of(recommended) == "set-10"
    assert mapping_of(pl.DataFrame({"set": [1, 3], "priority": [0.5, 0.125]})) == "set-2"
    assert mapping_of(pl.DataFrame({"set": [0], "priority": [1.0]})) is None  # every base gives set 0 priority 1
    assert mapping_of(pl.DataFrame({"set": [0, 1], "priority": [0.8, 0.01]})) is None  # gmm


def test_export_table_lists_every_format_with_its_files(recommended):
    from iosets.recommender._export import _FORMATS

    exports = export_table("site-rec.parquet")
    assert tuple(exports["format"]) == EXPORT_FORMATS
    assert exports["files"].to_list() == [", ".join(_FORMATS[fmt][1]) for fmt in EXPORT_FORMATS]
    assert exports["command"][0] == "iosets export site-rec.parquet --format agios --out DIR"
    section = recommendation_section(
        ReportInputs(
            jobs=recommended, recommendation=recommended, sources={"recommendation": "/data/x/rec-2024.parquet"}
        )
    )
    assert (
        _table(section, "recommendation-exports")["command"][4]
        == "iosets export rec-2024.parquet --format lua --out DIR"
    )


def test_an_empty_recommendation_gives_an_empty_table(recommended):
    empty = recommended.clear()
    section = recommendation_section(ReportInputs(jobs=empty, recommendation=empty))
    assert section.reading == "The recommendation holds no job: there is no set to show."
    assert _table(section, "recommendation-sets").height == 0
