"""Recommendation section: the per-set table equals the recommender's, the conservative set is named, exports listed."""

import polars as pl
import pytest

from iosets.recommender import EXPORT_FORMATS, recommend, set_summary
from iosets.report._document import ReportInputs
from iosets.report._palette import set_colour
from iosets.report._recommendation import MISSING, conservative_set, export_table, recommendation_section


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
    assert sets["priority"].to_list() == [0.1, 0.01, 0.001]
    assert sets["WFQ weight (B/round)"].to_list() == [104857600, 10485760, 1048576]
    assert sets["RBFQ weight"].to_list() == pytest.approx([100.0, 10.0, 1.0])
    # a set reserves its largest job's 1.5 x alpha_io x 1 GB/s: set 1 max(0.25, 0.1), set 2 0.125, set 3 none
    assert sets["RBFQ reservation (B/s)"].to_list() == [375e6, 187.5e6, 0.0]
    assert sets["RBFQ limit (B/s)"].to_list() == [None, None, None]
    assert sets["w_iter min (s)"].to_list() == [8.0, 95.0, None]
    assert sets["w_iter max (s)"].to_list() == [12.0, 95.0, None]
    assert sets["conservative jobs"].to_list() == [0, 0, 1]


def test_reading_names_the_conservative_set_and_the_numbers(recommended):
    section = recommendation_section(ReportInputs(jobs=recommended, recommendation=recommended))
    assert conservative_set(recommended) == 3
    assert "puts 4 jobs in 3 sets" in section.reading
    assert "1 job is on thin evidence" in section.reading
    assert "they go to set 3, the conservative set" in section.reading
    assert "RBFQ weighs set 1 100 times set 3" in section.reading
    assert "104,857,600 against 1,048,576 bytes per round" in section.reading
    assert "RBFQ reserves 562 MB/s in all" in section.reading


def test_no_thin_evidence_means_no_conservative_set():
    rec = recommend(pl.DataFrame({"job_id": ["a"], "w_iter": [8.0]}))
    assert conservative_set(rec) is None
    assert "No job is on thin evidence" in recommendation_section(ReportInputs(jobs=rec, recommendation=rec)).reading


def test_weights_figure_has_each_sets_numbers(recommended):
    section = recommendation_section(ReportInputs(jobs=recommended, recommendation=recommended))
    (figure,) = section.figures
    assert figure.layout["yaxis"]["type"] == "log" and figure.layout["barmode"] == "group"
    assert [trace["name"] for trace in figure.data] == ["set 1", "set 2", "set 3"]
    assert [trace["marker"]["color"] for trace in figure.data] == [set_colour(1), set_colour(2), set_colour(3)]
    first = figure.data[0]
    assert first["x"] == ["priority", "RBFQ weight", "WFQ weight (bytes per round)"]
    assert first["y"] == pytest.approx([0.1, 100.0, 104857600])
    assert first["hovertext"][2] == "set 1<br>WFQ weight (bytes per round): 1.049e+08"


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
