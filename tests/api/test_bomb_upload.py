"""A decompression bomb uploaded to the service: 422 naming its region and cap, its worker's memory bounded, and
the other uploads answered while it holds its worker."""

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

pytest.importorskip("darshan")
sys.path.insert(0, str(Path(__file__).parents[1] / "analyzer"))

from darshan_bomb import GOOD, OTHER_GOOD, write_bomb  # noqa: E402

from iosets.analyzer._ingest._darshan_layout import parse_layout  # noqa: E402
from iosets.api import Settings, create_app  # noqa: E402
from iosets.api._auth import create_token  # noqa: E402

WAIT = 120.0  # generous bound of a condition awaited on a loaded machine


def _peak_rss(pid: int) -> int:
    """A process's peak resident memory (VmHWM, bytes)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) << 10 for line in status.splitlines() if line.startswith("VmHWM"))


def _wait_for(condition, what: str):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.01)
    raise AssertionError(f"not within {WAIT} s: {what}")


def _client(tmp_path, log_workers: int):
    app = create_app(Settings(data_dir=str(tmp_path / "data"), write_rate=1000.0, log_workers=log_workers))
    _, token = create_token(app.state.service.store, ["read", "write"])
    return app, {"Authorization": f"Bearer {token}"}


def test_a_bomb_upload_is_422_with_its_cap_and_the_next_upload_is_stored(tmp_path):
    bomb = write_bomb(tmp_path / "bomb.darshan", 256 << 20)
    region = parse_layout(bomb.read_bytes()).region("DXT_POSIX")
    app, headers = _client(tmp_path, log_workers=1)
    with TestClient(app) as client:
        first = client.post("/v1/jobs", files={"log": ("first.darshan", GOOD.read_bytes())}, headers=headers)
        assert first.status_code == 201
        [worker] = app.state.log_readers.pids()  # one reader: the bomb goes to this worker
        Path(f"/proc/{worker}/clear_refs").write_text("5")  # reset its peak
        start = _peak_rss(worker)
        answer = client.post("/v1/jobs", files={"log": ("bomb.darshan", bomb.read_bytes())}, headers=headers)
        assert answer.status_code == 422
        assert answer.json() == {
            "detail": f"bomb.darshan: module DXT_POSIX region {region.span()} inflates past {16 * region.length} "
            f"bytes (cap: 16 x its {region.length} compressed bytes): a decompression bomb?"
        }
        assert app.state.log_readers.pids() == [worker]  # the bomb did not cost its worker: the same one measured
        assert _peak_rss(worker) - start < 200 << 20
        good = client.post("/v1/jobs", files={"log": ("next.darshan", OTHER_GOOD.read_bytes())}, headers=headers)
        assert good.status_code == 201 and good.json()["path"] == "next.darshan"
        stored = client.get("/v1/jobs", headers=headers).json()["jobs"]
        assert sorted(job["path"] for job in stored) == ["first.darshan", "next.darshan"]


def test_other_uploads_are_answered_while_a_bomb_holds_its_worker(tmp_path):
    """The bomb's worker is stopped (SIGSTOP) while it reads: with one reader for all uploads, the good upload
    would wait for it forever; with two, it is stored meanwhile, and the bomb answers 422 once resumed."""
    bomb = write_bomb(tmp_path / "bomb.darshan", 1 << 30)
    app, headers = _client(tmp_path, log_workers=2)
    readers = app.state.log_readers
    with TestClient(app) as client:
        answers: dict[str, int] = {}

        def post_bomb() -> None:
            reply = client.post("/v1/jobs", files={"log": ("bomb.darshan", bomb.read_bytes())}, headers=headers)
            answers["bomb"] = reply.status_code

        poster = threading.Thread(target=post_bomb)
        poster.start()
        [held] = _wait_for(readers.busy, "the bomb's worker busy")
        stored_meanwhile: dict[str, object] = {}

        def post_good() -> None:
            for name in ("a.darshan", "b.darshan"):
                files = {"log": (name, OTHER_GOOD.read_bytes()), "job_id": (None, name)}
                good = client.post("/v1/jobs", files=files, headers=headers)
                stored_meanwhile[name] = (good.status_code, good.json().get("path"))

        goods = threading.Thread(target=post_good, daemon=True)  # a regression waits on the stopped worker: bounded
        os.kill(held, signal.SIGSTOP)
        try:
            goods.start()
            goods.join(WAIT)
            assert not goods.is_alive(), "the good uploads waited for the bomb's stopped worker"
        finally:
            os.kill(held, signal.SIGCONT)
        poster.join(WAIT)
        assert stored_meanwhile == {"a.darshan": (201, "a.darshan"), "b.darshan": (201, "b.darshan")}
        assert answers == {"bomb": 422}
        stored = client.get("/v1/jobs", headers=headers).json()["jobs"]
        assert sorted(job["path"] for job in stored) == ["a.darshan", "b.darshan"]
