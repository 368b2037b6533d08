"""``iosets demo``: every room on bundled data, from traces to a tuned recommendation."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ._output import echo, show, warnings_to_stderr
from ._tables import Column, field, render_table, shown
from .recommender import ranking_table, set_table
from .replay import metrics_table, trace_scheduler_table

if TYPE_CHECKING:
    import polars as pl
    from rich.console import RenderableType

    from ..replay import RequestReplay, SchedulerComparison

DEMO_POLICIES = ("exclusive-fcfs", "fair-share", "set-10", "set-fairshare", "share-priority")

JOB_COLUMNS = (
    Column("input", field("input"), justify="left"),
    Column("job", field("job_id"), justify="left"),
    Column("w_iter s", field("w_iter", "{:.2f}", missing="not periodic")),
    Column("alpha_io", field("alpha_io", "{:.4f}")),
    Column("confidence", field("w_iter_confidence", "{:.2f}")),
    Column("phases", field("n_phases")),
)
"""The jobs table of the analyzer with the input each job came from."""

SETS = ("c0", "c1", "c2")
"""The request demo's three backlogged sets."""


def _percent(name: str):
    """The cell showing the share ``row[name]`` in per cent."""
    return lambda row: f"{100 * row[name]:.1f} %"


SHARE_COLUMNS = (
    Column("scheduler", field("scheduler"), justify="left"),
    Column("set 0 (p=1)", _percent("c0")),
    Column("set 1 (p=0.1)", _percent("c1")),
    Column("set 2 (p=0.01, rbfq reserves 1000 IO/s)", _percent("c2")),
)
"""Byte share of each set per scheduler."""


REPORT_NAME = "demo-report.html"
"""The report the demo writes in its output folder."""


def demo(
    out_dir: Annotated[Path, typer.Option("--out", help=f"Folder for {REPORT_NAME}.")] = Path("."),
) -> None:
    """Run every room on bundled data: analyze, replay, recommend, tune, replay a site trace, and report.

    Analyzes the sample traces and pydarshan's example logs, replays a Fig. 6 workload under the
    reference policies and a three-set request trace under fcfs, wfq and rbfq, recommends and
    tunes sets for the sample jobs, replays the sample site trace in a closed loop under fcfs,
    wfq and iosets-wfq with those sets, then writes the HTML report of all that in DIR/demo-report.html.
    """
    from .._io import check_output
    from ..datasets import figure_seed, make_figure_workload
    from ..recommender import recommend, set_summary
    from ..replay import replay_phases, tune

    report_path = check_output(out_dir / REPORT_NAME, suffixes=(".html",), what="report")
    jobs = _sample_jobs()
    title = "Analyzer: sample block traces and pydarshan's example logs"
    show(render_table(jobs, JOB_COLUMNS, title=title, caption=_sample_replay(jobs)))
    workload = make_figure_workload("fig6", 20, random_state=figure_seed("fig6", 20, 0))
    echo(
        f"Fig. 6 workload (IO-SETS paper): {workload.n_jobs} jobs, {workload.phases.height} phases, "
        f"omega 0.8, horizon {workload.horizon:.0f} s, window {workload.window}",
        stderr=False,
    )
    runs = {policy: replay_phases(workload, policy).metrics.to_dict() for policy in DEMO_POLICIES}
    show(metrics_table(runs, title="Phase-level replay (C engine)", reference="fair-share"))
    echo(f"Utilization upper bound 1 - omega/N = {1 - 0.8 / workload.n_jobs:.4f}", stderr=False)
    requests = _request_runs()
    show(_request_table(requests))
    with warnings_to_stderr():
        recommended = recommend(jobs, bandwidth=1e9)
    show(set_table(set_summary(recommended), title="Recommendation for the sample jobs (SET-10, B = 1 GB/s)"))
    ranking = tune(jobs)
    show(ranking_table(ranking, title="Tuning by replay: the sample jobs under each mapping"))
    site_requests, comparison = _trace_replay(recommended)
    _write_report(report_path, jobs, recommended, site_requests, comparison, ranking, requests["rbfq"])


def _sample_jobs() -> pl.DataFrame:
    """The jobs table of the bundled block traces and of pydarshan's example logs, with an ``input`` column."""
    import polars as pl

    from ..analyzer import analyze, analyze_requests
    from ..datasets import load_darshan_examples, load_sample_traces

    samples = load_sample_traces()
    frames = [
        analyze_requests(ops).with_columns(input=pl.lit(samples.paths[name].name))
        for name, ops in samples.requests.items()
    ]
    logs = analyze(list(load_darshan_examples().paths.values()), workers=1).jobs
    frames.append(logs.with_columns(pl.col("path").str.extract(r"([^/]+)$").alias("input")))
    return pl.concat([frame.drop("path") for frame in frames], how="vertical_relaxed")


def _sample_replay(jobs: pl.DataFrame) -> str:
    """The periodic sample jobs replayed for 2000 s under FAIR-SHARE and SET-10."""
    from ..replay import replay_phases
    from ..workload import Workload

    workload = Workload.from_jobs(jobs, horizon=2000.0, window=(200.0, 1800.0))
    metrics = {policy: replay_phases(workload, policy).metrics for policy in ("fair-share", "set-10")}
    return f"{workload.n_jobs} periodic jobs replayed for 2000 s: " + ", ".join(
        f"{policy} utilization {shown(m.utilization, '{:.4f}')} IO-slowdown {shown(m.io_slowdown, '{:.3f}')}"
        for policy, m in metrics.items()
    )


def _request_runs() -> dict[str, RequestReplay]:
    """Three backlogged sets (SET-10 priorities 1, 0.1, 0.01) replayed under fcfs, wfq and rbfq."""
    from ..datasets import make_backlogged_requests
    from ..replay import Device, replay_requests

    ops = make_backlogged_requests(30_000, 3, size_range=(65536, 65536), random_state=0)
    device = Device(seek=0.0)
    return {
        "fcfs": replay_requests(ops, "fcfs", device=device),
        "wfq": replay_requests(
            ops, "wfq", weights=dict(zip(SETS, [100 * 65536, 10 * 65536, 65536], strict=True)), device=device
        ),
        "rbfq": replay_requests(
            ops, "rbfq", weights=dict(zip(SETS, [100, 10, 1], strict=True)), reservations={"c2": 1000}, device=device
        ),
    }


def _request_table(runs: dict[str, RequestReplay]) -> RenderableType:
    """Byte shares of the three backlogged sets under each scheduler."""
    from ..replay import backlogged_shares

    rows = [
        {"scheduler": name, **dict(zip(SETS, backlogged_shares(result), strict=True))} for name, result in runs.items()
    ]
    return render_table(
        rows, SHARE_COLUMNS, title="Request-level replay: byte shares while all three sets are backlogged"
    )


TRACE_SCHEDULERS = ("fcfs", "wfq", "iosets-wfq")
"""The schedulers of the demo's closed-loop trace replay."""
TRACE_BANDWIDTH = 5e5
"""The demo disk's bytes/s: slower than the traced disks (alone, job 8,16 takes 88 s, not 50), so that phases meet."""


def _trace_replay(recommended: pl.DataFrame) -> tuple[pl.DataFrame, SchedulerComparison]:
    """The blkparse and MSR samples on one clock, replayed closed-loop on a slow disk under each scheduler."""
    from ..analyzer import site_trace
    from ..datasets import load_sample_traces
    from ..replay import Device, compare_schedulers

    paths = load_sample_traces().paths
    site = site_trace([paths["blkparse"], paths["msr"]], workers=1)  # SPC dates no request's end
    comparison = compare_schedulers(
        site.requests, recommended, TRACE_SCHEDULERS, device=Device(bandwidth=TRACE_BANDWIDTH)
    )
    title = f"Trace replay: the blkparse and MSR samples ({site.requests.height} requests) on a 0.5 MB/s disk"
    show(trace_scheduler_table(comparison, title=title))
    stretches = comparison.jobs.pivot(on="scheduler", index="job_id", values="stretch").join(
        recommended.select("job_id", "set"), on="job_id", how="left"
    )
    columns = (
        Column("job", field("job_id"), justify="left"),
        Column("set", field("set")),
        *(Column(name, field(name, "{:.3f}")) for name in TRACE_SCHEDULERS),
    )
    show(render_table(stretches.sort("job_id"), columns, title="Trace replay: stretch per job (runtime / alone)"))
    return site.requests, comparison


def _write_report(
    path: Path,
    jobs: pl.DataFrame,
    recommended: pl.DataFrame,
    site_requests: pl.DataFrame,
    comparison: SchedulerComparison,
    ranking: pl.DataFrame,
    requests: RequestReplay,
) -> None:
    """The HTML report of what the demo found, at ``path``; its path on stdout."""
    from ..report import build_report

    build_report(
        jobs,
        recommendation=recommended,
        site=site_requests,
        replay=comparison,
        tune=ranking,
        requests=requests.results,
        output=path,
    )
    echo(f"wrote {path}", stderr=False)
