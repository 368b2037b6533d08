"""What a report is made of: sections of plain-language readings, Plotly figures and tables.

Each section module turns the report's inputs into one :class:`Section`; the renderer turns the
sections into one offline HTML file. Figures are plain Plotly JSON (traces and layout), so that
building a report never goes through Plotly's Python validation and stays fast on large sites.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from ..validate import Validation


@dataclass(frozen=True)
class Figure:
    """One Plotly plot: ``data`` (traces) and ``layout`` as Plotly's JSON, drawn into ``<div id=id>``.

    ``note`` says how the data was reduced when it was (binned, sampled, capped), shown under the plot.
    """

    id: str
    title: str
    data: list[dict[str, Any]]
    layout: dict[str, Any] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class Table:
    """The numbers behind a section, shown as an HTML table.

    ``formats`` maps a column to a kind of :mod:`._format` (``"bytes"``, ``"date"``, ``"seconds"``, ...) or a
    Python format spec (``"{:.3f}"``); a number without one shows as ``"number"``. Every cell also
    keeps its exact value in a ``data-value`` attribute, so that a reader (or a test) gets the number
    the table came from. ``interactive`` tables can be sorted and filtered in the page. ``details`` maps a row's
    first cell (a job id) to what the page shows when the row is opened (the jobs table's job detail).
    """

    id: str
    title: str
    frame: pl.DataFrame
    formats: dict[str, str] = field(default_factory=dict)
    note: str = ""
    interactive: bool = False
    details: dict[str, Any] | None = None


@dataclass(frozen=True)
class Section:
    """One section of the report.

    ``reading`` is one paragraph in plain language saying what the section shows and how to read
    it. ``missing``, when set, replaces the figures and tables: which input is absent and the
    command that produces it (a missing optional input is never an error).
    """

    id: str
    title: str
    reading: str
    figures: tuple[Figure, ...] = ()
    tables: tuple[Table, ...] = ()
    missing: str | None = None


@dataclass(frozen=True)
class ReportInputs:
    """The tables a report is built from, validated against their schemas; None when not given.

    Attributes
    ----------
    jobs : polars.DataFrame
        JOBS (``iosets analyze -o``), or RECOMMENDED_JOBS when the recommendation is the jobs table.
    recommendation : polars.DataFrame or None
        RECOMMENDED_JOBS (``iosets recommend -o``): each job with its set, priority, WFQ and RBFQ parameters.
    site : polars.DataFrame or None
        SITE_REQUESTS (``iosets ingest --site -o``).
    replay_jobs, replay_phases, replay_schedulers, replay_shares : polars.DataFrame or None
        TRACE_REPLAY_JOBS, TRACE_REPLAY_PHASES, TRACE_REPLAY_SCHEDULERS, TRACE_REPLAY_SHARES
        (``iosets replay-trace -o PERJOB`` and the companions written beside it).
    tune : polars.DataFrame or None
        TUNE_RANKING (``iosets tune -o``).
    requests, request_classes : polars.DataFrame or None
        REQUEST_RESULTS and REQUEST_CLASSES (``iosets replay-requests -o RESULT`` and its companion).
    validation : Validation or None
        Real runs against the phase engine (``iosets validate -o validation.json``).
    modules, job_detail, job_sizes, job_activity : polars.DataFrame or None
        MODULE_TOTALS, JOB_DETAIL, JOB_SIZES and JOB_ACTIVITY: the analyzer's tables beside the jobs table
        (``<jobs>.modules``, ``.detail``, ``.sizes``, ``.activity``), each job's detail.
    sources : dict of str to str
        Input name -> the file it was read from (shown in the report's header).
    baseline : str or None
        The policy the site runs today, the scheduler of the replay every other is compared with
        (``iosets report --baseline``); None: fcfs when the replay holds it, else its first scheduler.
    """

    jobs: pl.DataFrame
    recommendation: pl.DataFrame | None = None
    site: pl.DataFrame | None = None
    replay_jobs: pl.DataFrame | None = None
    replay_phases: pl.DataFrame | None = None
    replay_schedulers: pl.DataFrame | None = None
    replay_shares: pl.DataFrame | None = None
    tune: pl.DataFrame | None = None
    requests: pl.DataFrame | None = None
    request_classes: pl.DataFrame | None = None
    validation: Validation | None = None
    modules: pl.DataFrame | None = None
    job_detail: pl.DataFrame | None = None
    job_sizes: pl.DataFrame | None = None
    job_activity: pl.DataFrame | None = None
    sources: dict[str, str] = field(default_factory=dict)
    baseline: str | None = None
