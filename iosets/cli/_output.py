"""What commands print: plain-text lines on stderr, tables on stdout, one JSON line for ``--json``.

User-controlled text (paths, values read from files, error reasons) is never read as Rich markup,
never highlighted, and never hard-wrapped on a stream that is not a terminal.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

T = TypeVar("T")
UNWRAPPED_WIDTH = 1 << 16
"""Console width on a non-terminal stream: wide enough that no table cell or title is wrapped."""


def _stream(stderr: bool) -> TextIO:
    """The current stderr or stdout (test runners swap them)."""
    return sys.stderr if stderr else sys.stdout


def _is_terminal(stderr: bool) -> bool:
    """Whether stderr (or stdout) is a terminal."""
    stream = _stream(stderr)
    return hasattr(stream, "isatty") and stream.isatty()


def console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr) of the terminal's width, or unwrapped when the stream is not a terminal."""
    from rich.console import Console

    stream = Console(stderr=stderr, highlight=False)
    if not _is_terminal(stderr):
        stream.width = UNWRAPPED_WIDTH
    return stream


def echo(*parts: str | tuple[str, str], stderr: bool = True) -> None:
    """One line made of plain strings and ``(text, style)`` pairs, on stderr unless told otherwise.

    Styles show on a terminal only; elsewhere the line is written as plain text, without loading Rich.
    """
    if not _is_terminal(stderr):
        _stream(stderr).write("".join(part if isinstance(part, str) else part[0] for part in parts) + "\n")
        return
    from rich.text import Text

    console(stderr=stderr).print(Text.assemble(*parts), soft_wrap=True)


def show_error(message: str) -> None:
    """``error: <message>`` on stderr."""
    echo(("error:", "bold red"), " ", message)


def show_warning(message: str) -> None:
    """``warning: <message>`` on stderr."""
    echo(("warning:", "yellow"), " ", message)


def show_note(message: str) -> None:
    """``note: <message>`` on stderr: why a result is what it is (a metric that could not be computed)."""
    echo(("note:", "cyan"), " ", message)


def show(renderable: RenderableType) -> None:
    """A table (or any Rich renderable) on stdout."""
    console().print(renderable)


def progress(steps: Iterable[T], *, description: str, total: int | None = None, transient: bool = False) -> Iterable[T]:
    """``steps`` with a progress bar on stderr when stderr is a terminal, unchanged otherwise."""
    if not _is_terminal(stderr=True):
        return steps
    from rich.markup import escape
    from rich.progress import track

    return track(steps, description=escape(description), total=total, console=console(stderr=True), transient=transient)


def computed(value: Any) -> Any:
    """``value``, or None for a float that could not be computed (NaN, infinite)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float, however deeply nested, replaced by None."""
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return computed(value)


def print_json(data: Any) -> None:
    """One line of valid JSON on stdout: numbers that cannot be computed (NaN, inf) are null."""
    sys.stdout.write(json.dumps(_finite(data), allow_nan=False) + "\n")


@contextmanager
def warnings_to_stderr() -> Iterator[None]:
    """Show the library's warnings raised in the block (capped weights, scaled reservations) as warning lines."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for warning in caught:
        show_warning(str(warning.message))
