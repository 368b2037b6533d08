"""MkDocs hook: the Python API pages list each room's public names, read from the room's ``__all__``.

A page holds a marker such as ``<!-- iosets:api iosets.analyzer -->``; this hook replaces it with
one mkdocstrings block per public name of that room, in the order of its ``__all__``, so that a
name added to (or removed from) a room appears on (or leaves) its page without an edit.
"""

from __future__ import annotations

import re
from importlib import import_module

MARKER = re.compile(r"<!-- iosets:api (?P<room>[\w.]+) -->")


def api_blocks(room: str) -> str:
    """``::: room.name`` for every name of ``room.__all__``."""
    names = import_module(room).__all__
    return "\n\n".join(f"::: {room}.{name}" for name in names)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Expand every API marker of the page."""
    return MARKER.sub(lambda match: api_blocks(match["room"]), markdown)
