"""Production defaults of the service: slow clients cut, bounded bodies and text, the same 422 on both stores,
private files, no password in argv, an access log without tokens, job ids that cannot claim the future."""

from __future__ import annotations

import json
import logging
import os
import socket
import stat
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from iosets.api import Settings, create_app
from iosets.api._auth import create_token
from iosets.api._models import NAME_MAX, TEXT_MAX
from iosets.cli import app as cli_app
from iosets.cli.serve import _warn_if_exposed

from .postgres import postgres_database, postgres_server  # noqa: F401  (fixtures)

WAIT = 120.0  # generous bound of a condition awaited on a loaded machine
ROW = {"job_id": "100", "user": "u1", "app": "lammps", "start": 1000.0, "w_iter": 40.0, "w_iter_confidence": 0.9}


@pytest.fixture(params=["sqlite", "postgresql"])
def store_settings(request, tmp_path) -> dict:
    """Settings of a store of each kind (PostgreSQL: a new database on the session's server)."""
    if request.param == "sqlite":
        return {"data_dir": str(tmp_path / "data")}
    return {"database": request.getfixturevalue("postgres_database"), "data_dir": str(tmp_path / "data")}


def _client(tmp_path, **settings) -> tuple[TestClient, dict[str, str]]:
    settings = {"data_dir": str(tmp_path / "data"), "write_rate": 1000.0, **settings}
    app = create_app(Settings(**settings))
    _, token = create_token(app.state.service.store, ["admin"])
    return TestClient(app), {"Authorization": f"Bearer {token}"}


# ------------------------------------------------------------------------------------- slow clients


def _cut(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (its end read, or a reset)."""
    try:
        return sock.recv(4096) == b""
    except BlockingIOError:
        return False
    except ConnectionError:
        return True


def _trickle_until_cut(sockets: list[socket.socket], byte: bytes) -> None:
    """Send ``byte`` on every socket still open every 0.1 s until the server has closed them all."""
    deadline = time.monotonic() + WAIT
    open_ = list(sockets)
    while open_ and time.monotonic() < deadline:
        for sock in list(open_):
            if _cut(sock):
                open_.remove(sock)
                continue
            try:
                sock.send(byte)
            except (BrokenPipeError, ConnectionError):
                open_.remove(sock)
        time.sleep(0.1)
    assert not open_, f"{len(open_)} of {len(sockets)} slow clients still connected after {WAIT} s"


def test_sixty_slow_clients_are_cut_at_their_header_or_body_deadline(serve, tmp_path):
    config = tmp_path / "iosets.toml"
    config.write_text("[service]\nheader_timeout = 1.0\nbody_timeout = 2.0\n")
    server = serve("--data-dir", str(tmp_path / "store"), extra=("--config", str(config)))
    port = int(server.url.rsplit(":", 1)[1])
    headers = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(60)]
    for sock in headers:
        sock.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: iosets\r\n")
        sock.setblocking(False)
    body = socket.create_connection(("127.0.0.1", port), timeout=10)
    body.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: iosets\r\nContent-Type: application/json\r\nContent-Length: 900\r\n")
    body.sendall(b"\r\n")
    body.setblocking(False)
    assert server.get("/healthz").json() == {"status": "ok"}  # answered while the slow ones hold connections
    try:
        _trickle_until_cut(headers, b"X")  # a header that never ends: one more byte every 0.1 s
        _trickle_until_cut([body], b" ")  # a body that never ends
    finally:
        for sock in [*headers, body]:
            sock.close()
    assert server.get("/healthz").status_code == 200
    log = server.log.read_text()
    assert log.count("no complete request header within 1 s") == 60
    assert log.count("no complete request body within 2 s") == 1
    assert "Traceback" not in log


def test_a_client_that_leaves_mid_upload_is_one_line_without_traceback(serve, tmp_path):
    server = serve("--data-dir", str(tmp_path / "store"))
    port = int(server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        boundary = "b0undary"
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="log"; filename="x.darshan"\r\n\r\n'
        sock.sendall(
            f"POST /v1/jobs HTTP/1.1\r\nHost: iosets\r\nAuthorization: Bearer {server.token}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: 100000\r\n\r\n{head}".encode()
            + b"\0" * 1000
        )  # and leaves, 99 000 bytes short
    deadline = time.monotonic() + WAIT
    while "left during POST /v1/jobs" not in server.log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    log = server.log.read_text()
    assert "127.0.0.1 left during POST /v1/jobs" in log
    assert "Traceback" not in log


# ------------------------------------------------------------------------------ text on both stores


def test_nul_and_invalid_unicode_are_422_on_both_stores(store_settings, tmp_path):
    client, headers = _client(tmp_path, **store_settings)
    with client:
        nul = client.post("/v1/jobs", json={**ROW, "app": "lam\0mps"}, headers=headers)
        assert nul.json() == {"detail": "body.app: Value error, text holds a NUL character at 3"}
        lone = b'{"job_id": "101", "user": "u\\ud800", "app": "a"}'  # a job row: pydantic's JSON refuses it
        surrogate = client.post("/v1/jobs", content=lone, headers=headers)
        assert surrogate.json()["detail"].startswith("body: Invalid JSON: unexpected end of hex escape")
        lone = b'{"jobs": [{"user": "u\\ud800", "app": "a"}]}'  # queries: Python's JSON reads it, the rule refuses
        as_json = {**headers, "Content-Type": "application/json"}
        surrogate = client.post("/v1/recommendations", content=lone, headers=as_json)
        assert surrogate.json() == {
            "detail": "body.jobs.0.user: Input should be a valid string, unable to parse raw data as a unicode string"
        }
        batch = client.post("/v1/recommendations", json={"jobs": [{"app": "a", "user": "\0"}]}, headers=headers)
        assert batch.json() == {"detail": "body.jobs.0.user: Value error, text holds a NUL character at 0"}
        assert client.post("/v1/jobs", json=ROW, headers=headers).status_code == 201
        assert [job["job_id"] for job in client.get("/v1/jobs", headers=headers).json()["jobs"]] == ["100"]


def test_text_fields_are_bounded(tmp_path):
    client, headers = _client(tmp_path)
    with client:
        long_app = client.post("/v1/jobs", json={**ROW, "app": "a" * (NAME_MAX + 1)}, headers=headers)
        assert long_app.json() == {"detail": f"body.app: String should have at most {NAME_MAX} characters"}
        long_path = client.post("/v1/jobs", json={**ROW, "path": "p" * (TEXT_MAX + 1)}, headers=headers)
        assert long_path.json() == {"detail": f"body.path: String should have at most {TEXT_MAX} characters"}
        query = client.post("/v1/recommendations", json={"jobs": [{"app": "a" * 257, "user": "u"}]}, headers=headers)
        assert query.status_code == 422
        exact = client.post("/v1/jobs", json={**ROW, "app": "a" * NAME_MAX, "path": "p" * TEXT_MAX}, headers=headers)
        assert exact.status_code == 201 and len(exact.json()["app"]) == NAME_MAX


# ------------------------------------------------------------------------------------------- bodies


def test_non_json_bodies_are_422_and_json_bodies_have_their_own_limit(tmp_path):
    client, headers = _client(tmp_path, max_json=2048, max_upload="1MB")
    with client:
        for method, path in (("post", "/v1/jobs"), ("post", "/v1/recommendations"), ("put", "/v1/policy")):
            answer = client.request(method, path, content=b'{"app": "\xff"}', headers=headers)
            assert (answer.status_code, answer.json()) == (422, {"detail": "body: not JSON: invalid UTF-8 at byte 9"})
        big = json.dumps({"jobs": [{"app": "a", "user": "u"}] * 100}).encode()
        answer = client.post("/v1/recommendations", content=big, headers=headers)
        assert answer.json() == {"detail": f"request body: {len(big)} bytes, more than max_json (2048 bytes)"}
        log = Path(__file__).parents[1] / "data" / "darshan-runtime" / "corpus" / "p01_w0.5_a0.2.darshan"
        if log.exists():  # a multipart upload is bounded by max_upload (1 MB), not max_json
            upload = client.post("/v1/jobs", files={"log": ("x.darshan", log.read_bytes())}, headers=headers)
            assert upload.status_code in (201, 422) and "max_json" not in upload.text


def test_sizes_are_given_in_mb():
    assert Settings().max_upload == 256 << 20 and Settings().max_json == 1 << 20
    assert Settings(max_upload="64MB").max_upload == 64 << 20
    assert Settings(max_upload="1.5 KiB").max_upload == 1536
    assert Settings(max_upload=4096).max_upload == 4096
    with pytest.raises(ValueError, match="expected bytes or a size such as '256MB'"):
        Settings(max_upload="lots")


# ----------------------------------------------------------------------------------------- job ids


def test_job_ids_far_ahead_of_the_stored_ones_are_refused(tmp_path):
    client, headers = _client(tmp_path, job_id_window=1000)
    with client:
        assert client.post("/v1/jobs", json={**ROW, "job_id": "5000"}, headers=headers).status_code == 201
        assert client.post("/v1/jobs", json={**ROW, "job_id": "6000_3"}, headers=headers).status_code == 201
        ahead = client.post("/v1/jobs", json={**ROW, "job_id": "7001"}, headers=headers)
        assert ahead.json() == {
            "detail": "job_id '7001': more than 1000 above the newest stored job id (6000): a job id from the"
            " future? (the [service] job_id_window setting)"
        }
        assert client.post("/v1/jobs", json={**ROW, "job_id": "7000"}, headers=headers).status_code == 201
        assert client.post("/v1/jobs", json={**ROW, "job_id": "12"}, headers=headers).status_code == 201  # the past
        assert client.post("/v1/jobs", json={**ROW, "job_id": "trace-a"}, headers=headers).status_code == 201


def test_the_newest_job_number_is_read_from_both_stores(store_settings, tmp_path):
    client, headers = _client(tmp_path, **store_settings)
    with client:
        for job_id in ("99", "1234_7", "300+1", "wrap"):
            assert client.post("/v1/jobs", json={**ROW, "job_id": job_id}, headers=headers).status_code == 201
        assert client.app.state.service.store.newest_job_number() == 1234


# ---------------------------------------------------------------------------------- files, secrets


def test_store_files_are_private_whatever_the_umask(tmp_path):
    previous = os.umask(0o000)
    try:
        client, _ = _client(tmp_path)
        with client:
            pass
    finally:
        os.umask(previous)
    data = tmp_path / "data"
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / "iosets.db").stat().st_mode) == 0o600
    assert stat.S_IMODE((data / "uploads").stat().st_mode) == 0o700


def test_token_output_is_0600_and_never_overwritten(tmp_path):
    out = tmp_path / "epilog.token"
    runner = CliRunner()
    done = runner.invoke(cli_app, ["token", "create", "--scope", "write", "--data-dir", str(tmp_path), "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and out.read_text().startswith("iosets_")
    again = runner.invoke(cli_app, ["token", "create", "--scope", "write", "--data-dir", str(tmp_path), "-o", str(out)])
    assert again.exit_code == 1 and "exists already" in again.output


def test_a_password_on_the_command_line_is_refused():
    done = CliRunner().invoke(cli_app, ["token", "list", "--database", "postgresql://iosets:s3cret@db/iosets"])
    assert done.exit_code == 1
    assert "--database: the URL holds a password, which any user sees in ps" in done.output


def test_a_public_host_without_a_proxy_is_warned(capsys):
    _warn_if_exposed(Settings(host="0.0.0.0"))
    assert "listening on 0.0.0.0 in plain HTTP" in capsys.readouterr().err
    for quiet in (Settings(host="127.0.0.1"), Settings(host="::1"), Settings(host="0.0.0.0", behind_proxy=True)):
        _warn_if_exposed(quiet)
        assert capsys.readouterr().err == ""


def test_uploads_left_by_a_killed_process_are_removed_at_start(tmp_path):
    uploads = tmp_path / "data" / "uploads"
    uploads.mkdir(parents=True)
    orphan = uploads / "upload-4194305-abc.darshan"  # above Linux's largest pid: no such process
    live = uploads / f"upload-{os.getpid()}-def.darshan"  # this process: an upload in flight
    orphan.write_bytes(b"x")
    live.write_bytes(b"y")
    client, _ = _client(tmp_path)
    with client:
        assert not orphan.exists() and live.exists()


# ---------------------------------------------------------------------------------- docs, access log


def test_docs_are_off_and_the_schema_is_served(tmp_path):
    client, _ = _client(tmp_path)
    with client:
        assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404
        assert client.get("/openapi.json").json()["info"]["title"] == "iosets"


def test_the_access_log_names_the_route_status_and_token_id_never_the_token(tmp_path, caplog):
    client, headers = _client(tmp_path)
    token = headers["Authorization"].split()[1]
    with client, caplog.at_level(logging.INFO, logger="iosets.access"):
        client.post("/v1/jobs", json=ROW, headers=headers)
        client.get("/v1/jobs/100", headers=headers)
        client.get("/v1/jobs/100")
    lines = [record.getMessage() for record in caplog.records if record.name == "iosets.access"]
    assert [line.split(" ms ")[0].rsplit(" ", 1)[0] for line in lines] == [
        "POST /v1/jobs 201",
        "GET /v1/jobs/{job_id} 200",
        "GET /v1/jobs/{job_id} 401",
    ]
    tails = [line.split(" ms ")[1] for line in lines]
    assert tails == ["token=1 client=testclient", "token=1 client=testclient", "token=- client=testclient"]
    assert all(token not in record.getMessage() for record in caplog.records)
