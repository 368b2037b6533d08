"""MkDocs hook: the command-line reference, generated from the Typer app at build time.

The page ``reference/cli.md`` holds the marker ``<!-- iosets:cli -->``; this hook replaces it with
what Typer's own generator (``typer iosets.cli utils docs``) writes for ``iosets``, so the page
always says what the installed command line does.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

MARKER = "<!-- iosets:cli -->"


def generated_reference() -> str:
    """Typer's Markdown for the ``iosets`` app, headings one level down (the page has its own title)."""
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "cli.md"
        command = [sys.executable, "-m", "typer", "iosets.cli", "utils", "docs", "--name", "iosets"]
        subprocess.run([*command, "--output", str(output)], check=True, capture_output=True, text=True)
        text = output.read_text(encoding="utf-8")
    return demote_headings(text)


def demote_headings(markdown: str) -> str:
    """Every heading one level down (``#`` -> ``##``), code blocks left as they are."""
    lines, in_code = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        lines.append("#" + line if line.startswith("#") and not in_code else line)
    return "\n".join(lines)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Put the generated reference where the page has the marker."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, generated_reference())
