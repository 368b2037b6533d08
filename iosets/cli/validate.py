"""The validate room's command: ``validate`` (real runs on the machine's storage against the phase engine)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from ._choices import VALIDATE_POLICIES
from ._output import echo, show
from ._parse import parse_names
from ._tables import Column, field, render_table

VALIDATION_COLUMNS = (
    Column("metric", field("metric"), justify="left"),
    Column("min", field("min", "{:.4f}")),
    Column("median", field("median", "{:.4f}")),
    Column("max", field("max", "{:.4f}")),
    Column("simulated", field("simulated", "{:.4f}")),
    Column("median - sim.", field("difference", "{:+.2f} %", scale=100)),
    Column("runs within", field("within", "{:.0%}")),
)
"""One policy of ``PolicyValidation.summary()``."""
DARSHAN_COLUMNS = (
    Column("run", lambda row: f"{row['policy']} {row['repetition']}", justify="left"),
    Column("job", field("job_id"), justify="left"),
    Column("w_iter true", field("truth_w_iter", "{:.4f}")),
    Column("analyzer", field("analyzer_w_iter", "{:.4f}")),
    Column("alpha_io true", field("truth_alpha_io", "{:.4f}")),
    Column("analyzer", field("analyzer_alpha_io", "{:.4f}")),
    Column("bytes true", field("truth_bytes", "{:,}")),
    Column("analyzer", field("analyzer_bytes", "{:,}")),
    Column("phases true", field("truth_n_phases")),
    Column("analyzer", field("analyzer_n_phases")),
    Column("stretch measured", field("measured_stretch", "{:.3f}")),
    Column("predicted", field("predicted_stretch", "{:.3f}")),
)
"""One job of ``JobCheck.row()``."""


def validate(
    folder: Annotated[
        Path, typer.Option("--dir", help="Folder on the storage to validate: the runs write there, then clean up.")
    ],
    jobs: Annotated[
        int | None, typer.Option("--jobs", help="N of the default workload, the IO-SETS paper's Fig. 4 (default 8).")
    ] = None,
    horizon: Annotated[
        float | None, typer.Option(help="H of the default workload in s (default 100); a run lasts 0.98 H.")
    ] = None,
    repeat: Annotated[int, typer.Option(help="Runs per policy.")] = 3,
    policies: Annotated[str, typer.Option(help=f"Comma-separated, among: {', '.join(VALIDATE_POLICIES)}.")] = (
        "system,set-10"
    ),
    throttle: Annotated[
        float | None,
        typer.Option(metavar="BYTES_PER_S", help="Cap the runs' reads and writes in one block-I/O cgroup (root)."),
    ] = None,
    bandwidth: Annotated[
        float | None,
        typer.Option(help="B that sizes the default workload (bytes/s); default: --throttle, else measured."),
    ] = None,
    workload: Annotated[
        Path | None, typer.Option(help="Run this workload (.json or Parquet folder of `iosets generate`) instead.")
    ] = None,
    processes: Annotated[int, typer.Option(help="Processes per job, each writing its own file.")] = 1,
    request_size: Annotated[int, typer.Option(help="Bytes per write request, a multiple of 4096.")] = 1 << 20,
    output: Annotated[Path, typer.Option("--output", "-o", help="The results (JSON).")] = Path("validation.json"),
    darshan: Annotated[
        Path | None,
        typer.Option(
            metavar="PREFIX",
            help="Run every program under this darshan-runtime install (non-MPI) and check the analyzer and the "
            "trace replay on the logs.",
        ),
    ] = None,
    darshan_logs: Annotated[
        Path | None,
        typer.Option(help="Keep the runs' Darshan logs in this new or empty folder (default: OUTPUT's stem-darshan)."),
    ] = None,
) -> None:
    """Run a phase workload for real under each policy and compare the paper's metrics with the phase engine's."""
    from .._io import check_output
    from ..validate import CRITERION, CRITERION_SHARE
    from ..validate import validate as run_validation
    from ..workload import read_workload

    if workload is not None and (jobs is not None or horizon is not None):
        raise InputError("--jobs and --horizon shape the default workload: give them or --workload, not both")
    check_output(output, suffixes=(".json",), what="validation")
    if darshan_logs is not None and darshan is None:
        raise InputError("--darshan-logs keeps the logs of --darshan: give --darshan PREFIX too")
    if darshan is not None and darshan_logs is None:
        darshan_logs = output.with_name(f"{output.stem}-darshan")
    chosen = read_workload(workload) if workload is not None else None
    with _terminate_as_interrupt():
        result = run_validation(
            folder,
            chosen,
            n_jobs=8 if jobs is None else jobs,
            horizon=100.0 if horizon is None else horizon,
            repeat=repeat,
            policies=parse_names(policies),
            throttle=throttle,
            bandwidth=bandwidth,
            processes=processes,
            request_size=request_size,
            darshan=darshan,
            darshan_logs=darshan_logs,
            report=echo,
        )
    for policy, outcome in result.policies.items():
        title = (
            f"{policy}: {repeat} runs, simulated as {outcome.simulated_policy} at B = {result.bandwidth / 1e6:.1f} MB/s"
        )
        show(render_table(outcome.summary(), VALIDATION_COLUMNS, title=title))
        verdict = "meets" if outcome.meets_criterion() else "misses"
        utilization, stretch = (f"{CRITERION[name] * 100:.1f} %" for name in ("utilization", "max_stretch"))
        echo(
            f"{policy}: {outcome.within('utilization'):.0%} of runs within {utilization} of the simulated Utilization, "
            f"{outcome.within('max_stretch'):.0%} within {stretch} of its Max Stretch: {verdict} the paper's criterion "
            f"({CRITERION_SHARE * 100:.0f} % of runs)",
            stderr=False,
        )
    if result.darshan is not None:
        rows = [job.row() for job in result.darshan.jobs]
        title = (
            "Darshan logs: the analyzer against the programs' truth, the trace replay's stretch against the measured"
        )
        caption = f"logs in {result.darshan.logs}" if result.darshan.logs else None
        show(render_table(rows, DARSHAN_COLUMNS, title=title, caption=caption))
    echo(f"wrote {result.write(output)}")


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C while the runs go on, so that the programs, the cgroup and the files are removed."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
