"""``GET /v1/report``: the report of the stored jobs under the current policy, rebuilt only when either changes."""

import sys
from pathlib import Path

import polars as pl
import pytest
from fastapi.testclient import TestClient

import iosets.report
from iosets.api import Settings, create_app, load_settings
from iosets.api._auth import create_token

sys.path.insert(0, str(Path(__file__).parent.parent / "report"))
from reading import SECTION_IDS, read_page  # noqa: E402  # the report tests' page reader

JOBS = [
    {"job_id": "j1", "user": "u1", "app": "A", "start": 1000.0, "w_iter": 40.0, "w_iter_confidence": 0.9},
    {"job_id": "j2", "user": "u2", "app": "<b>B</b>", "start": 1001.0, "w_iter": 4000.0, "w_iter_confidence": 0.9},
]


@pytest.fixture
def app(tmp_path):
    return create_app(Settings(data_dir=str(tmp_path), write_rate=1000.0))


@pytest.fixture
def client(app):
    with TestClient(app) as client:
        yield client


def _header(app, *scopes):
    _, token = create_token(app.state.service.store, list(scopes))
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def builds(monkeypatch):
    """The calls of build_report, which still builds the page."""
    calls = []
    build = iosets.report.build_report

    def counted(*args, **kwargs):
        calls.append(kwargs.get("recommendation"))
        return build(*args, **kwargs)

    monkeypatch.setattr(iosets.report, "build_report", counted)
    return calls


def test_the_report_shows_the_stored_jobs_with_their_sets(app, client, builds):
    writer, reader = _header(app, "write"), _header(app, "read")
    for row in JOBS:
        assert client.post("/v1/jobs", json=row, headers=writer).status_code == 201
    answer = client.get("/v1/report", headers=reader)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    assert answer.headers["content-security-policy"].startswith("default-src 'none';")
    page = read_page(answer.text)
    assert list(page.sections) == SECTION_IDS
    rows = {row["job_id"]: row for row in page.tables["jobs-table"].records()}
    assert {job: (row["app"], row["set"]) for job, row in rows.items()} == {"j1": ("A", "2"), "j2": ("<b>B</b>", "4")}
    assert page.sections["recommendation"]["missing"] is None  # SET-10: round(log10 40) = 2, round(log10 4000) = 4


def test_the_page_is_rebuilt_only_when_the_jobs_or_the_policy_change(app, client, builds):
    writer, reader, admin = _header(app, "write"), _header(app, "read"), _header(app, "admin")
    client.post("/v1/jobs", json=JOBS[0], headers=writer)
    first = client.get("/v1/report", headers=reader).text
    assert client.get("/v1/report", headers=reader).text == first
    assert len(builds) == 1
    client.post("/v1/jobs", json=JOBS[1], headers=writer)
    assert "j2" in client.get("/v1/report", headers=reader).text
    assert len(builds) == 2
    client.put("/v1/policy", json={"mapping": "set-100"}, headers=admin)
    client.get("/v1/report", headers=reader)
    client.get("/v1/report", headers=reader)
    assert len(builds) == 3
    assert builds[-1]["set"].to_list() == [1, 2]  # SET-100: round(log100 40) = 1, round(log100 4000) = 2


def test_no_stored_job_is_409_and_a_token_without_read_is_refused(app, client, builds):
    empty = client.get("/v1/report", headers=_header(app, "read"))
    assert empty.status_code == 409 and empty.json() == {"detail": "no job is stored yet: nothing to report"}
    assert client.get("/v1/report").status_code == 401
    assert client.get("/v1/report", headers=_header(app, "write")).status_code == 403
    assert builds == []


def test_a_job_with_an_end_but_no_start_neither_stops_the_refits_nor_the_report(app, client, builds):
    writer, reader = _header(app, "write"), _header(app, "read")
    client.post("/v1/jobs", json=JOBS[0], headers=writer)
    no_start = {"job_id": "j3", "user": "u3", "app": "C", "end": -7.2e16}  # ended before it was received
    assert client.post("/v1/jobs", json=no_start, headers=writer).status_code == 201
    client.post("/v1/jobs", json=JOBS[1], headers=writer)
    service = app.state.service
    service.refresh()
    history = service._state.history.sort("job_id")
    assert history["job_id"].to_list() == ["j1", "j2", "j3"]
    assert history.filter(job_id="j3")["start"].item() == -7.2e16  # its start: its end, not the receipt date
    answer = client.get("/v1/report", headers=reader)
    assert answer.status_code == 200
    assert builds[-1]["job_id"].sort().to_list() == ["j1", "j2", "j3"]


@pytest.fixture
def replayed(tmp_path, alone_known):
    """``write(site)``: the AloneKnown trace's comparison (tests/conftest.py) written at perjob.parquet."""
    from iosets.replay import compare_schedulers

    def write(site):
        comparison = compare_schedulers(site, alone_known.rec, ["fcfs", "wfq"], device=alone_known.device)
        comparison.write(tmp_path / "replay" / "perjob.parquet")
        return tmp_path / "replay" / "perjob.parquet"

    return write


def test_the_replay_setting_puts_the_comparison_and_its_model_check_in_the_report(tmp_path, alone_known, replayed):
    path = replayed(alone_known.site)
    config = tmp_path / "iosets.toml"
    config.write_text(f'[service]\ndata_dir = "{tmp_path}"\nwrite_rate = 1000.0\nreplay = "{path}"\n')
    app = create_app(load_settings(config))
    with TestClient(app) as client:
        client.post("/v1/jobs", json=JOBS[0], headers=_header(app, "write"))
        reader = _header(app, "read")
        page = read_page(client.get("/v1/report", headers=reader).text)
        assert page.sections["scheduler"]["missing"] is None and page.sections["model-check"]["missing"] is None
        reading = " ".join(page.sections["model-check"]["readings"])
        assert "median 37.5 % and p90 85.0 %" in reading
        assert "the model does not reproduce these jobs alone: contention predictions are not to be trusted" in reading
        # a new replay at the same path rebuilds the page: a and d alone reproduce (p90 22.5 %)
        replayed(alone_known.site.filter(pl.col("job_id").is_in(["a", "d"])))
        again = " ".join(read_page(client.get("/v1/report", headers=reader).text).sections["model-check"]["readings"])
        assert "median 12.5 % and p90 22.5 %" in again and "not to be trusted" not in again


def test_without_the_setting_the_model_check_says_what_to_run(app, client, builds):
    client.post("/v1/jobs", json=JOBS[0], headers=_header(app, "write"))
    page = read_page(client.get("/v1/report", headers=_header(app, "read")).text)
    missing = page.sections["model-check"]["missing"]
    assert missing.startswith("Not shown yet. No trace replay given. Run iosets replay-trace")
    assert missing.endswith('(to iosets serve: replay = "perjob.parquet" in its [service] table).')


def test_a_replay_setting_that_cannot_be_read_is_409_naming_the_file(tmp_path):
    missing = tmp_path / "nowhere.parquet"
    app = create_app(Settings(data_dir=str(tmp_path), write_rate=1000.0, replay=str(missing)))
    with TestClient(app) as client:
        client.post("/v1/jobs", json=JOBS[0], headers=_header(app, "write"))
        answer = client.get("/v1/report", headers=_header(app, "read"))
    assert answer.status_code == 409
    assert answer.json()["detail"].startswith(f"the report's trace replay ([service] replay): {missing}")
