"""One real run of a workload: a benchmark program per job, all released on one date, their timestamps read back."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import IosetsError
from ._darshan import darshan_job_id
from ._timestamps import workload_times

if TYPE_CHECKING:
    from ..workload import Workload
    from ._darshan import DarshanRuntime
    from ._throttle import Throttle

START_DELAY = 1.0
"""Seconds between launching the programs and their common release date (plus 20 ms per job)."""
POLL_INTERVAL = 0.1


@dataclass(frozen=True)
class RunSetup:
    """How the programs run: the executable, the folder of the run's files, P, R, the throttle group and the
    darshan-runtime they run under."""

    program: Path
    folder: Path
    processes: int = 1
    request_size: int = 1 << 20
    throttle: Throttle | None = None
    darshan: DarshanRuntime | None = None


@dataclass(frozen=True)
class Run:
    """A run's dates (s since the release date, shape (4, n_phases), +inf for phases not run) and what the
    programs said on stderr (``{job id: text}``, non-empty only)."""

    times: np.ndarray
    messages: dict[str, str]


def run_workload(
    workload: Workload,
    setup: RunSetup,
    *,
    bound: float,
    stop: float | None = None,
    arbiter: str | None = None,
    sets: np.ndarray | None = None,
    priorities: np.ndarray | None = None,
    timeout: float = 10.0,
    logs: Path | None = None,
) -> Run:
    """Run every job of ``workload`` once, each as its own program released at its ``release`` date.

    Parameters
    ----------
    workload : Workload
        Jobs and phases, run as they are (t_cpu s of sleep, io_bytes written per phase).
    setup : RunSetup
    bound : float
        Seconds after the release date by which every program must have ended; past it they are killed.
    stop : float, default=None
        No phase starts at or after this date (s); by default every phase runs.
    arbiter : str, default=None
        The arbiter's address; ``sets`` and ``priorities`` (per job) are what each job tells it.
    timeout : float, default=10.0
        The arbiter client's timeout (s).
    logs : path, default=None
        With ``setup.darshan``, a new folder for the run's Darshan logs (job number k has Darshan job id
        :func:`darshan_job_id` (k)); the programs' CSVs are copied there at the end.

    Returns
    -------
    Run
    """
    folder, darshan = setup.folder, setup.darshan
    if darshan is not None:
        if logs is None:
            raise ValueError("run_workload: a run under darshan-runtime needs a folder for its logs")
        logs.mkdir(parents=True)
    origin = time.time_ns() + int((START_DELAY + 0.02 * workload.n_jobs) * 1e9)
    programs: list[subprocess.Popen] = []
    csvs, outputs = [], []
    try:
        for j in range(workload.n_jobs):
            name = f"j{j}"
            phases = folder / f"{name}.phases"
            rows = slice(workload.offsets[j], workload.offsets[j + 1])
            pairs = zip(workload.t_cpu[rows], workload.io_bytes[rows], strict=True)
            phases.write_text("".join(f"{float(t)!r} {float(b)!r}\n" for t, b in pairs), encoding="ascii")
            csvs.append(folder / f"{name}.csv")
            outputs.append(folder / f"{name}.stderr")
            command = [
                str(setup.program),
                *("--job-id", name, "--dir", str(folder), "--output", str(csvs[-1]), "--phases", str(phases)),
                *("--request-size", str(setup.request_size), "--processes", str(setup.processes)),
                *("--start-at", str(origin + int(workload.release[j] * 1e9))),
            ]
            if stop is not None:
                command += ["--stop-at", str(origin + int(stop * 1e9))]
            if arbiter is not None:
                assert sets is not None and priorities is not None
                command += ["--arbiter", arbiter, "--set", str(int(sets[j])), "--priority", repr(float(priorities[j]))]
                command += ["--timeout", repr(timeout)]
            if darshan is not None and logs is not None:
                command = darshan.wrap(command, job_id=darshan_job_id(j), logs=logs, data=folder)
            if setup.throttle is not None:
                command = setup.throttle.wrap(command)
            with outputs[-1].open("wb") as log:
                programs.append(
                    subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
                )
        _wait(programs, outputs, workload.ids, deadline=origin / 1e9 + bound)
    finally:
        for program in programs:
            if program.poll() is None:
                os.killpg(program.pid, signal.SIGKILL)  # the program and the processes it forked
                program.wait()
    messages = {
        workload.ids[j]: text for j, log in enumerate(outputs) if (text := log.read_text(errors="replace").strip())
    }
    if darshan is not None and logs is not None:
        for csv in csvs:
            shutil.copyfile(csv, logs / csv.name)
    return Run(workload_times(workload, csvs, origin), messages)


def _wait(programs: list[subprocess.Popen], logs: list[Path], ids: list[str], *, deadline: float) -> None:
    """Wait for every program; the first that fails, or the deadline, is an error naming the job."""
    running = set(range(len(programs)))
    while running:
        for j in sorted(running):
            code = programs[j].poll()
            if code is None:
                continue
            running.discard(j)
            if code != 0:
                how = f"signal {-code}" if code < 0 else f"exit status {code}"
                text = logs[j].read_text(errors="replace").strip()[-2000:]
                raise IosetsError(f"the benchmark program of job {ids[j]!r} ended with {how}: {text}")
        if running and time.time() > deadline:
            late = ", ".join(repr(ids[j]) for j in sorted(running))
            raise IosetsError(f"the benchmark programs of jobs {late} were still running at their bound: killed")
        if running:
            time.sleep(POLL_INTERVAL)
