"""Load on a live ``iosets serve``: recommendation latency at a fixed request rate, and job ingestion rates.

Starts ``iosets serve`` (one worker) in a second process on a temporary SQLite store and loopback
port, with an admin token from ``iosets token create``. This process is the load generator
(asyncio):

1. ``POST /v1/jobs``, JSON rows: fills the store with ``n_jobs`` generated jobs
   (``make_job_history``), 8 clients back to back; jobs/s.
2. ``GET /v1/recommendation``, open loop: requests are scheduled at a fixed rate (200, then 1000
   req/s) for ``seconds`` each, whether or not earlier answers came back, at most 64 in flight;
   each latency runs from the request's *scheduled* time, so a stalled server is charged for the
   requests it delayed (no coordinated omission). Queries mix the history's (app, user) pairs,
   known apps with new users and unknown apps. ``GET /healthz`` at the higher rate gives the floor
   of the client and HTTP stack. p50 / p99 / p99.9. These requests go through a minimal HTTP/1.1
   keep-alive client on asyncio streams: httpx.AsyncClient spends about 1.4 ms of CPU per request
   here (it tops out near 700 req/s on two cores), so at 1000 req/s it would measure itself.
3. ``POST /v1/jobs``, Darshan log uploads of the wheel's ``dxt.darshan`` (analysed by the
   service), 2 clients back to back; jobs/s.

Targets: p99 < 5 ms at 200 req/s and < 10 ms at 1000 req/s.

Usage: .venv/bin/python benchmarks/api_load.py [seconds per rate] [n_jobs] [n_uploads]
"""

import asyncio
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import httpx
import numpy as np

from iosets.datasets import make_job_history
from iosets.schemas import JOBS

RATES = ((200, 5e-3), (1000, 10e-3))  # (requests/s, p99 target in s)
IN_FLIGHT = 64
JSON_CLIENTS = 8
UPLOAD_CLIENTS = 2
CONFIG = "[service]\nwrite_rate = 1e9\n"  # the benchmark measures ingestion, not the flood guard


def iosets_command() -> list[str]:
    """The venv's ``iosets`` console script (``python -m iosets.cli`` when it is not installed)."""
    script = Path(sys.executable).with_name("iosets")
    return [str(script)] if script.exists() else [sys.executable, "-m", "iosets.cli"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def create_token(data_dir: Path) -> str:
    """An admin token: the last line of ``iosets token create``."""
    command = [*iosets_command(), "token", "create", "--scope", "admin", "--data-dir", str(data_dir)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def start_server(data_dir: Path, port: int, log: Path) -> subprocess.Popen:
    """``iosets serve`` with one worker on ``data_dir``; returns once ``/readyz`` answers 200 (<= 60 s)."""
    config = data_dir / "iosets.toml"
    config.write_text(CONFIG)
    command = [*iosets_command(), "serve", "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--data-dir", str(data_dir), "--workers", "1"]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"iosets serve exited with {process.returncode}:\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"iosets serve not ready after 60 s:\n{log.read_text()[-2000:]}")


def stop_server(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def job_rows(n_jobs: int) -> tuple[list[dict], list[dict]]:
    """``n_jobs`` generated jobs as JSON rows (JOBS columns), and 4 * n_jobs recommendation queries drawn from them.

    Queries: 80 % a job's (app, user), 10 % a known app with a new user, 10 % an app never seen.
    """
    history = make_job_history(n_jobs, n_apps=max(1, n_jobs // 100), n_users=max(3, n_jobs // 300), random_state=0)
    rows = history.select([c for c in history.columns if c in JOBS.names]).to_dicts()
    rng = np.random.default_rng(1)
    queries = []
    for k in rng.integers(n_jobs, size=4 * n_jobs):
        job = history.row(int(k), named=True)
        query = {"app": job["app"], "user": job["user"], "nprocs": job["nprocs"]}
        query["requested_time"] = job["requested_time"]
        kind = rng.random()
        if kind >= 0.9:
            query["app"] = f"unseen{rng.integers(20)}"
        elif kind >= 0.8:
            query["user"] = f"new{rng.integers(100)}"
        queries.append(query)
    return rows, queries


async def closed_loop(send, n: int, clients: int) -> float:
    """Run ``send(k)`` for k in 0..n-1 with ``clients`` concurrent senders back to back; calls per second."""
    ks = iter(range(n))

    async def client() -> None:
        for k in ks:
            await send(k)

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return n / (time.perf_counter() - start)


class Connections:
    """IN_FLIGHT keep-alive HTTP/1.1 connections to ``host:port``; ``get`` waits for a free one (the in-flight cap)."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self.host, self.port = host, port
        self.head = f"Host: {host}:{port}\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
        self.free: asyncio.Queue = asyncio.Queue()

    async def open(self) -> None:
        for _ in range(IN_FLIGHT):
            self.free.put_nowait(await asyncio.open_connection(self.host, self.port))

    async def close(self) -> None:
        while not self.free.empty():
            _, writer = self.free.get_nowait()
            writer.close()
            await writer.wait_closed()

    async def get(self, target: str) -> int:
        """GET ``target`` (path and query string), read the whole answer; its status code."""
        reader, writer = await self.free.get()
        writer.write(b"GET " + target.encode() + b" HTTP/1.1\r\n" + self.head)
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next(int(line.split(":")[1]) for line in lines if line.lower().startswith("content-length:"))
        await reader.readexactly(length)
        self.free.put_nowait((reader, writer))
        return int(lines[0].split()[1])


async def open_loop(send, rate: float, seconds: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Schedule ``send(k)`` at ``rate`` per second for ``seconds`` (``send`` caps how many run at once).

    Returns each call's latency from its scheduled time (s), the generator's own lag (s: from the
    scheduled time to the call's start, before any wait for a connection) and the count of failed
    calls (status other than 200; a broken connection stops the run).
    """
    loop = asyncio.get_running_loop()
    n = int(rate * seconds)
    latencies, lags = np.full(n, np.nan), np.full(n, np.nan)
    failures = 0

    async def one(k: int, scheduled: float) -> None:
        nonlocal failures
        lags[k] = loop.time() - scheduled
        status = await send(k)
        latencies[k] = loop.time() - scheduled
        failures += status != 200

    start = loop.time() + 0.01
    tasks = []
    for k in range(n):
        scheduled = start + k / rate
        if scheduled > loop.time():
            await asyncio.sleep(scheduled - loop.time())
        tasks.append(asyncio.create_task(one(k, scheduled)))
    await asyncio.gather(*tasks)
    return latencies, lags, failures


def darshan_log() -> Path:
    """The wheel's ``darshan/examples/example_logs/dxt.darshan`` (found without importing darshan)."""
    spec = importlib.util.find_spec("darshan")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("darshan (pydarshan) is not installed: no dxt.darshan to upload")
    return Path(spec.submodule_search_locations[0]) / "examples" / "example_logs" / "dxt.darshan"


def milliseconds(latencies: np.ndarray) -> list[float]:
    return [float(v) * 1e3 for v in np.percentile(latencies, [50, 99, 99.9])]


async def measure_latency(url: str, token: str, queries: list[dict], seconds: float) -> list:
    """Open-loop runs of GET /v1/recommendation at each rate of RATES, then of GET /healthz at the highest."""
    targets = [f"/v1/recommendation?{urllib.parse.urlencode(query)}" for query in queries]
    address = urllib.parse.urlsplit(url)
    assert address.hostname is not None and address.port is not None
    connections = Connections(address.hostname, address.port, token)
    await connections.open()
    try:

        async def recommend(k: int) -> int:
            return await connections.get(targets[k % len(targets)])

        async def healthz(k: int) -> int:
            return await connections.get("/healthz")

        await open_loop(recommend, 200, 1.0)  # warm-up: lazy imports, caches
        results = []
        for rate, target in RATES:
            results.append((f"GET /v1/recommendation @ {rate}/s", target, await open_loop(recommend, rate, seconds)))
        floor_rate = RATES[-1][0]
        results.append((f"GET /healthz @ {floor_rate}/s (floor)", None, await open_loop(healthz, floor_rate, seconds)))
        return results
    finally:
        await connections.close()


async def measure(url: str, token: str, seconds: float, n_jobs: int, n_uploads: int) -> None:
    rows, queries = job_rows(n_jobs)
    load = os.getloadavg()[0]
    limits = httpx.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=30) as client:

        async def post_row(k: int) -> None:
            (await client.post("/v1/jobs", json=rows[k])).raise_for_status()

        json_rate = await closed_loop(post_row, n_jobs, JSON_CLIENTS)
        listed = (await client.get("/readyz")).json()
        if listed.get("jobs") != n_jobs:
            raise RuntimeError(f"/readyz reports {listed.get('jobs')} jobs after posting {n_jobs}")

        results = await measure_latency(url, token, queries, seconds)

        log = darshan_log().read_bytes()

        async def upload(k: int) -> None:
            files = {"log": ("dxt.darshan", log, "application/octet-stream")}
            (await client.post("/v1/jobs", files=files, data={"job_id": f"upload{k}"})).raise_for_status()

        upload_rate = await closed_loop(upload, n_uploads, UPLOAD_CLIENTS)

    print(f"iosets serve, 1 worker, SQLite store; load from a second process on loopback; {os.cpu_count()} CPUs")
    print(f"load average before the run: {load:.2f} (other processes share the CPUs with both)")
    print(f"POST /v1/jobs, JSON rows ({JSON_CLIENTS} clients):        {n_jobs} jobs, {json_rate:8.1f} jobs/s")
    print(f"POST /v1/jobs, dxt.darshan uploads ({UPLOAD_CLIENTS} clients): {n_uploads} jobs, {upload_rate:8.1f} jobs/s")
    print(f"open loop, {seconds:g} s per rate, <= {IN_FLIGHT} in flight, latency from the scheduled time:")
    header = f"{'requests':>8s} {'failed':>6s} {'p50':>9s} {'p99':>9s} {'p99.9':>9s} {'lag p99':>9s}  target p99"
    print(f"  {'':38s} {header}")
    for name, target, (latencies, lags, failures) in results:
        p50, p99, p999 = milliseconds(latencies)
        lag = milliseconds(lags)[1]
        verdict = "" if target is None else f"< {target * 1e3:g} ms: {'met' if p99 < target * 1e3 else 'NOT met'}"
        print(
            f"  {name:38s} {latencies.size:8d} {failures:6d} {p50:6.2f} ms {p99:6.2f} ms {p999:6.2f} ms "
            f"{lag:6.2f} ms  {verdict}"
        )
    print("  (lag: the generator's own delay before sending, included in the latencies)")


def main(seconds: float = 10.0, n_jobs: int = 2000, n_uploads: int = 20) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="iosets-load-"))
    try:
        token = create_token(data_dir)
        port = free_port()
        server = start_server(data_dir, port, data_dir / "serve.log")
        try:
            asyncio.run(measure(f"http://127.0.0.1:{port}", token, seconds, n_jobs, n_uploads))
        finally:
            stop_server(server)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main(*(float(a) if k == 0 else int(a) for k, a in enumerate(sys.argv[1:4])))
