"""What every ``iosets`` command shares: the two consoles, error exits, warnings and JSON output."""

import json
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console

out = Console()
err = Console(stderr=True)


def fail(exc: Exception) -> typer.Exit:
    """Print ``exc`` as an error line and return the exit to raise."""
    err.print(f"[bold red]error:[/] {exc}", highlight=False)
    return typer.Exit(code=1)


def print_json(data) -> None:
    """One line of JSON on stdout (the ``--json`` outputs)."""
    sys.stdout.write(json.dumps(data) + "\n")


@contextmanager
def warnings_to_stderr() -> Iterator[None]:
    """Show the library's warnings (capped weights, scaled reservations) as plain warning lines."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for warning in caught:
        err.print(f"[yellow]warning:[/] {warning.message}", highlight=False)
