"""The one place where an :class:`~iosets.errors.IosetsError` becomes ``error: <message>`` and exit code 1 (or 2)."""

from typing import Any

import typer
from typer.core import TyperGroup

from ..errors import IosetsError
from ._output import show_error


class NothingDoneError(IosetsError):
    """The input was readable but gave no result (no trace found, every log failed): exit code 2, not 1."""


class ReportingGroup(TyperGroup):
    """The root command group: a command's IosetsError is printed as ``error: <message>`` and exits 1.

    A :class:`NothingDoneError` exits 2, so that a script tells "nothing to show" from "bad input".

    Any other exception is a bug and propagates with its traceback.
    """

    def invoke(self, ctx: Any) -> Any:  # Any: Typer's Context class depends on its version
        """Run the command, turning an IosetsError into the error line and exit code 1 (2 if nothing was done)."""
        try:
            return super().invoke(ctx)
        except IosetsError as exc:
            show_error(str(exc))
            raise typer.Exit(code=2 if isinstance(exc, NothingDoneError) else 1) from None
