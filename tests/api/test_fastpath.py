"""`AnswerFastPath`: ``GET /v1/recommendation`` answered without FastAPI's routing, byte for byte as the route.

The app runs without its lifespan (no background refit), so one known state answers both sides: the
fast path (``app.state.fast_paths`` True) and the route (False) see the same evidence and model.
"""

import json
import logging

import pytest
from fastapi.testclient import TestClient

from iosets.api import Settings, create_app
from iosets.api._auth import create_token
from iosets.api._fastpath import plain_query
from iosets.api._ratelimit import TokenBucket
from iosets.datasets import make_job_history

KNOWN = {"app": "wrf_dev", "user": "u01"}
PLAIN = [  # answered by the fast path with a read token
    KNOWN,
    {**KNOWN, "nprocs": "64", "requested_time": "3600.0", "job_id": "4242"},
    {**KNOWN, "nprocs": "9223372036854775807", "requested_time": "1000000000000"},
    {"app": "wrf_big", "user": "a newcomer", "job_id": "é & ü = ?"},
    {"app": "wrf_next", "user": "u02", "nprocs": "8", "requested_time": "0.5"},
    {"app": "thin", "user": "u00"},
    {"app": "never seen", "user": "u00"},
    {**KNOWN, "unrelated": "ignored"},
]
LEFT_TO_THE_ROUTE = [  # valid, or an error, either way the route's answer
    {"app": "wrf_dev"},
    {"app": "", "user": "u00"},
    {"app": "a\x00b", "user": "u00"},
    {**KNOWN, "nprocs": "0"},
    {**KNOWN, "nprocs": "1.5"},
    {**KNOWN, "nprocs": "007"},
    {**KNOWN, "nprocs": "9223372036854775808"},
    {**KNOWN, "nprocs": ""},
    {**KNOWN, "requested_time": "0"},
    {**KNOWN, "requested_time": "inf"},
    {**KNOWN, "requested_time": "1e3"},
    {**KNOWN, "requested_time": "1000000000000.5"},
]


@pytest.fixture
def app(tmp_path):
    app = create_app(Settings(data_dir=str(tmp_path), write_rate=1e9))
    service = app.state.service
    rows = make_job_history(240, n_apps=8, n_users=6, random_state=3).drop("source").to_dicts()
    rows.append({**rows[0], "job_id": "thin-1", "app": "thin", "w_iter": None, "w_iter_confidence": 0.0})
    rows[-1]["not_periodic"] = "few_bytes"
    for row in rows:
        service.add_job(row)
    service._refit(use_model=True)  # what the background refit would fit: unseen apps answered by the model
    yield app
    service.stop()


def _token(app, *scopes) -> str:
    return create_token(app.state.service.store, list(scopes))[1]


def _both(client, app, query: dict, headers: dict) -> tuple:
    """The answer (status, headers, body) of the fast path's stack, then the route's, to one request."""
    answers = []
    for fast in (True, False):
        app.state.fast_paths = fast
        answer = client.get("/v1/recommendation", params=query, headers=headers)
        answers.append((answer.status_code, answer.headers.multi_items(), answer.content))
    return tuple(answers)


def test_every_answer_is_the_routes_byte_for_byte(app, monkeypatch):
    client = TestClient(app)  # no lifespan: the state fitted above answers throughout
    read, admin, write = (_token(app, scope) for scope in ("read", "admin", "write"))
    tokens = {
        "read": {"Authorization": f"Bearer {read}"},
        "admin, spaced": {"Authorization": f"bearer   {admin}  "},
        "write": {"Authorization": f"Bearer {write}"},
        "unknown": {"Authorization": "Bearer iosets_not-a-token"},
        "basic": {"Authorization": f"Basic {read}"},
        "none": {},
    }
    for headers in tokens.values():  # each token's first use reads the store (the route): cached after it
        client.get("/v1/recommendation", params=KNOWN, headers=headers)
    fast = []
    answer_now = app.state.service.answer_now
    monkeypatch.setattr(app.state.service, "answer_now", lambda query: fast.append(query) or answer_now(query))
    sources = set()
    for name, headers in tokens.items():
        for query in PLAIN + LEFT_TO_THE_ROUTE:
            fast.clear()
            ours, routes = _both(client, app, query, headers)
            assert ours == routes, (name, query)
            assert bool(fast) == (name in ("read", "admin, spaced") and query in PLAIN), (name, query)
            if ours[0] == 200:
                sources.add(routes[2].split(b'"source":"')[1].split(b'"')[0])
    assert sources == {b"history", b"model", b"default"}


def test_a_fast_answer_is_logged_and_counted_under_the_route(app, caplog):
    client = TestClient(app)
    token = _token(app, "read")
    headers = {"Authorization": f"Bearer {token}"}
    with caplog.at_level(logging.INFO, logger="iosets.access"):
        for _ in range(3):  # the first reads the token from the store (the route); the next two are fast
            assert client.get("/v1/recommendation", params=KNOWN, headers=headers).status_code == 200
    lines = [record.getMessage() for record in caplog.records if record.name == "iosets.access"]
    assert [line.split(" ms ")[0].rsplit(" ", 1)[0] for line in lines] == ["GET /v1/recommendation 200"] * 3
    assert {line.split(" ms ")[1] for line in lines} == {"token=1 client=testclient"}
    metrics = client.get("/metrics").text
    assert 'iosets_http_requests_total{method="GET",route="/v1/recommendation",status="200"} 3.0' in metrics


@pytest.mark.parametrize(
    ("query_string", "expected"),
    [
        (b"app=A&user=u", {"app": "A", "user": "u", "nprocs": None, "requested_time": None, "job_id": None}),
        (b"app=A%20B&user=%C3%A9&nprocs=12&requested_time=3.25&job_id=", ("A B", "é", 12, 3.25, "")),
        (b"app=A&user=u&app=A", None),  # twice: the route decides which
        (b"app=A&user=u&nprocs=+12", None),  # '+' is a space: not plainly a count
        (b"user=u", None),
    ],
)
def test_a_plain_query_is_read_as_the_route_reads_it(query_string, expected):
    got = plain_query(query_string)
    if isinstance(expected, tuple):
        assert got is not None
        assert (got["app"], got["user"], got["nprocs"], got["requested_time"], got["job_id"]) == expected
    else:
        assert got == expected


# ---- PostFastPath: a JSON POST /v1/jobs of a cached writer stored without FastAPI's routing ------------------------

ROW = {"job_id": "100", "user": "u1", "app": "lammps", "start": 1000.0, "w_iter": 40.0, "w_iter_confidence": 0.9}
BODIES = [  # (body, what the fast path does with a writer's token): stores it, or leaves it to the route
    (ROW, "stores"),
    (ROW, "stores"),  # the same job again: 200 and the stored row
    ({**ROW, "app": "other"}, "stores"),  # its job id stored already: the stored row
    ({**ROW, "job_id": "101", "end": 900.0}, "stores"),  # a row the store's rules refuse: 422, the handler's
    ({**ROW, "job_id": "99999999"}, "stores"),  # a job id from the future: 422, the handler's
    ({**ROW, "job_id": "102", "queue": "big"}, "route"),  # an unknown field
    ({**ROW, "job_id": "103", "app": "a\x00b"}, "route"),
    ({"job_id": "104", "app": "lammps"}, "route"),  # no user
    (b"not json", "route"),
    (b"[]", "route"),
]


def _post_apps(tmp_path, monkeypatch, **settings) -> list:
    """Two apps on stores of their own, fast paths on and off, with the same tokens' ids and cached scopes."""
    monkeypatch.setattr("iosets.api._auth.TOKEN_CACHE_SECONDS", 1e9)  # no entry gets stale mid-test
    apps = []
    for fast in (True, False):
        app = create_app(Settings(data_dir=str(tmp_path / str(fast)), **settings))
        app.state.fast_paths = fast
        apps.append(app)
    return apps


def _inner_calls(client, app) -> list:
    """The requests PostFastPath hands to the rest of the stack (the route), recorded from now on."""
    client.get("/healthz")  # builds the middleware stack
    layer = app.middleware_stack
    while type(layer).__name__ != "PostFastPath":
        layer = layer.app
    calls, inner = [], layer.app

    async def recorded(scope, receive, send):
        calls.append(scope["path"])
        await inner(scope, receive, send)

    layer.app = recorded
    return calls


def _answer(response) -> tuple:
    """Status, headers and body of an answer, the receipt date (which differs between two stores) left out."""
    body = response.json()
    if isinstance(body, dict):
        body.pop("received_at", None)
    headers = [(k, v) for k, v in response.headers.multi_items() if k != "content-length"]
    return response.status_code, headers, body


def test_every_post_is_answered_and_stored_as_the_routes(tmp_path, monkeypatch):
    apps = _post_apps(tmp_path, monkeypatch)
    clients = [TestClient(app) for app in apps]
    tokens = {}
    for scopes in (("write",), ("admin",), ("read",)):
        created = [create_token(app.state.service.store, list(scopes)) for app in apps]
        assert created[0][0] == created[1][0]  # the same id in both stores
        tokens[scopes[0]] = [f"Bearer {token}" for _, token in created]
    tokens["unknown"] = ["Bearer iosets_not-a-token"] * 2
    tokens["basic"] = [tokens["write"][0].replace("Bearer", "Basic"), tokens["write"][1].replace("Bearer", "Basic")]
    for name, pair in tokens.items():  # each token's first use reads the store (the route): cached after it
        for client, header in zip(clients, pair, strict=True):
            client.post(
                "/v1/jobs", json={"job_id": "1", "user": "warm", "app": name}, headers={"Authorization": header}
            )
    routed = _inner_calls(clients[0], apps[0])
    statuses = set()
    for name, pair in tokens.items():
        for body, fate in BODIES:
            routed.clear()
            answers = []
            for client, header in zip(clients, pair, strict=True):
                content = body if isinstance(body, bytes) else json.dumps(body).encode()
                headers = {"Authorization": header, "Content-Type": "application/json"}
                answers.append(_answer(client.post("/v1/jobs", content=content, headers=headers)))
            assert answers[0] == answers[1], (name, body)
            assert (not routed) == (name in ("write", "admin") and fate == "stores"), (name, body)
            statuses.add(answers[0][0])
    assert statuses == {200, 201, 401, 403, 422}
    stored = [app.state.service.store.list_jobs(limit=1000)[0] for app in apps]
    assert [{k: v for k, v in job.items() if k != "received_at"} for job in stored[0]] == [
        {k: v for k, v in job.items() if k != "received_at"} for job in stored[1]
    ]
    assert {job["job_id"] for job in stored[0]} == {"1", "100"}
    for app in apps:
        app.state.service.stop()


def test_a_writer_over_its_rate_gets_the_routes_429(tmp_path, monkeypatch):
    apps = _post_apps(tmp_path, monkeypatch, write_rate=1.0)
    answers = []
    for app in apps:
        app.state.service.write_bucket = TokenBucket(rate=1.0, clock=lambda: 0.0)  # a burst of 2, never refilled
        client = TestClient(app)
        header = {"Authorization": f"Bearer {create_token(app.state.service.store, ['write'])[1]}"}
        answers.append(
            [_answer(client.post("/v1/jobs", json={**ROW, "job_id": str(k)}, headers=header)) for k in (1, 2, 3, 4)]
        )
        app.state.service.stop()
    assert answers[0] == answers[1]
    assert [status for status, _, _ in answers[0]] == [201, 201, 429, 429]
    assert ("retry-after", "1") in answers[0][2][1]
    assert answers[0][2][2] == {"detail": "POST /v1/jobs: more than 1 jobs per second with this token; retry in 1.00 s"}


def test_a_fast_post_is_logged_and_counted_under_the_route(tmp_path, monkeypatch, caplog):
    app = _post_apps(tmp_path, monkeypatch)[0]
    client = TestClient(app)
    routed = _inner_calls(client, app)
    headers = {"Authorization": f"Bearer {create_token(app.state.service.store, ['write'])[1]}"}
    with caplog.at_level(logging.INFO, logger="iosets.access"):
        for k in (1, 2, 3):  # the first reads the token from the store (the route); the next two are fast
            assert client.post("/v1/jobs", json={**ROW, "job_id": str(k)}, headers=headers).status_code == 201
    assert routed == ["/v1/jobs"]
    lines = [record.getMessage() for record in caplog.records if record.name == "iosets.access"]
    assert [line.split(" ms ")[0].rsplit(" ", 1)[0] for line in lines] == ["POST /v1/jobs 201"] * 3
    assert {line.split(" ms ")[1] for line in lines} == {"token=1 client=testclient"}
    metrics = client.get("/metrics").text
    assert 'iosets_http_requests_total{method="POST",route="/v1/jobs",status="201"} 3.0' in metrics
    app.state.service.stop()
