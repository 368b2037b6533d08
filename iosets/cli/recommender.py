"""The recommender's commands: ``recommend`` (also for a new job), ``export`` and ``tune``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import InputError
from ._choices import EXPORT_FORMATS, MAPPINGS, TBF_TARGET, TUNE_BASES, one_of
from ._output import echo, print_json, show, warnings_to_stderr
from ._parse import parse_fields, parse_names, parse_numbers, renamed_option
from ._tables import Column, Row, field, ratio, render_table, shown

if TYPE_CHECKING:
    import polars as pl
    from rich.console import RenderableType

    from ..replay import Tuning


def _rate(value: float | None) -> str:
    """A bandwidth in MB/s, ``-`` when there is none."""
    return "-" if value is None else f"{value / 1e6:.1f} MB/s"


def _w_iter_range(row: Row) -> str:
    return "-" if row["w_iter_min"] is None else f"{row['w_iter_min']:.3g} - {row['w_iter_max']:.3g}"


SET_COLUMNS = (
    Column("set", field("set")),
    Column("priority", field("priority", "{:.3g}")),
    Column("jobs", field("n_jobs")),
    Column("w_iter range s", _w_iter_range),
    Column("WFQ weight B", field("wfq_weight")),
    Column("RBFQ weight", field("rbfq_weight", "{:.4g}")),
    Column("reservation", lambda row: _rate(row["rbfq_reservation"])),
    Column("limit", lambda row: _rate(row["rbfq_limit"])),
)
"""The frame of ``iosets.recommender.set_summary``."""

RANKING_COLUMNS = (
    Column("rank", field("rank")),
    Column("mapping", field("mapping"), justify="left"),
    Column("sets", field("n_sets")),
    Column("utilization", field("utilization", "{:.4f}")),
    Column("IO-slowdown", field("io_slowdown", "{:.3f}")),
    Column("Max Stretch", field("max_stretch", "{:.4f}")),
    Column("util vs fair-share", field("utilization_gain_pct", "{:+.2f} %")),
)
"""The frame of ``iosets.replay.tune``, with each mapping's utilization gain over FAIR-SHARE."""

SOURCES = {
    "history": "EWMA of the app's past jobs",
    "model": "model of job metadata (no history for this app)",
}
"""What the estimate sources ``history`` and ``model`` of ``recommend_new_job`` mean (``none`` has its explanation)."""


def set_table(summary: pl.DataFrame, *, title: str) -> RenderableType:
    """The per-set recommendation."""
    return render_table(summary, SET_COLUMNS, title=title)


def ranking_table(ranking: pl.DataFrame, *, title: str) -> RenderableType:
    """The tuning ranking, each mapping against FAIR-SHARE, and the recommended mapping as caption."""
    rows: list[dict[str, Any]] = list(ranking.iter_rows(named=True))
    fair = next(row for row in rows if row["mapping"] == "fair-share")
    for row in rows:
        gain = ratio(row["utilization"], fair["utilization"])
        row["utilization_gain_pct"] = None if gain is None else 100 * (gain - 1)
    best = rows[0]
    caption = (
        f"recommended: {best['mapping']} (utilization {shown(best['utilization'], '{:.4f}')} vs FAIR-SHARE "
        f"{shown(fair['utilization'], '{:.4f}')}, "
        f"IO-slowdown {shown(ratio(fair['io_slowdown'], best['io_slowdown']), '{:.2f}')}x better)"
    )
    return render_table(rows, RANKING_COLUMNS, title=title, caption=caption)


def recommend(
    jobs_path: Annotated[
        Path | None, typer.Argument(metavar="JOBS", help="Jobs table from `iosets analyze`.", show_default=False)
    ] = None,
    history: Annotated[
        Path | None, typer.Option(help="Past jobs (a jobs table with app, user, start) to estimate a new job from.")
    ] = None,
    for_job: Annotated[
        str | None, typer.Option("--for", help="The new job: app=...,user=...[,nprocs=...,requested_time=...].")
    ] = None,
    mapping: Annotated[
        str | None,
        typer.Option(
            "--mapping", help=f"{', '.join(MAPPINGS)} (set-b with --base), or set-<b> such as set-2 [default: set-10]."
        ),
    ] = None,
    old_mapping: Annotated[
        str | None, typer.Option("--policy", hidden=True, help="Former spelling of --mapping.")
    ] = None,
    base: Annotated[float, typer.Option(help="Base of set-b.")] = 10.0,
    min_confidence: Annotated[
        float,
        typer.Option(
            help="Below this w_iter confidence (or with a not_periodic code): the conservative set, or a lower one."
        ),
    ] = 0.5,
    bandwidth: Annotated[
        float | None,
        typer.Option(help="File system bandwidth (bytes/s), for RBFQ reservations; the sets' reservations fit in it."),
    ] = None,
    max_request: Annotated[int, typer.Option(help="Largest request (bytes): the lowest set's WFQ weight.")] = 1 << 20,
    safety: Annotated[
        float,
        typer.Option(help="RBFQ reservation = safety x alpha_io x bandwidth per job; a set's is its largest job's."),
    ] = 1.5,
    limit: Annotated[float | None, typer.Option(help="RBFQ limit per job, fraction of bandwidth.")] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the recommended jobs table, and the per-set table as NAME.sets."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the per-set table as JSON only.")] = False,
) -> None:
    """Sets, priorities, WFQ weights and RBFQ parameters for the jobs of a jobs table.

    A set reserves what its largest job does: one job of a set does I/O at a time.
    When the sets reserve more than --bandwidth in all, every reservation is scaled down to fit, with a warning.
    Jobs on thin evidence never get a set of higher priority than the conservative one.

    With --history H --for app=...,user=...: the same for a job that has not run yet.
    """
    mapping = renamed_option(mapping, old_mapping, new="--mapping", old="--policy") or "set-10"
    options: dict[str, Any] = {
        "base": base,
        "bandwidth": bandwidth,
        "max_request": max_request,
        "safety": safety,
        "limit": limit,
    }
    if for_job is not None or history is not None:
        if history is None or for_job is None or jobs_path is not None or output is not None:
            raise InputError("estimating a new job takes --history H and --for app=...,user=... (and no JOBS nor -o)")
        _recommend_new_job(history, parse_fields(for_job, "--for"), mapping, min_confidence, options, as_json)
        return
    if jobs_path is None:
        raise InputError("give a jobs table, or --history H --for app=...,user=...")
    from .._io import read_frame
    from ..recommender import Recommendation
    from ..recommender import recommend as recommend_jobs

    if output is not None:
        Recommendation.check_output(output)
    with warnings_to_stderr():
        recommended = recommend_jobs(
            read_frame(jobs_path, what="jobs table"), mapping, min_confidence=min_confidence, **options
        )
    result = Recommendation.of(recommended)
    summary = result.sets
    if output is not None:
        result.write(output)
    if as_json:
        print_json(summary.to_dicts())
        return
    n_thin = int(recommended["conservative"].sum())
    title = f"{mapping}: {recommended.height} jobs, {n_thin} on thin evidence (the conservative set or a lower one)"
    show(set_table(summary, title=title))
    if output is not None:
        echo(f"wrote {output}")


def _recommend_new_job(
    history: Path, fields: dict[str, Any], mapping: str, min_confidence: float, options: dict[str, Any], as_json: bool
) -> None:
    """``iosets recommend --history H --for ...``: the new job's set, priority, weights and their origin."""
    from .._io import read_frame
    from ..recommender import recommend_new_job

    with warnings_to_stderr():
        got = recommend_new_job(
            read_frame(history, what="history"), mapping=mapping, min_confidence=min_confidence, **fields, **options
        )
    if as_json:
        print_json(got)
        return
    w_iter = "unknown" if got["w_iter"] is None else f"{got['w_iter']:.4g} s"
    echo(f"job: {', '.join(f'{key}={value}' for key, value in fields.items())}", stderr=False)
    if got["estimate_source"] == "none":
        echo(f"w_iter: {w_iter} ({got['explanation']})", stderr=False)
    else:
        origin = f"confidence {got['w_iter_confidence']:.2f}, from the {SOURCES[got['estimate_source']]}"
        echo(f"w_iter: {w_iter} ({origin})", stderr=False)
    echo(
        f"set {got['set']}{' (conservative)' if got['conservative'] else ''}, priority {got['priority']:.3g}, "
        f"WFQ weight {got['wfq_weight']} B per round, RBFQ weight {got['rbfq_weight']:.4g}, "
        f"reservation {_rate(got['rbfq_reservation'])}, limit {_rate(got['rbfq_limit'])}",
        stderr=False,
    )


def tune(
    jobs_path: Annotated[Path, typer.Argument(metavar="JOBS", help="Jobs table with w_iter and alpha_io.")],
    bandwidth: Annotated[
        float | None, typer.Option(help="File system bandwidth (bytes/s); default 1e9. Not with --site.")
    ] = None,
    horizon: Annotated[
        float | None, typer.Option(help="Replay length (s); default 20 x the largest w_iter. Not with --site.")
    ] = None,
    bases: Annotated[str, typer.Option(help="Comma-separated SET-b bases to try.")] = TUNE_BASES,
    gmm: Annotated[bool, typer.Option(help="Also try the Gaussian-mixture mapping.")] = True,
    seed: Annotated[int, typer.Option(help="Seed of the jobs' release dates.")] = 0,
    overlap: Annotated[
        bool,
        typer.Option(
            "--overlap", help="Replay only the jobs whose recorded runs contain the busiest instant. Not with --site."
        ),
    ] = False,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the ranking (.parquet or .csv).")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the ranking as JSON only (the jobs used go to stderr).")
    ] = False,
    site: Annotated[
        Path | None, typer.Option(help="Site trace (`iosets ingest --site`): rank by closed-loop replay of it.")
    ] = None,
    mapping: Annotated[str | None, typer.Option(help="--site: the mapping in use, added to the candidates.")] = None,
    device: Annotated[Path | None, typer.Option(help="--site: device JSON (`iosets calibrate -o`).")] = None,
    workers: Annotated[int, typer.Option(help="--site: processes replaying the candidates.")] = 1,
    dask: Annotated[str | None, typer.Option(help="--site: run the candidates on Dask: local or ADDRESS.")] = None,
) -> None:
    """Replay the jobs under candidate mappings and FAIR-SHARE; rank by utilization, then Max Stretch.

    The periodic jobs with an alpha_io are replayed together, as one concurrent workload, whatever their dates;
    with --overlap, only those whose recorded runs contain the busiest instant.
    The first lines say how many jobs were used, why the others were left out, and when their runs do not overlap.
    """
    from .._io import read_frame
    from ..replay import tune as tune_mappings
    from ..replay import tune_selection

    _check_tune_options(
        site is not None,
        idealised_only={"--bandwidth": bandwidth is not None, "--horizon": horizon is not None, "--overlap": overlap},
        site_only={"--mapping": mapping is not None, "--device": device is not None, "--dask": dask is not None},
    )
    from ..replay import Tuning

    if output is not None:
        Tuning.check_output(output)
    jobs = read_frame(jobs_path, what="jobs table")
    if site is not None:
        tuning = _tune_site(
            jobs, site, parse_numbers(bases, "--bases"), gmm, mapping, device, workers, dask, seed, as_json
        )
        if output is not None:
            _wrote(tuning, output)
        return
    ranking = tune_mappings(
        jobs,
        bases=parse_numbers(bases, "--bases"),
        gmm=gmm,
        bandwidth=1e9 if bandwidth is None else bandwidth,
        horizon=horizon,
        random_state=seed,
        overlap=overlap,
    )
    for line in tune_selection(jobs, overlap=overlap).summary.splitlines():
        echo(line, stderr=as_json)
    if output is not None:
        _wrote(Tuning(ranking=ranking), output)
    if as_json:
        print_json(ranking.to_dicts())
        return
    show(ranking_table(ranking, title=f"Mappings replayed on {jobs_path.name}"))


def _check_tune_options(with_site: bool, *, idealised_only: dict[str, bool], site_only: dict[str, bool]) -> None:
    """Refuse an option ``tune`` would ignore: an idealised replay's with --site, a --site one without it."""
    if with_site:
        given = [name for name, used in idealised_only.items() if used]
        if given:
            raise InputError(f"{given[0]} does not apply with --site (the trace replay takes its dates from the trace)")
        return
    given = [name for name, used in site_only.items() if used]
    if given:
        raise InputError(f"{given[0]} applies only with --site SITE")


def _wrote(tuning: Tuning, output: Path) -> None:
    """Write a tuning's rankings and say where (an earlier run's idealised ranking is removed when there is none)."""
    done = tuning.write(output)
    echo(f"wrote {', '.join(map(str, done.written))}")


def _tune_site(jobs, site, bases, gmm, mapping, device, workers, dask, seed, as_json) -> Tuning:
    """``iosets tune --site``: the candidates ranked by trace replay, and how far the idealised ranking differs."""
    from ..analyzer import SiteTrace
    from ..replay import read_device, tune_site

    got = tune_site(
        SiteTrace.read(site).requests,
        jobs,
        bases=bases,
        gmm=gmm,
        current=mapping,
        device=None if device is None else read_device(device),
        random_state=seed,
        workers=workers,
        dask=dask,
    )
    summary = (
        f"trace vs idealised ranking: Kendall tau {got.kendall_tau:.3f}, "
        f"top {got.top_trace} (trace) vs {got.top_idealised} (idealised)"
    )
    if as_json:
        echo(summary, stderr=True)
        print_json(
            {
                "ranking": got.ranking.to_dicts(),
                "kendall_tau": got.kendall_tau,
                "top_trace": got.top_trace,
                "top_idealised": got.top_idealised,
            }
        )
        return got
    show(ranking_table(got.ranking, title=f"Mappings replayed on the trace {site.name}"))
    echo(summary, stderr=False)
    return got


def export(
    recommended_path: Annotated[
        Path, typer.Argument(metavar="RECOMMENDED", help="Jobs table written by `iosets recommend -o`.")
    ],
    fmt: Annotated[str, typer.Option("--format", help=one_of(EXPORT_FORMATS))],
    output: Annotated[Path, typer.Option("--out", "-o", help="Folder (default file names) or file to write.")],
    active: Annotated[str | None, typer.Option(help="tbf: comma-separated job ids running now.")] = None,
    rpc_capacity: Annotated[float | None, typer.Option(help="tbf: RPC/s one server partition serves.")] = None,
    target: Annotated[str, typer.Option(help="tbf: lctl target of the rules.")] = TBF_TARGET,
    default_rate: Annotated[int | None, typer.Option(help="tbf: rate of the default rule (RPC/s).")] = None,
    wfq_path: Annotated[str | None, typer.Option(help="agios: where wfq.conf will be installed.")] = None,
    root: Annotated[str | None, typer.Option(help="cgroup: parent folder of the job_<id> cgroups.")] = None,
    mapping: Annotated[
        str | None, typer.Option("--mapping", help="json/lua: the mapping's name, recorded in the file.")
    ] = None,
    old_mapping: Annotated[
        str | None, typer.Option("--policy", hidden=True, help="Former spelling of --mapping.")
    ] = None,
) -> None:
    """Write a recommendation as files an enforcement layer applies (AGIOS, Lustre TBF, cgroup v2, Slurm)."""
    from .._io import check_folder, read_frame
    from ..recommender import export as export_recommendation

    # as the export does: a folder, or a name without suffix, gets the default file names
    check_folder(output if output.is_dir() or not output.suffix else output.parent, what=f"{fmt} export")

    given = {
        "active": None if active is None else parse_names(active),
        "rpc_capacity": rpc_capacity,
        "target": target if fmt == "tbf" else None,
        "default_rate": default_rate,
        "wfq_path": wfq_path,
        "root": root,
        "mapping": renamed_option(mapping, old_mapping, new="--mapping", old="--policy"),
    }
    paths = export_recommendation(
        read_frame(recommended_path, what="recommendation"),
        fmt,
        output,
        **{name: value for name, value in given.items() if value is not None},
    )
    for path in paths:
        echo(f"wrote {path}")
