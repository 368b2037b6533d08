"""The workload interchange format: jobs made of (t_cpu, io_bytes) phases.

A workload is written as JSON for small cases (docs/formats.md) or as a folder
holding ``jobs.parquet`` and ``phases.parquet`` for large ones.

The metrics' window follows the horizon unless given: (0.3 h, 0.7 h), the paper's
(6000, 14000) for h = 20 000 s. A window must lie within [0, horizon]: the horizon
only sets the default window and the generators' iteration counts (jobs may run
past it), so measuring later dates means giving a longer horizon.
"""

from __future__ import annotations

import json
import math
import os
import reprlib
from functools import cached_property
from numbers import Real
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ._io import atomic_path, read_json
from .errors import InputError

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "MAX_PHASES",
    "Workload",
    "metric_window",
    "iteration_counts",
    "periodic_jobs",
    "read_workload",
    "write_workload",
]

OPTIONAL_JOB_FIELDS = ("set", "priority", "w_iter", "profile")
_INTEGER_FIELDS = ("set", "profile")
_LARGEST_INTEGER = 2**53  # set and profile travel as float64: beyond this they would not read back
MAX_PHASES = 50_000_000
"""Most phases :func:`iteration_counts` lets a generated workload have (about 3.6 GB once replayed)."""
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 40
_show = _REPR.repr  # a bad value in a message, however large or deep


def metric_window(window, horizon: float, *, where: str = "workload") -> tuple[float, float]:
    """The metrics' window: ``window`` as two floats with 0 <= T_begin < T_end <= horizon, or, when None,
    (0.3 h, 0.7 h), the paper's (6000, 14000) for h = 20 000 s."""
    if window is None:
        return (0.3 * horizon, 0.7 * horizon)
    values = [_as_float(v) for v in window] if isinstance(window, list | tuple | np.ndarray) else []
    if len(values) != 2 or not 0 <= values[0] < values[1] <= horizon:
        raise InputError(
            f"{where}: window must satisfy 0 <= T_begin < T_end <= horizon = {horizon:g}, got {_show(window)} "
            "(for later dates give a longer horizon)"
        )
    return (values[0], values[1])


def iteration_counts(ids, w_iter: np.ndarray, horizon: float) -> np.ndarray:
    """Iterations of periodic jobs over ``horizon``: floor(horizon / w_iter), at least one (int64).

    Raises InputError before anything is allocated when they add up to more than
    :data:`MAX_PHASES`, naming the job with the most and the w_iter floor or the
    horizon that would fit.
    """
    horizon = _positive(horizon, "horizon")
    n_iter = np.maximum(np.floor(horizon / w_iter), 1.0)
    total = float(n_iter.sum())
    if total > MAX_PHASES:
        worst = int(np.argmax(n_iter))
        w_floor = w_iter.size * horizon / MAX_PHASES
        h_fit = (MAX_PHASES - w_iter.size) / float(np.sum(1.0 / w_iter))
        raise InputError(
            f"job {ids[worst]!r} has w_iter {w_iter[worst]:g} s: {n_iter[worst]:.3g} phases over the horizon of "
            f"{horizon:g} s, {total:.3g} for all jobs (limit {MAX_PHASES:.0e}); use w_iter >= {w_floor:.3g} s "
            f"(a floor on the jobs' w_iter) or a horizon <= {h_fit:.3g} s"
        )
    return n_iter.astype(np.int64)


class Workload:
    """Jobs, their phases and the platform they run on.

    The workload is held as numpy arrays (the replay reads them directly); the
    ``jobs`` and ``phases`` frames are built on first use.

    Parameters
    ----------
    jobs : polars.DataFrame
        One row per job (:data:`iosets.schemas.WORKLOAD_JOBS`): ``id``, ``release`` (s), and
        nullable ``set``, ``priority``, ``w_iter`` (s, the characteristic time) and
        ``profile`` (generator profile index).
    phases : polars.DataFrame
        One row per phase (:data:`iosets.schemas.WORKLOAD_PHASES`), grouped by job in job
        order: ``job`` (row index in ``jobs``), ``t_cpu`` (s) and ``io_bytes``.
    bandwidth : float, default=1e9
        File system bandwidth B in bytes/s.
    horizon : float, default=20000.0
        Nominal length of the experiment (s); jobs may end after it.
    window : tuple of float, default=None
        ``(T_begin, T_end)`` over which metrics are measured, within [0, horizon];
        by default (0.3 horizon, 0.7 horizon).
    """

    def __init__(
        self,
        jobs: pl.DataFrame,
        phases: pl.DataFrame,
        bandwidth: float = 1e9,
        horizon: float = 20000.0,
        window: tuple[float, float] | None = None,
    ) -> None:
        from .schemas import WORKLOAD_JOBS, WORKLOAD_PHASES

        self._init_frames(
            WORKLOAD_JOBS.validate(jobs), WORKLOAD_PHASES.validate(phases), bandwidth, horizon, window, "workload"
        )

    def _init_frames(self, jobs: pl.DataFrame, phases: pl.DataFrame, bandwidth, horizon, window, where: str) -> None:
        """Store validated jobs and phases frames (:data:`~iosets.schemas.WORKLOAD_JOBS`, ``WORKLOAD_PHASES``)."""
        from .schemas import WORKLOAD_JOBS, WORKLOAD_PHASES

        jobs, phases = jobs.select(WORKLOAD_JOBS.names), phases.select(WORKLOAD_PHASES.names)
        fields = {name: jobs[name].cast(float).fill_null(math.nan).to_numpy() for name in OPTIONAL_JOB_FIELDS}
        self._init(
            ids=jobs["id"].to_list(),
            release=jobs["release"].to_numpy(),
            phase_job=phases["job"].to_numpy(),
            t_cpu=phases["t_cpu"].to_numpy(),
            io_bytes=phases["io_bytes"].to_numpy(),
            bandwidth=bandwidth,
            horizon=horizon,
            window=window,
            where=where,
            **fields,
        )
        self.__dict__["jobs"], self.__dict__["phases"] = jobs, phases

    @classmethod
    def from_arrays(
        cls,
        ids,
        release,
        phase_job,
        t_cpu,
        io_bytes,
        *,
        set=None,  # noqa: A002 - the column's name
        priority=None,
        w_iter=None,
        profile=None,
        bandwidth: float = 1e9,
        horizon: float = 20000.0,
        window: tuple[float, float] | None = None,
        source: str = "workload",
    ) -> Workload:
        """Build from per-job and per-phase arrays (optional job fields: NaN or None for unknown).

        The arrays are taken as they are (the generators' are valid by construction, the
        replay engine checks their values); the platform, the window, the lengths and the
        phase grouping are checked here, errors naming ``source``.
        """
        self = cls.__new__(cls)
        n = len(ids)
        optional = {
            name: np.full(n, math.nan) if value is None else np.asarray(value, dtype=np.float64)
            for name, value in (("set", set), ("priority", priority), ("w_iter", w_iter), ("profile", profile))
        }
        self._init(
            ids=[str(i) for i in ids],
            release=release,
            phase_job=phase_job,
            t_cpu=t_cpu,
            io_bytes=io_bytes,
            bandwidth=bandwidth,
            horizon=horizon,
            window=window,
            where=source,
            **optional,
        )
        return self

    def _init(self, *, ids, release, phase_job, t_cpu, io_bytes, bandwidth, horizon, window, where, **optional) -> None:
        """Store the arrays after checking the platform, the window, the lengths and the phase grouping."""
        self.bandwidth = _positive(bandwidth, f"{where}: bandwidth")
        self.horizon = _positive(horizon, f"{where}: horizon")
        self.window = metric_window(window, self.horizon, where=where)
        self.ids = ids
        self.release = np.ascontiguousarray(release, dtype=np.float64)
        self.phase_job = np.ascontiguousarray(phase_job, dtype=np.int64)
        self.t_cpu = np.ascontiguousarray(t_cpu, dtype=np.float64)
        self.io_bytes = np.ascontiguousarray(io_bytes, dtype=np.float64)
        self.optional = {name: np.ascontiguousarray(v, dtype=np.float64) for name, v in optional.items()}
        per_job = (self.release, *self.optional.values())
        per_phase = (self.phase_job, self.t_cpu, self.io_bytes)
        if any(a.shape != (len(ids),) for a in per_job) or any(a.shape != (self.phase_job.size,) for a in per_phase):
            raise InputError(
                f"{where}: expected release and {', '.join(OPTIONAL_JOB_FIELDS)} per job, "
                "phase_job, t_cpu and io_bytes per phase"
            )
        job = self.phase_job
        if job.size and (job[0] < 0 or job[-1] >= self.n_jobs or np.any(np.diff(job) < 0)):
            raise InputError(f"{where}: phases must be grouped by job in job order with valid job indices")

    def __repr__(self) -> str:
        return (
            f"Workload({self.n_jobs} jobs, {self.t_cpu.size} phases, bandwidth={self.bandwidth:g}, "
            f"horizon={self.horizon:g}, window={self.window})"
        )

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return len(self.ids)

    @property
    def n_phases(self) -> int:
        """Number of phases."""
        return self.t_cpu.size

    @cached_property
    def jobs(self) -> pl.DataFrame:
        """The jobs as a frame (:data:`iosets.schemas.WORKLOAD_JOBS`)."""
        import polars as pl

        from .schemas import WORKLOAD_JOBS

        columns: dict = {"id": self.ids, "release": self.release}
        for name in OPTIONAL_JOB_FIELDS:
            columns[name] = pl.Series(name, self.optional[name], nan_to_null=True)
        return pl.DataFrame(columns).cast(WORKLOAD_JOBS.polars)

    @cached_property
    def phases(self) -> pl.DataFrame:
        """The phases as a frame (:data:`iosets.schemas.WORKLOAD_PHASES`)."""
        import polars as pl

        return pl.DataFrame({"job": self.phase_job, "t_cpu": self.t_cpu, "io_bytes": self.io_bytes})

    @cached_property
    def offsets(self) -> np.ndarray:
        """Offsets (int64, n_jobs + 1) such that job j owns phases ``[off[j], off[j+1])``."""
        counts = np.bincount(self.phase_job, minlength=self.n_jobs)
        return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)

    def phase_offsets(self) -> np.ndarray:
        """Offsets (int64, n_jobs + 1) such that job j owns phases ``[off[j], off[j+1])``."""
        return self.offsets

    def characteristic_times(self) -> np.ndarray:
        """Per-job w_iter: the ``w_iter`` column where given, else mean(t_cpu + io_bytes/B)."""
        per_phase = self.t_cpu + self.io_bytes / self.bandwidth
        sums = np.bincount(self.phase_job, weights=per_phase, minlength=self.n_jobs)
        counts = np.bincount(self.phase_job, minlength=self.n_jobs)
        observed = np.divide(sums, counts, out=np.full(self.n_jobs, np.nan), where=counts > 0)
        given = self.optional["w_iter"]
        return np.where(np.isnan(given), observed, given)

    def to_jobs(self) -> pl.DataFrame:
        """A jobs table (:data:`iosets.schemas.JOBS` subset) of the workload: ``job_id``, ``w_iter``, ``alpha_io``
        (I/O time alone over total time), ``n_phases`` and ``w_iter_confidence`` 1; the inverse
        of :meth:`from_jobs` for periodic jobs."""
        import polars as pl

        job = self.phase_job
        io_time = np.bincount(job, weights=self.io_bytes / self.bandwidth, minlength=self.n_jobs)
        total = io_time + np.bincount(job, weights=self.t_cpu, minlength=self.n_jobs)
        return pl.DataFrame(
            {
                "job_id": self.ids,
                "w_iter": self.characteristic_times(),
                "w_iter_confidence": 1.0,
                "alpha_io": np.divide(io_time, total, out=np.zeros(self.n_jobs), where=total > 0),
                "n_phases": np.bincount(job, minlength=self.n_jobs),
            },
            nan_to_null=True,
        )

    def with_assignment(self, sets: np.ndarray, priorities: np.ndarray) -> Workload:
        """Copy of the workload whose jobs carry the given sets and priorities."""
        return Workload.from_arrays(
            self.ids,
            self.release,
            self.phase_job,
            self.t_cpu,
            self.io_bytes,
            set=np.asarray(sets, np.int64),
            priority=np.asarray(priorities, np.float64),
            w_iter=self.optional["w_iter"],
            profile=self.optional["profile"],
            bandwidth=self.bandwidth,
            horizon=self.horizon,
            window=self.window,
        )

    def to_dict(self) -> dict:
        """The JSON form of docs/formats.md (optional job fields only where set)."""
        offsets = self.offsets
        pairs = np.column_stack((self.t_cpu, self.io_bytes)).tolist()
        jobs = []
        for j, job_id in enumerate(self.ids):
            entry: dict = {"id": job_id, "release": float(self.release[j])}
            for name in OPTIONAL_JOB_FIELDS:
                value = self.optional[name][j]
                if not math.isnan(value):
                    entry[name] = int(value) if name in _INTEGER_FIELDS else float(value)
            entry["phases"] = pairs[offsets[j] : offsets[j + 1]]
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
        window: tuple[float, float] | None = None,
        random_state=None,
    ) -> Workload:
        """Periodic jobs from a jobs table: each job with a ``w_iter`` and ``alpha_io`` runs
        floor(horizon / w_iter) iterations of (1 - alpha_io) w_iter s of compute and
        alpha_io w_iter B bytes of I/O. Jobs are released at 0, or at U[0, w_iter] as in the
        paper's generator when ``random_state`` is given. Jobs without a rhythm are left out
        (:func:`periodic_jobs` tells which); more than :data:`MAX_PHASES` phases in all are
        refused (:func:`iteration_counts`)."""
        return cls._from_periodic_jobs(
            periodic_jobs(jobs), bandwidth=bandwidth, horizon=horizon, window=window, random_state=random_state
        )

    @classmethod
    def _from_periodic_jobs(
        cls,
        usable: pl.DataFrame,
        *,
        bandwidth: float,
        horizon: float,
        window: tuple[float, float] | None,
        random_state,
    ) -> Workload:
        """:meth:`from_jobs` for the rows :func:`periodic_jobs` returned (validated already)."""
        ids = usable["job_id"].cast(str).to_list()
        w = usable["w_iter"].to_numpy()
        alpha = np.clip(usable["alpha_io"].to_numpy(), 0.0, 1.0)
        n_iter = iteration_counts(ids, w, horizon)
        bandwidth = _positive(bandwidth, "bandwidth")
        job = np.repeat(np.arange(usable.height), n_iter)
        release = np.zeros(usable.height)
        if random_state is not None:
            release = np.random.default_rng(random_state).uniform(0.0, w)
        return cls.from_arrays(
            ids,
            release,
            job,
            ((1 - alpha) * w)[job],
            (alpha * w * bandwidth)[job],
            w_iter=w,
            bandwidth=bandwidth,
            horizon=horizon,
            window=window,
        )

    @classmethod
    def from_dict(cls, data: dict, *, source: str = "workload") -> Workload:
        """Build a workload from its JSON form, naming ``source`` and the bad field on error."""
        if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
            raise InputError(f"{source}: expected an object with a 'jobs' list")
        ids, release = [], []
        optional: dict[str, list] = {name: [] for name in OPTIONAL_JOB_FIELDS}
        phase_blocks = []
        for j, job in enumerate(data["jobs"]):
            where = f"{source}: jobs[{j}]"
            if not isinstance(job, dict):
                raise InputError(f"{where}: expected an object, got {type(job).__name__}")
            ids.append(_job_id(job.get("id", f"j{j}"), f"{where}.id"))
            release.append(_number(job.get("release", 0.0), f"{where}.release", minimum=0.0))
            for name in OPTIONAL_JOB_FIELDS:
                value = job.get(name)
                optional[name].append(math.nan if value is None else _optional_field(name, value, f"{where}.{name}"))
            phase_blocks.append(_phase_block(job.get("phases"), f"{where}.phases"))
        counts = [len(block) for block in phase_blocks]
        phases = np.concatenate(phase_blocks) if phase_blocks else np.empty((0, 2))
        return cls.from_arrays(
            ids,
            release,
            np.repeat(np.arange(len(ids), dtype=np.int64), counts),
            phases[:, 0],
            phases[:, 1],
            **optional,
            bandwidth=data.get("bandwidth", 1e9),
            horizon=data.get("horizon", 20000.0),
            window=data.get("window"),
            source=source,
        )


def _as_float(value) -> float:
    """A number as a float: NaN for anything else (bool, text, list...), inf for an integer beyond float64."""
    if isinstance(value, bool) or not isinstance(value, Real):
        return math.nan
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _number(value, where: str, *, minimum: float | None = None) -> float:
    number = _as_float(value)
    if not math.isfinite(number):
        raise InputError(f"{where}: expected a finite number, got {_show(value)}")
    if minimum is not None and number < minimum:
        raise InputError(f"{where}: expected a number >= {minimum:g}, got {_show(value)}")
    return number


def _positive(value, where: str) -> float:
    """``value`` as a float if it is a finite number > 0."""
    number = _as_float(value)
    if not (number > 0 and math.isfinite(number)):
        raise InputError(f"{where} must be > 0 and finite, got {_show(value)}")
    return number


def _job_id(value, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputError(f"{where}: expected text, got {_show(value)}")
    return str(value)


def _optional_field(name: str, value, where: str) -> float:
    """An optional job field's value: an integer for ``set`` (>= 0 for ``profile``), a number > 0 for the others."""
    number = _number(value, where)
    if name in _INTEGER_FIELDS:
        low, text = (0, "0") if name == "profile" else (-_LARGEST_INTEGER, "-2^53")
        if number != int(number) or not low <= number <= _LARGEST_INTEGER:
            raise InputError(f"{where}: expected an integer in [{text}, 2^53], got {_show(value)}")
    elif number <= 0:
        raise InputError(f"{where}: expected a number > 0, got {_show(value)}")
    return number


def _phase_block(phases, where: str) -> np.ndarray:
    """The (n, 2) float64 block of a job's ``[t_cpu, io_bytes]`` pairs, each finite and >= 0."""
    if not (isinstance(phases, list) and all(type(pair) is list and len(pair) == 2 for pair in phases)):
        raise InputError(f"{where}: expected a list of [t_cpu, io_bytes] pairs")
    if not {type(x) for pair in phases for x in pair} <= {int, float}:
        block = np.array([[_as_float(x) for x in pair] for pair in phases]).reshape(-1, 2)  # NaN marks the culprit
    else:
        try:
            block = np.array(phases, dtype=np.float64).reshape(-1, 2)
        except OverflowError:  # an integer beyond float64
            block = np.array([[_as_float(x) for x in pair] for pair in phases])
    bad = np.flatnonzero(~np.isfinite(block).all(axis=1) | (block < 0).any(axis=1))
    if bad.size:
        raise InputError(
            f"{where}[{bad[0]}]: expected t_cpu >= 0 and io_bytes >= 0, finite numbers, got {_show(phases[bad[0]])}"
        )
    return block


def periodic_jobs(jobs: pl.DataFrame) -> pl.DataFrame:
    """The rows of a jobs table that have a rhythm: ``w_iter`` > 0 and an ``alpha_io``."""
    import polars as pl

    from .schemas import JOBS

    jobs = JOBS.validate(jobs, source="jobs table", require=["w_iter", "alpha_io"], fill_optional=False)
    return jobs.filter(pl.col("w_iter").is_not_null() & pl.col("alpha_io").is_not_null())


def read_workload(path: str | os.PathLike) -> Workload:
    """Read a workload from a ``.json`` file or a folder with jobs/phases Parquet files."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_dir():
        return _read_parquet_pair(path)
    data = read_json(path)
    return Workload.from_dict(data, source=str(path))


def write_workload(workload: Workload, path: str | os.PathLike) -> Path:
    """Write ``workload`` atomically: JSON if ``path`` ends in .json, else a Parquet folder."""
    path = Path(path)
    if path.suffix == ".json":
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(workload.to_dict()))
        return path
    import pyarrow.parquet as pq

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
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        jobs = pq.read_table(folder / "jobs.parquet")
        phases = pl.from_arrow(pq.read_table(folder / "phases.parquet"))
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(f"{folder}: expected jobs.parquet and phases.parquet ({exc})") from None
    meta = jobs.schema.metadata or {}
    try:
        bandwidth = float(meta[b"iosets.bandwidth"])
        horizon = float(meta[b"iosets.horizon"])
        tb, te = (float(v) for v in json.loads(meta[b"iosets.window"]))
    except (KeyError, ValueError, TypeError, RecursionError) as exc:
        raise InputError(f"{folder}/jobs.parquet: missing or bad iosets metadata ({type(exc).__name__})") from None
    from .schemas import WORKLOAD_JOBS, WORKLOAD_PHASES

    job_frame = pl.from_arrow(jobs)
    assert isinstance(job_frame, pl.DataFrame) and isinstance(phases, pl.DataFrame)
    workload = Workload.__new__(Workload)
    workload._init_frames(
        WORKLOAD_JOBS.validate(job_frame, source=f"{folder}/jobs.parquet"),
        WORKLOAD_PHASES.validate(phases, source=f"{folder}/phases.parquet"),
        bandwidth,
        horizon,
        (tb, te),
        str(folder),
    )
    return workload
