"""A real ``iosets serve`` on loopback: every route's success and error codes, the token and serve commands."""

import hashlib
import sqlite3
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from iosets.api import Settings
from iosets.api._auth import create_token
from iosets.api._store import Store
from iosets.cli import app as cli

ROW = {"job_id": "j1", "user": "u1", "app": "A", "start": 100.0, "w_iter": 40.0, "w_iter_confidence": 0.9}


def _token(server, *scopes):
    """A token of the live server's store, made in this process (``iosets token create`` is tested below)."""
    store = Store(Settings(data_dir=server.store_args[1]).store_url)
    try:
        return {"Authorization": f"Bearer {create_token(store, list(scopes))[1]}"}
    finally:
        store.close()


@pytest.fixture
def live(serve, sqlite_store):
    server = serve(*sqlite_store, extra=["--config", str(_config(sqlite_store))])
    assert server.post_job(ROW).status_code == 201
    return server


def _config(sqlite_store):
    path = Path(sqlite_store[1]).parent / "iosets.toml"
    path.write_text("[service]\nmax_upload = 2048\nmax_json = 2048\nwrite_rate = 2.0\n[policy]\nbandwidth = 1e9\n")
    return path


CASES = [
    # method, path, params or body, scopes, expected status
    ("GET", "/healthz", None, None, 200),
    ("GET", "/readyz", None, None, 200),
    ("GET", "/metrics", None, None, 200),
    ("GET", "/v1/recommendation", {"app": "A", "user": "u1"}, ("read",), 200),
    ("GET", "/v1/recommendation", {"app": "A", "user": "u1"}, None, 401),
    ("GET", "/v1/recommendation", {"app": "A", "user": "u1"}, ("write",), 403),
    ("GET", "/v1/recommendation", {"app": "A"}, ("read",), 422),
    ("POST", "/v1/recommendations", {"jobs": [{"app": "A", "user": "u"}]}, ("read",), 200),
    ("POST", "/v1/recommendations", {"jobs": [{"app": "A"}]}, ("read",), 422),
    ("POST", "/v1/recommendations", {"jobs": []}, ("write",), 403),
    ("POST", "/v1/jobs", {**ROW, "job_id": "new"}, ("write",), 201),
    ("POST", "/v1/jobs", ROW, ("write",), 200),
    ("POST", "/v1/jobs", {**ROW, "job_id": "x", "alpha_io": 2.0}, ("write",), 422),
    ("POST", "/v1/jobs", {**ROW, "job_id": "x", "explanation": "x" * 3000}, ("write",), 413),
    ("POST", "/v1/jobs", ROW, ("read",), 403),
    ("POST", "/v1/jobs", ROW, None, 401),
    ("GET", "/v1/jobs/j1", None, ("read",), 200),
    ("GET", "/v1/jobs/none", None, ("read",), 404),
    ("GET", "/v1/jobs", {"app": "A", "limit": 5}, ("read",), 200),
    ("GET", "/v1/jobs", {"limit": 5000}, ("read",), 422),
    ("GET", "/v1/apps/A", None, ("read",), 200),
    ("GET", "/v1/apps/B", None, ("read",), 404),
    ("GET", "/v1/policy", None, ("read",), 200),
    ("GET", "/v1/policy/versions", None, ("read",), 200),
    ("PUT", "/v1/policy", {"mapping": "set-10", "bandwidth": 2e9}, ("admin",), 200),
    ("PUT", "/v1/policy", {"mapping": "set-10"}, ("read", "write"), 403),
    ("PUT", "/v1/policy", {"max_request": 0}, ("admin",), 422),
    ("GET", "/v1/policy/export", {"format": "json"}, ("read",), 200),
    ("GET", "/v1/policy/export", {"format": "pdf"}, ("read",), 422),
]


def test_every_route_answers_its_codes_on_a_live_server(live):
    tokens = {}
    got = []
    for method, path, payload, scopes, _ in CASES:
        headers = {} if scopes is None else tokens.setdefault(scopes, _token(live, *scopes))
        if method == "GET":
            answer = httpx.get(live.url + path, params=payload, headers=headers, timeout=60)
        else:
            answer = httpx.request(method, live.url + path, json=payload, headers=headers, timeout=60)
        got.append(answer.status_code)
        if answer.status_code >= 400:
            assert isinstance(answer.json()["detail"], str) and answer.json()["detail"]
    assert got == [case[-1] for case in CASES]


@pytest.mark.timing
def test_export_is_409_on_an_empty_store_and_writes_flood_to_429(serve, tmp_path):
    config = tmp_path / "iosets.toml"
    config.write_text("[service]\nwrite_rate = 1.0\n")  # 40 posts cannot refill it unless each takes ~1 s
    server = serve("--data-dir", str(tmp_path / "empty"), extra=["--config", str(config)])
    assert server.get("/v1/policy/export", format="lua").status_code == 409
    answers = [server.post_job({**ROW, "job_id": str(i)}) for i in range(40)]
    codes = [answer.status_code for answer in answers]
    assert codes[:2] == [201] * 2  # a burst of 2 x write_rate
    assert set(codes) == {201, 429}
    refused = next(answer for answer in answers if answer.status_code == 429)
    assert refused.headers["Retry-After"] == "1"
    assert server.get("/readyz").json()["jobs"] == codes.count(201)


def test_lua_out_is_rewritten_when_an_estimate_changes(serve, tmp_path):
    lua = tmp_path / "slurm" / "iosets.lua"
    server = serve("--data-dir", str(tmp_path / "store"), lua_out=lua)
    for i in range(3):
        server.post_job({**ROW, "job_id": str(i)})
    server.get("/v1/recommendation", app="A", user="u1")
    deadline = time.monotonic() + 60  # the background refit rewrites it (written whole: a rename)
    while not (lua.exists() and '["n_jobs"] = 3' in (text := lua.read_text())):
        assert time.monotonic() < deadline, f"{lua} not rewritten with the 3 jobs within 60 s"
        time.sleep(0.05)
    assert text.startswith("-- IO-SETS recommendation for Slurm's job_submit.lua")
    assert '["A"] = {\n   ["set"] = 2,' in text


def test_token_create_prints_the_token_last_and_stores_only_its_hash(tmp_path):
    runner = CliRunner()
    store = tmp_path / "store"
    done = runner.invoke(cli, ["token", "create", "--scope", "read", "--note", "hook", "--data-dir", str(store)])
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    token = lines[-1]
    assert lines[0] == "token 1 (scopes: read); shown once:"
    assert token.startswith("iosets_") and len(token) == len("iosets_") + 43
    with sqlite3.connect(store / "iosets.db") as db:
        rows = db.execute("SELECT sha256, scopes, note, revoked FROM tokens").fetchall()
    assert rows == [(hashlib.sha256(token.encode()).hexdigest(), "read", "hook", 0)]
    assert token.encode() not in (store / "iosets.db").read_bytes()
    listed = runner.invoke(cli, ["token", "list", "--data-dir", str(store)])
    assert listed.stdout.startswith("1\tread\t") and listed.stdout.endswith("\thook\n")
    assert runner.invoke(cli, ["token", "revoke", "1", "--data-dir", str(store)]).exit_code == 0
    assert " revoked\thook" in runner.invoke(cli, ["token", "list", "--data-dir", str(store)]).stdout
    missing = runner.invoke(cli, ["token", "revoke", "7", "--data-dir", str(store)])
    assert (missing.exit_code, missing.stderr) == (1, "error: token id 7: no such token\n")


def test_serve_without_the_service_extra_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "fastapi", None)  # as if fastapi were not installed
    done = CliRunner().invoke(cli, ["serve"])
    assert (done.exit_code, done.stderr) == (
        1,
        "error: iosets serve needs the service extra: pip install 'iosets[service]'\n",
    )


@pytest.mark.parametrize("command", [["create", "--scope", "read"], ["list"], ["revoke", "1"]])
def test_token_commands_without_the_service_extra_say_how_to_install_it(monkeypatch, tmp_path, command):
    monkeypatch.setitem(sys.modules, "fastapi", None)  # as if the service extra were not installed
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    done = CliRunner().invoke(cli, ["token", *command, "--data-dir", str(tmp_path / "store")])
    assert (done.exit_code, done.stderr) == (
        1,
        f"error: iosets token {command[0]} needs the service extra: pip install 'iosets[service]'\n",
    )
    assert not (tmp_path / "store").exists()


def test_a_bad_config_key_is_one_line_naming_file_table_and_key(tmp_path):
    config = tmp_path / "iosets.toml"
    config.write_text("[policy]\nsafety = -2\n")
    done = CliRunner().invoke(cli, ["serve", "--config", str(config)])
    assert (done.exit_code, done.stderr) == (
        1,
        f"error: {config} [policy] safety: Input should be greater than 0, got -2\n",
    )


def test_serve_logs_one_start_line_without_the_password(serve, tmp_path):
    server = serve("--data-dir", str(tmp_path / "s"))
    server.stop()
    log = server.log.read_text().splitlines()
    store = tmp_path / "s" / "iosets.db"
    assert log[0] == f"iosets serve: listening on {server.url} (store: sqlite:///{store})"
    assert server.process.returncode in (0, -15)  # uvicorn stops gracefully, then re-raises SIGTERM
    assert "Traceback" not in server.log.read_text()
