"""The store under a live ``iosets serve``: concurrent retried posts, ``kill -9`` mid-ingestion, two replicas.

Each test runs on SQLite (``--data-dir``) and on a real PostgreSQL (``--database``, see ``postgres.py``).
Rows are counted in the store itself (sqlite3, psycopg) as well as through the API.
"""

import random
import sqlite3
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest

from iosets.schemas import JOBS

from .postgres import postgres_database, postgres_server  # noqa: F401  (fixtures)

N_JOBS = 4000
N_CLIENTS = 8
POLICY_FIELDS = ("mapping", "bandwidth", "safety", "limit", "max_request", "min_confidence")
CONFIG = "[service]\nwrite_rate = 1e9\n"  # no flood guard: 8 clients post as fast as they can


def job_row(k: int) -> dict:
    """Job ``k``: every JOBS column set, values that differ from job to job (so a half-written row shows)."""
    start = 1_700_000_000.0 + 61.25 * k + k / 7
    runtime = 600.0 + (k % 97) * 3.5
    periodic = k % 5 != 0
    return {
        "job_id": f"job{k:05d}",
        "user": f"u{k % 7}",
        "app": f"app{k % 13}",
        "nprocs": 1 + k % 64,
        "nodes": 1 + k % 8,
        "start": start,
        "end": start + runtime,
        "runtime": runtime,
        "bytes_read": 1e6 * (k % 11) + 0.5,
        "bytes_written": 2.5e8 + k,
        "io_time": runtime / 10,
        "reads": 10 * k,
        "writes": 3 * k + 1,
        "modules": "MPI-IO>POSIX" if k % 2 else "POSIX",
        "w_iter": 40.0 + k % 9 if periodic else None,
        "w_iter_confidence": 0.9 if periodic else None,
        "alpha_io": 0.1 + (k % 10) / 100,
        "n_phases": 15 + k % 4,
        "not_periodic": None if periodic else "irregular",
        "explanation": f"job {k}: {'period found' if periodic else 'phases too irregular'}",
        "source": "dxt",
        "rhythm_from": "DXT_POSIX",
        "resolution": 1e-6,
        "partial": k % 17 == 0,
        "n_logs": 1 + k % 3,
        "step": str(k % 4) if k % 3 else None,
        "path": f"/logs/job{k:05d}.darshan",
    }


def periodic_row(k: int, app: str) -> dict:
    """Job ``k`` of ``app`` with a confident w_iter of 40 s (SET-10: set round(log10 40) = 2)."""
    return job_row(k) | {"app": app, "w_iter": 40.0, "w_iter_confidence": 0.9, "alpha_io": 0.1, "not_periodic": None}


def as_posted(stored: dict) -> dict:
    """The JOBS columns of a stored row (drops what the service adds, such as received_at)."""
    return {name: stored.get(name) for name in JOBS.names}


class Store:
    """A store's ``iosets serve`` options and a direct count of its jobs table."""

    def __init__(self, args: list[str]) -> None:
        self.args = args

    def job_ids(self) -> list[str]:
        """Every job_id of the jobs table, read from the database itself (duplicates kept)."""
        sql = "SELECT job_id FROM jobs"
        if self.args[0] == "--data-dir":
            with sqlite3.connect(Path(self.args[1]) / "iosets.db") as connection:
                return [row[0] for row in connection.execute(sql)]
        with psycopg.connect(self.args[1]) as connection:
            return [row[0] for row in connection.execute(sql)]


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path) -> Store:
    """An empty store: a SQLite folder, or a new database on the session's PostgreSQL."""
    if request.param == "sqlite":
        return Store(["--data-dir", str(tmp_path / "store")])
    return Store(["--database", request.getfixturevalue("postgres_database")])


@pytest.fixture
def config(tmp_path) -> tuple[str, str]:
    """``--config`` options for a service without write limit."""
    path = tmp_path / "iosets.toml"
    path.write_text(CONFIG)
    return ("--config", str(path))


def client_of(server) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=30)


def all_jobs(server) -> list[dict]:
    """Every stored job through ``GET /v1/jobs``, page by page."""
    jobs: list[dict] = []
    cursor = None
    with client_of(server) as client:
        while True:
            params = {"limit": 1000} | ({"cursor": cursor} if cursor else {})
            page = client.get("/v1/jobs", params=params).raise_for_status().json()
            jobs += page["jobs"]
            cursor = page["next_cursor"]
            if cursor is None:
                return jobs


def retry_plan(n_jobs: int, n_clients: int, seed: int = 0) -> tuple[list[list[int]], int]:
    """Which jobs each client posts, in order, and how many posts are retries (~10 %).

    Every job is posted once; 5 % of them again at once by the same client (an epilog retrying
    after a lost answer) and 5 % by another client in the same turn (two retries racing).
    """
    rng = random.Random(seed)
    order = list(range(n_jobs))
    rng.shuffle(order)
    plans: list[list[int]] = [order[c::n_clients] for c in range(n_clients)]
    retried = rng.sample(range(n_jobs), n_jobs // 10)
    by_client = {k: (c, plan) for c, plan in enumerate(plans) for k in plan}
    for k in retried[: len(retried) // 2]:
        _, plan = by_client[k]
        plan.insert(plan.index(k) + 1, k)
    for k in retried[len(retried) // 2 :]:
        c, plan = by_client[k]
        other = plans[(c + 1) % n_clients]
        other.insert(min(plan.index(k), len(other)), k)
    return plans, len(retried)


def test_retry_plan_posts_every_job_and_a_tenth_twice():
    plans, retries = retry_plan(4000, 8)
    posts = Counter(k for plan in plans for k in plan)
    assert sorted(posts) == list(range(4000))
    assert retries == 400 and Counter(posts.values()) == {1: 3600, 2: 400}


@pytest.mark.slow  # about a minute per store: 4400 posts
def test_concurrent_retried_posts_store_each_job_once(serve, store, config):
    server = serve(*store.args, extra=config)
    plans, retries = retry_plan(N_JOBS, N_CLIENTS)

    def post_all(plan: list[int]) -> list[tuple[int, int, dict]]:
        with client_of(server) as client:
            return [(k, (r := client.post("/v1/jobs", json=job_row(k))).status_code, r.json()) for k in plan]

    with ThreadPoolExecutor(N_CLIENTS) as pool:
        answers = [answer for done in pool.map(post_all, plans) for answer in done]

    assert Counter(status for _, status, _ in answers) == {201: N_JOBS, 200: retries}
    assert Counter(k for k, status, _ in answers if status == 201) == Counter(range(N_JOBS))
    assert all(as_posted(body) == job_row(k) for k, _, body in answers)  # a retry gets the stored row
    stored = store.job_ids()
    assert len(stored) == N_JOBS and set(stored) == {job_row(k)["job_id"] for k in range(N_JOBS)}
    listed = all_jobs(server)
    assert sorted(as_posted(job)["job_id"] for job in listed) == sorted(stored)
    assert server.get("/readyz").json()["jobs"] == N_JOBS


def test_kill_9_mid_ingestion_keeps_every_acknowledged_job_whole(serve, store, config):
    server = serve(*store.args, extra=config)
    next_job = iter(range(10**6))
    acknowledged: list[int] = []
    attempted: list[int] = []
    unexpected: list[int] = []
    lock = threading.Lock()

    def post_until_refused() -> None:
        with client_of(server) as client:
            while True:
                with lock:
                    k = next(next_job)
                    attempted.append(k)
                try:
                    status = client.post("/v1/jobs", json=job_row(k)).status_code
                except httpx.TransportError:
                    return
                with lock:
                    if status != 201:
                        unexpected.append(status)
                        return
                    acknowledged.append(k)

    threads = [threading.Thread(target=post_until_refused) for _ in range(4)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while len(acknowledged) < 300 and time.monotonic() < deadline and all(t.is_alive() for t in threads):
        time.sleep(0.01)
    server.kill()
    for thread in threads:
        thread.join(30)
    assert unexpected == [] and len(acknowledged) >= 300
    assert len(attempted) > len(acknowledged)  # some posts were in flight when the server died

    server.restart()
    stored = {job["job_id"]: as_posted(job) for job in all_jobs(server)}
    posted = {job_row(k)["job_id"]: job_row(k) for k in attempted}
    assert {job_row(k)["job_id"] for k in acknowledged} <= stored.keys() <= posted.keys()
    assert all(row == posted[job_id] for job_id, row in stored.items())  # nothing half-written
    assert len(store.job_ids()) == len(stored)


def test_two_replicas_on_one_postgresql_share_jobs_and_policy(serve, request, config):
    database = request.getfixturevalue("postgres_database")
    first = serve("--database", database, extra=config)
    second = serve("--database", database, extra=config)
    row = periodic_row(1, "shared")
    with client_of(first) as client:
        assert client.post("/v1/jobs", json=row).status_code == 201
    answer = second.get(f"/v1/jobs/{row['job_id']}")
    assert answer.status_code == 200 and as_posted(answer.json()) == row

    with client_of(second) as client:  # 20 jobs of app "shared" posted to the second replica
        for k in range(2, 21):
            assert client.post("/v1/jobs", json=periodic_row(k, "shared")).status_code == 201
    with client_of(first) as client:
        policy = client.get("/v1/policy").json()
        assert policy["version"] == 1
        params = {name: policy[name] for name in POLICY_FIELDS} | {"bandwidth": 5e9, "safety": 2.0}
        changed = client.put("/v1/policy", json=params)
        assert changed.status_code == 200 and changed.json()["version"] == 2

    # the second replica reads the policy version and refits from the shared store on its refresh
    query = {"app": "shared", "user": "u1"}
    deadline = time.monotonic() + 60  # it polls every second, then refits with the model (seconds under load)
    while time.monotonic() < deadline:
        seen = second.get("/v1/policy").json()
        answer = second.get("/v1/recommendation", **query).json()
        if seen["version"] == 2 and answer["policy_version"] == 2 and answer["source"] == "history":
            break
        time.sleep(0.2)
    assert seen["version"] == 2 and (seen["bandwidth"], seen["safety"]) == (5e9, 2.0)
    assert (answer["policy_version"], answer["source"], answer["set"]) == (2, "history", 2)  # round(log10 40) = 2
    assert first.get("/v1/recommendation", **query).json()["set"] == 2
