"""A decompression bomb uploaded to the service: 422 naming its region and cap, its worker's memory bounded."""

import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

pytest.importorskip("darshan")
sys.path.insert(0, str(Path(__file__).parents[1] / "analyzer"))

from darshan_bomb import GOOD, OTHER_GOOD, WorkerPeak, write_bomb  # noqa: E402

from iosets.analyzer._ingest._darshan_layout import parse_layout  # noqa: E402
from iosets.api import Settings, create_app  # noqa: E402
from iosets.api._auth import create_token  # noqa: E402


def test_a_bomb_upload_is_422_with_its_cap_and_the_next_upload_is_stored(tmp_path):
    bomb = write_bomb(tmp_path / "bomb.darshan", 256 << 20)
    region = parse_layout(bomb.read_bytes()).region("DXT_POSIX")
    app = create_app(Settings(data_dir=str(tmp_path / "data"), write_rate=1000.0))
    _, token = create_token(app.state.service.store, ["read", "write"])
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(app) as client:
        first = client.post("/v1/jobs", files={"log": ("first.darshan", GOOD.read_bytes())}, headers=headers)
        assert first.status_code == 201
        with WorkerPeak() as peak:  # the service reads logs in this process's reader worker
            answer = client.post("/v1/jobs", files={"log": ("bomb.darshan", bomb.read_bytes())}, headers=headers)
        assert answer.status_code == 422
        assert answer.json() == {
            "detail": f"bomb.darshan: module DXT_POSIX region {region.span()} inflates past {16 * region.length} "
            f"bytes (cap: 16 x its {region.length} compressed bytes): a decompression bomb?"
        }
        assert peak.growth < 200 << 20
        good = client.post("/v1/jobs", files={"log": ("next.darshan", OTHER_GOOD.read_bytes())}, headers=headers)
        assert good.status_code == 201 and good.json()["path"] == "next.darshan"
        stored = client.get("/v1/jobs", headers=headers).json()["jobs"]
        assert sorted(job["path"] for job in stored) == ["first.darshan", "next.darshan"]
