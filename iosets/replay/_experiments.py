"""The paper's sweeps (IO-SETS paper, Figs. 6-10) over every policy."""

from collections.abc import Callable, Iterable

import polars as pl

from .._validation import check_choice, check_count
from ..datasets import FIGURES, figure_seed, make_figure_workload
from ._phase import replay_phases

REFERENCE_POLICIES = ("exclusive-fcfs", "fair-share", "set-10", "set-fairshare", "share-priority")
EXPERIMENT_POLICIES: dict[str, tuple[str, ...]] = {name: REFERENCE_POLICIES for name in FIGURES}
EXPERIMENT_POLICIES["fig10"] = REFERENCE_POLICIES + ("clairvoyant",)
EXPERIMENT_REFERENCE = {name: "fair-share" for name in FIGURES}
EXPERIMENT_REFERENCE["fig10"] = "clairvoyant"  # the paper normalizes Fig. 10 by the oracle
RESULT_COLUMNS = ("experiment", "point", "seed", "policy", "utilization", "io_slowdown", "max_stretch")


def run_experiment(
    name: str,
    *,
    seeds: int = 3,
    points: Iterable[float] | None = None,
    progress: Callable[[Iterable], Iterable] = iter,
) -> pl.DataFrame:
    """Replay every (point, seed) workload of sweep ``name`` under its policies.

    Parameters
    ----------
    name : {"fig6", "fig7", "fig8", "fig9", "fig10"}
    seeds : int, default=3
        Workloads per point (seeds 0 .. seeds-1).
    points : iterable of float, default=None
        Subset of the sweep's points; all by default.
    progress : callable, default=iter
        Wraps the (point, seed) iterable, e.g. ``rich.progress.track``.

    Returns
    -------
    polars.DataFrame
        Columns ``experiment, point, seed, policy, utilization, io_slowdown, max_stretch``.
    """
    sweep = FIGURES[check_choice(name, "experiment", tuple(FIGURES))]
    check_count(seeds, "seeds", minimum=1)
    chosen = sweep.points if points is None else tuple(float(p) for p in points)
    rows = []
    for point, seed in progress([(p, s) for p in chosen for s in range(seeds)]):
        workload = make_figure_workload(name, point, random_state=figure_seed(name, point, seed))
        for policy in EXPERIMENT_POLICIES[name]:
            m = replay_phases(workload, policy).metrics
            rows.append((name, float(point), seed, policy, m.utilization, m.io_slowdown, m.max_stretch))
    return pl.DataFrame(rows, schema=list(RESULT_COLUMNS), orient="row")


def summarize_experiment(results: pl.DataFrame, *, reference: str = "fair-share") -> pl.DataFrame:
    """Mean metrics per policy and their ratios to ``reference`` run on the same workloads.

    Returns columns ``policy, utilization, io_slowdown, max_stretch`` (means),
    ``utilization_gain_pct`` (mean of 100 (U / U_ref - 1)), ``io_slowdown_vs_ref``
    (mean of IOS_ref / IOS: above 1 means better than the reference) and
    ``max_stretch_vs_ref`` (mean of MS / MS_ref: below 1 means better).
    """
    ref = results.filter(pl.col("policy") == reference).select(
        "point",
        "seed",
        pl.col("utilization").alias("u_ref"),
        pl.col("io_slowdown").alias("ios_ref"),
        pl.col("max_stretch").alias("ms_ref"),
    )
    if ref.is_empty():
        raise ValueError(f"reference policy {reference!r} is not in the results")
    order = {p: i for i, p in enumerate(results["policy"].unique(maintain_order=True))}
    return (
        results.join(ref, on=["point", "seed"])
        .group_by("policy")
        .agg(
            pl.col("utilization").mean(),
            pl.col("io_slowdown").mean(),
            pl.col("max_stretch").mean(),
            (100 * (pl.col("utilization") / pl.col("u_ref") - 1)).mean().alias("utilization_gain_pct"),
            (pl.col("ios_ref") / pl.col("io_slowdown")).mean().alias("io_slowdown_vs_ref"),
            (pl.col("max_stretch") / pl.col("ms_ref")).mean().alias("max_stretch_vs_ref"),
        )
        .sort(pl.col("policy").replace_strict(order, return_dtype=pl.Int64))
    )
