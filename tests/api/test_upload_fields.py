"""The text fields of a Darshan log's upload: ``job_id`` and ``nodes`` stored with the log's row on both stores,
checked by the posted row's rules before the log is read; any other field refused."""

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from iosets.api import Settings, create_app
from iosets.api._auth import create_token

from .postgres import postgres_database, postgres_server  # noqa: F401  (fixtures)

DARSHAN_LOG = Path(__file__).parents[1] / "data" / "darshan" / "jlbez_IO_test5.darshan"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_settings(request, tmp_path) -> dict:
    """Settings of a store of each kind (PostgreSQL: a new database on the session's server)."""
    if request.param == "sqlite":
        return {"data_dir": str(tmp_path / "data")}
    return {"database": request.getfixturevalue("postgres_database"), "data_dir": str(tmp_path / "data")}


@pytest.fixture
def client(tmp_path):
    app = create_app(Settings(data_dir=str(tmp_path / "data"), write_rate=1000.0))
    _, token = create_token(app.state.service.store, ["admin"])
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as client:
        yield client


def upload(client: TestClient, fields: dict, log: bytes | None = None):
    """``POST /v1/jobs`` of a Darshan log (``DARSHAN_LOG`` unless ``log``) with the text ``fields``."""
    files = {"log": ("job.darshan", DARSHAN_LOG.read_bytes() if log is None else log)}
    return client.post("/v1/jobs", files=files, data=fields)


def test_an_uploads_nodes_are_stored_with_its_row_on_both_stores(store_settings, tmp_path):
    app = create_app(Settings(**store_settings, write_rate=1000.0))
    _, token = create_token(app.state.service.store, ["admin"])
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as client:
        posted = upload(client, {"job_id": "4242", "nodes": "3"})
        assert posted.status_code == 201 and (posted.json()["job_id"], posted.json()["nodes"]) == ("4242", 3)
        assert upload(client, {"job_id": "4243", "nodes": ""}).json()["nodes"] is None  # empty: not given
        assert upload(client, {"job_id": "4244"}).json()["nodes"] is None
        stored = {job["job_id"]: job for job in client.get("/v1/jobs").json()["jobs"]}
    assert {job_id: job["nodes"] for job_id, job in stored.items()} == {"4242": 3, "4243": None, "4244": None}
    assert {job["path"] for job in stored.values()} == {"job.darshan"}
    assert stored["4242"]["app"] == stored["4244"]["app"] is not None  # the rest of the row is the log's


@pytest.mark.parametrize(
    ("nodes", "detail"),
    [
        ("0", "nodes: expected an integer >= 1, got 0"),
        ("-1", "nodes: expected an integer >= 1, got -1"),
        ("x", "nodes: Input should be a valid integer, unable to parse string as an integer"),
        ("1.5", "nodes: Input should be a valid integer, unable to parse string as an integer"),
    ],
)
def test_a_bad_node_count_is_422_naming_it_before_the_log_is_read(client, nodes, detail):
    answer = upload(client, {"job_id": "4242", "nodes": nodes}, log=b"not a Darshan log")
    assert (answer.status_code, answer.json()) == (422, {"detail": detail})
    assert client.get("/v1/jobs").json()["jobs"] == []
    assert list((client.app.state.upload_dir).iterdir()) == []  # the saved upload removed


def test_the_upload_and_a_json_row_keep_one_rule_for_nodes(client):
    row = {"job_id": "4242", "user": "u", "app": "A", "nodes": 0}
    assert client.post("/v1/jobs", json=row).json() == {
        "detail": "job '4242' row 0: nodes: expected an integer >= 1, got 0"
    }
    assert client.post("/v1/jobs", json={**row, "nodes": "3"}).json()["nodes"] == 3  # JSON text "3": the same int


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        ({"colour": "red"}, "colour: Extra inputs are not permitted"),
        ({"NODES": "2"}, "NODES: Extra inputs are not permitted"),
        ({"nodes": ["2", "3"]}, "nodes: given twice"),
        ({"job_id": "x" * 257}, "job_id: String should have at most 256 characters"),
    ],
)
def test_any_other_field_a_repeated_one_or_a_bad_job_id_is_422_naming_it(client, fields, detail):
    answer = upload(client, fields)
    assert (answer.status_code, answer.json()) == (422, {"detail": detail})
    assert client.get("/v1/jobs").json()["jobs"] == []
