"""The workload interchange format: jobs made of (t_cpu, io_bytes) phases.

A workload is written as JSON for small cases (DESIGN.md) or as a folder
holding ``jobs.parquet`` and ``phases.parquet`` for large ones.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ._io import atomic_path
from .errors import InputError

__all__ = ["Workload", "periodic_jobs", "read_workload", "write_workload"]

JOB_SCHEMA = {
    "id": pl.String,
    "release": pl.Float64,
    "set": pl.Int64,
    "priority": pl.Float64,
    "w_iter": pl.Float64,
    "profile": pl.Int64,
}
PHASE_SCHEMA = {"job": pl.Int64, "t_cpu": pl.Float64, "io_bytes": pl.Float64}
OPTIONAL_JOB_FIELDS = ("set", "priority", "w_iter", "profile")


@dataclass(frozen=True)
class Workload:
    """Jobs, their phases and the platform they run on.

    Attributes
    ----------
    jobs : polars.DataFrame
        One row per job: ``id``, ``release`` (s), and nullable ``set``, ``priority``,
        ``w_iter`` (s, the characteristic time) and ``profile`` (generator profile index).
    phases : polars.DataFrame
        One row per phase, grouped by job in job order: ``job`` (row index in ``jobs``),
        ``t_cpu`` (s) and ``io_bytes``.
    bandwidth : float
        File system bandwidth B in bytes/s.
    horizon : float
        Nominal length of the experiment (s); jobs may end after it.
    window : tuple of float
        ``(T_begin, T_end)`` over which metrics are measured.
    """

    jobs: pl.DataFrame
    phases: pl.DataFrame
    bandwidth: float = 1e9
    horizon: float = 20000.0
    window: tuple[float, float] = (6000.0, 14000.0)

    def __post_init__(self) -> None:
        if not (self.bandwidth > 0 and math.isfinite(self.bandwidth)):
            raise InputError(f"workload: bandwidth must be > 0, got {self.bandwidth!r}")
        tb, te = self.window
        if not (0 <= tb < te):
            raise InputError(f"workload: window must satisfy 0 <= T_begin < T_end, got {self.window!r}")
        job = self.phases["job"].to_numpy()
        if job.size and (job[0] < 0 or job[-1] >= self.n_jobs or np.any(np.diff(job) < 0)):
            raise InputError("workload: phases must be grouped by job in job order with valid job indices")

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return self.jobs.height

    def phase_offsets(self) -> np.ndarray:
        """Offsets (int64, n_jobs + 1) such that job j owns phases ``[off[j], off[j+1])``."""
        counts = np.bincount(self.phases["job"].to_numpy(), minlength=self.n_jobs)
        return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)

    def characteristic_times(self) -> np.ndarray:
        """Per-job w_iter: the ``w_iter`` column where given, else mean(t_cpu + io_bytes/B)."""
        per_phase = self.phases["t_cpu"].to_numpy() + self.phases["io_bytes"].to_numpy() / self.bandwidth
        job = self.phases["job"].to_numpy()
        sums = np.bincount(job, weights=per_phase, minlength=self.n_jobs)
        counts = np.bincount(job, minlength=self.n_jobs)
        observed = np.divide(sums, counts, out=np.full(self.n_jobs, np.nan), where=counts > 0)
        given = self.jobs["w_iter"].to_numpy().astype(float)
        return np.where(np.isnan(given), observed, given)

    def to_jobs(self) -> pl.DataFrame:
        """A jobs table (DESIGN.md subset) of the workload: ``job_id``, ``w_iter``, ``alpha_io``
        (I/O time alone over total time), ``n_phases`` and ``w_iter_confidence`` 1; the inverse
        of :meth:`from_jobs` for periodic jobs."""
        job = self.phases["job"].to_numpy()
        io_time = np.bincount(job, weights=self.phases["io_bytes"].to_numpy() / self.bandwidth, minlength=self.n_jobs)
        total = io_time + np.bincount(job, weights=self.phases["t_cpu"].to_numpy(), minlength=self.n_jobs)
        return pl.DataFrame(
            {
                "job_id": self.jobs["id"],
                "w_iter": self.characteristic_times(),
                "w_iter_confidence": 1.0,
                "alpha_io": np.divide(io_time, total, out=np.zeros(self.n_jobs), where=total > 0),
                "n_phases": np.bincount(job, minlength=self.n_jobs),
            },
            nan_to_null=True,
        )

    def with_assignment(self, sets: np.ndarray, priorities: np.ndarray) -> Workload:
        """Copy of the workload whose jobs carry the given sets and priorities."""
        jobs = self.jobs.with_columns(
            pl.Series("set", np.asarray(sets, dtype=np.int64)),
            pl.Series("priority", np.asarray(priorities, dtype=np.float64)),
        )
        return replace(self, jobs=jobs)

    def to_dict(self) -> dict:
        """The JSON form of DESIGN.md (optional job fields only where set)."""
        offsets = self.phase_offsets()
        pairs = np.column_stack((self.phases["t_cpu"].to_numpy(), self.phases["io_bytes"].to_numpy()))
        jobs = []
        for j, row in enumerate(self.jobs.iter_rows(named=True)):
            entry = {"id": row["id"], "release": row["release"]}
            entry.update({k: row[k] for k in OPTIONAL_JOB_FIELDS if row[k] is not None})
            entry["phases"] = pairs[offsets[j] : offsets[j + 1]].tolist()
            jobs.append(entry)
        return {
            "bandwidth": self.bandwidth,
            "horizon": self.horizon,
            "window": list(self.window),
            "jobs": jobs,
        }

    @classmethod
    def from_jobs(
        cls,
        jobs: pl.DataFrame,
        *,
        bandwidth: float = 1e9,
        horizon: float = 20000.0,
        window: tuple[float, float] = (6000.0, 14000.0),
        random_state=None,
    ) -> Workload:
        """Periodic jobs from a jobs table: each job with a ``w_iter`` and ``alpha_io`` runs
        floor(horizon / w_iter) iterations of (1 - alpha_io) w_iter s of compute and
        alpha_io w_iter B bytes of I/O. Jobs are released at 0, or at U[0, w_iter] as in the
        paper's generator when ``random_state`` is given. Jobs without a rhythm are left out
        (:func:`periodic_jobs` tells which)."""
        usable = periodic_jobs(jobs)
        w = usable["w_iter"].to_numpy()
        alpha = np.clip(usable["alpha_io"].to_numpy(), 0.0, 1.0)
        n_iter = np.maximum(np.floor(horizon / w), 1).astype(np.int64)
        job = np.repeat(np.arange(usable.height), n_iter)
        release = 0.0 if random_state is None else np.random.default_rng(random_state).uniform(0.0, w)
        frame = pl.DataFrame(
            {
                "id": usable["job_id"].cast(pl.String),
                "release": release,
                "set": None,
                "priority": None,
                "w_iter": w,
                "profile": None,
            },
            schema=JOB_SCHEMA,
        )
        phases = pl.DataFrame(
            {"job": job, "t_cpu": ((1 - alpha) * w)[job], "io_bytes": (alpha * w * bandwidth)[job]}, schema=PHASE_SCHEMA
        )
        return cls(jobs=frame, phases=phases, bandwidth=bandwidth, horizon=horizon, window=window)

    @classmethod
    def from_dict(cls, data: dict, *, source: str = "workload") -> Workload:
        """Build a workload from its JSON form, naming the bad field on error."""
        if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
            raise InputError(f"{source}: expected an object with a 'jobs' list")
        columns: dict[str, list] = {name: [] for name in JOB_SCHEMA}
        phase_blocks, job_index = [], []
        for j, job in enumerate(data["jobs"]):
            where = f"{source}: jobs[{j}]"
            if not isinstance(job, dict):
                raise InputError(f"{where}: expected an object, got {type(job).__name__}")
            columns["id"].append(str(job.get("id", f"j{j}")))
            columns["release"].append(_number(job.get("release", 0.0), f"{where}.release"))
            for name in OPTIONAL_JOB_FIELDS:
                value = job.get(name)
                columns[name].append(None if value is None else _number(value, f"{where}.{name}"))
            block = _phase_block(job.get("phases"), f"{where}.phases")
            phase_blocks.append(block)
            job_index.append(np.full(len(block), j, dtype=np.int64))
        phases = np.concatenate(phase_blocks) if phase_blocks else np.empty((0, 2))
        jobs = pl.DataFrame(columns, schema=JOB_SCHEMA, strict=False)
        phase_frame = pl.DataFrame(
            {
                "job": np.concatenate(job_index) if job_index else np.empty(0, np.int64),
                "t_cpu": phases[:, 0],
                "io_bytes": phases[:, 1],
            },
            schema=PHASE_SCHEMA,
        )
        window = data.get("window", (6000.0, 14000.0))
        if not (isinstance(window, (list, tuple)) and len(window) == 2):
            raise InputError(f"{source}: window: expected [T_begin, T_end], got {window!r}")
        return cls(
            jobs=jobs,
            phases=phase_frame,
            bandwidth=_number(data.get("bandwidth", 1e9), f"{source}: bandwidth"),
            horizon=_number(data.get("horizon", 20000.0), f"{source}: horizon"),
            window=(_number(window[0], f"{source}: window[0]"), _number(window[1], f"{source}: window[1]")),
        )


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{where}: expected a finite number, got {value!r}")
    return float(value)


def _phase_block(phases, where: str) -> np.ndarray:
    if not isinstance(phases, list):
        raise InputError(f"{where}: expected a list of [t_cpu, io_bytes] pairs")
    try:
        block = np.asarray(phases, dtype=np.float64).reshape(-1, 2) if phases else np.empty((0, 2))
    except (TypeError, ValueError):
        block = None
    if block is None or block.shape[0] != len(phases):
        raise InputError(f"{where}: expected a list of [t_cpu, io_bytes] pairs of numbers")
    bad = np.flatnonzero(~np.isfinite(block).all(axis=1) | (block < 0).any(axis=1))
    if bad.size:
        raise InputError(f"{where}[{bad[0]}]: expected t_cpu >= 0 and io_bytes >= 0, got {phases[bad[0]]!r}")
    return block


def periodic_jobs(jobs: pl.DataFrame) -> pl.DataFrame:
    """The rows of a jobs table that have a rhythm: ``w_iter`` > 0 and an ``alpha_io``."""
    missing = [name for name in ("job_id", "w_iter", "alpha_io") if name not in jobs.columns]
    if missing:
        raise InputError(f"jobs table: missing column(s) {', '.join(missing)}")
    return jobs.filter(pl.col("w_iter").is_not_null() & (pl.col("w_iter") > 0) & pl.col("alpha_io").is_not_null())


def read_workload(path: str | os.PathLike) -> Workload:
    """Read a workload from a ``.json`` file or a folder with jobs/phases Parquet files."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_dir():
        return _read_parquet_pair(path)
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    return Workload.from_dict(data, source=str(path))


def write_workload(workload: Workload, path: str | os.PathLike) -> Path:
    """Write ``workload`` atomically: JSON if ``path`` ends in .json, else a Parquet folder."""
    path = Path(path)
    if path.suffix == ".json":
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(workload.to_dict()))
        return path
    path.mkdir(parents=True, exist_ok=True)
    meta = {
        b"iosets.bandwidth": repr(workload.bandwidth).encode(),
        b"iosets.horizon": repr(workload.horizon).encode(),
        b"iosets.window": json.dumps(list(workload.window)).encode(),
    }
    jobs = workload.jobs.to_arrow()
    jobs = jobs.replace_schema_metadata({**(jobs.schema.metadata or {}), **meta})
    for name, table in (("phases.parquet", workload.phases.to_arrow()), ("jobs.parquet", jobs)):
        with atomic_path(path / name) as tmp:
            pq.write_table(table, tmp)
    return path


def _read_parquet_pair(folder: Path) -> Workload:
    try:
        jobs = pq.read_table(folder / "jobs.parquet")
        phases = pl.from_arrow(pq.read_table(folder / "phases.parquet"))
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(f"{folder}: expected jobs.parquet and phases.parquet ({exc})") from None
    meta = jobs.schema.metadata or {}
    try:
        bandwidth = float(meta[b"iosets.bandwidth"])
        horizon = float(meta[b"iosets.horizon"])
        window = tuple(json.loads(meta[b"iosets.window"]))
    except (KeyError, ValueError) as exc:
        raise InputError(f"{folder}/jobs.parquet: missing iosets metadata ({exc})") from None
    job_frame = pl.from_arrow(jobs)
    missing = [c for c in JOB_SCHEMA if c not in job_frame.columns] + [
        c for c in PHASE_SCHEMA if c not in phases.columns
    ]
    if missing:
        raise InputError(f"{folder}: missing columns {missing}")
    return Workload(
        jobs=job_frame.select(list(JOB_SCHEMA)).cast(JOB_SCHEMA),
        phases=phases.select(list(PHASE_SCHEMA)).cast(PHASE_SCHEMA),
        bandwidth=bandwidth,
        horizon=horizon,
        window=window,
    )
