"""The ``iosets`` command line: one short command per room."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import polars as pl
import typer
from rich.progress import track
from rich.table import Table

from . import __version__
from ._cli_common import err, fail, out, print_json, warnings_to_stderr
from ._cli_recommend import (
    export_command,
    ranking_table,
    recommend_command,
    summary_table,
    tune_command,
)
from ._io import write_frame
from .analyzer import analyze, analyze_ops, read_blocktrace, read_darshan, read_ops
from .datasets import FIGURES, figure_seed, make_backlogged_requests, make_figure_workload, make_iosets_workload
from .errors import IosetsError
from .recommender import recommend, set_summary
from .replay import (
    EXPERIMENT_REFERENCE,
    POLICIES,
    SCHEDULERS,
    Device,
    backlogged_shares,
    replay_phases,
    replay_requests,
    run_experiment,
    summarize_experiment,
    tune,
)
from .workload import Workload, read_workload, write_workload

app = typer.Typer(
    help="Decide how a shared parallel file system shares its bandwidth (IO-SETS).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
DEMO_POLICIES = ("exclusive-fcfs", "fair-share", "set-fairshare", "share-priority", "set-10")
app.command("recommend")(recommend_command)
app.command("tune")(tune_command)
app.command("export")(export_command)


def _version(value: bool) -> None:
    if value:
        out.print(f"iosets {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """iosets: analyze I/O rhythms, recommend sets and priorities, replay policies."""


def _metrics_table(title: str, rows: list[tuple[str, dict[str, float]]], reference: str | None) -> Table:
    table = Table(title=title)
    for column in ("policy", "utilization", "io_slowdown", "max_stretch"):
        table.add_column(column, justify="right" if column != "policy" else "left")
    if reference:
        table.add_column(f"IO-slowdown gain vs {reference}", justify="right")
    ref = dict(rows).get(reference) if reference else None
    for policy, m in rows:
        cells = [policy, f"{m['utilization']:.4f}", f"{m['io_slowdown']:.3f}", f"{m['max_stretch']:.4f}"]
        if ref:
            cells.append(f"{ref['io_slowdown'] / m['io_slowdown']:.2f}x")
        table.add_row(*cells)
    return table


@app.command()
def generate(
    output: Annotated[Path, typer.Option("--output", "-o", help="Workload file (.json) or folder (Parquet pair).")],
    figure: Annotated[str | None, typer.Option(help=f"Paper preset: {', '.join(FIGURES)}.")] = None,
    point: Annotated[float | None, typer.Option(help="Swept value of the preset (n_H, b, eta or mu).")] = None,
    profile: Annotated[
        list[str] | None, typer.Option(help="Job profile COUNT,MU,SIGMA (repeatable) instead of a preset.")
    ] = None,
    omega: Annotated[float, typer.Option(help="I/O stress: sum of alpha_io.")] = 0.8,
    noise: Annotated[float, typer.Option(help="Noise bound b of phase lengths.")] = 0.1,
    horizon: Annotated[float, typer.Option(help="Horizon h in seconds.")] = 20000.0,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """Generate a workload with the paper's protocol (seed 004, section V-B)."""
    try:
        if figure is not None:
            if profile:
                raise IosetsError("give either --figure or --profile, not both")
            sweep = FIGURES.get(figure)
            chosen = point if point is not None else (sweep.points[len(sweep.points) // 2] if sweep else 0.0)
            workload = make_figure_workload(
                figure, chosen, omega=omega, random_state=figure_seed(figure, chosen, seed) if sweep else seed
            )
        elif profile:
            workload = make_iosets_workload(
                [_parse_profile(p) for p in profile], omega=omega, noise=noise, horizon=horizon, random_state=seed
            )
        else:
            raise IosetsError("give --figure NAME or at least one --profile COUNT,MU,SIGMA")
        write_workload(workload, output)
    except (IosetsError, ValueError) as exc:
        raise fail(exc) from None
    err.print(f"wrote {output}: {workload.n_jobs} jobs, {workload.phases.height} phases")


def _parse_float(text: str, option: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise IosetsError(f"{option}: expected a number, got {text!r}") from None


def _parse_profile(text: str) -> tuple[int, float, float]:
    parts = text.split(",")
    try:
        if len(parts) != 3:
            raise ValueError
        return int(parts[0]), float(parts[1]), float(parts[2])
    except ValueError:
        raise IosetsError(f"--profile: expected COUNT,MU,SIGMA such as 20,100,10, got {text!r}") from None


@app.command()
def replay(
    workload: Annotated[Path, typer.Argument(help="Workload .json file or Parquet folder.")],
    policy: Annotated[str, typer.Option(help=f"One of: {', '.join(POLICIES)}.")] = "set-10",
    timeline: Annotated[Path | None, typer.Option(help="Write the per-phase timeline (.parquet or .csv).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON only.")] = False,
) -> None:
    """Replay a workload under a policy in the C phase engine and print the metrics."""
    try:
        result = replay_phases(read_workload(workload), policy)
        if timeline is not None:
            write_frame(result.timeline, timeline)
    except (IosetsError, ValueError) as exc:
        raise fail(exc) from None
    metrics = result.metrics.to_dict()
    if as_json:
        return print_json(metrics)
    out.print(_metrics_table(f"{workload} ({result.n_events} events)", [(policy, metrics)], None))


def _parse_pairs(items: list[str] | None, option: str, convert) -> dict:
    """``key=value`` strings into a dict, keys converted by ``convert``."""
    pairs = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise IosetsError(f"{option}: expected key=value, got {item!r}")
        try:
            pairs[convert(key)] = float(value)
        except ValueError:
            raise IosetsError(f"{option}: expected a number after '=', got {item!r}") from None
    return pairs


@app.command("replay-requests")
def replay_requests_command(
    ops_path: Annotated[Path, typer.Argument(metavar="OPS", help="Ops table (.csv or .parquet).")],
    scheduler: Annotated[str, typer.Option(help=f"One of: {', '.join(SCHEDULERS)}.")] = "fcfs",
    class_by: Annotated[str, typer.Option(help="Column giving each request's class.")] = "job_id",
    weight: Annotated[list[str] | None, typer.Option(help="CLASS=WEIGHT (repeatable).")] = None,
    reservation: Annotated[list[str] | None, typer.Option(help="CLASS=RESERVATION (repeatable).")] = None,
    limit: Annotated[list[str] | None, typer.Option(help="CLASS=LIMIT (repeatable).")] = None,
    param: Annotated[list[str] | None, typer.Option(help="Scheduler parameter key=value (repeatable).")] = None,
    device: Annotated[
        list[str] | None, typer.Option(help="Device parameter key=value: queue_depth, bandwidth, overhead, seek, iops.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON only.")] = False,
) -> None:
    """Replay a request trace through a scheduler and the device model; print per-class shares."""
    try:
        ops = read_ops(ops_path)
        if class_by not in ops.columns:
            raise IosetsError(f"--class-by: {ops_path} has no column {class_by!r}")
        key = int if ops[class_by].dtype.is_integer() else str
        result = replay_requests(
            ops,
            scheduler,
            device=Device.from_strings(device or []),
            class_by=class_by,
            weights=_parse_pairs(weight, "--weight", key) or None,
            reservations=_parse_pairs(reservation, "--reservation", key) or None,
            limits=_parse_pairs(limit, "--limit", key) or None,
            **_parse_pairs(param, "--param", str),
        )
    except (IosetsError, ValueError) as exc:
        raise fail(exc) from None
    metrics = result.metrics.to_dict()
    if as_json:
        return print_json(metrics)
    table = Table(title=f"{ops_path}: {scheduler}, {result.trace.n} requests in {result.metrics.n_units} units")
    for column in ("class", "bytes", "requests", "share", "throughput MB/s", "p50 ms", "p99 ms"):
        table.add_column(column, justify="left" if column == "class" else "right")
    for row in metrics["classes"]:
        table.add_row(
            row["class"],
            f"{row['bytes']:.0f}",
            str(row["requests"]),
            f"{row['share']:.3f}",
            f"{row['throughput'] / 1e6:.2f}",
            f"{row['latency_p50'] * 1e3:.3f}",
            f"{row['latency_p99'] * 1e3:.3f}",
        )
    out.print(table)
    out.print(
        f"aggregate {metrics['aggregate_throughput'] / 1e6:.2f} MB/s, Jain {metrics['jain_index']:.3f}, "
        f"mean aggregation {metrics['mean_aggregation_size']:.2f}"
    )


@app.command("analyze")
def analyze_command(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Darshan logs, folders (recursive) or manifests listing logs.")
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Jobs table (.parquet or .csv).")] = Path(
        "jobs.parquet"
    ),
    ops: Annotated[Path | None, typer.Option("--ops", help="Analyze an ops table (.csv/.parquet) instead.")] = None,
    workers: Annotated[int | None, typer.Option(help="Processes on this machine (default: all cores).")] = None,
    dask: Annotated[str | None, typer.Option(help="Run on Dask: 'local' or a scheduler address.")] = None,
) -> None:
    """Find each job's I/O rhythm (w_iter, alpha_io, confidence) and write the jobs table."""
    try:
        if ops is not None:
            jobs = analyze_ops(read_ops(ops))
            write_frame(jobs, output)
            err.print(f"wrote {output}: {jobs.height} jobs from {ops}")
            return
        if not paths:
            raise IosetsError("give Darshan logs, folders or manifests, or --ops FILE")
        result = analyze(
            paths,
            workers=workers,
            dask=dask,
            progress=lambda it, total: track(it, total=total, description="analyzing", console=err),
        )
        write_frame(result.jobs, output)
        if result.errors.height:
            errors_path = output.with_name(output.stem + ".errors" + output.suffix)
            write_frame(result.errors, errors_path)
    except (IosetsError, ValueError) as exc:
        raise fail(exc) from None
    err.print(f"wrote {output}: {result.jobs.height} jobs")
    if result.errors.height:
        err.print(f"[yellow]{result.errors.height} logs failed[/], listed in {errors_path}:")
        for row in result.errors.head(5).iter_rows(named=True):
            err.print(f"  {row['reason']}", highlight=False)


@app.command()
def ingest(
    path: Annotated[Path, typer.Argument(help="A Darshan log (DXT) or a block trace.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Ops table (.parquet or .csv).")],
    trace_format: Annotated[
        str, typer.Option("--format", help="auto, blkparse, msr, spc or ops (block traces).")
    ] = "auto",
    class_by: Annotated[str, typer.Option(help="Block traces: device, process, host or asu.")] = "device",
    skip_malformed: Annotated[
        bool, typer.Option(help="Block traces: leave malformed lines out (listed on stderr) instead of failing.")
    ] = False,
) -> None:
    """Write the ops table of one trace."""
    skipped = None
    try:
        if path.suffix == ".darshan":
            ops = read_darshan(path).ops
            if ops is None:
                raise IosetsError(f"{path}: no DXT module, so no request-level trace (try `iosets analyze`)")
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the report below says it all
                ops, skipped = read_blocktrace(
                    path,
                    format=trace_format,
                    class_by=class_by,
                    errors="skip" if skip_malformed else "raise",
                    return_report=True,
                )
        write_frame(ops, output)
    except (IosetsError, ValueError) as exc:
        raise fail(exc) from None
    if skipped is not None and skipped.n_skipped:
        err.print(f"[yellow]skipped {skipped.n_skipped} malformed lines[/]:")
        for message in skipped.messages[:5]:
            err.print(f"  {message}", highlight=False)
    err.print(f"wrote {output}: {ops.height} requests")


@app.command()
def experiment(
    name: Annotated[str, typer.Argument(help=f"Sweep: {', '.join(FIGURES)}.")],
    seeds: Annotated[int, typer.Option(help="Workloads per point.")] = 3,
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for <name>.csv.")] = Path("results"),
    points: Annotated[str | None, typer.Option(help="Comma-separated subset of the sweep's points.")] = None,
) -> None:
    """Run one of the paper's sweeps over every policy; write DIR/<name>.csv and a summary."""
    try:
        chosen = None if points is None else [_parse_float(p, "--points") for p in points.split(",")]
        results = run_experiment(
            name,
            seeds=seeds,
            points=chosen,
            progress=lambda it: track(it, description=f"{name}", console=err, transient=True),
        )
        path = out_dir / f"{name}.csv"
        write_frame(results, path)
        reference = EXPERIMENT_REFERENCE[name]
        summary = summarize_experiment(results, reference=reference)
    except (IosetsError, ValueError) as exc:
        raise fail(exc) from None
    table = Table(
        title=f"{name}: means over {results['point'].n_unique()} points x {seeds} seeds, reference {reference}"
    )
    table.add_column("policy", no_wrap=True)
    table.caption = "IOS: IO-slowdown, MS: Max Stretch; gains and ratios are against the reference"
    for header in ("util", "IOS", "MS", "util gain %", "IOS gain x", "MS ratio"):
        table.add_column(header, justify="right")
    for row in summary.iter_rows():
        table.add_row(row[0], *(f"{v:.4f}" for v in row[1:]))
    out.print(table)
    err.print(f"wrote {path}")


@app.command()
def demo() -> None:
    """Analyze the sample traces and replay them; replay a Fig. 6 workload under the reference
    policies; replay a three-set request trace under fcfs, wfq and rbfq."""
    jobs, analyzer_table = _analyzer_demo()
    out.print(analyzer_table)
    workload = make_figure_workload("fig6", 20, random_state=figure_seed("fig6", 20, 0))
    out.print(
        f"Fig. 6 workload (seed 004): {workload.n_jobs} jobs, {workload.phases.height} phases, "
        f"omega 0.8, horizon {workload.horizon:.0f} s, window {workload.window}"
    )
    rows = [(p, replay_phases(workload, p).metrics.to_dict()) for p in DEMO_POLICIES]
    out.print(_metrics_table("Phase-level replay (C engine)", rows, "fair-share"))
    bound = 1 - 0.8 / workload.n_jobs
    out.print(f"Utilization upper bound 1 - omega/N = {bound:.4f}")
    out.print(_request_demo_table())
    with warnings_to_stderr():
        recommended = recommend(jobs, bandwidth=1e9)
    out.print(summary_table(set_summary(recommended), "Recommendation for the sample jobs (SET-10, B = 1 GB/s)"))
    out.print(ranking_table(tune(jobs), "Tuning by replay: the sample jobs under each mapping"))


def _analyzer_demo() -> tuple[pl.DataFrame, Table]:
    """The rhythm of the bundled block traces and of the Darshan logs shipped with pydarshan,
    then the periodic jobs replayed under SET-10 and FAIR-SHARE."""
    from importlib.resources import files

    import darshan

    samples = files("iosets.datasets.data")
    frames = [
        analyze_ops(read_blocktrace(samples / name), source=name)
        for name in ("sample.blkparse.txt", "sample.msr.csv", "sample.spc.csv")
    ]
    logs = Path(darshan.__file__).parent / "examples" / "example_logs"
    frames.append(analyze([logs], workers=1).jobs.with_columns(pl.col("path").str.extract(r"([^/]+)$").alias("source")))
    jobs = pl.concat([f.drop("path") for f in frames], how="vertical_relaxed")
    table = Table(title="Analyzer: sample block traces and pydarshan's example logs")
    for column in ("input", "job", "w_iter s", "alpha_io", "confidence", "phases"):
        table.add_column(column, justify="left" if column in ("input", "job") else "right")
    for row in jobs.iter_rows(named=True):
        table.add_row(
            row["source"],
            row["job_id"],
            "not periodic" if row["w_iter"] is None else f"{row['w_iter']:.2f}",
            "-" if row["alpha_io"] is None else f"{row['alpha_io']:.4f}",
            f"{row['w_iter_confidence']:.2f}",
            "-" if row["n_phases"] is None else str(row["n_phases"]),
        )
    workload = Workload.from_jobs(jobs, horizon=2000.0, window=(200.0, 1800.0))
    metrics = {p: replay_phases(workload, p).metrics for p in ("fair-share", "set-10")}
    table.caption = f"{workload.n_jobs} periodic jobs replayed for 2000 s: " + ", ".join(
        f"{p} utilization {m.utilization:.4f} IO-slowdown {m.io_slowdown:.3f}" for p, m in metrics.items()
    )
    return jobs, table


def _request_demo_table() -> Table:
    """Shares of three backlogged sets (SET-10 priorities 1, 0.1, 0.01) under three schedulers."""
    ops = make_backlogged_requests(30_000, 3, size_range=(65536, 65536), random_state=0)
    sets = ["c0", "c1", "c2"]
    weights = dict(zip(sets, [100 * 65536, 10 * 65536, 65536]))
    device = Device(seek=0.0)
    runs = {
        "fcfs": replay_requests(ops, "fcfs", device=device),
        "wfq": replay_requests(ops, "wfq", weights=weights, device=device),
        "rbfq": replay_requests(
            ops, "rbfq", weights=dict(zip(sets, [100, 10, 1])), reservations={"c2": 1000}, device=device
        ),
    }
    table = Table(title="Request-level replay: byte shares while all three sets are backlogged")
    table.add_column("scheduler")
    for label in ("set 0 (p=1)", "set 1 (p=0.1)", "set 2 (p=0.01, rbfq reserves 1000 IO/s)"):
        table.add_column(label, justify="right")
    for name, result in runs.items():
        table.add_row(name, *(f"{100 * share:.1f} %" for share in backlogged_shares(result)))
    return table
