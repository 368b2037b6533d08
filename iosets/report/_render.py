"""Render sections into one self-contained HTML page: Jinja2 (autoescaped), plotly.js inlined once, no URL.

Each figure's Plotly JSON sits in a ``<script type="application/json">`` with ``<``, ``>`` and ``&``
written as ``\\u003c``, ``\\u003e`` and ``\\u0026``, so that no text of an input closes the script; the
page's own scripts (:data:`SCRIPTS`) draw it with ``Plotly.newPlot``. A Content-Security-Policy forbids the
page to load anything, and the mode bar keeps only buttons that stay inside the page (:data:`PLOT_OPTIONS`):
whatever plotly.js holds, the page asks no server for anything and opens no window.
"""

from __future__ import annotations

import datetime
import functools
import html
import json
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

from ._document import Figure, ReportInputs, Section, Table
from ._format import EPOCH_FLOOR, counted, epoch_date, format_count, format_date, format_seconds, format_value
from ._plots import epoch_dated

CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; base-uri 'none'; form-action 'none'"
)
"""The page's Content-Security-Policy (a ``<meta>`` of the page): inline scripts and styles only, images from data:
and blob: (the PNG a plot's camera button makes); no request, no frame, no worker, no form, no ``eval`` (the
SVG traces of plotly.js need none; :data:`WEBGL_TRACES` are refused)."""

SERVED_CSP = CSP + "; sandbox allow-scripts allow-downloads"
""":data:`CSP` as the service sends it (an HTTP header): ``sandbox`` without ``allow-popups``,
``allow-top-navigation`` or ``allow-same-origin`` also forbids new windows and leaving the page. Browsers ignore
``sandbox`` in a ``<meta>`` (and say so in the console), so the file's own policy cannot carry it: there the page's
script refuses ``window.open`` and links out of the page (``templates/report.js``)."""

MODE_BAR_REMOVED = ("sendChartToCloud", "select2d", "lasso2d")
"""Mode bar buttons no report shows: *Share chart* uploads the plot to Plotly Cloud in a new window (plotly.js 4
shows it unless told not to; its older ``showLink`` and ``showEditInChartStudio`` are gone from plotly.js 4, which
has no other button that leaves the page); the selection tools select points that nothing in the page reads. The camera
(``toImage``: the plot drawn on a canvas, saved as a PNG from a ``blob:`` URL), zoom, pan, autoscale and reset
stay inside the page."""

PLOT_OPTIONS = {
    "config": {
        "responsive": True,
        "displaylogo": False,
        "showSendToCloud": False,
        "modeBarButtonsToRemove": list(MODE_BAR_REMOVED),
        "typesetMath": False,
    },
    "layout": {
        "font": {"family": "system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif", "size": 12},
        "margin": {"l": 64, "r": 24, "t": 40, "b": 56},
    },
}
"""Plotly config of every figure and the layout a figure's own layout overrides (key by key)."""

FETCHING_TRACES = frozenset(
    ("scattergeo", "choropleth", "scattermap", "choroplethmap", "densitymap")
    + ("scattermapbox", "choroplethmapbox", "densitymapbox")
)
"""Trace types plotly.js draws from map tiles or topojson downloaded from the net: never in a report."""

WEBGL_TRACES = frozenset(
    ("scattergl", "scatterpolargl", "splom", "parcoords", "scatter3d", "surface", "mesh3d")
    + ("cone", "streamtube", "isosurface", "volume")
)
"""Trace types plotly.js draws with WebGL: regl may compile their drawing code at run time (``Function``), which
:data:`CSP` forbids, and a browser without a GPU draws nothing. Never in a report: bin or sample instead."""

INPUT_LABELS = {
    "jobs": "jobs",
    "recommendation": "recommendation",
    "site": "site trace",
    "replay_jobs": "per-job trace replay",
    "replay_phases": "trace replay phases",
    "replay_schedulers": "trace replay metrics",
    "replay_shares": "trace replay set shares",
    "tune": "tuning ranking",
    "requests": "request results",
    "request_classes": "request classes",
    "validation": "validation runs",
}
"""How the header names each input (ReportInputs fields, in this order)."""

PAGE_ROWS = 200
"""Rows of an interactive table shown at a time; the others are in the page, hidden (laying out thousands of
rows takes the browser seconds). The page's script shows the next ones on demand, in the order chosen."""

NUMBER_CLASS = ' class="num"'
"""The class of a numeric cell (right-aligned, tabular digits)."""

SCRIPTS = ("report.js", "job_detail.js")
"""The page's own scripts (files of ``templates/``), inlined in this order after plotly.js. ``report.js`` draws
the figures, marks the page ``data-plots-drawn`` (and fires ``iosets:plots-drawn``) once every plot is drawn, runs
the interactive tables, and offers ``window.iosetsReport.drawFigure(div, {data, layout})``: a script added after it
draws its figures through that, with the page's mode bar, Tab order and narrow-screen layout."""

SKIP_TABLE = "jobs-table"
"""The table the page's skip link leads to (its filter box), when the page has it."""


def render_report(inputs: ReportInputs, sections: Sequence[Section], *, made: datetime.datetime | None = None) -> str:
    """The report as one HTML page.

    Parameters
    ----------
    inputs : ReportInputs
        What the sections were built from (the header shows the site's span and the input files).
    sections : sequence of Section
        In page order; ids of sections, figures and tables must be unique in the page.
    made : datetime, default=None
        Date shown in the header (default: now, UTC).

    Returns
    -------
    str
        The page: plotly.js inlined once, each figure's JSON, each table cell's exact value in ``data-value``.

    Examples
    --------
    >>> import polars as pl
    >>> from iosets.report._inputs import read_inputs
    >>> page = render_report(read_inputs(pl.DataFrame({"job_id": ["a"]})), [Section("s", "S", "Text.")])
    >>> page.startswith("<!DOCTYPE html>"), '<section id="s"' in page
    (True, True)
    """
    _check_ids(sections)
    from .._version import __version__

    made = made or datetime.datetime.now(datetime.UTC)
    files, frames = _input_list(inputs)
    environment = _environment()
    return environment.get_template("report.html.j2").render(
        csp=CSP,
        version=__version__,
        made=made.strftime("%Y-%m-%d %H:%M UTC"),
        span=site_span(inputs),
        input_files=files,
        input_frames=frames,
        sections=sections,
        css=_asset("report.css"),
        scripts=[_asset(name) for name in SCRIPTS],
        plotly_js=_plotly_js(),
        plot_options=_markup(script_json(PLOT_OPTIONS)),
        page_rows=PAGE_ROWS,
        skip=skip_link(sections),
    )


@functools.cache
def _environment():
    """The Jinja2 environment of the package's templates, autoescaping everything."""
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("iosets.report", "templates"), autoescape=True, undefined=jinja2.StrictUndefined
    )
    environment.filters.update(
        paragraphs=lambda text: [part for part in re.split(r"\n\s*\n", text) if part.strip()],
        code=inline_code,
        figure_json=lambda figure: _markup(figure_json(figure)),
        header=table_header,
        rows=lambda table: _markup("".join(table_rows(table))),
        row_count=row_count,
        script_json=lambda value: _markup(script_json(value)),
    )
    return environment


def _markup(text: str):
    """``text`` marked safe for the template (it is escaped already)."""
    from markupsafe import Markup

    return Markup(text)


@functools.cache
def _asset(name: str):
    """A template folder's file as it is (CSS, the page's script): never parsed as a template."""
    source, _, _ = _environment().loader.get_source(_environment(), name)
    return _markup(source)


@functools.cache
def _plotly_js():
    """plotly.js, minified, as shipped by the installed plotly package."""
    from plotly.offline import get_plotlyjs

    return _markup(get_plotlyjs())


def inline_code(text: str):
    """``text`` escaped, with each ```command``` span shown as ``<code>`` and each ``[words](#id)`` as a link to the
    page's own element ``id`` (letters, digits and dashes: never a URL)."""
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=False))
    return _markup(re.sub(r"\[([^\]]+)\]\(#([a-z0-9-]+)\)", r'<a href="#\2">\1</a>', escaped))


def script_json(value: Any) -> str:
    """``value`` as JSON safe inside a ``<script>`` element: no ``<``, ``>`` or ``&``; NaN and infinities as null."""
    try:
        text = json.dumps(value, separators=(",", ":"), allow_nan=False, default=_plain)
    except ValueError:  # a NaN or an infinity somewhere: Plotly draws null as a gap
        text = json.dumps(_finite(value), separators=(",", ":"), allow_nan=False, default=_plain)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def figure_json(figure: Figure) -> str:
    """``{"data": traces, "layout": layout}`` of ``figure`` as script-safe JSON."""
    return script_json({"data": figure.data, "layout": figure.layout})


def _plain(value: Any) -> Any:
    """A JSON-able form of numpy arrays and scalars, Polars series and dates (``json.dumps`` default)."""
    if hasattr(value, "to_list"):  # polars Series
        return value.to_list()
    if hasattr(value, "tolist"):  # numpy array or scalar
        return value.tolist()
    if isinstance(value, datetime.date):
        return value.isoformat()
    raise TypeError(f"a figure holds a {type(value).__name__}, which is not JSON: {value!r:.80}")


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float, however deeply nested, replaced by None."""
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "to_list") or hasattr(value, "tolist"):
        return _finite(_plain(value))
    return value


def table_header(table: Table) -> list[dict[str, Any]]:
    """Each column's name, its name with a line break allowed after each ``_`` (``shown``: narrow columns for long
    names such as ``stretch_iosets-wfq``) and type (``number`` or ``text``: how the page sorts it)."""
    return [
        {
            "name": name,
            "shown": _markup(html.escape(name).replace("_", "_<wbr>")),
            "type": "number" if dtype.is_numeric() else "text",
        }
        for name, dtype in table.frame.schema.items()
    ]


def row_count(table: Table) -> str:
    """``<shown> of <all> rows`` of an interactive table as the page first shows it (:data:`PAGE_ROWS` at most).

    Examples
    --------
    >>> import polars as pl
    >>> row_count(Table("t", "T", pl.DataFrame({"n": range(1500)}), interactive=True))
    '200 of 1,500 rows'
    """
    total = table.frame.height
    return f"{format_count(min(total, PAGE_ROWS))} of {counted(total, 'row')}"


def skip_link(sections: Sequence[Section]) -> dict[str, str]:
    """The first link of the page: to the filter of the jobs table (:data:`SKIP_TABLE`) when the page shows it as
    an interactive table, else to the sections (``main``). ``{"target": element id, "text": link text}``."""
    for section in sections:
        if section.missing is None and any(t.id == SKIP_TABLE and t.interactive for t in section.tables):
            return {"target": f"{SKIP_TABLE}-filter", "text": "Skip to the jobs table's filter"}
    return {"target": "main", "text": "Skip to the report's sections"}


def table_rows(table: Table) -> Iterator[str]:
    """The ``<tr>`` of each row: each cell shows its formatted value and keeps the exact one in ``data-value``.

    An interactive table's rows after the first :data:`PAGE_ROWS` are hidden.
    """
    frame = table.frame
    numeric = [dtype.is_numeric() for dtype in frame.schema.values()]
    formats = [table.formats.get(name) for name in frame.columns]
    for index, row in enumerate(frame.iter_rows()):
        cells = []
        for value, fmt, is_number in zip(row, formats, numeric, strict=True):
            exact = html.escape(exact_value(value))
            shown = html.escape(format_value(value, fmt))
            cells.append(f'<td{NUMBER_CLASS if is_number else ""} data-value="{exact}">{shown}</td>')
        hidden = table.interactive and index >= PAGE_ROWS
        yield ("<tr hidden>" if hidden else "<tr>") + "".join(cells) + "</tr>"


def exact_value(value: Any) -> str:
    """The cell's value as text that reads back to the same value: ``repr`` of a float, '' for null."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value)


def site_span(inputs: ReportInputs) -> str:
    """``N jobs, <first start> to <last end> (<duration>)`` from the jobs table, dates in UTC.

    Jobs dated since their trace's start (block traces) are left out of a span of dates since the epoch.
    """
    import polars as pl

    jobs = inputs.jobs
    count = counted(jobs.height, "job")
    timed = jobs.filter(pl.col("start").is_not_null())
    if timed.height == 0:
        return f"{count}; the jobs table has no start dates"
    spanned = epoch_dated(jobs)
    dated = spanned.filter(pl.col("start") >= EPOCH_FLOOR)
    first = float(spanned["start"].min())  # type: ignore[arg-type]
    last = float(spanned.select(pl.max_horizontal("start", "end").max()).item())
    span = f"{count}, {_date(first)} to {_date(last)} ({format_seconds(last - first)})"
    relative = timed.height - dated.height
    if dated.height and relative:
        span += "; " + (
            f"{counted(relative, 'job')} dated from their trace's start are"
            if relative > 1
            else "1 job dated from its trace's start is"
        )
        span += " left out"
    return span


def _date(seconds: float) -> str:
    """A date since the epoch in UTC, or seconds since the trace's start for small values."""
    date = epoch_date(seconds)
    return f"{date} UTC" if date else format_date(seconds)


def _input_list(inputs: ReportInputs) -> tuple[list[tuple[str, str]], list[str]]:
    """``(label, file)`` of each input read from a file, and the labels of those given as frames."""
    given = [(name, label) for name, label in INPUT_LABELS.items() if getattr(inputs, name) is not None]
    files = [(label, inputs.sources[name]) for name, label in given if name in inputs.sources]
    return files, [label for name, label in given if name not in inputs.sources]


def _check_ids(sections: Sequence[Section]) -> None:
    """Raise ValueError on an id used twice in the page, a trace that would fetch map data or one drawn with WebGL."""
    seen: set[str] = set()
    for section in sections:
        ids = [section.id, *(f.id for f in section.figures), *(t.id for t in section.tables)]
        ids += [f"{f.id}-json" for f in section.figures] + [f"{t.id}-filter" for t in section.tables if t.interactive]
        for name in ids:
            if name in seen:
                raise ValueError(f"section {section.id!r}: id {name!r} is used twice in the report")
            seen.add(name)
        for figure in section.figures:
            types = {trace.get("type", "scatter") for trace in figure.data}
            if types & FETCHING_TRACES:
                kinds = ", ".join(sorted(types & FETCHING_TRACES))
                raise ValueError(f"figure {figure.id!r}: {kinds} traces fetch map data from the net")
            if types & WEBGL_TRACES:
                kinds = ", ".join(sorted(types & WEBGL_TRACES))
                raise ValueError(
                    f"figure {figure.id!r}: {kinds} traces draw with WebGL, which the page's CSP (no eval) and a "
                    "browser without a GPU do not draw; bin or sample the points into SVG traces"
                )
