"""One job about to start: `Recommender.predict_one` against the former `recommend_new_job` (the anchor).

Fits a Recommender on ``make_job_history(n_jobs)`` (SET-10, B = 10 GB/s), then times
``predict_one`` over ``n_calls`` queries drawn like a scheduler's: 80 % jobs of the
history (its (app, user) pairs), 10 % a known app with a new user, 10 % apps never seen
(model path; half with a code name the history knows), 60 % with nprocs. The anchor is
what ``recommend_new_job`` did per call before the fitted recommender, with the estimator
already fitted: the estimator's table path on a one-row frame, then ``recommend`` on the
history plus the job. Both paths give the same answer (checked on the anchor's queries).
Prints p50 / p99 / p99.9 per call and the anchor / predict_one ratios.
Target: p99 < 0.2 ms.

Usage: .venv/bin/python benchmarks/predict_one.py [n_jobs] [n_calls] [n_anchor_calls]
"""

import sys
import time
import warnings

import numpy as np
import polars as pl

from iosets.datasets import make_job_history
from iosets.recommender import Recommender, recommend

ENFORCEMENT = {"bandwidth": 1e10, "max_request": 65536, "limit": 0.5}
ANSWER = ("set", "priority", "conservative", "wfq_weight", "rbfq_weight", "rbfq_limit")


def make_queries(history: pl.DataFrame, n: int, seed: int = 0) -> list[dict]:
    """Submit-time fields of ``n`` jobs (see the module docstring)."""
    rng = np.random.default_rng(seed)
    rows = history.select("app", "user", "nprocs", "requested_time").rows()
    apps = history["app"].unique().sort().to_list()
    unseen = [f"{app.split('_')[0]}_new" for app in apps[:10]] + [f"tool{k}x" for k in range(10)]
    queries = []
    for _ in range(n):
        app, user, nprocs, requested = rows[rng.integers(len(rows))]
        kind = rng.random()
        if kind >= 0.9:
            app = unseen[rng.integers(len(unseen))]
        elif kind >= 0.8:
            user = f"new{rng.integers(100)}"
        query = {"app": app, "user": user, "requested_time": requested}
        if rng.random() < 0.6:
            query["nprocs"] = nprocs
        queries.append(query)
    return queries


def former_recommend_new_job(history: pl.DataFrame, estimator, query: dict, **params) -> dict:
    """The anchor: an estimate from the estimator's table path, recommended with the history's jobs.

    ``tests/recommender/test_recommender.py`` checks that ``predict_one`` gives its answers.
    """
    estimate = estimator.estimate(pl.DataFrame({k: [v] for k, v in query.items()})).row(0, named=True)
    new = pl.DataFrame(
        {
            "job_id": ["<new job>"],
            "app": [query["app"]],
            "user": [query["user"]],
            "w_iter": [estimate["w_iter"]],
            "w_iter_confidence": [estimate["w_iter_confidence"]],
            "alpha_io": [history.filter(pl.col("app") == query["app"])["alpha_io"].median()],
        },
        schema_overrides={"w_iter": pl.Float64, "alpha_io": pl.Float64},
    )
    past = history.select(*new.columns, "start", "end")
    row = recommend(pl.concat([past, new], how="diagonal"), **params).row(-1, named=True)
    return {**query, **estimate, **{name: row[name] for name in ANSWER}}


def per_call(function, queries: list[dict]) -> np.ndarray:
    """Seconds per call."""
    times = np.empty(len(queries))
    for k, query in enumerate(queries):
        start = time.perf_counter_ns()
        function(query)
        times[k] = time.perf_counter_ns() - start
    return times / 1e9


def percentiles(times: np.ndarray) -> tuple[float, float, float]:
    return tuple(float(v) for v in np.percentile(times, [50, 99, 99.9]))


def main(n_jobs: int = 10_000, n_calls: int = 10_000, n_anchor: int = 200) -> None:
    warnings.simplefilter("ignore", UserWarning)  # capped WFQ weights, scaled reservations: the same in both paths
    history = make_job_history(n_jobs, n_apps=n_jobs // 100, n_users=max(3, n_jobs // 300), random_state=0)
    start = time.perf_counter()
    recommender = Recommender(**ENFORCEMENT).fit(history)
    fit_s = time.perf_counter() - start
    queries = make_queries(history, n_calls)
    recommender.predict_one(**queries[0])  # first call: lazy imports
    fast = per_call(lambda q: recommender.predict_one(**q), queries)
    anchor_queries = queries[:n_anchor]

    def anchor(query: dict) -> dict:
        return former_recommend_new_job(history, recommender.estimator_, query, **ENFORCEMENT)

    slow = per_call(anchor, anchor_queries)
    for query in anchor_queries:
        got, expected = recommender.predict_one(**query), anchor(query)
        assert {k: got[k] for k in expected} == expected, (query, got, expected)

    sources = [recommender.predict_one(**q)["estimate_source"] for q in queries]
    mix = ", ".join(f"{s} {sources.count(s)}" for s in ("history", "model", "none"))
    print(f"history: {n_jobs} jobs, {history['app'].n_unique()} apps; fit {fit_s:.2f} s")
    print(f"queries: {n_calls} ({mix}); anchor on the first {n_anchor}, same answers")
    print(f"  {'per call':28s} {'p50':>10s} {'p99':>10s} {'p99.9':>10s}")
    for name, times in (("predict_one", fast), ("former recommend_new_job", slow)):
        p50, p99, p999 = percentiles(times)
        print(f"  {name:28s} {p50 * 1e3:8.3f} ms {p99 * 1e3:7.3f} ms {p999 * 1e3:7.3f} ms")
    model = np.array([s == "model" for s in sources])
    p50, p99, p999 = percentiles(fast[model])
    print(f"  {'predict_one, model path':28s} {p50 * 1e3:8.3f} ms {p99 * 1e3:7.3f} ms {p999 * 1e3:7.3f} ms")
    ratio = [a / b for a, b in zip(percentiles(slow), percentiles(fast), strict=True)]
    print(f"anchor / predict_one: p50 {ratio[0]:.0f}x, p99 {ratio[1]:.0f}x, p99.9 {ratio[2]:.0f}x")
    print(f"target p99 < 0.2 ms: {'met' if percentiles(fast)[1] < 2e-4 else 'NOT met'}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
