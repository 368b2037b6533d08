"""Tuning on a site's own traces: candidate mappings ranked by closed-loop trace replay, and by the idealised replay."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import polars as pl
from scipy.stats import kendalltau

from .._results import Part, Tables
from .._validation import check_count, check_positive
from ..errors import InputError
from ..recommender import TUNE_BASES, assign_sets
from ..schemas import TUNE_RANKING
from ._closed import replay_trace
from ._device import Device
from ._trace_metrics import trace_metrics
from ._tune import tune

FAIR_SHARE = "fair-share"


@dataclass(frozen=True)
class Tuning(Tables):
    """Result of a tuning: the candidate mappings ranked, and for :func:`tune_site` the idealised ranking too.

    ``write(path)`` writes the ranking at ``path`` and the idealised one beside it as ``<stem>.idealised<suffix>``
    (when there is one); ``read(path)`` reads them back.

    Attributes
    ----------
    ranking : polars.DataFrame
        :data:`iosets.schemas.TUNE_RANKING`: one row per candidate, best first: ``rank``, ``mapping``,
        ``n_sets``, ``utilization``, ``io_slowdown``, ``max_stretch`` (of the trace replay with
        :func:`tune_site`), ``idealised_rank`` (null for a candidate the idealised ranking does not hold).
    idealised : polars.DataFrame or None
        :func:`tune`'s ranking of the same jobs as idealised periodic jobs (:func:`tune_site`); None for
        :func:`tune` itself.
    """

    PARTS = (
        Part("ranking", TUNE_RANKING, "ranking"),
        Part("idealised", TUNE_RANKING, "idealised ranking", optional=True),
    )

    ranking: pl.DataFrame
    idealised: pl.DataFrame | None = None

    @property
    def kendall_tau(self) -> float:
        """Kendall tau between the two rankings over the candidates both hold (NaN under two, or no idealised)."""
        both = self.ranking.drop_nulls("idealised_rank") if "idealised_rank" in self.ranking.columns else None
        if self.idealised is None or both is None or both.height < 2:
            return float("nan")
        return float(kendalltau(both["rank"], both["idealised_rank"]).statistic)

    @property
    def top_trace(self) -> str:
        """The best candidate of :attr:`ranking`."""
        return str(self.ranking["mapping"][0])

    @property
    def top_idealised(self) -> str | None:
        """The best candidate of :attr:`idealised` (None without it)."""
        return None if self.idealised is None else str(self.idealised["mapping"][0])


def _candidates(jobs: pl.DataFrame, bases, gmm: bool, current: str | None, random_state: int) -> dict:
    """Mapping name -> job_id -> set and set -> priority; None for FAIR-SHARE (one class per job, equal weights)."""
    names = [f"set-{base:g}" for base in bases] + (["gmm"] if gmm else [])
    if current is not None and current not in names and current != FAIR_SHARE:
        names.append(current)
    candidates: dict[str, tuple[dict, dict] | None] = {}
    for name in names:
        sets, priorities, _ = assign_sets(jobs, name, min_confidence=0.0, random_state=random_state)
        classes = dict(zip(jobs["job_id"].to_list(), (int(s) for s in sets), strict=True))
        weights = {int(s): float(p) for s, p in zip(sets, priorities, strict=True)}
        candidates[name] = (classes, weights)
    candidates[FAIR_SHARE] = None
    return candidates


def _replay(site_requests: pl.DataFrame, assignment, device: Device, window, layout: pl.DataFrame | None) -> dict:
    """One candidate's trace replay: its number of classes and window metrics."""
    if assignment is None:
        replay = replay_trace(site_requests, scheduler="wfq", device=device, layout=layout)
    else:
        classes, weights = assignment
        replay = replay_trace(
            site_requests, scheduler="iosets-wfq", classes=classes, weights=weights, device=device, layout=layout
        )
    values = trace_metrics(replay, window=window).values()
    names = ("utilization", "io_slowdown", "max_stretch")
    return {"n_sets": int(replay.trace.classes.size), **{name: values[name] for name in names}}


def _map(tasks: list[tuple], workers: int, dask: str | None) -> list[dict]:
    """``_replay(*task)`` for each task: here, on local processes, or on a Dask cluster (``local`` or an address)."""
    if dask is not None:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=workers, processes=True) if dask == "local" else None
        with Client(cluster if cluster is not None else dask) as client:
            results = client.gather([client.submit(_replay, *task, pure=False) for task in tasks])
        if cluster is not None:
            cluster.close()
        return list(results)
    if workers == 1:
        return [_replay(*task) for task in tasks]
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("spawn")
    ) as pool:  # no fork: Polars' threads
        return list(pool.map(_replay, *zip(*tasks, strict=True)))


def tune_site(
    site_requests: pl.DataFrame,
    jobs: pl.DataFrame,
    *,
    bases=TUNE_BASES,
    gmm: bool = True,
    current: str | None = None,
    device: Device | None = None,
    window: tuple[float, float] | None = None,
    tolerance: float = 1e-4,
    random_state: int = 0,
    workers: int = 1,
    dask: str | None = None,
    layout: pl.DataFrame | None = None,
) -> Tuning:
    """Rank SET-b, gmm, FAIR-SHARE and the current mapping by closed-loop replay of the site's trace.

    Each candidate replays ``site_requests`` (:func:`replay_trace`): a mapping with iosets-wfq,
    one class per set weighted by the set's priority; FAIR-SHARE with wfq, one class per
    job, equal weights. Candidates rank by :func:`trace_metrics`' utilization (closer than
    ``tolerance``: a tie), then Max Stretch, then IO-slowdown, as :func:`tune` ranks the
    idealised periodic jobs, which it also runs for the comparison.

    Parameters
    ----------
    site_requests : polars.DataFrame
        A site trace (:data:`iosets.schemas.SITE_REQUESTS`).
    jobs : polars.DataFrame
        Jobs table with ``job_id``, ``w_iter`` and ``alpha_io`` for the jobs of ``site_requests``
        (jobs without a w_iter get the mapping's conservative set).
    bases, gmm : default=TUNE_BASES, True
        SET-b bases and whether to try the Gaussian-mixture mapping.
    current : str, default=None
        The mapping in use (e.g. ``set-3``), added to the candidates.
    device : Device, default=None
        Device model of the replays (e.g. from :func:`calibrate`).
    window : (float, float), default=None
        Measurement window of :func:`trace_metrics`; the whole replay when None.
    tolerance : float, default=1e-4
        Utilizations closer than this tie.
    random_state : int, default=0
        Seed of the gmm mapping and of the idealised jobs' releases.
    workers : int, default=1
        Processes replaying the candidates (Dask workers with ``dask="local"``).
    dask : str, default=None
        ``"local"`` for a local Dask cluster, or a scheduler address; local processes when None.
    layout : polars.DataFrame, default=None
        Files' striping over the device's targets (:data:`LAYOUT`), as :func:`replay_trace` takes it.

    Returns
    -------
    Tuning
        The trace ranking and the idealised one (their Kendall tau and top candidates as properties).
    """
    check_positive(tolerance, "tolerance")
    check_count(workers, "workers")
    site_jobs = jobs.filter(pl.col("job_id").is_in(site_requests["job_id"].unique().to_list()))
    missing = sorted(set(site_requests["job_id"].unique().to_list()) - set(site_jobs["job_id"].to_list()))
    if missing:
        raise InputError(f"jobs table: no row for the site trace's jobs {missing[:5]}")
    candidates = _candidates(site_jobs, bases, gmm, current, random_state)
    device = device or Device()
    tasks = [(site_requests, assignment, device, window, layout) for assignment in candidates.values()]
    rows = _map(tasks, workers, dask)
    table = pl.DataFrame([{"mapping": name, **row} for name, row in zip(candidates, rows, strict=True)])
    idealised = tune(site_jobs, bases=bases, gmm=gmm, tolerance=tolerance, random_state=random_state)
    bucket = (pl.col("utilization") / tolerance).round(0)
    ranking = (
        table.sort(
            [bucket, "max_stretch", "io_slowdown"],
            descending=[True, False, False],
            nulls_last=True,
            maintain_order=True,
        )
        .with_row_index("rank", offset=1)
        .join(idealised.select("mapping", pl.col("rank").alias("idealised_rank")), on="mapping", how="left")
        .sort("rank")
    )
    return Tuning(ranking=ranking, idealised=idealised)
