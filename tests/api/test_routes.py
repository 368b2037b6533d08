"""Every route in process (TestClient): its answer, and each error code of the contract."""

import json
import threading
import time

import pytest
from fastapi.testclient import TestClient

from iosets.api import Settings, create_app
from iosets.api._auth import create_token

ROW = {"job_id": "j1", "user": "u1", "app": "A", "start": 100.0, "w_iter": 40.0, "w_iter_confidence": 0.9}


@pytest.fixture
def app(tmp_path):
    return create_app(Settings(data_dir=str(tmp_path), write_rate=1000.0, max_upload=4096))


@pytest.fixture
def client(app):
    with TestClient(app) as client:
        yield client


@pytest.fixture
def auth(app):
    """``auth(*scopes)``: the Authorization header of a new token with those scopes."""

    def header(*scopes):
        _, token = create_token(app.state.service.store, list(scopes))
        return {"Authorization": f"Bearer {token}"}

    return header


def _jobs(n, app="A", user="u1", w_iter=40.0, **extra):
    return [
        {"job_id": f"{app}{i}", "user": user, "app": app, "start": 1000.0 + i, "w_iter": w_iter, **extra}
        for i in range(n)
    ]


# ---------------------------------------------------------------------------------------------- health


@pytest.mark.timing
def test_healthz_and_readyz(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    deadline = time.monotonic() + 60.0  # the first fit runs in the background: 503 until it ends
    while (ready := client.get("/readyz")).status_code == 503 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ready.json() == {"status": "ready", "jobs": 0, "policy_version": 1}


def test_readyz_is_503_until_the_service_starts(app):
    client = TestClient(app)  # no lifespan: the recommender is never fitted
    answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["detail"].startswith("not ready")


def test_metrics_count_requests_per_route_template(client, auth):
    headers = auth("write")
    client.post("/v1/jobs", json=ROW, headers=headers)
    client.get("/v1/jobs/j1", headers=headers)  # 403: a write token cannot read
    text = client.get("/metrics").text
    assert 'iosets_http_requests_total{method="POST",route="/v1/jobs",status="201"} 1.0' in text
    assert 'iosets_http_requests_total{method="GET",route="/v1/jobs/{job_id}",status="403"} 1.0' in text
    assert "iosets_jobs_stored 1.0" in text
    assert 'iosets_http_request_seconds_count{route="/v1/jobs"} 1.0' in text
    for name in ("iosets_estimate_age_seconds", "iosets_refit_seconds_count", "iosets_refits_total"):
        assert name in text


# ---------------------------------------------------------------------------------------------- auth


def test_no_token_and_unknown_token_are_401_with_the_bearer_challenge(client):
    for headers in ({}, {"Authorization": "Bearer iosets_nope"}):
        answer = client.get("/v1/recommendation", params={"app": "A", "user": "u"}, headers=headers)
        assert answer.status_code == 401
        assert answer.headers["WWW-Authenticate"] == "Bearer"
    assert client.get("/v1/policy").json() == {"detail": "Authorization: expected a Bearer token"}


def test_a_token_without_the_scope_is_403_and_admin_implies_read_and_write(client, auth):
    answer = client.get("/v1/recommendation", params={"app": "A", "user": "u"}, headers=auth("write"))
    assert (answer.status_code, answer.json()) == (403, {"detail": "Authorization: this token lacks the 'read' scope"})
    assert client.post("/v1/jobs", json=ROW, headers=auth("read")).status_code == 403
    assert client.put("/v1/policy", json={}, headers=auth("read", "write")).status_code == 403
    admin = auth("admin")
    assert client.post("/v1/jobs", json=ROW, headers=admin).status_code == 201
    assert client.get("/v1/jobs/j1", headers=admin).status_code == 200


def test_a_revoked_token_is_401_once_the_cache_renewed_it(app, client, monkeypatch):
    from iosets.api import _auth

    store = app.state.service.store
    token_id, token = create_token(store, ["read"])
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/v1/policy", headers=headers).status_code == 200
    store.revoke_token(token_id)
    assert client.get("/v1/policy", headers=headers).status_code == 200  # trusted for TOKEN_CACHE_SECONDS
    later = _auth.time.monotonic() + _auth.TOKEN_CACHE_SECONDS + 0.1
    monkeypatch.setattr(_auth.time, "monotonic", lambda: later)
    assert client.get("/v1/policy", headers=headers).status_code == 200  # past its time: answers, and renews
    client.portal.call(app.state.tokens.renewed)
    assert client.get("/v1/policy", headers=headers).status_code == 401


def test_the_store_is_read_for_a_token_off_the_event_loop(app, client, monkeypatch):
    """A store read on the event loop stalls every request meanwhile: first uses and renewals read in a thread."""
    from iosets.api import _auth

    store = app.state.service.store
    _, token = create_token(store, ["read"])
    loop_thread = client.portal.call(threading.get_ident)
    readers = []
    read = store.token_scopes
    monkeypatch.setattr(store, "token_scopes", lambda digest: readers.append(threading.get_ident()) or read(digest))
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/v1/policy", headers=headers).status_code == 200  # first use
    later = _auth.time.monotonic() + _auth.TOKEN_CACHE_SECONDS + 0.1
    monkeypatch.setattr(_auth.time, "monotonic", lambda: later)
    assert client.get("/v1/policy", headers=headers).status_code == 200  # renewal
    client.portal.call(app.state.tokens.renewed)
    assert len(readers) == 2 and loop_thread not in readers


# ------------------------------------------------------------------------------------ recommendations


def test_an_empty_store_answers_the_default_set(client, auth):
    answer = client.get("/v1/recommendation", params={"app": "A", "user": "u", "job_id": "7"}, headers=auth("read"))
    assert answer.json() == {
        "app": "A",
        "user": "u",
        "nprocs": None,
        "requested_time": None,
        "job_id": "7",
        "set": 99,  # the hooks' default answer: iosets.api.client.DEFAULT_SET
        "priority": 1e-99,
        "conservative": True,
        "wfq_weight": 1 << 20,
        "rbfq_reservation": None,
        "rbfq_weight": 1.0,
        "rbfq_limit": None,
        "w_iter": None,
        "w_iter_confidence": 0.0,
        "source": "default",
        "policy_version": 1,
    }


def test_a_posted_job_is_seen_by_the_next_recommendation(client, auth):
    headers = auth("read", "write")
    for row in _jobs(5, w_iter=400.0, w_iter_confidence=0.95):
        assert client.post("/v1/jobs", json=row, headers=headers).status_code == 201
    got = client.get("/v1/recommendation", params={"app": "A", "user": "u1", "nprocs": 4}, headers=headers).json()
    assert (got["set"], got["priority"], got["source"], got["nprocs"]) == (3, 0.001, "history", 4)  # log10 400 = 2.6
    other = client.get("/v1/recommendation", params={"app": "B", "user": "u1"}, headers=headers).json()
    assert (other["set"], other["conservative"], other["source"]) == (4, True, "default")  # one below set 3


def test_a_missing_or_bad_query_field_is_422_naming_it(client, auth):
    headers = auth("read")
    answer = client.get("/v1/recommendation", params={"app": "A"}, headers=headers)
    assert (answer.status_code, answer.json()) == (422, {"detail": "query.user: Field required"})
    answer = client.get("/v1/recommendation", params={"app": "A", "user": "u", "nprocs": 0}, headers=headers)
    assert answer.json() == {"detail": "query.nprocs: Input should be greater than or equal to 1"}


def test_a_batch_answers_each_job_in_order(client, auth):
    headers = auth("read", "write")
    for row in _jobs(3, app="A", w_iter=40.0) + _jobs(3, app="Z", w_iter=4000.0):
        client.post("/v1/jobs", json=row, headers=headers)
    body = {"jobs": [{"app": "Z", "user": "u1"}, {"app": "A", "user": "u1", "job_id": "9"}]}
    got = client.post("/v1/recommendations", json=body, headers=headers).json()["recommendations"]
    assert [(r["app"], r["set"], r["job_id"]) for r in got] == [("Z", 4, None), ("A", 2, "9")]
    too_many = {"jobs": [{"app": "A", "user": "u"}] * 1001}
    answer = client.post("/v1/recommendations", json=too_many, headers=headers)
    assert answer.status_code == 422 and answer.json()["detail"].startswith("body.jobs: List should have at most 1000")


# ----------------------------------------------------------------------------------------------- jobs


def test_the_same_job_id_twice_is_201_then_200_and_one_row(client, auth):
    headers = auth("read", "write")
    first = client.post("/v1/jobs", json=ROW, headers=headers)
    again = client.post("/v1/jobs", json={**ROW, "app": "other"}, headers=headers)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["app"] == "A" and again.json()["received_at"] == first.json()["received_at"]
    assert [job["job_id"] for job in client.get("/v1/jobs", headers=headers).json()["jobs"]] == ["j1"]


def test_a_bad_row_is_422_naming_its_column_and_rule(client, auth):
    headers = auth("read", "write")
    answer = client.post("/v1/jobs", json={**ROW, "nprocs": 0}, headers=headers)
    assert (answer.status_code, answer.json()) == (422, {"detail": "job 'j1' row 0: nprocs: expected >= 1, got 0"})
    answer = client.post("/v1/jobs", json={**ROW, "end": 50.0}, headers=headers)
    assert answer.json() == {"detail": "job 'j1' row 0: end: expected a date >= start, got 50.0"}
    answer = client.post("/v1/jobs", json={"job_id": "x", "app": "A"}, headers=headers)
    assert answer.json() == {"detail": "body.user: Field required"}
    answer = client.post("/v1/jobs", json={**ROW, "colour": "red"}, headers=headers)
    assert answer.json() == {"detail": "body.colour: Extra inputs are not permitted"}
    answer = client.post("/v1/jobs", content=b"{not json", headers=headers)
    assert answer.status_code == 422 and answer.json()["detail"].startswith("body: Invalid JSON")
    assert client.get("/v1/jobs", headers=headers).json() == {"jobs": [], "next_cursor": None}


def test_a_body_over_max_upload_is_413_and_stores_nothing(client, auth):
    headers = auth("read", "write")
    body = json.dumps({**ROW, "explanation": "x" * (1 << 20)}).encode()  # JSON: max_json, 1 MB by default
    answer = client.post("/v1/jobs", content=body, headers=headers)
    assert answer.status_code == 413
    assert answer.json() == {"detail": f"request body: {len(body)} bytes, more than max_json (1048576 bytes)"}
    log = client.post("/v1/jobs", files={"log": ("big.darshan", b"\0" * 5000)}, headers=headers)
    assert log.status_code == 413
    assert client.get("/v1/jobs", headers=headers).json()["jobs"] == []


def test_an_upload_without_the_log_field_is_422(client, auth):
    answer = client.post("/v1/jobs", files={"file": ("x.darshan", b"abc")}, headers=auth("write"))
    assert answer.json() == {"detail": "log: expected a file field 'log' holding a Darshan log"}


def test_flooding_writes_is_429_with_retry_after(tmp_path):
    app = create_app(Settings(data_dir=str(tmp_path), write_rate=1.0))
    _, token = create_token(app.state.service.store, ["write"])
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(app) as client:
        codes = [client.post("/v1/jobs", json={**ROW, "job_id": str(i)}, headers=headers) for i in range(3)]
    assert [c.status_code for c in codes] == [201, 201, 429]  # burst 2 x write_rate
    assert codes[2].headers["Retry-After"] == "1"
    assert codes[2].json()["detail"].startswith("POST /v1/jobs: more than 1 jobs per second with this token")


def test_get_one_job_or_404(client, auth):
    headers = auth("read", "write")
    client.post("/v1/jobs", json=ROW, headers=headers)
    got = client.get("/v1/jobs/j1", headers=headers).json()
    assert (got["app"], got["w_iter"], got["nprocs"]) == ("A", 40.0, None)
    missing = client.get("/v1/jobs/nope", headers=headers)
    assert (missing.status_code, missing.json()) == (404, {"detail": "job_id 'nope': no such job"})


def test_job_pages_follow_start_then_job_id(client, auth):
    headers = auth("read", "write")
    starts = {"c": 3.0, "a": 1.0, "b": 3.0, "d": None, "e": 2.0}
    for job_id, start in starts.items():
        client.post("/v1/jobs", json={"job_id": job_id, "user": "u", "app": "A", "start": start}, headers=headers)
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/jobs", params=params, headers=headers).json()
        seen.append([job["job_id"] for job in page["jobs"]])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [["d", "a"], ["e", "b"], ["c"]]  # no start first, then (start, job_id)
    since = client.get("/v1/jobs", params={"since": 2.5}, headers=headers).json()
    assert [job["job_id"] for job in since["jobs"]] == ["b", "c"]
    bad = client.get("/v1/jobs", params={"cursor": "zzz"}, headers=headers)
    assert (bad.status_code, bad.json()) == (422, {"detail": "cursor: not a cursor this service returned, got 'zzz'"})
    assert client.get("/v1/jobs", params={"limit": 0}, headers=headers).status_code == 422


def test_app_summary_or_404(client, auth):
    headers = auth("read", "write")
    rows = [
        {"job_id": "1", "user": "u2", "app": "A", "start": 10.0, "w_iter": 10.0, "alpha_io": 0.1},
        {"job_id": "2", "user": "u1", "app": "A", "start": 30.0, "w_iter": 30.0, "alpha_io": 0.3},
        {"job_id": "3", "user": "u1", "app": "A", "start": 20.0, "w_iter": 1000.0, "alpha_io": 0.2},
        {"job_id": "4", "user": "u3", "app": "B", "start": 5.0, "w_iter": 5.0},
    ]
    for row in rows:
        client.post("/v1/jobs", json=row, headers=headers)
    got = client.get("/v1/apps/A", headers=headers).json()
    summary = {key: got[key] for key in ("app", "n_jobs", "users", "first_seen", "last_seen")}
    assert summary == {"app": "A", "n_jobs": 3, "users": ["u1", "u2"], "first_seen": 10.0, "last_seen": 30.0}
    assert (got["w_iter_median"], got["alpha_io_median"]) == (30.0, 0.2)
    assert (got["recommendation"]["user"], got["recommendation"]["source"]) == ("u1", "history")  # the top user
    missing = client.get("/v1/apps/C", headers=headers)
    assert (missing.status_code, missing.json()) == (404, {"detail": "app 'C': no stored job"})


# --------------------------------------------------------------------------------------------- policy


def test_policy_versions_are_kept_and_the_new_one_answers(client, auth):
    admin = auth("admin")
    first = client.get("/v1/policy", headers=admin).json()
    assert {k: v for k, v in first.items() if k != "created_at"} == {
        "version": 1,
        "mapping": "set-10",
        "bandwidth": None,
        "safety": 1.5,
        "limit": None,
        "max_request": 1 << 20,
        "min_confidence": 0.5,
    }
    for row in _jobs(4, w_iter=40.0, w_iter_confidence=0.9, alpha_io=0.1):
        client.post("/v1/jobs", json=row, headers=admin)
    new = {"mapping": "set-2", "bandwidth": 1e9, "safety": 2.0, "limit": 0.5, "max_request": 4096}
    new["min_confidence"] = 0.3
    put = client.put("/v1/policy", json=new, headers=admin)
    assert put.status_code == 200 and put.json()["version"] == 2
    versions = client.get("/v1/policy/versions", headers=admin).json()["policies"]
    assert [(p["version"], p["mapping"]) for p in versions] == [(1, "set-10"), (2, "set-2")]
    got = client.get("/v1/recommendation", params={"app": "A", "user": "u1"}, headers=admin).json()
    # SET-2: round(log2 40) = 5; reservation = safety x alpha_io x bandwidth; limit = 0.5 x bandwidth
    assert (got["set"], got["policy_version"], got["rbfq_limit"]) == (5, 2, 5e8)
    assert got["rbfq_reservation"] == pytest.approx(2.0 * 0.1 * 1e9)


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"limit": 0.5}, "body: Value error, limit is a fraction of the bandwidth: give a bandwidth too"),
        ({"safety": -1}, "body.safety: Input should be greater than 0"),
        ({"mapping": "set-1"}, "body.mapping: Value error, expected set-10, set-<b> with b > 1 or gmm, got 'set-1'"),
        ({"colour": 1}, "body.colour: Extra inputs are not permitted"),
    ],
)
def test_an_invalid_policy_is_422_naming_the_field(client, auth, body, detail):
    answer = client.put("/v1/policy", json=body, headers=auth("admin"))
    assert (answer.status_code, answer.json()) == (422, {"detail": detail})
    assert client.get("/v1/policy", headers=auth("read")).json()["version"] == 1


def test_export_is_409_without_jobs_then_the_files_of_iosets_export(client, auth):
    headers = auth("read", "write")
    answer = client.get("/v1/policy/export", params={"format": "lua"}, headers=headers)
    assert (answer.status_code, answer.json()) == (409, {"detail": "no job is stored yet: nothing to export"})
    for row in _jobs(3, w_iter=40.0, w_iter_confidence=0.9):
        client.post("/v1/jobs", json=row, headers=headers)
    document = client.get("/v1/policy/export", params={"format": "json"}, headers=headers)
    assert document.headers["content-type"] == "application/json"
    assert document.json()["apps"] == {"A": {"set": 2, "priority": 0.01, "n_jobs": 3, "conservative": False}}
    lua = client.get("/v1/policy/export", params={"format": "lua"}, headers=headers)
    assert lua.text.startswith("-- IO-SETS recommendation for Slurm's job_submit.lua")
    assert client.get("/v1/policy/export", params={"format": "agios"}, headers=headers).text == "1048576\n"
    tbf = client.get("/v1/policy/export", params={"format": "tbf"}, headers=headers)
    assert (tbf.status_code, tbf.json()) == (422, {"detail": "the tbf export needs option(s): active, rpc_capacity"})
    options = {"format": "tbf", "active": "A0", "rpc_capacity": 100}
    tbf = client.get("/v1/policy/export", params=options, headers=headers)
    assert tbf.status_code == 200 and "lctl set_param" in tbf.text
    bad = client.get("/v1/policy/export", params={"format": "xml"}, headers=headers)
    assert bad.status_code == 422 and bad.json()["detail"].startswith("query.format: Input should be 'agios'")


def test_openapi_lists_every_route(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert sorted(paths) == [
        "/healthz",
        "/metrics",
        "/readyz",
        "/v1/apps/{app}",
        "/v1/jobs",
        "/v1/jobs/{job_id}",
        "/v1/policy",
        "/v1/policy/export",
        "/v1/policy/versions",
        "/v1/recommendation",
        "/v1/recommendations",
        "/v1/report",
    ]
    body = paths["/v1/jobs"]["post"]["requestBody"]["content"]
    assert sorted(body) == ["application/json", "multipart/form-data"]
    assert body["application/json"]["schema"]["required"] == ["job_id", "user", "app"]
    assert json.dumps(paths).count('"422"') >= 10
