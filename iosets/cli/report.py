"""``iosets report``: write the offline HTML report of a site (``iosets.report``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from ._output import console, echo

StepReport = Callable[[str, int, int], None]
"""``step(name, done, total)``: told before each step of building a report."""

MEGABYTE = 1e6


def report(
    jobs: Annotated[
        Path, typer.Argument(metavar="JOBS", help="Jobs table (`iosets analyze -o`), or `iosets recommend -o`'s.")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write (.html).")],
    rec: Annotated[Path | None, typer.Option("--rec", help="Recommendation (`iosets recommend -o`).")] = None,
    site: Annotated[Path | None, typer.Option(help="Site trace (`iosets ingest --site -o`).")] = None,
    replay: Annotated[
        Path | None,
        typer.Option(help="Per-job trace replay (`iosets replay-trace -o PERJOB`); its companions are read beside it."),
    ] = None,
    tune: Annotated[Path | None, typer.Option(help="Tuning ranking (`iosets tune -o`).")] = None,
    requests: Annotated[
        Path | None,
        typer.Option(help="Request replay (`iosets replay-requests -o RESULT`); RESULT.classes is read beside it."),
    ] = None,
    validation: Annotated[
        Path | None, typer.Option(help="Real runs against the phase engine (`iosets validate -o validation.json`).")
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            metavar="SCHEDULER",
            help="The policy the site runs today: the replay's scheduler every other is compared with "
            "(default fcfs when the replay holds it, else its first scheduler).",
        ),
    ] = None,
) -> None:
    """Write one offline HTML report: the site's jobs, their recommendation and what each policy would do.

    Every input but JOBS is optional: a section whose input is absent says what to run to fill it.
    The page opens on a verdict: the mapping recommended and what it would change against --baseline,
    on how much evidence. The file holds everything it shows (plotly.js inlined): it opens without a network.
    """
    from .._io import check_output
    from ..report import build_report

    path = check_output(output, suffixes=(".html",), what="report")
    with _section_progress() as step:
        built = build_report(
            jobs,
            recommendation=rec,
            site=site,
            replay=replay,
            tune=tune,
            requests=requests,
            validation=validation,
            baseline=baseline,
            output=path,
            progress=step,
        )
    shown = ", ".join(built.shown)
    missing = ", ".join(built.missing) or "none"
    echo(f"wrote {path} ({path.stat().st_size / MEGABYTE:.1f} MB): sections {shown}; missing: {missing}")


@contextmanager
def _section_progress() -> Iterator[StepReport | None]:
    """A progress bar on stderr with one step per section when stderr is a terminal; None otherwise."""
    stream = console(stderr=True)
    if not stream.is_terminal:
        yield None
        return
    from rich.markup import escape
    from rich.progress import Progress

    with Progress(console=stream, transient=True) as bar:
        task = bar.add_task("report", total=None)

        def step(name: str, done: int, total: int) -> None:
            bar.update(task, description=escape(f"report: {name}"), completed=done, total=total)

        yield step
