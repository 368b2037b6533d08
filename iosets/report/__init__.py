"""Report: one offline HTML page that shows a site what the analyzer, the recommender and the replays found.

:func:`build_report` reads the inputs (files or frames), builds each section (a plain-language
reading, Plotly figures, tables) and renders one self-contained page: plotly.js inlined once, no URL,
no request leaves it. Names are imported on first use (:mod:`iosets._lazy`).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers see; F401 is off for __init__ files
    from ._build import Report, build_report, build_sections, default_builders
    from ._document import Figure, ReportInputs, Section, Table
    from ._inputs import read_inputs
    from ._render import CSP, SERVED_CSP, render_report

_EXPORTS = {
    "Report": "._build",
    "build_report": "._build",
    "build_sections": "._build",
    "default_builders": "._build",
    "Figure": "._document",
    "ReportInputs": "._document",
    "Section": "._document",
    "Table": "._document",
    "read_inputs": "._inputs",
    "CSP": "._render",
    "SERVED_CSP": "._render",
    "render_report": "._render",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
