"""The workload format: JSON and Parquet round-trips, clear errors."""

import json

import numpy as np
import pytest

from iosets import InputError, read_workload, write_workload
from iosets.datasets import make_iosets_workload


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
