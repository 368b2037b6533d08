"""w_iter estimator against a global median and a per-app median, on a generated site history.

Two scenarios on ``make_job_history(n_jobs, n_apps=n_jobs // 100, n_users=n_jobs // 300)``:
seen apps (fit on the first 80 % of jobs by start, estimate the last 20 %) and unseen
apps (apps split in four folds, each held out once, errors pooled). Errors are
|log10 estimate - log10 w_iter| over jobs whose w_iter was found; 'set acc' is the
share of jobs that SET-10 (``map_sets``) puts in the right set;
'hit' is the share within half a decade, which the confidence estimates ('conf').
Rows the estimator leaves at 'none' take the global median, as the baselines do
for apps they do not know. Ablations show the EWMA without decay and without the
(app, user) keying.

Usage: python benchmarks/estimator.py [n_jobs] [seed]
"""

import sys
import time

import numpy as np
import polars as pl

from iosets.datasets import make_job_history
from iosets.recommender import map_sets
from iosets.recommender._history import WIterEstimator


def _median_by_app(train: pl.DataFrame, test: pl.DataFrame, fallback: float) -> np.ndarray:
    per_app = train.drop_nulls("w_iter").group_by("app").agg(m=pl.col("w_iter").log10().median())
    out = test.with_row_index("_row").join(per_app, on="app", how="left").sort("_row")
    return out["m"].fill_null(fallback).to_numpy()


def _run(train: pl.DataFrame, test: pl.DataFrame, **params) -> dict:
    """log10 estimates per method for ``test`` (rows with a w_iter), plus sources, confidences and timings."""
    median = float(np.median(np.log10(train["w_iter"].drop_nulls().to_numpy())))
    t0 = time.perf_counter()
    est = WIterEstimator(**params).fit(train)
    t1 = time.perf_counter()
    out = est.estimate(test)
    t2 = time.perf_counter()
    return {
        "truth": np.log10(test["w_iter"].to_numpy()),
        "estimator": np.log10(out["w_iter"].fill_null(10**median).to_numpy()),
        "global median": np.full(test.height, median),
        "per-app median": _median_by_app(train, test, median),
        "source": out["estimate_source"].to_numpy(),
        "conf": out["w_iter_confidence"].to_numpy(),
        "fit_s": t1 - t0,
        "estimate_s": t2 - t1,
    }


def _pool(runs: list[dict]) -> dict:
    return {k: (np.concatenate([r[k] for r in runs]) if k not in ("fit_s", "estimate_s") else
                sum(r[k] for r in runs)) for k in runs[0]}  # fmt: skip


def _row(name: str, est: np.ndarray, truth: np.ndarray, conf: np.ndarray | None = None) -> str:
    err = np.abs(est - truth)
    acc = np.mean(map_sets(10**est) == map_sets(10**truth))
    hit = np.mean(err < 0.5)
    extra = f"   conf {np.mean(conf):.2f}" if conf is not None else ""
    return f"  {name:24s} {np.median(err):8.3f} {np.mean(err):8.3f} {acc:8.1%} {hit:8.1%}{extra}"


def _table(title: str, run: dict, ablations: dict | None = None) -> None:
    n = len(run["truth"])
    mix = ", ".join(f"{s} {np.sum(run['source'] == s)}" for s in ("history", "model", "none"))
    print(f"\n{title}: {n} jobs ({mix}); fit {run['fit_s']:.2f} s, estimate {run['estimate_s'] * 1e3:.1f} ms")
    print(f"  {'method':24s} {'MdAE':>8s} {'MAE':>8s} {'set acc':>8s} {'hit':>8s}")
    print(_row("estimator", run["estimator"], run["truth"], run["conf"]))
    for source in ("history", "model"):
        sel = run["source"] == source
        if sel.any():
            print(_row(f"  of which {source}", run["estimator"][sel], run["truth"][sel], run["conf"][sel]))
    for name, other in (ablations or {}).items():
        print(_row(name, other["estimator"], other["truth"], other["conf"]))
    print(_row("per-app median", run["per-app median"], run["truth"]))
    print(_row("global median", run["global median"], run["truth"]))


def main(n_jobs: int = 20000, seed: int = 0) -> None:
    history = make_job_history(n_jobs, n_apps=n_jobs // 100, n_users=max(3, n_jobs // 300), random_state=seed)
    found = pl.col("w_iter").is_not_null()
    print(
        f"history: {history.height} jobs, {history['app'].n_unique()} apps, {history['user'].n_unique()} users, "
        f"{history['w_iter'].null_count()} without w_iter (seed {seed})"
    )

    cut = history["start"].quantile(0.8)
    train, test = history.filter(pl.col("start") < cut), history.filter((pl.col("start") >= cut) & found)
    seen = _run(train, test)
    ablations = {
        "EWMA, no decay": _run(train, test, halflife=1e12, use_model=False),
        "EWMA, app keying only": _run(train, test, min_jobs=10**9, use_model=False),
    }
    _table("seen apps (time split, last 20 % of jobs)", seen, ablations)

    apps = history["app"].unique().sort().to_numpy()
    fold = np.random.default_rng(seed).permutation(len(apps)) % 4
    runs = []
    for f in range(4):
        held = pl.col("app").is_in(apps[fold == f].tolist())
        runs.append(_run(history.filter(~held), history.filter(held & found)))
    unseen = _pool(runs)
    _table("unseen apps (4 folds of apps, pooled)", unseen)

    def mdae(run, key):
        return float(np.median(np.abs(run[key] - run["truth"])))

    print(
        f"\nsummary: MdAE estimator / global median: seen {mdae(seen, 'estimator'):.3f} / "
        f"{mdae(seen, 'global median'):.3f}, unseen {mdae(unseen, 'estimator'):.3f} / "
        f"{mdae(unseen, 'global median'):.3f}"
    )


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
