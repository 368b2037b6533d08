"""The workload format: JSON and Parquet round-trips, clear errors."""

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosets import InputError, read_workload, write_workload
from iosets.datasets import make_iosets_workload
from iosets.errors import ReplayError
from iosets.replay import replay_phases


@pytest.fixture
def generated():
    return make_iosets_workload([(3, 10, 1), (2, 100, 10)], horizon=500, window=(100, 400), random_state=4)


@pytest.mark.parametrize("name", ["wl.json", "wl_folder"])
def test_round_trip_keeps_every_value(tmp_path, generated, name):
    path = write_workload(generated, tmp_path / name)
    back = read_workload(path)
    assert back.jobs.equals(generated.jobs)
    assert back.phases.equals(generated.phases)
    assert (back.bandwidth, back.horizon, back.window) == (1e9, 500, (100, 400))


def test_json_has_the_design_layout(tmp_path, generated):
    data = json.loads(write_workload(generated, tmp_path / "wl.json").read_text())
    assert set(data) == {"bandwidth", "horizon", "window", "jobs"}
    job = data["jobs"][0]
    assert set(job) == {"id", "release", "w_iter", "profile", "phases"}  # no empty set/priority
    assert len(job["phases"][0]) == 2


def test_characteristic_time_falls_back_to_definition_2(workload_of):
    wl = workload_of([(0, 0, 1, [[9, 1e9], [7, 3e9]])])
    # w_iter = mean(t_cpu + io_bytes / B) = (10 + 10) / 2
    assert wl.characteristic_times().tolist() == [10.0]


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not valid JSON"),
        ('{"jobs": 3}', "expected an object with a 'jobs' list"),
        ('{"jobs": [{"release": "soon", "phases": []}]}', "jobs\\[0\\].release: expected a finite number, got 'soon'"),
        ('{"jobs": [{"phases": [[1, 2], [3]]}]}', "jobs\\[0\\].phases: expected a list of \\[t_cpu, io_bytes\\]"),
        (
            '{"jobs": [{"phases": [[1, 2], [3, -4]]}]}',
            "jobs\\[0\\].phases\\[1\\]: expected t_cpu >= 0 and io_bytes >= 0",
        ),
        ('{"jobs": [], "window": [5, 1]}', "window must satisfy 0 <= T_begin < T_end"),
        ('{"jobs": [], "bandwidth": 0}', "bandwidth must be > 0"),
    ],
)
def test_bad_workload_files_name_the_field(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message) as info:
        read_workload(path)
    assert "bad.json" in str(info.value) or "workload" in str(info.value)


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_workload(tmp_path / "absent.json")


def test_failed_write_leaves_the_old_file(tmp_path, generated, monkeypatch):
    path = write_workload(generated, tmp_path / "wl.json")
    before = path.read_text()
    monkeypatch.setattr("iosets.workload.json.dumps", lambda _: (_ for _ in ()).throw(RuntimeError("disk full")))
    with pytest.raises(RuntimeError):
        write_workload(generated, path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["wl.json"]


def test_with_assignment_fills_set_and_priority(generated):
    wl = generated.with_assignment(np.arange(5), np.full(5, 0.5))
    assert wl.jobs["set"].to_list() == [0, 1, 2, 3, 4]
    assert wl.jobs["priority"].to_list() == [0.5] * 5


def test_from_jobs_builds_periodic_phases():
    import polars as pl

    from iosets import Workload

    jobs = pl.DataFrame({"job_id": ["a", "b", "c"], "w_iter": [10.0, 400.0, None], "alpha_io": [0.1, 0.5, 0.2]})
    wl = Workload.from_jobs(jobs, bandwidth=1e6, horizon=1000.0, window=(100.0, 900.0))
    assert wl.jobs["id"].to_list() == ["a", "b"]  # c has no rhythm
    assert np.bincount(wl.phases["job"].to_numpy()).tolist() == [100, 2]
    assert wl.phases["t_cpu"].to_list()[0] == pytest.approx(9.0)
    assert wl.phases["io_bytes"].to_list()[-1] == pytest.approx(200.0 * 1e6)
    np.testing.assert_allclose(wl.characteristic_times(), [10.0, 400.0])


# ------------------------------------------------------------------------- any input: loads or InputError

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.integers(min_value=10**300, max_value=10**310)
    | st.floats()
    | st.text(max_size=5)
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
NUMBERS = st.integers(min_value=-5, max_value=10**6) | st.floats(min_value=-1.0, max_value=1e12) | st.floats()
PLAUSIBLE = st.integers(min_value=0, max_value=1000) | st.floats(min_value=0.0, max_value=1e10)


def mostly(plausible, anything=NUMBERS | JSON_VALUES):
    """Three draws in four from ``plausible``, else any JSON value."""
    return st.sampled_from([plausible] * 3 + [anything]).flatmap(lambda chosen: chosen)


PAIR = mostly(st.lists(PLAUSIBLE, min_size=2, max_size=2), st.lists(NUMBERS | JSON_VALUES, max_size=3) | JSON_VALUES)
JOB = st.fixed_dictionaries(
    {"phases": mostly(st.lists(PAIR, max_size=5))},
    optional={
        "id": mostly(st.text(max_size=3)),
        "release": mostly(PLAUSIBLE),
        "set": mostly(st.integers(min_value=-3, max_value=3)),
        "priority": mostly(st.floats(min_value=1e-3, max_value=10.0)),
        "w_iter": mostly(st.floats(min_value=1e-3, max_value=1e4)),
        "profile": mostly(st.integers(min_value=0, max_value=3)),
    },
)
WORKLOAD = st.fixed_dictionaries(
    {"jobs": mostly(st.lists(mostly(JOB), max_size=4))},
    optional={
        "bandwidth": mostly(st.floats(min_value=1.0, max_value=1e10)),
        "horizon": mostly(st.floats(min_value=1.0, max_value=1e5)),
        "window": mostly(st.lists(st.floats(min_value=0.0, max_value=1e5), min_size=2, max_size=2)),
    },
)


def check_loads_or_names_the_file(tmp_path, text: str) -> None:
    """The file either loads (and replays to metrics that are numbers or None) or raises InputError naming it."""
    path = tmp_path / "wl.json"
    path.write_text(text)
    try:
        workload = read_workload(path)
    except InputError as exc:
        assert str(exc).startswith(f"{path}: "), str(exc)
        return
    try:
        metrics = replay_phases(workload, "fair-share").metrics
    except ReplayError:  # dates beyond the largest double: refused, never left unwritten
        return
    assert all(v is None or math.isfinite(v) for v in metrics.values().values()), metrics
    assert set(metrics.notes) == {name for name, v in metrics.values().items() if v is None}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=WORKLOAD | JSON_VALUES)
def test_any_json_workload_loads_or_is_an_input_error(tmp_path, data):
    check_loads_or_names_the_file(tmp_path, json.dumps(data))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=WORKLOAD, cut=st.integers(min_value=0, max_value=200), junk=st.text(max_size=3))
def test_any_broken_json_text_is_an_input_error(tmp_path, data, cut, junk):
    text = json.dumps(data)
    check_loads_or_names_the_file(tmp_path, text[:cut] + junk + text[cut:])
