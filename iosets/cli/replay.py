"""The replay room's commands: ``generate``, ``replay``, ``replay-requests``, ``replay-trace`` and ``experiment``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import InputError
from ._choices import DEVICE_PARAMETERS, FIGURES, POLICIES, SCHEDULERS, one_of
from ._format import percent
from ._output import echo, print_json, progress, show, show_note, show_warning, warnings_to_stderr
from ._parse import parse_names, parse_numbers, parse_pairs, parse_profile, parse_window
from ._tables import Column, field, ratio, render_table, shown

if TYPE_CHECKING:
    import polars as pl
    from rich.console import RenderableType

    from ..analyzer import SiteTrace
    from ..replay import Calibration, Device, ModelCheck, SchedulerComparison

METRICS_COLUMNS = (
    Column("policy", field("policy"), justify="left"),
    Column("utilization", field("utilization", "{:.4f}")),
    Column("io_slowdown", field("io_slowdown", "{:.3f}")),
    Column("max_stretch", field("max_stretch", "{:.4f}")),
)
"""Phase metrics of one or more policies (records ``{"policy": ..., **PhaseMetrics.to_dict()}``)."""

CLASS_COLUMNS = (
    Column("class", field("class"), justify="left"),
    Column("bytes", field("bytes", "{:.0f}")),
    Column("requests", field("requests")),
    Column("share", field("share", "{:.3f}")),
    Column("throughput MB/s", field("throughput", "{:.2f}", scale=1e-6)),
    Column("p50 ms", field("latency_p50", "{:.3f}", scale=1e3)),
    Column("p99 ms", field("latency_p99", "{:.3f}", scale=1e3)),
)
"""Per-class request metrics (the ``classes`` of ``RequestMetrics.to_dict()``)."""

SUMMARY_COLUMNS = (
    Column("policy", field("policy"), justify="left"),
    Column("util", field("utilization", "{:.4f}")),
    Column("IOS", field("io_slowdown", "{:.4f}")),
    Column("MS", field("max_stretch", "{:.4f}")),
    Column("util gain %", field("utilization_gain_pct", "{:.4f}")),
    Column("IOS gain x", field("io_slowdown_vs_ref", "{:.4f}")),
    Column("MS ratio", field("max_stretch_vs_ref", "{:.4f}")),
)
"""The frame of ``iosets.replay.summarize_experiment``."""


def metrics_table(runs: dict[str, dict[str, float]], *, title: str, reference: str | None = None) -> RenderableType:
    """Phase metrics per policy, with each policy's IO-slowdown gain over ``reference`` when given."""
    rows: list[dict[str, Any]] = [{"policy": policy, **metrics} for policy, metrics in runs.items()]
    if reference is None:
        return render_table(rows, METRICS_COLUMNS, title=title)
    for row in rows:
        row["gain"] = ratio(runs[reference]["io_slowdown"], row["io_slowdown"])
    gain = Column(f"IO-slowdown gain vs {reference}", field("gain", "{:.2f}x"))
    return render_table(rows, (*METRICS_COLUMNS, gain), title=title)


def generate(
    output: Annotated[Path, typer.Option("--output", "-o", help="Workload file (.json) or folder (Parquet pair).")],
    figure: Annotated[str | None, typer.Option(help=f"Paper preset: {', '.join(FIGURES)}.")] = None,
    point: Annotated[
        float | None, typer.Option(help="Swept value of the preset (n_H, b, eta or mu); default: the middle one.")
    ] = None,
    profile: Annotated[
        list[str] | None, typer.Option(help="Job profile COUNT,MU,SIGMA (repeatable) instead of a preset.")
    ] = None,
    omega: Annotated[float, typer.Option(help="I/O stress: sum of alpha_io.")] = 0.8,
    noise: Annotated[float, typer.Option(help="Noise bound b of phase lengths.")] = 0.1,
    horizon: Annotated[float, typer.Option(help="Horizon h in seconds (the paper's presets use 20000).")] = 20000.0,
    window: Annotated[str | None, typer.Option(help="Metric window T_BEGIN,T_END (s); default: 0.3 h,0.7 h.")] = None,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """Generate a workload with the paper's protocol (IO-SETS paper, section V-B)."""
    from .._io import check_output
    from ..datasets import make_iosets_workload
    from ..workload import write_workload

    if figure is not None and profile:
        raise InputError("give either --figure or --profile, not both")
    if figure is None and not profile:
        raise InputError("give --figure NAME or at least one --profile COUNT,MU,SIGMA")
    check_output(output if output.suffix == ".json" else output / "jobs.parquet", suffixes=(), what="workload")
    if figure is not None:
        chosen_window = None if window is None else parse_window(window)
        workload = _figure_workload(figure, point, omega=omega, horizon=horizon, window=chosen_window, seed=seed)
    else:
        profiles = [parse_profile(text) for text in profile or ()]
        workload = make_iosets_workload(
            profiles,
            omega=omega,
            noise=noise,
            horizon=horizon,
            window=None if window is None else parse_window(window),
            random_state=seed,
        )
    write_workload(workload, output)
    echo(f"wrote {output}: {workload.n_jobs} jobs, {workload.phases.height} phases")


def _figure_workload(
    figure: str, point: float | None, *, omega: float, horizon: float, window: tuple[float, float] | None, seed: int
):
    """The preset's workload at ``point`` (the sweep's middle point by default), seeded as the sweeps are."""
    from ..datasets import FIGURES as SWEEPS
    from ..datasets import figure_seed, make_figure_workload

    sweep = SWEEPS.get(figure)
    if sweep is None:
        raise InputError(f"unknown figure {figure!r}; expected one of {', '.join(SWEEPS)}")
    chosen = sweep.points[len(sweep.points) // 2] if point is None else point
    return make_figure_workload(
        figure, chosen, omega=omega, horizon=horizon, window=window, random_state=figure_seed(figure, chosen, seed)
    )


def _report_metrics(metrics: Any, as_json: bool, **extra: Any) -> dict[str, Any] | None:
    """Print why a metric is null (``note:`` lines), then the metrics (and ``extra`` keys) as JSON; the metrics
    for a table otherwise."""
    for name, why in metrics.notes.items():
        show_note(f"{name}: {why}")
    if as_json:
        print_json({**metrics.to_dict(), **extra})
        return None
    return metrics.to_dict()


def replay(
    workload: Annotated[Path, typer.Argument(help="Workload .json file or Parquet folder.")],
    policy: Annotated[str, typer.Option(help=one_of(POLICIES))] = "set-10",
    timeline: Annotated[Path | None, typer.Option(help="Write the per-phase timeline (.parquet or .csv).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON only.")] = False,
) -> None:
    """Replay a workload under a policy in the C phase engine and print the metrics."""
    from .._io import check_output, write_frame
    from ..replay import replay_phases
    from ..workload import read_workload

    if timeline is not None:
        check_output(timeline, what="timeline")
    result = replay_phases(read_workload(workload), policy)
    if timeline is not None:
        write_frame(result.timeline, timeline)
    metrics = _report_metrics(result.metrics, as_json)
    if metrics is None:
        return
    show(metrics_table({policy: metrics}, title=f"{workload} ({result.n_events} events)"))


def replay_requests(
    ops_path: Annotated[
        Path,
        typer.Argument(
            metavar="REQUESTS",
            help="Requests table (.csv or .parquet), or a site trace (`iosets ingest --site -o`).",
        ),
    ],
    scheduler: Annotated[str, typer.Option(help=one_of(SCHEDULERS))] = "fcfs",
    class_by: Annotated[
        str, typer.Option(help="Column giving each request's class; `set` with --rec: its job's set.")
    ] = "job_id",
    rec_path: Annotated[
        Path | None,
        typer.Option(
            "--rec",
            help="Recommendation (`iosets recommend -o`): each request gets its job's set (jobs it lacks: its "
            "conservative set, said); with --class-by set, iosets-wfq and rbfq take the sets' weights, "
            "reservations and limits from it unless given.",
        ),
    ] = None,
    weight: Annotated[list[str] | None, typer.Option(help="CLASS=WEIGHT (repeatable).")] = None,
    reservation: Annotated[list[str] | None, typer.Option(help="CLASS=RESERVATION (repeatable).")] = None,
    limit: Annotated[list[str] | None, typer.Option(help="CLASS=LIMIT (repeatable).")] = None,
    param: Annotated[list[str] | None, typer.Option(help="Scheduler parameter key=value (repeatable).")] = None,
    device: Annotated[
        list[str] | None, typer.Option(help=f"Device parameter key=value: {', '.join(DEVICE_PARAMETERS)}.")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the per-request results, and the per-class table as NAME.classes."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON only.")] = False,
) -> None:
    """Replay a request trace through a scheduler and the device model; print per-class shares.

    A site trace's requests synthesised from HEATMAP bins (rank -1, no offset) are one stream per job and
    each pays the device's seek; the output says how many there are.
    """
    import polars as pl

    from .._io import read_frame
    from ..replay import Device, RequestResults, replay_requests, request_sets

    if output is not None:
        RequestResults.check_output(output)
    ops = _read_requests(ops_path)
    given: dict[str, dict[int, float]] = {}
    if rec_path is not None:
        with warnings_to_stderr():
            rec = read_frame(rec_path, what="recommendation", schema_overrides={"job_id": pl.String})
            sets = request_sets(ops, rec)
        ops = sets.requests
        given = sets.parameters(scheduler) if class_by == "set" else {}
    if class_by not in ops.columns:
        hint = "; give --rec REC to class requests by their job's set" if class_by == "set" else ""
        raise InputError(f"--class-by: {ops_path} has no column {class_by!r}{hint}")
    key = int if ops[class_by].dtype.is_integer() else str  # --weight 3=... names class 3 of an integer column
    explicit = {
        "weights": parse_pairs(weight, "--weight", key),
        "reservations": parse_pairs(reservation, "--reservation", key),
        "limits": parse_pairs(limit, "--limit", key),
    }
    from_rec = [name for name in given if not explicit[name]]
    result = replay_requests(
        ops,
        scheduler,
        device=Device.from_strings(device or []),
        class_by=class_by,
        weights=explicit["weights"] or given.get("weights"),
        reservations=explicit["reservations"] or given.get("reservations"),
        limits=explicit["limits"] or given.get("limits"),
        **parse_pairs(param, "--param"),
    )
    if output is not None:
        echo(f"wrote {', '.join(map(str, result.write(output).written))}")
    trace = result.trace
    if trace.no_rank or trace.no_offset:
        show_note(stand_ins_text(trace.n, no_rank=trace.no_rank, no_offset=trace.no_offset))
    if from_rec:
        show_note(f"{scheduler}: {', '.join(from_rec)} of each set from {rec_path}")
    stand_ins = {"no_rank": trace.no_rank, "no_offset": trace.no_offset}
    metrics = _report_metrics(result.metrics, as_json, stand_ins=stand_ins)
    if metrics is None:
        return
    title = f"{ops_path}: {scheduler}, {trace.n} requests in {result.metrics.n_units} units"
    show(render_table(metrics["classes"], CLASS_COLUMNS, title=title))
    echo(
        f"aggregate {shown(metrics['aggregate_throughput'], '{:.2f}', scale=1e-6)} MB/s, "
        f"Jain {shown(metrics['jain_index'], '{:.3f}')}, "
        f"mean aggregation {shown(metrics['mean_aggregation_size'], '{:.2f}')}",
        stderr=False,
    )


def _read_requests(path: Path) -> pl.DataFrame:
    """A requests table, or a site trace as it is (told by its ``synthetic`` column), checked against its schema."""
    from .._results import read_table
    from ..analyzer import read_requests
    from ..schemas import SITE_REQUESTS

    if "synthetic" in _columns(path):
        return read_table(path, SITE_REQUESTS, what="site trace")
    return read_requests(path)


def _columns(path: Path) -> list[str]:
    """The column names of a Parquet or CSV table (a CSV's header line); none when they cannot be read (the
    table's reader then says why)."""
    import polars as pl

    try:
        if path.suffix == ".parquet":
            return list(pl.read_parquet_schema(path))
        with path.open(encoding="utf-8", errors="replace") as text:
            return [name.strip().strip('"') for name in text.readline().rstrip("\r\n").split(",")]
    except (OSError, pl.exceptions.PolarsError):
        return []


def stand_ins_text(n: int, *, no_rank: int, no_offset: int) -> str:
    """How many of ``n`` requests stand in for what their source did not record, and how the replay reads them."""
    parts = []
    if no_rank:
        parts.append(f"{no_rank} with rank -1 (their job's one stream)")
    if no_offset:
        parts.append(f"{no_offset} with no offset (each pays the device's seek)")
    return f"of {n} requests, {' and '.join(parts)}: rebuilt from Darshan HEATMAP bins, which record no rank or offset"


def experiment(
    name: Annotated[str, typer.Argument(help=f"Sweep: {', '.join(FIGURES)}.")],
    seeds: Annotated[int, typer.Option(help="Workloads per point.")] = 3,
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for <name>.csv.")] = Path("results"),
    points: Annotated[str | None, typer.Option(help="Comma-separated subset of the sweep's points.")] = None,
) -> None:
    """Run one of the paper's sweeps over every policy; write DIR/<name>.csv and a summary."""
    from .._io import check_output, write_frame
    from ..replay import EXPERIMENT_REFERENCE, run_experiment, summarize_experiment

    chosen = None if points is None else parse_numbers(points, "--points")
    path = check_output(out_dir / f"{name}.csv", what="results")
    results = run_experiment(
        name,
        seeds=seeds,
        points=chosen,
        progress=lambda steps: progress(steps, description=name, transient=True),
    )
    write_frame(results, path)
    reference = EXPERIMENT_REFERENCE[name]
    summary = summarize_experiment(results, reference=reference)
    title = f"{name}: means over {results['point'].n_unique()} points x {seeds} seeds, reference {reference}"
    caption = "IOS: IO-slowdown, MS: Max Stretch; gains and ratios are against the reference"
    show(render_table(summary, SUMMARY_COLUMNS, title=title, caption=caption))
    echo(f"wrote {path}")


PARAMETER_COLUMNS = (
    Column("parameter", field("name"), justify="left"),
    Column("value", field("value", "{:.6g}")),
    Column("how", field("how"), justify="left"),
    Column("evidence", field("evidence")),
    Column("why", field("reason"), justify="left"),
)
"""Each parameter of ``Calibration.parameters``: its value, how it was set and the evidence behind it."""


def calibrate(
    site_path: Annotated[Path, typer.Argument(metavar="SITE", help="Site trace from `iosets ingest --site`.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the fitted device (JSON).")] = None,
    fit: Annotated[str, typer.Option(help="Comma-separated device parameters to fit.")] = (
        "bandwidth,overhead,seek,concurrency,rate,burst"
    ),
    fix: Annotated[
        list[str] | None,
        typer.Option(help="Pin a device parameter, NAME=VALUE (repeatable): --fix seek=0 --fix targets=8."),
    ] = None,
    device: Annotated[
        Path | None, typer.Option(help="Device JSON whose values the parameters not fitted keep (site settings).")
    ] = None,
    cross_validate: Annotated[
        bool, typer.Option(help="Also fit on part of the jobs (or phases) and report the error on the others.")
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the device and the fit error as JSON only.")] = False,
) -> None:
    """Fit the device model so that the fcfs closed-loop replay reproduces the site's request and phase durations.

    A parameter is fitted only where the trace holds evidence for it (the table says which and why);
    the held-out error is that of phases replayed on a device fitted without them.
    """
    import json

    from .._io import atomic_path, check_output
    from ..analyzer import SiteTrace
    from ..replay import calibrate as calibrate_device

    if output is not None:
        check_output(output, suffixes=(".json",), what="device")
    site = SiteTrace.read(site_path)
    layout, base = _site_settings(site, device)
    result = calibrate_device(
        site.requests,
        fit=parse_names(fit),
        device=base,
        fix=parse_pairs(fix, "--fix"),
        layout=layout,
        cross_validate=cross_validate,
    )
    if output is not None:
        with atomic_path(output) as path:
            path.write_text(json.dumps(result.device.to_dict(), indent=2) + "\n", encoding="utf-8")
    if as_json:
        print_json(result.to_dict())
        return
    show(render_table([vars(p) for p in result.parameters], PARAMETER_COLUMNS, title=f"{site_path}: calibration"))
    echo(f"device: {result.device.describe()}", stderr=False)
    echo(fit_error_text(result), stderr=False)
    if output is not None:
        echo(f"wrote {output}")


UNIT_TEXT = {"phases": "phases", "ranks": "ranks (each one's span in the job's one phase)"}
"""What a calibration's errors are over."""


def fit_error_text(result: Calibration) -> str:
    """The in-sample and held-out errors of a calibration, in one paragraph."""
    error, held = result.error, result.held_out
    text = (
        f"fit error over {result.n_phases} {UNIT_TEXT[result.units]}: median {shown(error['phase_median'], '{:.2%}')}, "
        f"p90 {shown(error['phase_p90'], '{:.2%}')}; over {result.n_requests} requests: median "
        f"{shown(error['request_median'], '{:.2%}')}, p90 {shown(error['request_p90'], '{:.2%}')}"
    )
    if result.held_out_by == "none":
        return text + "\nheld-out error: not computed (--no-cross-validate)"
    if not held["folds"]:
        return text + "\nheld-out error: none (one job with one phase or rank: nothing to hold out)"
    return text + (
        f"\nheld-out error over {held['n_phases']:.0f} {result.units} "
        f"({held['folds']:.0f} folds of {result.held_out_by}): "
        f"median |replayed / recorded - 1| {shown(held['median'], '{:.2%}')}, p90 {shown(held['p90'], '{:.2%}')}"
    )


TRACE_SCHEDULER_COLUMNS = (
    Column("scheduler", field("scheduler"), justify="left"),
    Column("util", field("utilization", "{:.4f}")),
    Column("util bound", field("utilization_bound", "{:.4f}")),
    Column("IOS", field("io_slowdown", "{:.3f}")),
    Column("MS", field("max_stretch", "{:.3f}")),
    Column("mean stretch", field("mean_stretch", "{:.3f}")),
    Column("p99 stretch", field("p99_stretch", "{:.3f}")),
    Column("MB/s", field("throughput", "{:.2f}", scale=1e-6)),
)
"""Per-scheduler metrics of ``compare_schedulers`` (a ``share_set_<s>`` column per set is added after them)."""


def trace_scheduler_rows(comparison: SchedulerComparison) -> list[dict[str, Any]]:
    """Each scheduler's row of ``comparison.schedulers`` with ``share_set_<s>``: set s's share of the window's bytes."""
    shares: dict[str, dict[str, Any]] = {}
    for row in comparison.shares.iter_rows(named=True):
        shares.setdefault(row["scheduler"], {})[f"share_set_{row['set']}"] = row["share"]
    return [{**row, **shares.get(row["scheduler"], {})} for row in comparison.schedulers.iter_rows(named=True)]


def trace_scheduler_table(comparison: SchedulerComparison, *, title: str) -> RenderableType:
    """The per-scheduler comparison of a trace replay, with each set's byte share in per cent."""
    rows = trace_scheduler_rows(comparison)
    sets = comparison.shares["set"].unique(maintain_order=True).to_list()
    columns = (
        *TRACE_SCHEDULER_COLUMNS,
        *(Column(f"set {s} %", field(f"share_set_{s}", "{:.1f}", scale=100)) for s in sets),
    )
    caption = (
        "util bound: utilization if no job ever waited; IOS: IO-slowdown, MS: Max Stretch (the phase model's, over "
        "the window); set %: bytes moved in it"
    )
    return render_table(rows, columns, title=title, caption=caption)


MODEL_CHECK_COLUMNS = (
    Column("job", field("job_id"), justify="left"),
    Column("recorded s", field("recorded_runtime", "{:.6g}")),
    Column("alone s", field("alone_runtime", "{:.6g}")),
    Column("alone / recorded", field("alone_ratio", "{:.3f}")),
)
"""The jobs of a model check farthest from 1 (rows of ``ModelCheck.farthest``)."""

FARTHEST_JOBS = 5
"""Jobs the model-check block lists."""


def model_check_title(check: ModelCheck) -> str:
    """The model check in one line: its median and p90 distance from 1 against the threshold."""
    return (
        f"model check over {check.n_jobs} jobs (each replayed alone against its recorded runtime): "
        f"|alone / recorded - 1| median {percent(check.median)}, p90 {percent(check.p90)} "
        f"(threshold {percent(check.threshold)})"
    )


def model_check_table(check: ModelCheck) -> RenderableType:
    """The model check's line and the jobs farthest from 1."""
    caption = "both runtimes from the job's first request to its last request's end; farthest from 1 first"
    return render_table(
        check.farthest(FARTHEST_JOBS), MODEL_CHECK_COLUMNS, title=model_check_title(check), caption=caption
    )


def _site_settings(site: SiteTrace, path: Path | None) -> tuple[pl.DataFrame | None, Device]:
    """The files' striping of a site trace (its LUSTRE records) and the device to start from: the file at
    ``path``, else one with as many targets as the records' file system has (said), else ``Device()``."""
    from ..replay import Device, read_device, site_layout

    layout, fs_targets = site_layout(site.files)
    if path is not None:
        return layout, read_device(path)
    if layout is None or fs_targets is None:
        return layout, Device()
    echo(f"the site trace's LUSTRE records: {layout.height} file layouts on a file system of {fs_targets} targets")
    return layout, Device(targets=fs_targets)


def _trace_device(path: Path | None, site: SiteTrace, site_path: Path) -> tuple[Device, str, pl.DataFrame | None]:
    """The device of a trace replay, where it came from (the file given, else calibrated on the trace itself)
    and the files' striping."""
    from ..replay import calibrate

    layout, base = _site_settings(site, path)
    if path is not None:
        return base, "file", layout
    try:
        fitted = calibrate(site.requests, device=base, layout=layout)
    except InputError as reason:
        raise InputError(
            f"no --device, and {site_path} cannot be calibrated on: {reason}; "
            "give --device DEVICE.json (`iosets calibrate SITE -o DEVICE.json` on another trace of the storage)"
        ) from None
    error, held = fitted.error, fitted.held_out
    echo(
        f"no --device: calibrated on {site_path} "
        f"(fit error: median {percent(error['phase_median'])}, p90 {percent(error['phase_p90'])}; "
        f"held out: median {percent(held['median'])}, p90 {percent(held['p90'])})"
    )
    return fitted.device, "calibrated", layout


def replay_trace(
    site_path: Annotated[Path, typer.Argument(metavar="SITE", help="Site trace (`iosets ingest --site -o`).")],
    rec_path: Annotated[Path, typer.Option("--rec", help="Recommendation table (`iosets recommend -o`).")],
    compare: Annotated[str, typer.Option(help=f"Comma-separated schedulers: {', '.join(SCHEDULERS)}.")] = (
        "fcfs,wfq,iosets-wfq,rbfq"
    ),
    device: Annotated[
        Path | None,
        typer.Option(help="Device JSON (`Device.to_dict`, `iosets calibrate`); default: calibrated on SITE itself."),
    ] = None,
    window: Annotated[str | None, typer.Option(help="Metric window T_BEGIN,T_END (s); default: the replay.")] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the per-job predictions, and beside them NAME.phases, NAME.schedulers and NAME.shares.",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print per-scheduler and per-job numbers as JSON only.")
    ] = False,
) -> None:
    """Replay a site trace in a closed loop under each scheduler; predict each job's stretch and the platform's metrics.

    iosets-wfq and rbfq get one class per set of the recommendation, the other schedulers one class
    per job with equal weights; jobs missing from it go to its conservative (largest) set.
    Without --device, the device is calibrated on SITE itself (as `iosets calibrate` does) and the fit
    error printed; the device used is always printed. The model check follows the table: each job
    replayed alone against its recorded runtime, with a warning when the model does not reproduce them.
    With -o, four tables: per job, per phase (ready, start and end dates), per scheduler (the metrics) and
    per set (bytes moved in the window). The site's jobs table written beside SITE by `iosets ingest
    --site` (NAME.jobs) gives the jobs' start dates, so that compute before a job's first request counts.
    """
    import polars as pl

    from .._io import read_frame
    from ..analyzer import SiteTrace
    from ..replay import SchedulerComparison, compare_schedulers

    if output is not None:
        SchedulerComparison.check_output(output)
    schedulers = parse_names(compare)
    chosen_window = None if window is None else parse_window(window)
    site = SiteTrace.read(site_path)
    site_jobs = None if site.jobs is None else site.jobs.select("job_id", "start")
    rec = read_frame(rec_path, what="recommendation", schema_overrides={"job_id": pl.String})
    chosen_device, device_source, layout = _trace_device(device, site, site_path)
    echo(f"device: {chosen_device.describe()}")
    with warnings_to_stderr():
        comparison = compare_schedulers(
            site.requests,
            rec,
            schedulers,
            device=chosen_device,
            window=chosen_window,
            site_jobs=site_jobs,
            layout=layout,
        )
    check = comparison.model_check
    if output is not None:
        echo(f"wrote {', '.join(map(str, comparison.write(output).written))}")
    if as_json:
        print_json(
            {
                "schedulers": trace_scheduler_rows(comparison),
                "jobs": comparison.jobs.to_dicts(),
                "model_check": check.to_dict(),
                "device": chosen_device.to_dict(),
                "device_source": device_source,
            }
        )
    else:
        title = f"{site_path}: {comparison.jobs['job_id'].n_unique()} jobs replayed in a closed loop"
        show(trace_scheduler_table(comparison, title=title))
        show(model_check_table(check))
    if check.warning is not None:
        show_warning(check.warning)
