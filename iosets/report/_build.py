"""``build_report``: read the inputs, build each section, render the page and write it atomically."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ._document import ReportInputs, Section
from ._inputs import TableSource, read_inputs

SectionBuilder = Callable[[ReportInputs], Section]
Progress = Callable[[str, int, int], None]
"""``progress(step, done, total)``: called before each step with the steps finished so far, then with ``"done"``."""


@dataclass(frozen=True)
class Report:
    """A built report: the page, its sections and the inputs they were built from.

    Attributes
    ----------
    html : str
        The page: one self-contained HTML file (plotly.js inlined, no URL, no request leaves it).
    sections : list of Section
        The sections in page order (a section whose input is absent has ``missing`` set).
    inputs : ReportInputs
        The validated tables the sections were built from.
    """

    html: str
    sections: list[Section]
    inputs: ReportInputs

    @property
    def shown(self) -> list[str]:
        """The ids of the sections drawn."""
        return [section.id for section in self.sections if section.missing is None]

    @property
    def missing(self) -> list[str]:
        """The ids of the sections whose input is absent."""
        return [section.id for section in self.sections if section.missing is not None]

    def write(self, path: str | os.PathLike) -> Path:
        """Write the page at ``path`` (``.html``), atomically: a failure leaves no partial file."""
        from .._io import atomic_path, check_output

        target = check_output(path, suffixes=(".html",), what="report")
        with atomic_path(target) as tmp:
            tmp.write_text(self.html, encoding="utf-8")
        return target


def default_builders() -> tuple[SectionBuilder, ...]:
    """The report's sections in page order: verdict, overview, recommendation, scheduler, impact, model check,
    timelines, requests, validation, jobs."""
    from ._impact import impact_section
    from ._jobs_table import jobs_table_section
    from ._model_check import model_check_section
    from ._overview import overview_section
    from ._recommendation import recommendation_section
    from ._request_level import request_level_section
    from ._scheduler import scheduler_section
    from ._timelines import timelines_section
    from ._validation import validation_section
    from ._verdict import verdict_section

    return (
        verdict_section,
        overview_section,
        recommendation_section,
        scheduler_section,
        impact_section,
        model_check_section,
        timelines_section,
        request_level_section,
        validation_section,
        jobs_table_section,
    )


def build_sections(
    inputs: ReportInputs,
    *,
    builders: Sequence[SectionBuilder] | None = None,
    progress: Progress | None = None,
) -> list[Section]:
    """Each section of the report built from ``inputs``.

    Parameters
    ----------
    inputs : ReportInputs
        From :func:`read_inputs`.
    builders : sequence of callables, default=None
        ``builder(inputs) -> Section`` in page order (default: :func:`default_builders`).
    progress : callable, default=None
        ``progress(step, done, total)`` before each section (``step``: the builder's name without ``_section``).

    Returns
    -------
    list of Section
        One per builder, in order; a section whose input is absent has ``missing`` set.
    """
    chosen = default_builders() if builders is None else tuple(builders)
    sections = []
    for done, builder in enumerate(chosen):
        if progress is not None:
            progress(builder.__name__.removesuffix("_section"), done, len(chosen))
        sections.append(builder(inputs))
    return sections


def build_report(
    jobs: TableSource,
    *,
    recommendation: TableSource | None = None,
    site: TableSource | None = None,
    replay: Any = None,
    tune: TableSource | None = None,
    requests: Any = None,
    validation: Any = None,
    baseline: str | None = None,
    output: str | os.PathLike | None = None,
    progress: bool | Progress | None = None,
) -> Report:
    """Build the offline HTML report of a site: what the analyzer, the recommender and the replays found.

    Parameters
    ----------
    jobs : path or polars.DataFrame
        The jobs table (``iosets analyze -o``), or a recommended jobs table.
    recommendation, site, replay, tune, requests : path, polars.DataFrame or mapping, default=None
        The optional inputs, as :func:`read_inputs` takes them; each absent one leaves its section saying
        what to run.
    validation : path, mapping or Validation, default=None
        Real runs against the phase engine (``iosets validate -o validation.json``), as :func:`read_inputs`
        takes them.
    baseline : str, default=None
        The policy the site runs today: the replay's scheduler the verdict, the scheduler comparison and the
        impact compare every other with (None: fcfs when the replay holds it, else its first scheduler).
    output : path, default=None
        Write the page there (``.html``), atomically: a failure leaves no partial file.
    progress : bool or callable, default=None
        True: one line per step on stderr. A callable gets ``(step, done, total)`` before each step (reading
        the inputs, each section, rendering, writing) and ``("done", total, total)`` at the end.

    Returns
    -------
    Report
        The page (``html``: one self-contained HTML file, plotly.js inlined, no request leaves it), its sections
        and the inputs they were built from.

    Raises
    ------
    InputError
        An input cannot be read or breaks its schema (the message names the file and the column, or the
        validation file's key), ``baseline`` is not a scheduler of the replay (the message lists those it
        holds), or ``output`` cannot be written.

    Examples
    --------
    >>> import polars as pl
    >>> from iosets.report import build_report
    >>> report = build_report(pl.DataFrame({"job_id": ["a", "b"], "w_iter": [10.0, 100.0], "alpha_io": [0.1, 0.2]}))
    >>> '<section id="jobs"' in report.html, report.missing[:2]
    (True, ['recommendation', 'scheduler'])
    """
    from .._io import check_output
    from ._baseline import check_baseline
    from ._render import render_report

    if output is not None:
        output = check_output(output, suffixes=(".html",), what="report")
    builders = default_builders()
    total = len(builders) + 2 + (output is not None)
    tell = _printer if progress is True else (progress or None)

    def step(name: str, done: int) -> None:
        if tell is not None:
            tell(name, done, total)

    step("inputs", 0)
    inputs = read_inputs(
        jobs,
        recommendation=recommendation,
        site=site,
        replay=replay,
        tune=tune,
        requests=requests,
        validation=validation,
    )
    inputs = replace(inputs, baseline=check_baseline(inputs, baseline))
    sections = build_sections(
        inputs, builders=builders, progress=None if tell is None else lambda name, done, _: step(name, done + 1)
    )
    step("rendering", len(builders) + 1)
    report = Report(html=render_report(inputs, sections), sections=sections, inputs=inputs)
    if output is not None:
        step(f"writing {output}", total - 1)
        report.write(output)
    step("done", total)
    return report


def _printer(step: str, done: int, total: int) -> None:
    """``report [done/total] step`` on stderr."""
    sys.stderr.write(f"report [{done}/{total}] {step}\n")
