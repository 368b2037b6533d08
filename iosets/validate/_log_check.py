"""The Darshan logs of a run against its programs' truth: the analyzer's answer per job, and the trace replay's
predicted stretch against the measured one.

A run's log folder holds each job's logs (Darshan job id :func:`darshan_job_id` of its number) and its program's
CSV ``j<number>.csv``. The analyzer reads the logs as a site would (:func:`iosets.analyzer.analyze`); the trace
replay (:func:`iosets.replay.compare_schedulers`, ``fcfs``) replays them on a device calibrated on the logs of one
job alone (:func:`iosets.replay.calibrate`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError, IosetsError
from ._darshan import darshan_job_id
from ._truth import TRUTH_FIELDS, JobTruth, read_truth

if TYPE_CHECKING:
    import polars as pl

    from ..replay import Calibration, Device

ANALYZER_COLUMNS = {"w_iter": "w_iter", "alpha_io": "alpha_io", "bytes": "bytes_written", "n_phases": "n_phases"}
"""The jobs table's column of each :data:`TRUTH_FIELDS` quantity."""
REPLAY_SCHEDULER = "fcfs"
"""The request scheduler the trace replay predicts with: the storage's own order, as the runs had no other."""


@dataclass(frozen=True)
class JobCheck:
    """One job of one run: its truth, the analyzer's answer from its logs, and its stretch measured and predicted.

    Attributes
    ----------
    policy : str
        The run's policy.
    repetition : int
        The run's number, from 1.
    job_id : str
        The workload's job.
    darshan_job_id : str
        The job id in its Darshan logs.
    truth : JobTruth
        From the program's timestamps.
    analyzer : dict of str to float, int or None
        The jobs table's ``w_iter``, ``alpha_io``, ``bytes_written`` (as ``bytes``) and ``n_phases``.
    measured_stretch : float or None
        The job's runtime over its compute plus its bytes at the measured bandwidth (:meth:`JobTruth.stretch`).
    predicted_stretch : float or None
        The trace replay's: its replayed runtime under :data:`REPLAY_SCHEDULER` over its replayed runtime alone.
    """

    policy: str
    repetition: int
    job_id: str
    darshan_job_id: str
    truth: JobTruth
    analyzer: dict[str, float | int | None]
    measured_stretch: float | None
    predicted_stretch: float | None

    def row(self) -> dict:
        """One flat row: ``policy``, ``repetition``, ``job_id``, then ``truth_<q>`` and ``analyzer_<q>`` per quantity,
        ``measured_stretch`` and ``predicted_stretch``."""
        row: dict = {"policy": self.policy, "repetition": self.repetition, "job_id": self.job_id}
        for name in TRUTH_FIELDS:
            row[f"truth_{name}"] = getattr(self.truth, name)
            row[f"analyzer_{name}"] = self.analyzer[name]
        return {**row, "measured_stretch": self.measured_stretch, "predicted_stretch": self.predicted_stretch}

    def to_dict(self) -> dict:
        """``{"policy", "repetition", "job_id", "darshan_job_id", "truth": {...}, "analyzer": {...}, "stretch":
        {"measured", "predicted"}}``."""
        return {
            "policy": self.policy,
            "repetition": self.repetition,
            "job_id": self.job_id,
            "darshan_job_id": self.darshan_job_id,
            "truth": self.truth.to_dict(),
            "analyzer": dict(self.analyzer),
            "stretch": {"measured": self.measured_stretch, "predicted": self.predicted_stretch},
        }

    @classmethod
    def from_dict(cls, data: dict) -> JobCheck:
        """The job of :meth:`to_dict`'s dict."""
        return cls(
            data["policy"],
            int(data["repetition"]),
            data["job_id"],
            data["darshan_job_id"],
            JobTruth(**data["truth"]),
            dict(data["analyzer"]),
            data["stretch"]["measured"],
            data["stretch"]["predicted"],
        )


@dataclass(frozen=True)
class DarshanValidation:
    """The Darshan part of a validation: the install, where the logs are, the replay's device and each job's check.

    Attributes
    ----------
    prefix : str
        The darshan-runtime install.
    logs : str or None
        The folder of the runs' log folders (``calibration``, ``<policy>-<repetition>``); None when they were
        removed with the run's files.
    device : Device
        The device calibrated on the logs of the calibration run (one job alone).
    calibration_error : dict of str to float
        :attr:`iosets.replay.Calibration.error` of that device.
    jobs : list of JobCheck
        One per job of each run, in run order.
    """

    prefix: str
    logs: str | None
    device: Device
    calibration_error: dict[str, float]
    jobs: list[JobCheck] = field(default_factory=list)

    def to_dict(self) -> dict:
        """``{"prefix", "logs", "device": {...}, "calibration_error": {...}, "jobs": [JobCheck.to_dict(), ...]}``."""
        return {
            "prefix": self.prefix,
            "logs": self.logs,
            "device": self.device.to_dict(),
            "calibration_error": {name: _finite(value) for name, value in self.calibration_error.items()},
            "jobs": [job.to_dict() for job in self.jobs],
        }

    @classmethod
    def from_dict(cls, data: dict) -> DarshanValidation:
        """The result of :meth:`to_dict`'s dict (validation.json's ``darshan``)."""
        from ..replay import Device

        errors = data["calibration_error"]
        errors = {name: math.nan if value is None else float(value) for name, value in errors.items()}
        return cls(
            data["prefix"],
            data["logs"],
            Device.from_dict(data["device"], source="validation.json darshan device"),
            errors,
            [JobCheck.from_dict(job) for job in data["jobs"]],
        )


def calibrate_on(folder: Path) -> Calibration:
    """The device under which the fcfs trace replay reproduces the logs in ``folder`` (a run of one job alone)."""
    from ..analyzer import site_trace
    from ..replay import calibrate

    site = site_trace([folder], workers=1)
    _raise_errors(site.errors, folder)
    if site.requests.is_empty():
        raise IosetsError(f"{folder}: the calibration run's logs hold no request to calibrate the device on")
    return calibrate(site.requests)


def check_run(
    folder: Path, job_ids: list[str], *, policy: str, repetition: int, bandwidth: float, device: Device
) -> list[JobCheck]:
    """Each job of the run whose logs and CSVs are in ``folder``: the analyzer's answer against the truth, and the
    trace replay's stretch on ``device`` against the measured one at ``bandwidth`` bytes/s.

    ``job_ids[k]`` is the workload's id of job number k (CSV ``j<k>.csv``, Darshan job id ``k + 1``).
    """
    from ..analyzer import analyze, site_trace
    from ..recommender import recommend
    from ..replay import compare_schedulers

    analysis = analyze([folder], workers=1)
    _raise_errors(analysis.errors, folder)
    site = site_trace([folder], workers=1)
    _raise_errors(site.errors, folder)
    rec = recommend(analysis.jobs)
    replay = compare_schedulers(site.requests, rec, [REPLAY_SCHEDULER], device=device, site_jobs=site.jobs)
    predicted = dict(zip(replay.jobs["job_id"].to_list(), replay.jobs["stretch"].to_list(), strict=True))
    checks = []
    for k, job_id in enumerate(job_ids):
        name = darshan_job_id(k)
        _, truth = read_truth(folder / f"j{k}.csv")
        checks.append(
            JobCheck(
                policy,
                repetition,
                job_id,
                name,
                truth,
                analyzer_answer(analysis.jobs, name, folder),
                truth.stretch(bandwidth),
                predicted.get(name),
            )
        )
    return checks


def analyzer_answer(jobs: pl.DataFrame, darshan_id: str, folder: Path) -> dict[str, float | int | None]:
    """The jobs table's answer for the job of id ``darshan_id`` (its logs merged into one row), by quantity."""
    rows = jobs.filter(jobs["job_id"] == darshan_id)
    if rows.height != 1:
        raise IosetsError(
            f"{folder}: expected one row of Darshan job id {darshan_id} in the analysis of its logs, got {rows.height}"
        )
    row = rows.row(0, named=True)
    answer = {name: row[column] for name, column in ANALYZER_COLUMNS.items()}
    answer["bytes"] = None if answer["bytes"] is None else int(answer["bytes"])
    return answer


def _raise_errors(errors: pl.DataFrame, folder: Path) -> None:
    """A log the analyzer could not read fails the validation, naming it."""
    if errors.height:
        path, reason = errors.row(0)
        raise InputError(f"{folder}: the analyzer could not read {path}: {reason}")


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value
