"""The analyzer's commands: ``analyze`` (logs or an ops table into the jobs table) and ``ingest`` (one trace)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from ..errors import InputError
from ._choices import TRACE_FORMATS, one_of
from ._output import echo, progress

if TYPE_CHECKING:
    import polars as pl

    from ..analyzer import SkipReport

SHOWN_PROBLEMS = 5
"""Failed logs or skipped lines listed on stderr (all of them are in the errors file or the report)."""


def analyze(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Darshan logs, folders (recursive) or manifests listing logs.")
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Jobs table (.parquet or .csv).")] = Path(
        "jobs.parquet"
    ),
    ops: Annotated[Path | None, typer.Option("--ops", help="Analyze an ops table (.csv/.parquet) instead.")] = None,
    workers: Annotated[int | None, typer.Option(help="Processes on this machine (default: all cores).")] = None,
    dask: Annotated[str | None, typer.Option(help="Run on Dask: 'local' or a scheduler address.")] = None,
    timeout: Annotated[
        float, typer.Option(help="Seconds darshan-util may spend on one log before it counts as failed.")
    ] = 60.0,
) -> None:
    """Find each job's I/O rhythm (w_iter, alpha_io, confidence) and write the jobs table."""
    logs = paths or []
    if ops is None and not logs:
        raise InputError("give Darshan logs, folders or manifests, or --ops FILE")
    if ops is not None and logs:
        raise InputError("give Darshan logs, folders or manifests, or --ops FILE, not both")
    from .._io import check_output, write_frame

    check_output(output, what="jobs table")
    if ops is not None:
        from ..analyzer import analyze_ops, read_ops

        jobs = analyze_ops(read_ops(ops))
        write_frame(jobs, output)
        echo(f"wrote {output}: {jobs.height} jobs from {ops}")
        return
    from ..analyzer import analyze as analyze_logs

    errors_path = check_output(output.with_name(f"{output.stem}.errors{output.suffix}"), what="errors table")
    result = analyze_logs(
        logs,
        workers=workers,
        dask=dask,
        timeout=timeout,
        progress=lambda done, total: progress(done, total=total, description="analyzing"),
    )
    write_frame(result.jobs, output)
    echo(f"wrote {output}: {result.jobs.height} jobs")
    if result.errors.height:
        write_frame(result.errors, errors_path)
        echo((f"{result.errors.height} logs failed", "yellow"), f", listed in {errors_path}:")
        for reason in result.errors["reason"].head(SHOWN_PROBLEMS):
            echo(f"  {reason}")


def ingest(
    path: Annotated[Path, typer.Argument(help="A Darshan log (DXT) or a block trace.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Ops table (.parquet or .csv).")],
    trace_format: Annotated[
        str, typer.Option("--format", help=f"{one_of(TRACE_FORMATS)} 'auto' tells it from the file.")
    ] = "auto",
    class_by: Annotated[
        str | None,
        typer.Option(help="What becomes job_id: device, process (blkparse), host (msr) or asu (spc); default: device."),
    ] = None,
    skip_malformed: Annotated[
        bool, typer.Option(help="Block traces: leave malformed lines out (listed on stderr) instead of failing.")
    ] = False,
) -> None:
    """Write the ops table of one trace."""
    import warnings

    from .._io import check_output, write_frame
    from ..analyzer import ingest as ingest_trace

    check_output(output, what="ops table")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the skip report below says it all
        pair = ingest_trace(
            path,
            format=trace_format,
            class_by=class_by,
            errors="skip" if skip_malformed else "raise",
            return_report=True,
        )
    ops, skipped = cast("tuple[pl.DataFrame, SkipReport]", pair)
    write_frame(ops, output)
    if skipped.n_skipped:
        echo((f"skipped {skipped.n_skipped} malformed lines", "yellow"), ":")
        for message in skipped.messages[:SHOWN_PROBLEMS]:
            echo(f"  {message}")
    echo(f"wrote {output}: {ops.height} requests")
