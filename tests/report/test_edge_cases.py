"""Reports of edge-case sites: 1 job, 0 periodic jobs, 1 set, 100 000 jobs.

Each site goes through the library's own chain (analyze, recommend, replay; tune where it works), and its
report must hold no empty plot (every figure has a trace with a finite point; a section without data says
so in words instead), no sentence broken by a count or a number (``1 jobs``, ``set 0 1 times set 0``,
``nan``, ``1e+07``) and no advice to run a command that fails on that input. Each report is built once per
module; every check runs per section, so that a failure names its section.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import polars as pl
import pytest
from reading import SECTION_IDS

from iosets.errors import InputError

CASES = ("one-job", "no-periodic", "one-set", "100k")

SECTIONS = SECTION_IDS
"""Every section a report may hold (a section absent from a report is skipped)."""

BROKEN = {
    "a plural after 1": re.compile(
        r"(?<![\w.,\-])1 (?!(?:is|means|gets|has|does|was|weighs|serves)\b)[A-Za-z]\w*(?<!s)s\b"  # not "1 class"
    ),
    "a set weighed against itself": re.compile(r"set (-?\d+) 1 times set \1\b"),
    "a missing number": re.compile(r"\b(?:nan|NaN|None|inf|Infinity)\b"),
    "an exponent": re.compile(r"\d(?:\.\d+)?e[+-]\d"),
}
"""Patterns of a broken sentence or table cell, by what they catch."""

# ------------------------------------------------------------------------------------------- the sites


def _chain(profiles, *, first_phase_only: bool = False, with_tune: bool = True) -> dict[str, Any]:
    """A generated workload's site trace through analyze, recommend, a three-scheduler trace replay (and tune)."""
    from iosets.analyzer import analyze_requests
    from iosets.datasets import make_iosets_workload, workload_site_requests
    from iosets.recommender import recommend
    from iosets.replay import Device, compare_schedulers, tune

    workload = make_iosets_workload(profiles, horizon=4000.0, random_state=0)
    site = workload_site_requests(workload, request_size=100_000_000)
    if first_phase_only:  # one I/O phase per job: nothing periodic
        site = site.filter(pl.col("phase") == pl.col("phase").min().over("job_id"))
    jobs = analyze_requests(site)
    recommendation = recommend(jobs, bandwidth=1e9)
    device = Device(bandwidth=workload.bandwidth, overhead=0.0, seek=0.0)
    replay = compare_schedulers(site, recommendation, ["fcfs", "wfq", "iosets-wfq"], device=device)
    inputs = {"jobs": jobs, "recommendation": recommendation, "site": site, "replay": replay}
    if with_tune:
        inputs["tune"] = tune(jobs, horizon=8000.0)
    return inputs


def _one_run_validation():
    """``iosets validate``'s result for one policy, one job and one run."""
    from iosets.replay import replay_phases
    from iosets.validate import METRICS, PolicyValidation, Validation, make_fig4_workload

    workload = make_fig4_workload(2, horizon=100.0, bandwidth=2e8)
    simulated = replay_phases(workload, "set-10").metrics
    measured = {metric: [getattr(simulated, metric) * 1.01] for metric in METRICS}
    return Validation(workload, 2e8, {"set-10": PolicyValidation("set-10", "set-10", measured, simulated)})


def _one_class_requests():
    from iosets.datasets import make_backlogged_requests
    from iosets.replay import replay_requests

    return replay_requests(make_backlogged_requests(200, 1, size_range=(65536, 65536), random_state=0), "fcfs")


def _site_inputs(case: str) -> dict[str, Any]:
    if case == "one-job":
        return {**_chain(((1, 40.0, 5.0),), with_tune=False), "requests": _one_class_requests()}
    if case == "no-periodic":
        return _chain(((3, 300.0, 30.0),), first_phase_only=True, with_tune=False)
    if case == "one-set":
        return {**_chain(((4, 300.0, 30.0),)), "validation": _one_run_validation()}
    from iosets.datasets import make_large_site

    site = make_large_site(100_000, random_state=0)
    replay = {name: getattr(site, f"replay_{name}") for name in ("jobs", "phases", "schedulers", "shares")}
    return {"jobs": site.jobs, "recommendation": site.recommendation, "replay": replay, "tune": site.tune}


@pytest.fixture(scope="module", params=CASES)
def built(request):
    """``(case, inputs, report)``: one edge-case site and its report, built once per module."""
    from iosets.report import build_report

    inputs = _site_inputs(request.param)
    return request.param, inputs, build_report(**inputs)


# ------------------------------------------------------------------------------------------- checks


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _present(value: Any) -> bool:
    """A coordinate that places a point: a finite number or a category's label."""
    return _finite(value) or (isinstance(value, str) and value != "")


def has_point(trace: dict[str, Any]) -> bool:
    """Whether a Plotly trace draws at least one point: a box with its quartiles, or a place with both coordinates."""
    if trace.get("type") == "box":
        return any(_finite(v) for v in trace.get("median", []))
    xs, ys = trace.get("x"), trace.get("y")
    if xs is None or ys is None:
        return False
    return any(_present(x) and _finite(y) or _finite(x) and _present(y) for x, y in zip(xs, ys, strict=False))


def _texts(section) -> list[tuple[str, str]]:
    """(where, text) of everything a section says in words: reading, missing box, figure titles and notes, table
    titles, notes and shown cells."""
    from iosets.report._format import format_value

    texts = [("reading", section.reading)]
    if section.missing:
        texts.append(("missing", section.missing))
    for figure in section.figures:
        texts += [(f"figure {figure.id}", figure.title), (f"figure {figure.id} note", figure.note)]
    for table in section.tables:
        texts += [(f"table {table.id}", table.title), (f"table {table.id} note", table.note)]
        for column in table.frame.columns:
            kind = table.formats.get(column)
            for value in table.frame[column].head(2_000).to_list():
                if not isinstance(value, str | type(None)):
                    texts.append((f"table {table.id} column {column}", format_value(value, kind)))
    return texts


def broken_sentences(section) -> list[str]:
    """Each text of ``section`` matching a broken pattern, with where it is and what it catches."""
    found = []
    for where, text in _texts(section):
        for what, pattern in BROKEN.items():
            for match in pattern.finditer(text):
                found.append(f"{where}: {what}: ...{text[max(match.start() - 60, 0) : match.end() + 40]}...")
    return found


def _section(report, section_id: str):
    sections = {section.id: section for section in report.sections}
    if section_id not in sections:
        pytest.skip(f"no section {section_id!r} in this report")
    return sections[section_id]


@pytest.mark.parametrize("section_id", SECTIONS)
def test_no_empty_plot(built, section_id):
    case, _, report = built
    section = _section(report, section_id)
    empty = [figure.id for figure in section.figures if not any(has_point(trace) for trace in figure.data)]
    assert empty == [], f"{case}: figures without a finite point: {empty}"


@pytest.mark.parametrize("section_id", SECTIONS)
def test_no_broken_sentence(built, section_id):
    case, _, report = built
    assert broken_sentences(_section(report, section_id)) == []


def _tune_fails(inputs: dict[str, Any]) -> str | None:
    """Why ``iosets tune`` fails on the site's jobs table (its error), None when it works."""
    if "tune" in inputs:
        return None
    from iosets.replay import tune

    try:
        tune(inputs["jobs"], horizon=8000.0)
    except (InputError, ValueError) as error:
        return str(error)
    return None


@pytest.mark.parametrize("section_id", SECTIONS)
def test_advice_only_for_commands_that_work(built, section_id):
    case, inputs, report = built
    section = _section(report, section_id)
    failure = _tune_fails(inputs)
    advised = [text for _, text in _texts(section) if "`iosets tune" in text]
    assert failure is None or advised == [], f"{case}: `iosets tune` fails here ({failure}) yet {advised}"


# ------------------------------------------------------------------------------------------- the checks' own tests


def test_the_checks_catch_what_they_are_for():
    assert BROKEN["a plural after 1"].search("of 1 jobs, 0 run")
    assert not BROKEN["a plural after 1"].search("1 job, 2 jobs; 1 means it never waited; set -1 gets; 1,048 bytes")
    assert BROKEN["a set weighed against itself"].search("RBFQ weighs set 0 1 times set 0,")
    assert not BROKEN["a set weighed against itself"].search("RBFQ weighs set 0 10 times set 1")
    assert BROKEN["an exponent"].search("2.29e+03 d") and BROKEN["an exponent"].search("8.64647e+10")
    assert not BROKEN["an exponent"].search("the queue 1e and more")
    assert BROKEN["a missing number"].search("mean nan s") and not BROKEN["a missing number"].search("infinite")
    assert has_point({"type": "bar", "x": ["set 0"], "y": [3]})
    assert has_point({"type": "scatter", "x": [None, 2.0], "y": [1.0, 5.0]})
    assert not has_point({"type": "scatter", "x": [1.0, 2.0], "y": [None, float("nan")]})
    assert not has_point({"type": "scatter", "x": [], "y": []})
    assert not has_point({"type": "box", "median": [None]})


@pytest.mark.parametrize("built", ["100k"], indirect=True)
def test_the_large_site_counts_every_job(built):
    _, inputs, report = built
    overview = _section(report, "overview")
    summary = next(table for table in overview.tables if table.id == "overview-summary").frame
    assert summary["jobs"].item() == 100_000
    sizes = [len(str(figure.data)) for section in report.sections for figure in section.figures]
    assert max(sizes) < 2_000_000  # each figure bounded (binned, sampled), whatever the number of jobs
    scatter = next(figure for figure in overview.figures if figure.id == "overview-scatter")
    drawn = inputs["jobs"].filter((pl.col("w_iter") > 0) & (pl.col("alpha_io") > 0)).height
    assert sum(sum(trace["customdata"]) for trace in scatter.data) == drawn
    runtimes = next(figure for figure in _section(report, "model-check").figures if figure.id.endswith("runtimes"))
    counted = sum(sum(trace["customdata"]) for trace in runtimes.data if trace.get("mode") == "markers")
    checked = inputs["replay"]["jobs"].filter(pl.col("scheduler") == "fcfs")
    assert counted == checked.filter((pl.col("recorded_runtime") > 0) & (pl.col("alone_runtime") > 0)).height
    assert np.isfinite(summary["periodic"].item())
