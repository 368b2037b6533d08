"""The analyzer's commands: ``analyze`` (traces or a requests table into the jobs table), ``ingest`` (one or a site)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from ..errors import InputError
from ._choices import TRACE_FORMATS, one_of
from ._errors import NothingDoneError
from ._output import echo, progress, show_note, show_warning
from ._parse import renamed_option

if TYPE_CHECKING:
    import polars as pl

    from .._results import Written
    from ..analyzer import SkipReport

SHOWN_PROBLEMS = 5
"""Failed logs or skipped lines listed on stderr (all of them are in the errors file or the report)."""


def analyze(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Darshan logs, other traces, or folders (searched for *.darshan).")
    ] = None,
    manifests: Annotated[
        list[Path] | None,
        typer.Option(
            "--manifest",
            help="A text file listing traces or folders, one per line ('#' comments and blank lines skipped; "
            "relative paths are relative to the manifest's folder). Repeatable.",
        ),
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Jobs table (.parquet or .csv).")] = Path(
        "jobs.parquet"
    ),
    requests: Annotated[
        Path | None, typer.Option("--requests", help="Analyze a requests table (.csv/.parquet) instead.")
    ] = None,
    ops: Annotated[Path | None, typer.Option("--ops", hidden=True, help="Former spelling of --requests.")] = None,
    min_confidence: Annotated[
        float, typer.Option(help="w_iter is kept only when its confidence reaches this (0 to 1).")
    ] = 0.5,
    workers: Annotated[int | None, typer.Option(help="Processes on this machine (default: all cores).")] = None,
    dask: Annotated[str | None, typer.Option(help="Run on Dask: 'local' or a scheduler address.")] = None,
    timeout: Annotated[
        float, typer.Option(help="Seconds darshan-util may spend on one log before it counts as failed.")
    ] = 60.0,
    per_log: Annotated[
        bool, typer.Option("--per-log", help="One row per log, instead of one per job (logs of a job merged).")
    ] = False,
) -> None:
    """Find each job's I/O rhythm (w_iter, alpha_io, confidence) and write the jobs table.

    Failed logs are listed in <output>.errors.<ext> (removed when none fails), each log's traffic per Darshan
    module in <output>.modules.<ext>, each job's detail in <output>.detail.<ext>, .sizes.<ext> and
    .activity.<ext>; exit code 2 when no job is analysed.
    """
    logs, lists = paths or [], manifests or []
    table = renamed_option(requests, ops, new="--requests", old="--ops")
    if table is None and not (logs or lists):
        raise InputError("give Darshan logs or folders, --manifest FILE, or --requests FILE")
    if table is not None and (logs or lists):
        raise InputError("give Darshan logs, folders or --manifest FILE, or --requests FILE, not both")
    from ..analyzer import Analysis

    Analysis.check_output(output)
    if table is not None:
        from ..analyzer import analyze_requests, read_requests, requests_details
        from ..schemas import ANALYSIS_ERRORS, MODULE_TOTALS

        trace = read_requests(table)
        jobs = analyze_requests(trace, min_confidence=min_confidence)
        empty = {"errors": ANALYSIS_ERRORS.empty(), "modules": MODULE_TOTALS.empty()}
        written = Analysis(jobs=jobs, **empty, **requests_details(trace)).write(output)
        echo(f"wrote {output}: {jobs.height} jobs from {table}")
        echo(rhythm_summary(jobs))
        _wrote(written)
        return
    from ..analyzer import analyze as analyze_logs

    result = analyze_logs(
        logs,
        manifests=lists,
        min_confidence=min_confidence,
        workers=workers,
        dask=dask,
        timeout=timeout,
        per_log=per_log,
        progress=lambda done, total: progress(done, total=total, description="analyzing"),
    )
    written = result.write(output)
    if not result.jobs.is_empty():
        n_logs = int(result.jobs["n_logs"].fill_null(1).sum())
        merged = f" from {n_logs} logs" if n_logs != result.jobs.height else ""
        echo(f"wrote {output}: {result.jobs.height} jobs{merged}")
        echo(rhythm_summary(result.jobs))
    _wrote(written)
    _report(result.jobs, result.errors, Analysis.paths(output)["errors"], inputs=[*logs, *lists])


def rhythm_summary(jobs: pl.DataFrame) -> str:
    """One line: how many jobs got a w_iter, and why the others did not (``not_periodic`` counts, largest first)."""
    periodic = jobs["w_iter"].is_not_null().sum()
    reasons = jobs["not_periodic"].drop_nulls().value_counts(sort=True)
    why = ", ".join(f"{code} {count}" for code, count in reasons.iter_rows())
    return f"  {periodic} periodic" + (f"; not periodic: {why}" if why else "")


def _wrote(written: Written) -> None:
    """Say which files of an earlier run a result's write removed, so that none outlives the run it describes."""
    for path in written.removed:
        show_note(f"removed {path} of an earlier run")


def _report(jobs: pl.DataFrame, errors: pl.DataFrame, errors_path: Path, *, inputs: list[Path]) -> None:
    """Show the first failures and the count of the rest; raise NothingDoneError when no job was analysed."""
    failed = errors["path"].n_unique()
    if jobs.is_empty() and not failed:
        raise NothingDoneError(f"no trace found in {', '.join(map(str, inputs))}")
    if not jobs.is_empty() and failed:
        show_warning(f"{failed} logs failed, listed in {errors_path}:")
    _first_few(errors["reason"].to_list(), f" (all in {errors_path})")
    if jobs.is_empty():
        raise NothingDoneError(f"no job analysed: {failed} of {failed} logs failed (see {errors_path})")


def ingest(
    output: Annotated[Path, typer.Option("--output", "-o", help="Requests table (.parquet or .csv).")],
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="A Darshan log (DXT) or a block trace; with --site, logs, traces or folders."),
    ] = None,
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
    site: Annotated[
        bool,
        typer.Option(
            "--site",
            help="Many jobs' requests on one clock (Darshan: job start + DXT offset), each with its I/O phase; "
            "jobs without DXT get requests from their HEATMAP bins.",
        ),
    ] = False,
    window: Annotated[
        str | None,
        typer.Option(help="With --site: keep the jobs that overlap START,END (s since the epoch), whole."),
    ] = None,
    manifests: Annotated[
        list[Path] | None,
        typer.Option("--manifest", help="With --site: a text file listing traces or folders, one per line."),
    ] = None,
) -> None:
    """Write the requests table of one trace, or with --site the site trace of many."""
    traces, lists = paths or [], manifests or []
    if site:
        if (trace_format, class_by, skip_malformed) != ("auto", None, False):
            raise InputError("--format, --class-by and --skip-malformed read one trace; --site reads each as analyze")
        _ingest_site(traces, lists, output, _window(window))
        return
    if window is not None or lists:
        raise InputError("--window and --manifest need --site")
    if len(traces) != 1:
        raise InputError(f"give one trace (got {len(traces)}), or --site for many")
    _ingest_one(traces[0], output, trace_format, class_by, skip_malformed)


def _ingest_one(path: Path, output: Path, trace_format: str, class_by: str | None, skip_malformed: bool) -> None:
    """The requests table of one trace."""
    import warnings

    from .._io import check_output, write_frame
    from ..analyzer import ingest as ingest_trace

    check_output(output, what="requests table")
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


def _window(text: str | None) -> tuple[float, float] | None:
    """``START,END`` (s since the epoch) as a pair of numbers; None stays None."""
    if text is None:
        return None
    try:
        first, last = (float(part) for part in text.split(","))
    except ValueError:
        raise InputError(f"--window: expected START,END in seconds since the epoch, got {text!r}") from None
    return first, last


def _ingest_site(traces: list[Path], lists: list[Path], output: Path, window: tuple[float, float] | None) -> None:
    """The site trace of many traces: write it, then say how many requests, jobs and skips."""
    if not (traces or lists):
        raise InputError("give Darshan logs, traces or folders, or --manifest FILE")
    from ..analyzer import SiteTrace, site_trace

    SiteTrace.check_output(output)
    site = site_trace(
        traces,
        manifests=lists,
        window=window,
        progress=lambda done, total: progress(done, total=total, description="reading"),
    )
    written = site.write(output)
    if not site.requests.is_empty():
        kept = set(site.requests["job_id"])
        skipped_jobs = len(set(site.skipped["job_id"]) - kept)
        echo(
            f"wrote {output}: {site.requests.height} requests of {len(kept)} jobs "
            f"({int(site.requests['synthetic'].sum())} synthesised from HEATMAP); "
            f"skipped {skipped_jobs} counters-only jobs; their jobs table in {SiteTrace.paths(output)['jobs']}"
        )
        if site.files is not None:
            echo(f"{site.files.height} files with a layout from LUSTRE records in {SiteTrace.paths(output)['files']}")
    _wrote(written)
    _list_problems("skipped", [f"{path}: {reason}" for path, reason in site.skipped.select("path", "reason").rows()])
    _list_problems("failed", site.errors["reason"].to_list())
    if not site.requests.is_empty():
        return
    if site.skipped.height or site.errors.height:
        raise NothingDoneError(f"no request to write: {site.skipped.height} logs skipped, {site.errors.height} failed")
    if window is not None:
        raise NothingDoneError(f"no job overlaps the window {window[0]:.15g},{window[1]:.15g}")
    raise NothingDoneError(f"no trace found in {', '.join(map(str, [*traces, *lists]))}")


def _list_problems(what: str, reasons: list[str]) -> None:
    """``<what> N:`` and the first reasons on stderr, then how many more (nothing when there is none)."""
    if not reasons:
        return
    show_warning(f"{what} {len(reasons)}:")
    _first_few(reasons)


def _first_few(reasons: list[str], where: str = "") -> None:
    """The first SHOWN_PROBLEMS reasons, indented, then ``... and N more`` with ``where`` they all are."""
    for reason in reasons[:SHOWN_PROBLEMS]:
        echo(f"  {reason}")
    if len(reasons) > SHOWN_PROBLEMS:
        echo(f"  ... and {len(reasons) - SHOWN_PROBLEMS} more{where}")
