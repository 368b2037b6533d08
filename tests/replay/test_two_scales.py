"""One model, two scales (issue #13 item 6): a phase workload replayed as requests agrees with the phase engine."""

import numpy as np
import polars as pl
import pytest

from iosets.datasets import figure_seed, make_figure_workload, make_iosets_workload, workload_site_requests
from iosets.errors import InputError
from iosets.replay import Device, assign_policy, replay_phases, replay_trace, trace_metrics
from iosets.workload import Workload

TARGETS = {"utilization": 0.005, "io_slowdown": 0.02, "max_stretch": 0.02}
"""Largest relative difference allowed per metric (issue #13, Acceptance)."""
REQUEST_SIZES = (10**7, 10**6, 3 * 10**5)
"""Bytes per request: about 1/10, 1/100 and 1/300 of the smallest jobs' phases (about 1e8 bytes)."""


def device_of(workload: Workload) -> Device:
    return Device(queue_depth=1, bandwidth=workload.bandwidth, overhead=0.0, seek=0.0)


def replay_as_requests(workload: Workload, policy: str, request_size: int):
    """The closed-loop counterpart of ``policy``: iosets-wfq over SET-10's sets, or wfq with a class per job."""
    ops = workload_site_requests(workload, request_size=request_size)
    if policy == "fair-share":
        return replay_trace(ops, scheduler="wfq", device=device_of(workload))
    sets, priorities = assign_policy(workload, "set-10")
    return replay_trace(
        ops,
        scheduler="iosets-wfq",
        classes=dict(zip(workload.ids, sets.tolist(), strict=True)),
        weights=dict(zip(sets.tolist(), priorities.tolist(), strict=False)),
        device=device_of(workload),
    )


def relative_errors(workload: Workload, policy: str, request_size: int) -> dict[str, float]:
    """|trace / phase - 1| per metric, both over the workload's window."""
    phase = replay_phases(workload, policy).metrics.values()
    replay = replay_as_requests(workload, policy, request_size)
    trace = trace_metrics(replay, window=workload.window).values()
    return {name: abs(trace[name] / phase[name] - 1) for name in TARGETS}


def worst(errors: dict[str, float]) -> float:
    """The largest error relative to its target (<= 1: all within the targets)."""
    return max(errors[name] / target for name, target in TARGETS.items())


def test_requests_are_back_to_back_at_full_bandwidth_after_each_compute():
    wl = Workload.from_arrays(["a", "b"], [1.0, 0.0], [0, 0, 1], [2.0, 1.0, 0.5], [3e9, 0.0, 1e9])
    ops = workload_site_requests(wl, request_size=2 * 10**9)
    # a: computes [1, 3], writes 3 GB over [3, 6] as 2 + 1 GB, computes [6, 7], writes nothing at 7
    # b: computes [0, 0.5], writes 1 GB over [0.5, 1.5]
    assert ops.select("job_id", "phase", "offset", "size", "start", "end").rows() == [
        ("b", 0, 0, 10**9, 0.5, 1.5),
        ("a", 0, 0, 2 * 10**9, 3.0, 5.0),
        ("a", 0, 2 * 10**9, 10**9, 5.0, 6.0),
        ("a", 1, 3 * 10**9, 0, 7.0, 7.0),
    ]
    assert ops["rank"].to_list() == [0] * 4 and ops["file"].to_list() == ops["job_id"].to_list()
    assert not ops["synthetic"].any() and set(ops["op"]) == {"write"}


def test_a_job_alone_replays_to_the_phase_engine_dates_and_metrics():
    wl = make_iosets_workload([(1, 10.0, 1.0)], horizon=100, random_state=3)
    replay = replay_trace(workload_site_requests(wl, request_size=10**7), device=device_of(wl))
    timeline = replay_phases(wl, "exclusive-fcfs").timeline
    joined = timeline.join(replay.phases, on=["job_id", "phase"])
    assert joined.height == wl.n_phases
    # the trace moves each phase's bytes rounded to whole bytes: up to 0.5 ns per phase, 8 phases
    np.testing.assert_allclose(joined["start"], joined["cpu_end"], rtol=0, atol=4e-9)
    np.testing.assert_allclose(joined["end"], joined["io_end"], rtol=0, atol=4e-9)
    phase = replay_phases(wl, "exclusive-fcfs").metrics.values()
    trace = trace_metrics(replay, window=wl.window).values()
    assert {name: trace[name] for name in TARGETS} == pytest.approx(phase, rel=1e-9)
    assert trace["utilization_bound"] == pytest.approx(trace["utilization"], rel=1e-12)  # alone: it never waits
    assert replay.jobs["stretch"].to_list() == pytest.approx([1.0], rel=1e-12)


@pytest.mark.parametrize("request_size", [0, -1, 1.5, True])
def test_a_bad_request_size_is_refused(request_size):
    wl = Workload.from_arrays(["a"], [0.0], [0], [1.0], [1e9])
    with pytest.raises(InputError, match=f"request_size must be an integer >= 1, got {request_size!r}"):
        workload_site_requests(wl, request_size=request_size)


PROFILES = [(2, 1.0, 0.1), (2, 10.0, 1.0), (2, 100.0, 10.0)]
"""Fig. 6 in small: two jobs per decade of w_iter (1, 10, 100 s)."""


def fig6_like(window) -> Workload:
    return make_iosets_workload(PROFILES, horizon=400, window=window, random_state=0)


def test_set10_io_slowdown_on_fig6_moves_more_than_its_target_when_computes_move_less_than_a_request():
    # why Fig. 6's per-seed agreement is judged on seed means for SET-10 too: the phase engine alone,
    # each compute moved by at most 1e-5 of itself (< 0.1 ms for the 10 s jobs, a 1 MiB request takes
    # 1.05 ms), reorders the sets' FCFS queues; measured over these 10 draws on seed 2: IO-slowdown -5.6 %
    # to +2.1 %, Utilization within 0.1 %, Max Stretch within 0.9 %
    workload = make_figure_workload("fig6", 20, random_state=figure_seed("fig6", 20, 2))
    base = replay_phases(workload, "set-10").metrics.values()
    rng = np.random.default_rng(0)
    changes = []
    for _ in range(10):
        t_cpu = workload.t_cpu * (1 + rng.uniform(-1e-5, 1e-5, workload.n_phases))
        moved = Workload.from_arrays(
            workload.ids, workload.release, workload.phase_job, t_cpu, workload.io_bytes, window=workload.window
        )
        values = replay_phases(moved, "set-10").metrics.values()
        changes.append({name: values[name] / base[name] - 1 for name in TARGETS})
    spread = {name: max(abs(c[name]) for c in changes) for name in TARGETS}
    assert spread["io_slowdown"] > TARGETS["io_slowdown"], spread
    assert spread["utilization"] < TARGETS["utilization"], spread


@pytest.fixture(scope="module")
def inside() -> Workload:
    """A window that every job lives through: each issues its first request before it and ends after it."""
    workload = fig6_like((160.0, 340.0))
    timeline = replay_phases(workload, "set-10").timeline
    assert (
        timeline["cpu_end"].min() > 0
        and timeline.group_by("job_id")
        .agg(pl.col("cpu_end").min() < 160, pl.col("io_end").max() > 340)
        .select(pl.all_horizontal("cpu_end", "io_end"))
        .to_series()
        .all()
    )
    return workload


def test_set10_requests_converge_to_the_phase_engine_as_they_shrink(inside):
    errors = [relative_errors(inside, "set-10", size) for size in REQUEST_SIZES]
    assert worst(errors[-1]) <= 1, errors[-1]
    ratios = [worst(e) for e in errors]  # measured: 0.40, 0.022, 0.0020
    assert ratios[0] > 10 * ratios[1] > 100 * ratios[2], ratios


def test_fair_share_requests_agree_with_the_phase_engine_once_small(inside):
    # FAIR-SHARE is chaotic (a job served a request earlier or later reorders the phases that
    # follow): below 1/100 of the smallest phases the error stops shrinking and stays at that noise
    ratios = [worst(relative_errors(inside, "fair-share", size)) for size in REQUEST_SIZES]
    assert ratios[0] > 1, ratios  # measured: 1.76 (IO-slowdown off by 3.5 %), 0.019, 0.049
    assert max(ratios[1:]) < 0.1, ratios


def test_a_request_as_large_as_a_phase_is_not_the_fluid_model(inside):
    # 1 GB requests are ten times the 1 s jobs' phases (about 1e8 bytes): each such phase is one
    # request served whole, ahead of or behind the others, not a share of the bandwidth
    assert worst(relative_errors(inside, "set-10", 10**9)) > 1


def job_starts(workload: Workload) -> pl.DataFrame:
    """The jobs' starts on the trace's clock: a phase workload's jobs start computing at their release."""
    return pl.DataFrame({"job_id": workload.ids, "start": workload.release})


def test_a_job_that_starts_before_its_first_request_is_seen_from_its_start():
    # the default window (120, 280): one 100 s job is released before it and issues its first request
    # at 152 s; its compute before that request is in no trace, the jobs' starts give it
    workload = fig6_like(None)
    assert workload.window == (120.0, 280.0)
    ops = workload_site_requests(workload, request_size=10**6)
    first = ops.group_by("job_id").agg(pl.col("start").min()).join(job_starts(workload), on="job_id", suffix="_job")
    assert first.filter((pl.col("start_job") < 120) & (pl.col("start") > 120)).height == 1
    phase = replay_phases(workload, "set-10").metrics.values()
    replay = replay_as_requests(workload, "set-10", 10**6)
    seen = trace_metrics(replay, window=workload.window, jobs=job_starts(workload)).values()
    unseen = trace_metrics(replay, window=workload.window).values()
    errors = {name: abs(seen[name] / phase[name] - 1) for name in TARGETS}
    assert worst(errors) <= 1, errors
    # measured from the starts: -0.005 %, +0.04 %, +0.001 %; from its first request the job is present and
    # computes 32 s less inside the window: Utilization -0.76 %, Max Stretch +3.9 %
    assert unseen["utilization"] / phase["utilization"] - 1 < -TARGETS["utilization"]
    assert unseen["max_stretch"] / phase["max_stretch"] - 1 > TARGETS["max_stretch"]
