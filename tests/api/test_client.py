"""The standard-library client: what it sends, its default answer, its exit codes, against a stub and a live service."""

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from iosets.api import client
from iosets.api.client import Connection, default_answer, post_job, post_log, recommend

from .hookkit import CLIENT, StubService, closed_port, learned_jobs

DARSHAN_LOG = Path(__file__).parents[1] / "data" / "darshan" / "jlbez_IO_test5.darshan"


@pytest.fixture
def stub():
    service = StubService()
    yield service
    service.close()


def run_client(*args, env=None, cwd=None, script=None):
    """``python -m iosets.api.client ARGS`` (or a copied ``script`` with no site-packages): (rc, stdout, stderr)."""
    command = [sys.executable, "-I", "-S", str(script)] if script else [sys.executable, "-m", "iosets.api.client"]
    done = subprocess.run([*command, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60)
    return done.returncode, done.stdout, done.stderr


def test_the_client_imports_only_the_standard_library():
    tree = ast.parse(CLIENT.read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert {name.split(".")[0] for name in imported} <= set(sys.stdlib_module_names) | {"__future__"}


def test_recommend_sends_the_request_and_the_token(stub):
    conn = Connection(url=stub.url + "/", token="iosets_secret", timeout=30.0)  # the stub answers at once
    answer = recommend("lammps", "1001", nprocs=64, requested_time=3600.0, job_id="77", connection=conn)
    assert answer == {"set": 3, "priority": 0.001, "source": "model"}
    (request,) = stub.requests
    assert request["path"] == "/v1/recommendation?app=lammps&user=1001&nprocs=64&requested_time=3600.0&job_id=77"
    assert request["headers"]["Authorization"] == "Bearer iosets_secret"


def test_recommend_leaves_out_what_it_does_not_know(stub):
    recommend("a b&c", "u", connection=Connection(url=stub.url, timeout=30.0))
    (request,) = stub.requests
    assert request["path"] == "/v1/recommendation?app=a+b%26c&user=u" and "Authorization" not in request["headers"]


def test_connection_from_the_environment(tmp_path):
    (tmp_path / "token").write_text("iosets_fromfile\n")
    assert Connection.from_environment({}) == Connection("http://127.0.0.1:8642", None, 1.0, 10.0)
    env = {"IOSETS_URL": "http://svc:1", "IOSETS_TOKEN_FILE": str(tmp_path / "token"), "IOSETS_TIMEOUT": "0.25"}
    assert Connection.from_environment(env) == Connection("http://svc:1", "iosets_fromfile", 0.25, 10.0)
    env |= {"IOSETS_TOKEN": "iosets_direct", "IOSETS_POST_TIMEOUT": "60"}
    assert Connection.from_environment(env) == Connection("http://svc:1", "iosets_direct", 0.25, 60.0)


def test_default_answer():
    asked = {"app": "a", "user": "u"}
    expected = {"app": "a", "user": "u", "set": 99, "priority": 1e-99, "conservative": True, "source": "unavailable"}
    assert default_answer(asked, environ={}) == expected
    assert default_answer(environ={"IOSETS_DEFAULT_SET": "5"})["priority"] == 1e-5
    assert default_answer(environ={"IOSETS_DEFAULT_SET": "5", "IOSETS_DEFAULT_PRIORITY": "0.5"})["priority"] == 0.5


def test_a_closed_port_gives_the_default_answer(monkeypatch):
    monkeypatch.delenv("IOSETS_DEFAULT_SET", raising=False)
    monkeypatch.delenv("IOSETS_DEFAULT_PRIORITY", raising=False)
    url = f"http://127.0.0.1:{closed_port()}"
    answer = recommend("lammps", "1001", nprocs=4, connection=Connection(url=url))
    assert answer.pop("error").startswith(f"{url}/v1/recommendation: ")
    assert answer == {"app": "lammps", "user": "1001", "nprocs": 4, **default_answer(environ={})}


@pytest.mark.parametrize(
    "reply, error",
    [
        ((401, {"detail": "missing bearer token"}), "HTTP 401: missing bearer token"),
        ((422, {"detail": [{"loc": ["query", "app"], "msg": "Field required"}]}), "HTTP 422: [{"),
        ((200, ["not", "an", "answer"]), "not a recommendation: "),
    ],
)
def test_an_error_answer_gives_the_default_answer(reply, error):
    stub = StubService(reply)
    try:
        answer = recommend("a", "u", connection=Connection(url=stub.url, timeout=30.0))
    finally:
        stub.close()
    assert answer["source"] == "unavailable" and answer["error"].startswith(error)


@pytest.mark.timing
def test_a_slow_service_gives_the_default_answer_within_the_timeout(monkeypatch):
    monkeypatch.delenv("IOSETS_DEFAULT_SET", raising=False)
    monkeypatch.delenv("IOSETS_DEFAULT_PRIORITY", raising=False)
    stub = StubService(hold=True)  # no answer before close (or a minute): only the client's timeout ends the wait
    try:
        answer = recommend("a", "u", connection=Connection(url=stub.url, timeout=0.5))
    finally:
        stub.close()
    error = f"{stub.url}/v1/recommendation: no answer within 0.5 s"  # the socket's timeout or the client's
    assert answer == {"app": "a", "user": "u", **default_answer(environ={}), "error": error}


def test_the_copied_script_answers_by_default_when_the_service_is_down(tmp_path):
    script = tmp_path / "client.py"
    shutil.copy(CLIENT, script)
    env = {"IOSETS_URL": f"http://127.0.0.1:{closed_port()}", "IOSETS_DEFAULT_SET": "7"}
    rc, out, err = run_client("recommend", "--app", "wrf", "--user", "1002", script=script, env=env, cwd=tmp_path)
    answer = json.loads(out)
    assert rc == 0 and err == ""
    assert answer["error"].endswith("Connection refused")  # at once, no timeout waited for
    assert {k: answer[k] for k in ("app", "user", "set", "priority", "source")} == {
        "app": "wrf",
        "user": "1002",
        "set": 7,
        "priority": 1e-7,
        "source": "unavailable",
    }


def test_post_job_sends_the_row_and_exits_by_outcome(stub, tmp_path):
    env = {"IOSETS_URL": stub.url, "IOSETS_TOKEN": "iosets_w"}
    stub.reply = (201, {"job_id": "9", "app": "a"})
    posted = run_client("post-job", "--json", '{"job_id": "1", "app": "a"}', "--job-id", "9", env=env)
    assert posted == (0, '{"job_id": "9", "app": "a"}\n', "")
    (request,) = stub.requests
    assert (request["method"], request["path"]) == ("POST", "/v1/jobs")
    assert json.loads(request["body"]) == {"job_id": "9", "app": "a"}
    assert request["headers"]["Content-Type"] == "application/json"
    stub.reply = (422, {"detail": "row 0: nprocs: expected >= 1, got 0"})
    rc, out, err = run_client("post-job", "--json", '{"job_id": "1", "nprocs": 0}', env=env)
    assert (rc, out, err) == (4, "", "iosets client: not stored: HTTP 422: row 0: nprocs: expected >= 1, got 0\n")
    rc, out, err = run_client("post-job", "--json", "[1]", env=env)
    assert (rc, err) == (4, "iosets client: not stored: --json: expected a JSON object, got '[1]'\n")
    rc, _, err = run_client("post-job", "--json", "{}", env={"IOSETS_URL": f"http://127.0.0.1:{closed_port()}"})
    assert rc == client.EXIT_UNREACHABLE == 3 and "Connection refused" in err


@pytest.mark.parametrize("retry_after", ["0", "Thu, 01 Jan 1970 00:00:00 GMT"])  # seconds, or a date passed
def test_a_429_is_sent_again_after_its_retry_after(retry_after):
    busy = (429, {"detail": "write rate exceeded"}, {"Retry-After": retry_after})
    stub = StubService((201, {"job_id": "1"}), first=[busy, busy])
    try:
        stored = post_job({"job_id": "1"}, connection=Connection(url=stub.url, post_timeout=30.0))
    finally:
        stub.close()
    assert stored == {"job_id": "1"} and len(stub.requests) == 3
    assert [json.loads(r["body"]) for r in stub.requests] == [{"job_id": "1"}] * 3  # the same row each time


def test_a_429_asking_to_wait_past_the_timeout_is_refused_at_once():
    stub = StubService((429, {"detail": "write rate exceeded"}, {"Retry-After": "120"}))
    try:
        with pytest.raises(client.Refused) as refused:
            post_job({"job_id": "1"}, connection=Connection(url=stub.url, post_timeout=30.0))
    finally:
        stub.close()
    assert str(refused.value) == "HTTP 429: write rate exceeded (Retry-After 120 s: past the 30 s timeout)"
    assert len(stub.requests) == 1


def test_post_log_sends_a_multipart_upload(stub, tmp_path):
    log = tmp_path / 'odd "name".darshan'
    log.write_bytes(b"\x00darshan\r\n--bytes")
    post_log(log, job_id="77", connection=Connection(url=stub.url, post_timeout=30.0))
    (request,) = stub.requests
    boundary = request["headers"]["Content-Type"].removeprefix("multipart/form-data; boundary=")
    parts = request["body"].split(f"--{boundary}".encode())
    assert parts[0] == b"" and parts[-1] == b"--\r\n" and len(parts) == 4
    assert parts[1] == b'\r\nContent-Disposition: form-data; name="job_id"\r\n\r\n77\r\n'
    assert parts[2] == (
        b'\r\nContent-Disposition: form-data; name="log"; filename="odd _name_.darshan"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n\x00darshan\r\n--bytes\r\n"
    )


def test_post_log_sends_the_node_count_as_a_text_field(stub, tmp_path):
    log = tmp_path / "x.darshan"
    log.write_bytes(b"log")
    post_log(log, job_id="77", nodes=3, connection=Connection(url=stub.url, post_timeout=30.0))
    (request,) = stub.requests
    boundary = request["headers"]["Content-Type"].removeprefix("multipart/form-data; boundary=")
    parts = request["body"].split(f"--{boundary}".encode())
    assert len(parts) == 5 and parts[1] == b'\r\nContent-Disposition: form-data; name="job_id"\r\n\r\n77\r\n'
    assert parts[2] == b'\r\nContent-Disposition: form-data; name="nodes"\r\n\r\n3\r\n'
    assert parts[3].startswith(b'\r\nContent-Disposition: form-data; name="log"; filename="x.darshan"\r\n')


# ---- against a live service ------------------------------------------------------------------------------------------


def test_the_client_against_the_live_service(serve, tmp_path):
    server = serve()
    conn = Connection(url=server.url, token=server.token, timeout=30.0)  # the first answer may wait for a refit
    rows = [post_job(row, connection=conn) for row in learned_jobs("A", "1001")]
    assert [row["job_id"] for row in rows] == [f"A-{k}" for k in range(20)]
    answer = recommend("A", "1001", nprocs=64, job_id="x1", connection=conn)
    served = server.get("/v1/recommendation", app="A", user="1001", nprocs=64, job_id="x1").json()
    assert answer == served and (answer["set"], answer["source"]) == (2, "history")
    no_token = recommend("A", "1001", connection=Connection(url=server.url, timeout=30.0))
    assert no_token["source"] == "unavailable" and no_token["error"].startswith("HTTP 401: ")


def test_a_retried_post_stores_one_row(serve):
    server = serve()
    env = {"IOSETS_URL": server.url, "IOSETS_TOKEN": server.token}
    row = json.dumps(learned_jobs("B", "1002", 1)[0])
    first, again = run_client("post-job", "--json", row, env=env), run_client("post-job", "--json", row, env=env)
    assert first[0] == again[0] == 0 and json.loads(first[1]) == json.loads(again[1])
    assert [job["job_id"] for job in server.get("/v1/jobs", app="B").json()["jobs"]] == ["B-0"]


def test_a_darshan_log_posted_by_the_client(serve, tmp_path):
    server = serve()
    env = {"IOSETS_URL": server.url, "IOSETS_TOKEN": server.token, "IOSETS_POST_TIMEOUT": "120"}
    rc, out, err = run_client("post-job", "--log", str(DARSHAN_LOG), "--job-id", "slurm-4242", env=env)
    assert (rc, err) == (0, "")
    stored = server.get("/v1/jobs/slurm-4242").json()
    assert json.loads(out) == stored and stored["path"] == DARSHAN_LOG.name
    truncated = tmp_path / "cut.darshan"
    truncated.write_bytes(DARSHAN_LOG.read_bytes()[: DARSHAN_LOG.stat().st_size // 3])
    rc, out, err = run_client("post-job", "--log", str(truncated), "--job-id", "slurm-4243", env=env)
    assert (rc, out) == (4, "") and err.startswith("iosets client: not stored: HTTP 422: ") and "cut.darshan" in err
    assert httpx.get(f"{server.url}/v1/jobs/slurm-4243", headers=server.headers).status_code == 404


def test_a_darshan_log_and_a_row_posted_with_their_node_count(serve):
    server = serve()
    conn = Connection(url=server.url, token=server.token, post_timeout=120.0)
    stored = post_log(DARSHAN_LOG, job_id="slurm-4250", nodes=3, connection=conn)
    assert stored == server.get("/v1/jobs/slurm-4250").json() and (stored["nodes"], stored["path"]) == (
        3,
        DARSHAN_LOG.name,
    )
    env = {"IOSETS_URL": server.url, "IOSETS_TOKEN": server.token, "IOSETS_POST_TIMEOUT": "120"}
    rc, out, err = run_client("post-job", "--log", str(DARSHAN_LOG), "--job-id", "slurm-4251", "--nodes", "2", env=env)
    assert (rc, err) == (0, "") and json.loads(out)["nodes"] == server.get("/v1/jobs/slurm-4251").json()["nodes"] == 2
    rc, out, err = run_client("post-job", "--log", str(DARSHAN_LOG), "--job-id", "slurm-4252", "--nodes", "0", env=env)
    assert (rc, out, err) == (4, "", "iosets client: not stored: HTTP 422: nodes: expected an integer >= 1, got 0\n")
    row = json.dumps({"job_id": "slurm-4253", "user": "1001", "app": "A", "nodes": 8})
    rc, out, err = run_client("post-job", "--json", row, "--nodes", "5", env=env)  # the option over the row's
    assert (rc, err) == (0, "") and server.get("/v1/jobs/slurm-4253").json()["nodes"] == 5
    assert server.get("/v1/jobs/slurm-4252").status_code == 404
