"""``validate``: run a phase workload for real under each policy and compare the IO-SETS paper's metrics with the
phase engine's prediction, as the paper's section VI-A did before trusting its simulator."""

from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._validation import check_choice, check_count, check_positive
from ..errors import InputError
from ..workload import Workload

if TYPE_CHECKING:
    from ..replay import Device, PhaseMetrics
    from ._log_check import DarshanValidation, JobCheck
    from ._run import Run, RunSetup

POLICIES = ("system", "set-10", "fair-share", "exclusive-fcfs", "share-priority")
"""``system``: the programs alone, the storage's own scheduling; the others through the arbiter."""
SIMULATED_POLICY = {"system": "fair-share"}
"""The phase engine's policy for a measured one when they differ: the paper likens the "system scheduler" to
FAIR-SHARE (section VI-A)."""
METRICS = ("utilization", "io_slowdown", "max_stretch")
"""The IO-SETS paper's metrics a validation compares, in the order its results hold them."""
CRITERION = {"utilization": 0.035, "max_stretch": 0.015}
"""The paper's criterion: runs within 3.5 % of the simulated Utilization and 1.5 % of its Max Stretch..."""
CRITERION_SHARE = 0.8
"""... for 80 % of the runs."""
CALIBRATION_PHASES = 4
"""Phases of the calibration run; the first (which allocates the files' blocks) is not measured."""
CALIBRATION_BYTES = 256e6
"""Bytes per calibration phase when no workload sizes it yet (no --bandwidth, no --throttle)."""
CLIENT_TIMEOUT = 10.0
"""The arbiter client's timeout in the programs (s)."""


@dataclass(frozen=True)
class PolicyValidation:
    """Measured and simulated metrics of one policy.

    Attributes
    ----------
    policy : str
        As measured (``system`` or an arbiter policy).
    simulated_policy : str
        The phase engine's policy it is compared with.
    measured : dict of str to list
        Per metric (:data:`METRICS`), one value per repetition (None where the run gave none).
    simulated : PhaseMetrics
        The phase engine's metrics of the same workload at the measured bandwidth.
    """

    policy: str
    simulated_policy: str
    measured: dict[str, list[float | None]]
    simulated: PhaseMetrics

    def within(self, metric: str) -> float:
        """Share of the runs whose ``metric`` lies within :data:`CRITERION` (relative) of the simulated value."""
        expected, tolerance = getattr(self.simulated, metric), CRITERION[metric]
        values = self.measured[metric]
        if expected is None or not values:
            return 0.0
        return sum(v is not None and abs(v - expected) <= tolerance * abs(expected) for v in values) / len(values)

    def summary(self) -> list[dict]:
        """Per metric: measured ``min``, ``median`` and ``max``, ``simulated``, ``difference`` ((median - simulated)
        / simulated) and, for the criterion's metrics, ``within`` (:meth:`within`); None where undefined."""
        rows = []
        for metric in METRICS:
            values = [v for v in self.measured[metric] if v is not None]
            expected = getattr(self.simulated, metric)
            median = statistics.median(values) if values else None
            row = {
                "policy": self.policy,
                "metric": metric,
                "min": min(values, default=None),
                "median": median,
                "max": max(values, default=None),
                "simulated": expected,
                "difference": None if median is None or not expected else (median - expected) / expected,
                "within": self.within(metric) if metric in CRITERION else None,
            }
            rows.append(row)
        return rows

    def meets_criterion(self) -> bool:
        """Whether at least :data:`CRITERION_SHARE` of the runs are within each metric's tolerance."""
        return all(self.within(metric) >= CRITERION_SHARE for metric in CRITERION)

    def to_dict(self) -> dict:
        """``{"measured": {metric: [...]}, "simulated": {metric: value}}``."""
        return {"measured": {m: list(self.measured[m]) for m in METRICS}, "simulated": self.simulated.values()}


@dataclass(frozen=True)
class Validation:
    """Result of :func:`validate`.

    Attributes
    ----------
    workload : Workload
        The workload that ran, at the measured bandwidth (the one the phase engine replayed).
    bandwidth : float
        The measured bandwidth B (bytes/s): bytes over busy I/O time of one job alone.
    policies : dict of str to PolicyValidation
    throttle : float or None
        The cgroup's cap (bytes/s) the runs shared, if any.
    darshan : DarshanValidation or None
        With darshan-runtime: the analyzer's answer from each run's logs against the programs' truth, and the trace
        replay's predicted stretch against the measured one.
    """

    workload: Workload
    bandwidth: float
    policies: dict[str, PolicyValidation]
    throttle: float | None = None
    darshan: DarshanValidation | None = None

    def to_dict(self) -> dict:
        """``{"workload": {...}, "bandwidth": B, "policies": {policy: {"measured": ..., "simulated": ...}}}``, and
        ``"darshan": {...}`` (:meth:`DarshanValidation.to_dict`) after them with darshan-runtime."""
        data = {
            "workload": self.workload.to_dict(),
            "bandwidth": self.bandwidth,
            "policies": {policy: result.to_dict() for policy, result in self.policies.items()},
        }
        if self.darshan is not None:
            data["darshan"] = self.darshan.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping, *, source: str = "validation") -> Validation:
        """Build from :meth:`to_dict`'s form, every value checked (:func:`read_validation`), errors naming
        ``source`` and the key."""
        from ._read import validation_from_dict

        return validation_from_dict(data, source=source)

    def write(self, path: str | os.PathLike) -> Path:
        """Write :meth:`to_dict` as JSON (``validation.json``), atomically."""
        from .._io import atomic_path

        path = Path(path)
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(self.to_dict()) + "\n", encoding="utf-8")
        return path


def validate(
    folder: str | os.PathLike,
    workload: Workload | None = None,
    *,
    n_jobs: int = 8,
    horizon: float = 100.0,
    repeat: int = 3,
    policies: Sequence[str] = ("system", "set-10"),
    throttle: float | None = None,
    bandwidth: float | None = None,
    processes: int = 1,
    request_size: int = 1 << 20,
    darshan: str | os.PathLike | None = None,
    darshan_logs: str | os.PathLike | None = None,
    report: Callable[[str], None] | None = None,
) -> Validation:
    """Run a phase workload for real in ``folder`` under each policy, ``repeat`` times, and replay it in the phase
    engine at the measured bandwidth.

    Each job is one benchmark program (``periodic``, compiled on first use), with ``processes`` processes
    writing ``request_size``-byte requests to their own files; every job is released at its release date,
    and no phase starts after the window's end. ``system`` runs the programs alone; the other policies run
    them through the arbiter (``iosets arbiter``), which tells each job when it may write and at what rate.
    A first run of one job alone measures the bandwidth B. Disk use is one phase per process; the run's
    files are removed at the end, Ctrl-C included.

    Parameters
    ----------
    folder : path
        Where the programs write (on the storage to validate).
    workload : Workload, default=None
        The workload to run as it is; by default the IO-SETS paper's Fig. 4 scenario
        (:func:`make_fig4_workload` with ``n_jobs`` and ``horizon``, sized for ``bandwidth``).
    n_jobs : int, default=8
    horizon : float, default=100.0
        Of the default workload (s); a run lasts about 0.98 ``horizon``.
    repeat : int, default=3
        Runs per policy.
    policies : sequence of str, default=("system", "set-10")
        Among :data:`POLICIES`.
    throttle : float, default=None
        Cap every run process's reads and writes at this many bytes/s in one block-I/O cgroup (root).
    bandwidth : float, default=None
        The B that sizes the default workload; by default ``throttle``, else the measured one.
    processes : int, default=1
        Processes per job (P).
    request_size : int, default=1 MiB
        Bytes per write request (R), a multiple of 4096.
    darshan : path, default=None
        A darshan-runtime install (non-MPI): every program runs under it, each run's logs are analyzed and
        compared with the programs' timestamps, and the trace replay of each run's logs predicts each job's
        stretch (on a device calibrated on the logs of the calibration run).
    darshan_logs : path, default=None
        Where to keep the logs (a new or empty folder): ``calibration/``, then ``<policy>-<repetition>/``, each
        with the programs' CSVs (``j<k>.csv``: Darshan job id k + 1); by default they are removed with the run's
        files.
    report : callable, default=None
        Called with a line of progress after each step.

    Returns
    -------
    Validation
    """
    repeat = check_count(repeat, "repeat", minimum=1)
    policies = _check_policies(policies)
    throttle = None if throttle is None else check_positive(throttle, "throttle")
    bandwidth = None if bandwidth is None else check_positive(bandwidth, "bandwidth")
    processes = check_count(processes, "processes", minimum=1, maximum=1024)
    request_size = check_count(request_size, "request_size", minimum=4096)
    if request_size % 4096:
        raise InputError(f"request_size must be a multiple of 4096, got {request_size}")
    say = report or (lambda text: None)
    runtime, kept_logs = None, None
    if darshan is not None:
        from ._darshan import find_darshan

        runtime = find_darshan(darshan)
        kept_logs = None if darshan_logs is None else _empty_folder(darshan_logs)
    elif darshan_logs is not None:
        raise InputError("darshan_logs: the runs write Darshan logs only under darshan-runtime: give darshan too")

    from ._build import build_periodic
    from ._disk import check_free_space, run_folder
    from ._log_check import DarshanValidation, calibrate_on
    from ._run import RunSetup
    from ._scenario import make_fig4_workload
    from ._throttle import throttle_group

    program = build_periodic()
    sizing = bandwidth or throttle
    if workload is None and sizing is not None:
        workload = make_fig4_workload(n_jobs, horizon=horizon, bandwidth=sizing)
    with run_folder(folder) as run_dir:
        calibration_bytes = float(workload.io_bytes.max(initial=0.0)) if workload is not None else CALIBRATION_BYTES
        if workload is not None:
            _check_space(workload, run_dir, processes)
        check_free_space(run_dir, _job_bytes(calibration_bytes, processes), what="the calibration run")
        group = throttle_group(run_dir, throttle) if throttle is not None else contextlib.nullcontext()
        logs = (kept_logs or run_dir / "darshan") if runtime is not None else None
        with group as cap:
            setup = RunSetup(program, run_dir, processes, request_size, cap, runtime)
            measured_bandwidth = _calibrate(setup, max(calibration_bytes, request_size), logs)
            capped = f", throttle {throttle / 1e6:.1f} MB/s" if throttle else ""
            say(f"bandwidth B = {measured_bandwidth / 1e6:.1f} MB/s, measured with one job alone{capped}")
            if workload is None:
                workload = make_fig4_workload(n_jobs, horizon=horizon, bandwidth=measured_bandwidth)
                _check_space(workload, run_dir, processes)
            replayed = _at_bandwidth(workload, measured_bandwidth)
            calibration = calibrate_on(logs / "calibration") if logs is not None else None
            device = None if calibration is None else calibration.device
            if device is not None:
                say(f"device calibrated on the Darshan logs of the calibration run: {device.describe()}")
            results, checks = {}, []
            for policy in policies:
                results[policy], found = _validate_policy(
                    policy, replayed, setup, repeat, measured_bandwidth, say, logs, device
                )
                checks += found
    logged = None
    if runtime is not None and calibration is not None:
        kept = None if kept_logs is None else str(kept_logs)
        logged = DarshanValidation(str(runtime.prefix), kept, calibration.device, dict(calibration.error), checks)
    return Validation(replayed, measured_bandwidth, results, throttle, logged)


def _empty_folder(path: str | os.PathLike) -> Path:
    """``path`` as a new or empty folder for the runs' Darshan logs, so that no earlier log joins their analysis."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if any(folder.iterdir()):
            raise InputError(f"darshan_logs: {folder} is not empty: give a new or empty folder for the runs' logs")
    except OSError as exc:
        raise InputError(f"darshan_logs: cannot use {folder} ({exc.strerror or exc})") from None
    return folder.resolve()


def _check_policies(policies: Sequence[str]) -> list[str]:
    chosen = list(policies)
    if not chosen:
        raise InputError(f"policies: expected at least one of {', '.join(POLICIES)}")
    for policy in chosen:
        check_choice(policy, "policy", POLICIES)
    if len(set(chosen)) != len(chosen):
        raise InputError(f"policies: each policy once, got {', '.join(chosen)}")
    return chosen


def _job_bytes(phase_bytes: float, processes: int) -> int:
    from ._disk import process_share

    return int(process_share(np.array([phase_bytes]), processes)[0]) * processes


def _check_space(workload: Workload, folder: Path, processes: int) -> None:
    from ._disk import check_free_space, run_bytes

    needed = run_bytes(workload.io_bytes, workload.phase_job, workload.n_jobs, processes)
    check_free_space(folder, needed, what=f"a run of {workload.n_jobs} jobs x {processes} processes")


def _calibrate(setup: RunSetup, phase_bytes: float, logs: Path | None) -> float:
    """Bytes over busy I/O time of one job alone: :data:`CALIBRATION_PHASES` phases without compute, the first
    left out; under darshan-runtime, its logs in ``logs / "calibration"``."""
    from ._run import run_workload

    n = CALIBRATION_PHASES
    alone = Workload.from_arrays(
        ["calibration"], [0.0], np.zeros(n, np.int64), np.zeros(n), np.full(n, phase_bytes), source="calibration"
    )
    calibration_logs = None if logs is None else logs / "calibration"
    run = run_workload(alone, setup, bound=600.0 + n * phase_bytes / 1e6, logs=calibration_logs)
    busy = float(np.sum(run.times[3, 1:] - run.times[2, 1:]))
    moved = (n - 1) * _job_bytes(phase_bytes, setup.processes)
    if not busy > 0:
        raise InputError(f"calibration: {moved} bytes took no measurable time; give larger phases")
    return moved / busy


def _at_bandwidth(workload: Workload, bandwidth: float) -> Workload:
    """``workload`` on a platform of ``bandwidth`` bytes/s (phases unchanged)."""
    return Workload.from_arrays(
        workload.ids,
        workload.release,
        workload.phase_job,
        workload.t_cpu,
        workload.io_bytes,
        set=workload.optional["set"],
        priority=workload.optional["priority"],
        w_iter=workload.optional["w_iter"],
        profile=workload.optional["profile"],
        bandwidth=bandwidth,
        horizon=workload.horizon,
        window=workload.window,
    )


def _validate_policy(
    policy: str,
    workload: Workload,
    setup: RunSetup,
    repeat: int,
    bandwidth: float,
    say: Callable[[str], None],
    logs: Path | None = None,
    device: Device | None = None,
) -> tuple[PolicyValidation, list[JobCheck]]:
    """``repeat`` runs of ``workload`` under ``policy`` and its phase replay; under darshan-runtime, each run's logs
    in ``logs / "<policy>-<repetition>"`` and their checks, the trace replay on ``device``."""
    from ..replay import replay_phases
    from ._log_check import check_run
    from ._timestamps import measured_metrics

    simulated_policy = SIMULATED_POLICY.get(policy, policy)
    simulated = replay_phases(workload, simulated_policy).metrics
    measured: dict[str, list[float | None]] = {metric: [] for metric in METRICS}
    checks: list[JobCheck] = []
    for r in range(repeat):
        run_logs = None if logs is None else logs / f"{policy}-{r + 1}"
        run = _run_policy(policy, workload, setup, bandwidth, run_logs)
        for job, text in run.messages.items():
            say(f"{policy} run {r + 1}: job {job}: {text}")
        if run_logs is not None and device is not None:
            found = check_run(
                run_logs, workload.ids, policy=policy, repetition=r + 1, bandwidth=bandwidth, device=device
            )
            checks += found
            say(f"{policy} run {r + 1}: the Darshan logs of {len(found)} jobs analyzed and replayed")
        metrics = measured_metrics(workload, run.times)
        for metric, value in metrics.values().items():
            measured[metric].append(value)
        shown = ", ".join(f"{m} {_shown(v)}" for m, v in metrics.values().items())
        say(f"{policy} run {r + 1}/{repeat}: {shown}")
    return PolicyValidation(policy, simulated_policy, measured, simulated), checks


def _run_policy(policy: str, workload: Workload, setup: RunSetup, bandwidth: float, logs: Path | None) -> Run:
    """One run under ``policy``: alone for ``system``, else through a fresh arbiter; Darshan logs in ``logs``."""
    from ._disk import run_bytes
    from ._run import run_workload

    end = workload.window[1]
    largest = run_bytes(workload.io_bytes, workload.phase_job, workload.n_jobs, setup.processes)
    bound = end + 60.0 + 4 * largest / bandwidth + 2 * CLIENT_TIMEOUT  # a last phase each, all in turn
    if policy == "system":
        return run_workload(workload, setup, bound=bound, stop=end, logs=logs)
    from ..replay import assign_policy
    from ._arbiter import running_arbiter

    sets, priorities = assign_policy(workload, policy)
    sets = sets - sets.min(initial=0)  # the wire wants sets >= 0; only their equality matters
    with running_arbiter(policy, bandwidth) as address:
        return run_workload(
            workload,
            setup,
            bound=bound,
            stop=end,
            arbiter=address,
            sets=sets,
            priorities=priorities,
            timeout=CLIENT_TIMEOUT,
            logs=logs,
        )


def _shown(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.4f}"
