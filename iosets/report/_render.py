"""Render sections into one self-contained HTML page: Jinja2 (autoescaped), plotly.js inlined once, no URL.

Each figure's Plotly JSON sits in a ``<script type="application/json">`` with ``<``, ``>`` and ``&``
written as ``\\u003c``, ``\\u003e`` and ``\\u0026``, so that no text of an input closes the script; the
page's own script draws it with ``Plotly.newPlot``. A Content-Security-Policy forbids the page to load
anything: whatever plotly.js holds, the page asks no server for anything.
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
from ._format import EPOCH_FLOOR, epoch_date, format_date, format_value
from ._plots import epoch_dated

CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; base-uri 'none'; form-action 'none'"
)
"""The page's Content-Security-Policy: inline scripts and styles only, images from data: (Plotly's snapshot)."""

PLOT_OPTIONS = {
    "config": {"responsive": True, "displaylogo": False, "typesetMath": False},
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
        report_js=_asset("report.js"),
        job_detail_js=_asset("job_detail.js"),
        plotly_js=_plotly_js(),
        plot_options=_markup(script_json(PLOT_OPTIONS)),
        page_rows=PAGE_ROWS,
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
    """``text`` escaped, with each ```command``` span shown as ``<code>``."""
    escaped = html.escape(text, quote=False)
    return _markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped))


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


def table_header(table: Table) -> list[dict[str, str]]:
    """Each column's name and type (``number`` or ``text``: how the page sorts it)."""
    return [
        {"name": name, "type": "number" if dtype.is_numeric() else "text"} for name, dtype in table.frame.schema.items()
    ]


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
    count = f"{jobs.height:,} job" + ("s" if jobs.height != 1 else "")
    timed = jobs.filter(pl.col("start").is_not_null())
    if timed.height == 0:
        return f"{count}; the jobs table has no start dates"
    spanned = epoch_dated(jobs)
    dated = spanned.filter(pl.col("start") >= EPOCH_FLOOR)
    first = float(spanned["start"].min())  # type: ignore[arg-type]
    last = float(spanned.select(pl.max_horizontal("start", "end").max()).item())
    span = f"{count}, {_date(first)} to {_date(last)} ({_duration(last - first)})"
    relative = timed.height - dated.height
    if dated.height and relative:
        span += (
            f"; {relative:,} "
            + ("jobs dated from their trace's start are" if relative > 1 else "job dated from its trace's start is")
            + " left out"
        )
    return span


def _date(seconds: float) -> str:
    """A date since the epoch in UTC, or seconds since the trace's start for small values."""
    date = epoch_date(seconds)
    return f"{date} UTC" if date else format_date(seconds)


def _duration(seconds: float) -> str:
    """A duration in the largest unit that keeps it above 2."""
    for unit, size in (("days", 86400.0), ("hours", 3600.0), ("min", 60.0)):
        if seconds >= 2 * size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def _input_list(inputs: ReportInputs) -> tuple[list[tuple[str, str]], list[str]]:
    """``(label, file)`` of each input read from a file, and the labels of those given as frames."""
    given = [(name, label) for name, label in INPUT_LABELS.items() if getattr(inputs, name) is not None]
    files = [(label, inputs.sources[name]) for name, label in given if name in inputs.sources]
    return files, [label for name, label in given if name not in inputs.sources]


def _check_ids(sections: Sequence[Section]) -> None:
    """Raise ValueError on an id used twice in the page or a trace that would fetch map data."""
    seen: set[str] = set()
    for section in sections:
        ids = [section.id, *(f.id for f in section.figures), *(t.id for t in section.tables)]
        ids += [f"{f.id}-json" for f in section.figures]
        for name in ids:
            if name in seen:
                raise ValueError(f"section {section.id!r}: id {name!r} is used twice in the report")
            seen.add(name)
        for figure in section.figures:
            kinds = {trace.get("type", "scatter") for trace in figure.data} & FETCHING_TRACES
            if kinds:
                raise ValueError(f"figure {figure.id!r}: {', '.join(sorted(kinds))} traces fetch map data from the net")
