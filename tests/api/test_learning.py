"""The learning loop against a live server: posted jobs and uploaded Darshan logs change the next answer."""

from pathlib import Path

import httpx
import pytest

from iosets.analyzer import analyze_log
from iosets.schemas import JOBS

LOG = Path(__file__).parents[1] / "data" / "darshan" / "jlbez_IO_test5.darshan"


def _upload(server, name, data, **fields):
    return httpx.post(
        server.url + "/v1/jobs", files={"log": (name, data)}, data=fields, headers=server.headers, timeout=60.0
    )


def test_twenty_jobs_of_40_s_put_the_app_in_set_2_from_its_history(serve):
    server = serve()
    before = server.get("/v1/recommendation", app="A", user="alice").json()
    assert (before["set"], before["source"]) == (99, "default")  # the one default answer
    for i in range(20):
        w_iter = 40.0 * (1.0 + 0.02 * ((i % 5) - 2))  # 36.8 .. 43.2 s
        row = {"job_id": f"a{i}", "user": "alice", "app": "A", "start": 1e9 + 600.0 * i, "end": 1e9 + 600.0 * i + 500}
        row |= {"w_iter": w_iter, "w_iter_confidence": 0.9, "alpha_io": 0.1}
        assert server.post_job(row).status_code == 201
    got = server.get("/v1/recommendation", app="A", user="alice", nprocs=64).json()
    assert (got["set"], got["priority"], got["source"], got["conservative"]) == (2, 0.01, "history", False)
    assert got["w_iter"] == pytest.approx(40.0, rel=0.03)  # SET-10: round(log10 40) = 2
    newcomer = server.get("/v1/recommendation", app="A", user="bob").json()
    assert (newcomer["set"], newcomer["source"]) == (2, "history")  # the app's history answers a new user


def test_an_uploaded_darshan_log_is_stored_as_analyze_log_reads_it(serve):
    server = serve()
    expected = analyze_log(LOG)
    answer = _upload(server, "IO_test5.darshan", LOG.read_bytes())
    assert answer.status_code == 201, answer.text
    stored = server.get(f"/v1/jobs/{expected['job_id']}").json()
    for name in JOBS.names:
        assert stored[name] == ("IO_test5.darshan" if name == "path" else expected[name]), (
            name
        )  # every column, the path being the uploaded name
    again = _upload(server, "IO_test5.darshan", LOG.read_bytes(), job_id="renamed")
    assert (again.status_code, again.json()["job_id"], again.json()["app"]) == (201, "renamed", expected["app"])
    retried = _upload(server, "IO_test5.darshan", LOG.read_bytes(), job_id="renamed")
    assert retried.status_code == 200


def test_a_truncated_log_is_422_with_the_reason_and_stores_nothing(serve):
    server = serve()
    data = LOG.read_bytes()
    answer = _upload(server, "cut.darshan", data[: len(data) // 3])
    assert answer.status_code == 422
    detail = answer.json()["detail"]
    assert detail.startswith("cut.darshan: ") and "/tmp" not in detail and "iosets-upload" not in detail
    assert "past the end of the file" in detail or "truncated" in detail
    assert server.get("/v1/jobs").json() == {"jobs": [], "next_cursor": None}


def test_a_retried_post_is_200_with_the_stored_row_and_one_row(serve):
    server = serve()
    row = {"job_id": "42", "user": "u", "app": "A", "w_iter": 8.0}
    first, second = server.post_job(row), server.post_job({**row, "w_iter": 9.0})
    assert (first.status_code, second.status_code) == (201, 200)
    assert second.json() == first.json()
    assert [job["w_iter"] for job in server.get("/v1/jobs").json()["jobs"]] == [8.0]
