"""A large generated site with a trace replay: the tables a report reads, made in a second or two.

Nothing here is replayed: the jobs come from :func:`make_job_history`, the sets from
:func:`iosets.recommender.recommend`, and each scheduler's phase dates are drawn from a simple
queueing profile, vectorised, so that a 100 000-job site with a million I/O phases per scheduler
exists without running the trace replay on it (``benchmarks/report.py``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import polars as pl

from .._validation import check_choice, check_count
from ..errors import InputError
from ..recommender import TUNE_BASES, recommend
from ..schemas import (
    JOBS,
    RECOMMENDED_JOBS,
    TRACE_REPLAY_JOBS,
    TRACE_REPLAY_PHASES,
    TRACE_REPLAY_SCHEDULERS,
    TRACE_REPLAY_SHARES,
    TUNE_RANKING,
)
from ._history import make_job_history

SCHEDULER_PROFILES = {"fcfs": (1.2, 0.3, False), "wfq": (0.6, 0.5, False), "iosets-wfq": (1.6, 0.3, True)}
"""Scheduler -> (mean wait of a phase that waits, mean extra I/O time, both per alone I/O phase time; whether
they grow with the set). Half the phases wait (:data:`WAITING`).

A set-aware scheduler (iosets-wfq) scales both by the set's rank among the sets, 0.05 for the highest
priority to 1 for the lowest: high-priority sets barely wait, low-priority ones wait more than under FCFS.
"""

WAITING = 0.5
"""Probability that a phase finds the file system busy and waits."""

BANDWIDTH = 1e11
"""The generated site's file system bandwidth (bytes/s), for the recommendation's RBFQ parameters."""

RATE_SCALE = 0.02
"""Factor on :func:`make_job_history`'s bytes (50 MB/s per process in I/O, to 1 MB/s): petabytes, not exabytes."""

EPOCH = 1_704_067_200.0
"""Date of the history's time 0 (2024-01-01 00:00 UTC, s since the epoch)."""


@dataclass(frozen=True)
class LargeSite:
    """A generated site and its replay, each table validated against its schema (see :func:`make_large_site`)."""

    jobs: pl.DataFrame
    """JOBS: one row per job."""
    recommendation: pl.DataFrame
    """RECOMMENDED_JOBS: the jobs with their SET-10 sets."""
    replay_jobs: pl.DataFrame
    """TRACE_REPLAY_JOBS: per job and scheduler."""
    replay_phases: pl.DataFrame
    """TRACE_REPLAY_PHASES: per I/O phase and scheduler."""
    replay_schedulers: pl.DataFrame
    """TRACE_REPLAY_SCHEDULERS: one row per scheduler."""
    replay_shares: pl.DataFrame
    """TRACE_REPLAY_SHARES: per scheduler and set."""
    tune: pl.DataFrame
    """TUNE_RANKING: SET-b mappings, gmm and fair-share, ranked."""


def make_large_site(
    n_jobs: int = 100_000,
    *,
    schedulers: tuple[str, ...] = ("fcfs", "wfq", "iosets-wfq"),
    phases_per_job: int = 10,
    random_state=None,
) -> LargeSite:
    """Generate a large site's jobs, recommendation, trace replay and tuning, shaped as a report reads them.

    Jobs are :func:`make_job_history`'s from :data:`EPOCH` on, their bytes scaled by :data:`RATE_SCALE`,
    with ``not_periodic`` and ``explanation`` as the analyzer writes them; sets are SET-10's
    (:func:`iosets.recommender.recommend`, bandwidth :data:`BANDWIDTH`). Each job has
    ``phases_per_job`` I/O phases of equal size and alone duration ``alpha_io * runtime /
    phases_per_job``, each after an equal compute gap. Under each scheduler a phase waits, with
    probability :data:`WAITING`, an exponential time, and then lasts its alone duration plus an
    exponential extra (means from :data:`SCHEDULER_PROFILES`); it becomes ready one recorded compute gap
    after the previous phase ends. A job's alone run is its recorded run. The schedulers' metrics are
    the phase model's over each job's whole replayed life (its first I/O phase to its last); the
    window is the recorded span, and the shares and the throughput count the bytes of the phases
    ending inside it. The tuning ranking's metrics are drawn at random; its ``n_sets`` are the jobs'
    own set counts.

    Parameters
    ----------
    n_jobs : int, default=100_000
        Jobs of the site.
    schedulers : tuple of str, default=("fcfs", "wfq", "iosets-wfq")
        Schedulers replayed, each a key of :data:`SCHEDULER_PROFILES`.
    phases_per_job : int, default=10
        I/O phases of every job.
    random_state : int, numpy Generator, SeedSequence or None, default=None
        Seed for a reproducible site.

    Returns
    -------
    LargeSite
        ``jobs`` and ``recommendation`` (``n_jobs`` rows), ``replay_jobs`` (``n_jobs * len(schedulers)``),
        ``replay_phases`` (``n_jobs * phases_per_job * len(schedulers)``), ``replay_schedulers`` (one row per
        scheduler), ``replay_shares`` (per scheduler and set) and ``tune`` (one row per candidate mapping).

    Examples
    --------
    >>> site = make_large_site(200, schedulers=("fcfs", "iosets-wfq"), phases_per_job=4, random_state=0)
    >>> site.replay_phases.height, site.replay_schedulers["scheduler"].to_list()
    (1600, ['fcfs', 'iosets-wfq'])
    """
    rng = np.random.default_rng(random_state)
    check_count(n_jobs, "n_jobs", minimum=1)
    check_count(phases_per_job, "phases_per_job", minimum=1)
    check_count(len(schedulers), "number of schedulers", minimum=1)
    for scheduler in schedulers:
        check_choice(scheduler, "scheduler", tuple(SCHEDULER_PROFILES))
    if len(set(schedulers)) < len(schedulers):
        raise InputError(f"schedulers must be distinct, got {', '.join(schedulers)}")

    history = make_job_history(n_jobs, n_apps=max(40, n_jobs // 250), n_users=max(15, n_jobs // 1000), random_state=rng)
    jobs = JOBS.validate(_as_analyzed(history.drop("requested_time")))
    recommendation = RECOMMENDED_JOBS.validate(_recommend(jobs))
    recorded = _Recorded.of(recommendation, phases_per_job)
    dates = {scheduler: recorded.replay(SCHEDULER_PROFILES[scheduler], rng) for scheduler in schedulers}
    return LargeSite(
        jobs=jobs,
        recommendation=recommendation,
        replay_jobs=TRACE_REPLAY_JOBS.validate(_replay_jobs(recommendation, recorded, dates)),
        replay_phases=TRACE_REPLAY_PHASES.validate(_replay_phases(recommendation, recorded, dates)),
        replay_schedulers=TRACE_REPLAY_SCHEDULERS.validate(_policy_metrics(recorded, dates)),
        replay_shares=TRACE_REPLAY_SHARES.validate(_shares(recommendation, recorded, dates)),
        tune=TUNE_RANKING.validate(_tune_ranking(jobs, rng)),
    )


def _as_analyzed(history: pl.DataFrame) -> pl.DataFrame:
    """The history from :data:`EPOCH`, bytes scaled, with the analyzer's ``not_periodic`` code and explanation."""
    periodic = pl.col("w_iter").is_not_null()
    sentence = pl.format(
        "periodic: {} I/O phases every {} s (confidence {})",
        pl.col("n_phases"),
        pl.col("w_iter").round_sig_figs(3),
        pl.col("w_iter_confidence").round(2),
    )
    return history.with_columns(
        pl.col("start", "end") + EPOCH,
        (pl.col("bytes_read", "bytes_written") * RATE_SCALE).round(0),
        pl.when(periodic).then(None).otherwise(pl.lit("no_timeline")).alias("not_periodic"),
        pl.when(periodic)
        .then(sentence)
        .otherwise(pl.lit("counters only: no DXT or HEATMAP timeline tells when the I/O happened"))
        .alias("explanation"),
    )


def _recommend(jobs: pl.DataFrame) -> pl.DataFrame:
    """SET-10 sets of ``jobs`` (the site's sets span more priorities than AGIOS weights hold: they are capped)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # capped weights, scaled reservations: expected here
        return recommend(jobs, bandwidth=BANDWIDTH)


@dataclass(frozen=True)
class _Recorded:
    """The recorded phases, one row per job and one column per phase; ``rank`` is the set's, 0 (first) to 1."""

    start: np.ndarray
    alone: np.ndarray
    gap: np.ndarray
    bytes: np.ndarray
    rank: np.ndarray

    @classmethod
    def of(cls, recommendation: pl.DataFrame, per_job: int) -> _Recorded:
        """Each recommended job's ``per_job`` equal phases, spread evenly over its run."""
        runtime = recommendation["runtime"].to_numpy()
        alpha = recommendation["alpha_io"].to_numpy()
        alone = np.repeat((alpha * runtime / per_job)[:, None], per_job, axis=1)
        gap = ((1 - alpha) * runtime / per_job)[:, None]
        index = np.arange(per_job)[None, :]
        start = recommendation["start"].to_numpy()[:, None] + (index + 1) * gap + index * alone
        total = (recommendation["bytes_read"] + recommendation["bytes_written"]).to_numpy().astype(np.int64)
        phase_bytes = np.repeat((total // per_job)[:, None], per_job, axis=1)
        phase_bytes[:, -1] += total - per_job * (total // per_job)
        sets = recommendation["set"].to_numpy()
        distinct = np.unique(sets)
        rank = np.searchsorted(distinct, sets) / max(1, distinct.size - 1)
        return cls(start, alone, gap, phase_bytes, rank)

    @property
    def window(self) -> tuple[float, float]:
        """The recorded span: first phase start to last phase end."""
        return float(self.start.min()), float((self.start + self.alone).max())

    def replay(self, profile: tuple[float, float, bool], rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        """Each phase's ready, start and end dates under a scheduler's profile (see :data:`SCHEDULER_PROFILES`)."""
        mean_wait, mean_extra, by_set = profile
        scale = (0.05 + 0.95 * self.rank)[:, None] if by_set else 1.0
        waits = rng.random(self.alone.shape) < WAITING
        wait = np.where(waits, rng.exponential(1.0, self.alone.shape) * mean_wait * scale * self.alone, 0.0)
        busy = self.alone * (1 + rng.exponential(1.0, self.alone.shape) * mean_extra * scale)
        end = self.start[:, :1] + np.cumsum(wait + busy, axis=1) + np.arange(self.alone.shape[1]) * self.gap
        start = end - busy
        return start - wait, start, end


def _replay_phases(
    recommendation: pl.DataFrame, recorded: _Recorded, dates: dict[str, tuple[np.ndarray, ...]]
) -> pl.DataFrame:
    """TRACE_REPLAY_PHASES: iosets-wfq serves a phase in its set's class, the others in its job's."""
    n, per_job = recorded.alone.shape
    base = pl.DataFrame(
        {
            "job_id": recommendation["job_id"].gather(np.repeat(np.arange(n), per_job)),
            "phase": np.tile(np.arange(per_job), n),
            "set": np.repeat(recommendation["set"].to_numpy(), per_job),
            "bytes": recorded.bytes.ravel(),
            "recorded_start": recorded.start.ravel(),
            "recorded_end": (recorded.start + recorded.alone).ravel(),
        }
    )
    frames = [
        base.with_columns(
            pl.lit(scheduler).alias("scheduler"),
            (pl.col("set").cast(pl.String) if SCHEDULER_PROFILES[scheduler][2] else pl.col("job_id")).alias("class"),
            pl.Series("ready", ready.ravel()),
            pl.Series("start", start.ravel()),
            pl.Series("end", end.ravel()),
        )
        for scheduler, (ready, start, end) in dates.items()
    ]
    return pl.concat(frames).select(
        "job_id",
        "scheduler",
        "phase",
        "class",
        "set",
        "bytes",
        "recorded_start",
        "recorded_end",
        "ready",
        "start",
        "end",
    )


def _replay_jobs(
    recommendation: pl.DataFrame, recorded: _Recorded, dates: dict[str, tuple[np.ndarray, ...]]
) -> pl.DataFrame:
    """TRACE_REPLAY_JOBS: a job's life is its first phase's ready date to its last phase's end."""
    alone_runtime = recorded.start[:, -1] + recorded.alone[:, -1] - recorded.start[:, 0]
    frames = []
    for scheduler, (ready, _, end) in dates.items():
        runtime = end[:, -1] - ready[:, 0]
        frames.append(
            pl.DataFrame(
                {
                    "job_id": recommendation["job_id"],
                    "scheduler": scheduler,
                    "recorded_runtime": alone_runtime,
                    "runtime": runtime,
                    "alone_runtime": alone_runtime,
                    "stretch": runtime / alone_runtime,
                    "io_slowdown": (end - ready).sum(axis=1) / recorded.alone.sum(axis=1),
                    "wait": runtime - alone_runtime,
                }
            )
        )
    return pl.concat(frames)


def _policy_metrics(recorded: _Recorded, dates: dict[str, tuple[np.ndarray, ...]]) -> pl.DataFrame:
    """One row per scheduler: the phase model's metrics over each job's whole life, and the throughput."""
    alone_io = recorded.alone.sum(axis=1)
    compute = recorded.gap[:, 0] * (recorded.alone.shape[1] - 1)
    first, last = recorded.window
    rows = []
    for scheduler, (ready, _, end) in dates.items():
        present = end[:, -1] - ready[:, 0]
        stretch = present / (compute + alone_io)
        rows.append(
            {
                "scheduler": scheduler,
                "utilization": compute.sum() / present.sum(),
                "utilization_bound": compute.sum() / (compute + alone_io).sum(),
                "io_slowdown": float(np.exp(np.log((present - compute) / alone_io).mean())),
                "max_stretch": stretch.max(),
                "mean_stretch": stretch.mean(),
                "p99_stretch": float(np.quantile(stretch, 0.99)),
                "throughput": float(recorded.bytes[end <= last].sum()) / (last - first),
                "window_start": first,
                "window_end": last,
            }
        )
    return pl.DataFrame(rows)


def _shares(
    recommendation: pl.DataFrame, recorded: _Recorded, dates: dict[str, tuple[np.ndarray, ...]]
) -> pl.DataFrame:
    """Per scheduler and set: the bytes of the phases ending inside the window, and their share."""
    sets = recommendation["set"].to_numpy()
    distinct, set_index = np.unique(sets, return_inverse=True)
    last = recorded.window[1]
    frames = []
    for scheduler, (_, _, end) in dates.items():
        moved = np.bincount(
            set_index, weights=np.where(end <= last, recorded.bytes, 0).sum(axis=1), minlength=distinct.size
        )
        share = moved / moved.sum() if moved.sum() > 0 else np.full(distinct.size, np.nan)
        frames.append(pl.DataFrame({"scheduler": scheduler, "set": distinct, "bytes": moved, "share": share}))
    return pl.concat(frames).with_columns(pl.col("share").fill_nan(None))


def _tune_ranking(jobs: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    """SET-b mappings, gmm and fair-share with drawn metrics, ranked as :func:`iosets.replay.tune` ranks them."""
    log_w = np.log10(jobs["w_iter"].drop_nulls().to_numpy())
    n_sets = [np.unique(np.round(log_w / np.log10(base))).size for base in TUNE_BASES]
    mappings = [f"set-{base:g}" for base in TUNE_BASES] + ["gmm", "fair-share"]
    n = len(mappings)
    table = pl.DataFrame(
        {
            "mapping": mappings,
            "n_sets": [*n_sets, int(rng.integers(3, 9)), log_w.size],
            "utilization": rng.uniform(0.6, 0.8, n),
            "io_slowdown": rng.uniform(1.1, 2.0, n),
            "max_stretch": rng.uniform(1.5, 4.0, n),
        }
    )
    ranked = table.sort("utilization", "max_stretch", "io_slowdown", descending=[True, False, False])
    return ranked.with_row_index("rank", offset=1)
