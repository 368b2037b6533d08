"""The recommender's commands: ``iosets recommend`` and ``iosets tune`` (registered in :mod:`iosets.cli`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import polars as pl
import typer
from rich.table import Table

from ._cli_common import err, fail, out, print_json, warnings_to_stderr
from ._io import read_frame, write_frame
from .errors import IosetsError
from .recommender import EXPORT_FORMATS, TBF_TARGET, export, recommend, recommend_new_job, set_summary
from .replay import TUNE_BASES, tune

Policy = Annotated[str, typer.Option(help="set-10, set-b (with --base), set-<b> such as set-2, or gmm.")]
Bandwidth = Annotated[float | None, typer.Option(help="File system bandwidth (bytes/s), for RBFQ reservations.")]


def _rate(value) -> str:
    return "-" if value is None else f"{value / 1e6:.1f} MB/s"


def summary_table(summary: pl.DataFrame, title: str) -> Table:
    """The per-set recommendation as a rich table."""
    table = Table(title=title)
    for column in ("set", "priority", "jobs", "w_iter range s", "WFQ weight B", "RBFQ weight", "reservation", "limit"):
        table.add_column(column, justify="right")
    for row in summary.iter_rows(named=True):
        span = "-" if row["w_iter_min"] is None else f"{row['w_iter_min']:.3g} - {row['w_iter_max']:.3g}"
        table.add_row(
            str(row["set"]),
            f"{row['priority']:.3g}",
            str(row["n_jobs"]),
            span,
            str(row["wfq_weight"]),
            f"{row['rbfq_weight']:.4g}",
            _rate(row["rbfq_reservation"]),
            _rate(row["rbfq_limit"]),
        )
    return table


def recommend_command(
    jobs_path: Annotated[
        Path | None, typer.Argument(metavar="[JOBS]", help="Jobs table from `iosets analyze`.", show_default=False)
    ] = None,
    history: Annotated[
        Path | None, typer.Option(help="Past jobs (a jobs table with app, user, start) to estimate a new job from.")
    ] = None,
    for_job: Annotated[
        str | None, typer.Option("--for", help="The new job: app=...,user=...[,nprocs=...,requested_time=...].")
    ] = None,
    policy: Policy = "set-10",
    base: Annotated[float, typer.Option(help="Base of set-b.")] = 10.0,
    min_confidence: Annotated[float, typer.Option(help="Below this w_iter confidence: conservative set.")] = 0.5,
    bandwidth: Bandwidth = None,
    max_request: Annotated[int, typer.Option(help="Largest request (bytes): the lowest set's WFQ weight.")] = 1 << 20,
    safety: Annotated[float, typer.Option(help="RBFQ reservation = safety x alpha_io x bandwidth.")] = 1.5,
    limit: Annotated[float | None, typer.Option(help="RBFQ limit per job, fraction of bandwidth.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the recommended jobs table.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the per-set table as JSON only.")] = False,
) -> None:
    """Sets, priorities, WFQ weights and RBFQ parameters for the jobs of a jobs table,
    or (--history H --for app=...,user=...) for a job that has not run yet."""
    options = {"base": base, "bandwidth": bandwidth, "max_request": max_request, "safety": safety, "limit": limit}
    if for_job is not None or history is not None:
        _recommend_new_job(history, for_job, jobs_path, policy, min_confidence, options, as_json)
        return
    try:
        if jobs_path is None:
            raise IosetsError("give a jobs table, or --history H --for app=...,user=...")
        with warnings_to_stderr():
            jobs = read_frame(jobs_path, what="jobs table")
            recommended = recommend(jobs, policy, min_confidence=min_confidence, **options)
            summary = set_summary(recommended)
            if output is not None:
                write_frame(recommended, output)
    except (IosetsError, ValueError) as exc:
        raise fail(exc) from None
    if as_json:
        print_json(summary.to_dicts())
        return
    n_conservative = int(recommended["conservative"].sum())
    out.print(summary_table(summary, f"{policy}: {recommended.height} jobs, {n_conservative} in the conservative set"))
    if output is not None:
        err.print(f"wrote {output}")


def _parse_fields(text: str) -> dict[str, str]:
    """``app=a,user=u,nprocs=64`` -> dict, naming a malformed item."""
    fields = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise IosetsError(f"--for: expected key=value items separated by commas, got {item!r}")
        fields[key.strip()] = value.strip()
    return fields


_SOURCES = {
    "history": "EWMA of the app's past jobs",
    "model": "model of job metadata (no history for this app)",
    "none": "no estimate: conservative set",
}


def _recommend_new_job(history, for_job, jobs_path, policy, min_confidence, options, as_json) -> None:
    """``iosets recommend --history H --for ...``: print the new job's set, priority, weights and their origin."""
    try:
        if history is None or for_job is None or jobs_path is not None:
            raise IosetsError("estimating a new job takes --history H and --for app=...,user=... (and no JOBS)")
        fields = _parse_fields(for_job)
        with warnings_to_stderr():
            got = recommend_new_job(
                read_frame(history, what="history"),
                policy=policy,
                min_confidence=min_confidence,
                **fields,
                **options,
            )
    except (IosetsError, ValueError) as exc:
        raise fail(exc) from None
    if as_json:
        print_json(got)
        return
    w = "unknown" if got["w_iter"] is None else f"{got['w_iter']:.4g} s"
    out.print(f"job: {', '.join(f'{k}={v}' for k, v in fields.items())}", highlight=False)
    out.print(
        f"w_iter: {w} (confidence {got['w_iter_confidence']:.2f}, from the {_SOURCES[got['estimate_source']]})",
        highlight=False,
    )
    out.print(
        f"set {got['set']}{' (conservative)' if got['conservative'] else ''}, priority {got['priority']:.3g}, "
        f"WFQ weight {got['wfq_weight']} B per round, RBFQ weight {got['rbfq_weight']:.4g}, "
        f"reservation {_rate(got['rbfq_reservation'])}, limit {_rate(got['rbfq_limit'])}",
        highlight=False,
    )


def tune_command(
    jobs_path: Annotated[Path, typer.Argument(metavar="JOBS", help="Jobs table with w_iter and alpha_io.")],
    bandwidth: Annotated[float, typer.Option(help="File system bandwidth (bytes/s).")] = 1e9,
    horizon: Annotated[float | None, typer.Option(help="Replay length (s); default 20 x the largest w_iter.")] = None,
    bases: Annotated[str, typer.Option(help="Comma-separated SET-b bases to try.")] = ",".join(
        f"{b:g}" for b in TUNE_BASES
    ),
    gmm: Annotated[bool, typer.Option(help="Also try the Gaussian-mixture mapping.")] = True,
    seed: Annotated[int, typer.Option(help="Seed of the jobs' release dates.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the ranking as JSON only.")] = False,
) -> None:
    """Replay the jobs under candidate mappings and FAIR-SHARE; rank by utilization, then Max Stretch."""
    try:
        chosen = [float(b) for b in bases.split(",") if b.strip()]
        ranking = tune(
            read_frame(jobs_path, what="jobs table"),
            bases=chosen,
            gmm=gmm,
            bandwidth=bandwidth,
            horizon=horizon,
            random_state=seed,
        )
    except (IosetsError, ValueError) as exc:
        raise fail(exc) from None
    if as_json:
        print_json(ranking.to_dicts())
        return
    out.print(ranking_table(ranking, f"Mappings replayed on {jobs_path.name}"))


def ranking_table(ranking: pl.DataFrame, title: str) -> Table:
    """The tuning ranking with each mapping's gain over FAIR-SHARE, and the recommended mapping as caption."""
    fair = ranking.filter(pl.col("mapping") == "fair-share").row(0, named=True)
    table = Table(title=title)
    for column in ("rank", "mapping", "sets", "utilization", "IO-slowdown", "Max Stretch", "util vs fair-share"):
        table.add_column(column, justify="left" if column == "mapping" else "right")
    for row in ranking.iter_rows(named=True):
        gain = 100 * (row["utilization"] / fair["utilization"] - 1)
        table.add_row(
            str(row["rank"]),
            row["mapping"],
            str(row["n_sets"]),
            f"{row['utilization']:.4f}",
            f"{row['io_slowdown']:.3f}",
            f"{row['max_stretch']:.4f}",
            f"{gain:+.2f} %",
        )
    best = ranking.row(0, named=True)
    table.caption = (
        f"recommended: {best['mapping']} (utilization {best['utilization']:.4f} vs FAIR-SHARE "
        f"{fair['utilization']:.4f}, IO-slowdown {fair['io_slowdown'] / best['io_slowdown']:.2f}x better)"
    )
    return table


def export_command(
    recommended_path: Annotated[
        Path, typer.Argument(metavar="RECOMMENDED", help="Jobs table written by `iosets recommend -o`.")
    ],
    fmt: Annotated[str, typer.Option("--format", help=f"One of: {', '.join(EXPORT_FORMATS)}.")],
    output: Annotated[Path, typer.Option("--out", "-o", help="Folder (default file names) or file to write.")],
    active: Annotated[str | None, typer.Option(help="tbf: comma-separated job ids running now.")] = None,
    rpc_capacity: Annotated[float | None, typer.Option(help="tbf: RPC/s one server partition serves.")] = None,
    target: Annotated[str, typer.Option(help="tbf: lctl target of the rules.")] = TBF_TARGET,
    default_rate: Annotated[int | None, typer.Option(help="tbf: rate of the default rule (RPC/s).")] = None,
    wfq_path: Annotated[str | None, typer.Option(help="agios: where wfq.conf will be installed.")] = None,
    root: Annotated[str | None, typer.Option(help="cgroup: parent folder of the job_<id> cgroups.")] = None,
    policy: Annotated[str | None, typer.Option(help="json/lua: the mapping's name, recorded in the file.")] = None,
) -> None:
    """Write a recommendation as files an enforcement layer applies (AGIOS, Lustre TBF, cgroup v2, Slurm)."""
    given = {
        "active": None if active is None else [job.strip() for job in active.split(",") if job.strip()],
        "rpc_capacity": rpc_capacity,
        "target": target if fmt == "tbf" else None,
        "default_rate": default_rate,
        "wfq_path": wfq_path,
        "root": root,
        "policy": policy,
    }
    try:
        paths = export(
            read_frame(recommended_path, what="recommendation"),
            fmt,
            output,
            **{name: value for name, value in given.items() if value is not None},
        )
    except (IosetsError, ValueError) as exc:
        raise fail(exc) from None
    for path in paths:
        err.print(f"wrote {path}")
