"""The ``iosets`` command line: each room's commands, registered at the top level of one Typer app.

Each command parses its arguments, calls its room's public entry and reports the result. Rooms are
imported inside the commands, so that ``iosets --help`` starts without numpy or polars. An
:class:`~iosets.errors.IosetsError` from any command becomes ``error: <message>`` and exit code 1, or 2
when a command had nothing to work on (``analyze`` found or read no trace) (:class:`ReportingGroup`).
"""

from typing import Annotated

import typer

from . import analyzer, arbiter, demo, recommender, replay, report, serve, validate
from ._errors import ReportingGroup

__all__ = ["app"]

app = typer.Typer(
    cls=ReportingGroup,
    help="Decide how a shared parallel file system shares its bandwidth (IO-SETS).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

app.command("analyze", rich_help_panel="Analyzer")(analyzer.analyze)
app.command("ingest", rich_help_panel="Analyzer")(analyzer.ingest)
app.command("recommend", rich_help_panel="Recommender")(recommender.recommend)
app.command("export", rich_help_panel="Recommender")(recommender.export)
app.command("tune", rich_help_panel="Recommender")(recommender.tune)
app.command("replay", rich_help_panel="Replay")(replay.replay)
app.command("replay-requests", rich_help_panel="Replay")(replay.replay_requests)
app.command("replay-trace", rich_help_panel="Replay")(replay.replay_trace)
app.command("experiment", rich_help_panel="Replay")(replay.experiment)
app.command("generate", rich_help_panel="Replay")(replay.generate)
app.command("calibrate", rich_help_panel="Replay")(replay.calibrate)
app.command("report", rich_help_panel="Report")(report.report)
app.command("validate", rich_help_panel="Real runs")(validate.validate)
app.command("demo", rich_help_panel="Try it")(demo.demo)
app.command("serve", rich_help_panel="Service")(serve.serve)
app.add_typer(serve.token_app, name="token", rich_help_panel="Service")
app.command("arbiter", rich_help_panel="Real runs")(arbiter.arbiter)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        print(f"iosets {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """iosets: analyze I/O rhythms, recommend sets and priorities, replay policies."""
