"""The one place where an :class:`~iosets.errors.IosetsError` becomes ``error: <message>`` and exit code 1."""

from typing import Any

import typer
from typer.core import TyperGroup

from ..errors import IosetsError
from ._output import show_error


class ReportingGroup(TyperGroup):
    """The root command group: a command's IosetsError is printed as ``error: <message>`` and exits 1.

    Any other exception is a bug and propagates with its traceback.
    """

    def invoke(self, ctx: Any) -> Any:  # Any: Typer's Context class depends on its version
        """Run the command, turning an IosetsError into the error line and exit code 1."""
        try:
            return super().invoke(ctx)
        except IosetsError as exc:
            show_error(str(exc))
            raise typer.Exit(code=1) from None
