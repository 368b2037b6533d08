"""Every code block of the documentation runs: docs/**/*.md and README.md.

A page's blocks run in page order, in one temporary folder per page (where ``tests/data`` is the checkout's,
as for a reader in a checkout), so that a block can make the files a later one reads. ```python blocks run in
one namespace per page (as ``__main__``), except those with a ``title="path"`` (a file of the package, shown
whole or in part: it belongs to its package); in ```console and ```bash blocks, each line that starts with
``$ iosets`` runs as a command (``python -m iosets.cli``, so that PYTHONPATH chooses the code) and must exit 0,
a line ending in ``\\`` going on on the next one. Other lines (a command's output, commands without the ``$ ``
prompt) and other languages (text, json, toml, lua, ini, sh, c...) are shown, not run.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
README_MAX_LINES = 250
PROMPT = "$ iosets"
COMMAND_BOUND = 600  # s: a guard against a command that never ends, far above any page's needs

FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)(?P<info>[^\n]*)\n"
    r"(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language, its text (the list's indent removed) and its fence's line."""

    lang: str
    code: str
    line: int
    title: str | None = None

    @property
    def runs_as_python(self) -> bool:
        """A Python example to run, not a file of the package."""
        return self.lang == "python" and self.title is None


def code_blocks(markdown: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, in order."""
    blocks = []
    for match in FENCE.finditer(markdown):
        indent = len(match["indent"])
        lines = match["body"].splitlines(keepends=True)
        code = "".join(line[indent:] if not line[:indent].strip() else line for line in lines)
        title = re.search(r'title="([^"]*)"', match["info"])
        line = markdown.count("\n", 0, match.start()) + 1
        blocks.append(Block(match["lang"], code, line, title[1] if title else None))
    return blocks


def iosets_commands(code: str) -> list[list[str]]:
    """The arguments of each ``$ iosets`` line of a console block, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", code)
    return [
        shlex.split(line.removeprefix(PROMPT), comments=True)
        for line in joined.splitlines()
        if line == PROMPT or line.startswith(PROMPT + " ")
    ]


def runnable(page: Path) -> bool:
    """Whether the page has a block that runs."""
    blocks = code_blocks(page.read_text(encoding="utf-8"))
    return any(b.runs_as_python or (b.lang in ("console", "bash") and iosets_commands(b.code)) for b in blocks)


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p)], ids=_name)
def test_every_code_block_of_the_page_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests").mkdir()  # pages name a checkout's sample logs as tests/data/...
    (tmp_path / "tests" / "data").symlink_to(ROOT / "tests" / "data")
    namespace: dict[str, object] = {"__name__": "__main__"}
    for block in code_blocks(page.read_text(encoding="utf-8")):
        where = f"{_name(page)}:{block.line}"
        if block.runs_as_python:
            exec(compile(block.code, where, "exec"), namespace)
        elif block.lang in ("console", "bash"):
            for args in iosets_commands(block.code):
                done = subprocess.run(
                    [sys.executable, "-m", "iosets.cli", *args],
                    cwd=tmp_path,
                    capture_output=True,
                    text=True,
                    timeout=COMMAND_BOUND,
                )
                assert done.returncode == 0, (
                    f"{where}: iosets {shlex.join(args)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
                )


def test_blocks_and_commands_are_read_as_a_reader_sees_them():
    markdown = (
        "# Page\n"
        "\n"
        "```python\n"
        "x = 1\n"
        "```\n"
        "\n"
        "- a step:\n"
        "\n"
        "  ```console\n"
        "  $ iosets analyze logs/ \\\n"
        "      -o 'my jobs.parquet'   # the jobs table\n"
        "  wrote my jobs.parquet\n"
        "  $ iosetsx nothing\n"
        "  $ iosets\n"
        "  ```\n"
        "\n"
        "````markdown\n"
        "```python\n"
        "inner = 2\n"
        "```\n"
        "````\n"
        "\n"
        '```python title="iosets/x.py"\n'
        "from . import y\n"
        "```\n"
    )
    blocks = code_blocks(markdown)
    assert [(b.lang, b.line, b.title) for b in blocks] == [
        ("python", 3, None),
        ("console", 9, None),
        ("markdown", 17, None),
        ("python", 23, "iosets/x.py"),
    ]
    assert [b.runs_as_python for b in blocks] == [True, False, False, False]
    assert blocks[0].code == "x = 1\n"
    assert blocks[2].code == "```python\ninner = 2\n```\n"
    assert iosets_commands(blocks[1].code) == [["analyze", "logs/", "-o", "my jobs.parquet"], []]


def test_the_readme_is_what_a_newcomer_needs():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    assert "make demo" in text and "make test" in text
    assert "docs/report.png" in text and (ROOT / "docs" / "report.png").is_file()
