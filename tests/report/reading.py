"""Read a report page back with the standard library: its sections, tables, figures' JSON and links."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser

SECTION_IDS = [
    "verdict",
    "overview",
    "recommendation",
    "scheduler",
    "impact",
    "model-check",
    "timelines",
    "requests",
    "validation",
    "jobs",
]
"""The ids of a full report's sections, in page order."""


@dataclass
class ReadTable:
    """A table of the page: column names, and per row each cell's ``(data-value, shown text)``."""

    columns: list[str] = field(default_factory=list)
    rows: list[list[tuple[str, str]]] = field(default_factory=list)

    def column(self, name: str) -> list[tuple[str, str]]:
        """The cells of column ``name``, top to bottom."""
        index = self.columns.index(name)
        return [row[index] for row in self.rows]

    def records(self) -> list[dict[str, str]]:
        """Each row as ``{column: data-value}``."""
        return [dict(zip(self.columns, (value for value, _ in row), strict=True)) for row in self.rows]


@dataclass
class Page:
    """What a report page holds, read back from its HTML."""

    sections: dict[str, dict] = field(default_factory=dict)
    tables: dict[str, ReadTable] = field(default_factory=dict)
    scripts: dict[str, str] = field(default_factory=dict)
    links: list[tuple[str, str, str]] = field(default_factory=list)
    inline_scripts: int = 0

    def figure(self, figure_id: str) -> dict:
        """A figure's ``{"data", "layout"}`` parsed from its JSON script."""
        return json.loads(self.scripts[f"{figure_id}-json"])


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self._section: dict | None = None
        self._table: ReadTable | None = None
        self._cell: list | None = None
        self._script: str | None = None
        self._text: list[str] | None = None
        self._capture: str | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for name in ("src", "href", "action", "data", "poster"):
            if name in attributes:
                self.page.links.append((tag, name, attributes[name] or ""))
        if tag == "section":
            self._section = {"title": None, "missing": None, "readings": []}
            self.page.sections[attributes["id"]] = self._section
        elif tag == "h2" and self._section is not None and self._section["title"] is None:
            self._start_text("title")
        elif tag == "div" and "missing" in (attributes.get("class") or "").split() and self._section is not None:
            self._start_text("missing")
        elif tag == "p" and "reading" in (attributes.get("class") or "").split() and self._section is not None:
            self._start_text("reading")
        elif tag == "table":
            self._table = ReadTable()
            self.page.tables[attributes["id"]] = self._table
        elif tag == "tr" and self._table is not None:
            self._table.rows.append([])
        elif tag in ("th", "td") and self._table is not None:
            self._cell = [attributes.get("data-value"), []]
        elif tag == "script":
            if attributes.get("type") == "application/json":
                self._script = attributes["id"]
                self.page.scripts[self._script] = ""
            else:
                self.page.inline_scripts += 1

    def _start_text(self, what: str) -> None:
        self._capture, self._text = what, []

    def handle_endtag(self, tag):
        if self._capture is not None and tag in ("h2", "div", "p"):
            text = " ".join("".join(self._text or []).split())
            if self._capture == "reading":
                self._section["readings"].append(text)  # type: ignore[index]
            else:
                self._section[self._capture] = text  # type: ignore[index]
            self._capture = self._text = None
        elif tag in ("th", "td") and self._cell is not None and self._table is not None:
            value, text = self._cell[0], "".join(self._cell[1])
            if tag == "th":
                self._table.columns.append(text)
            else:
                self._table.rows[-1].append((value, text))
            self._cell = None
        elif tag == "tr" and self._table is not None and self._table.rows and not self._table.rows[-1]:
            self._table.rows.pop()  # the header row
        elif tag == "table":
            self._table = None
        elif tag == "section":
            self._section = None
        elif tag == "script":
            self._script = None

    def handle_data(self, data):
        if self._script is not None:
            self.page.scripts[self._script] += data
        if self._cell is not None:
            self._cell[1].append(data)
        if self._text is not None:
            self._text.append(data)


def read_page(html: str) -> Page:
    """The sections, tables, JSON scripts and links of a report page."""
    reader = _Reader()
    reader.feed(html)
    reader.close()
    return reader.page
