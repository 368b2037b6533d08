"""Load on a live ``iosets serve``: recommendation latency at a fixed request rate, and job ingestion rates.

Starts ``iosets serve`` (one worker) in a second process on a temporary SQLite store and loopback
port, with an admin token from ``iosets token create``. This process is the load generator
(asyncio), with a third process for the posts of step 1:

1. ``POST /v1/jobs``, JSON rows: fills the store with ``n_jobs`` generated jobs
   (``make_job_history``), 8 clients back to back in a posting process of their own; jobs/s, and the
   posting clients' own CPU per post. Not in this process, and not through httpx: an httpx client
   costs ~1.4 ms of CPU per request (below), so at ~300 posts/s it would keep an event loop ~40 %
   busy, and the GETs that run meanwhile (``--stored``) would wait behind it, in step with the posts
   (the latencies would be the generator's own delays, not the service's), and it would take that
   much of the two cores the service is measured on, where a site's epilogs post from other machines.
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

With ``--stored N`` the store holds N generated jobs before the service starts (bulk inserted, not
posted), and step 1 runs ``GET /v1/recommendation`` at 200 req/s from this process while the 8
clients post from theirs, which is what a site with a long history sees: posts must not slow down
with N (no refit in their path), nor the answers. The service's peak resident memory (VmHWM of its
process) is printed at the end.

Targets: p99 < 5 ms at 200 req/s and < 10 ms at 1000 req/s; with ``--stored 1000000``: POST >= 150 jobs/s
and p99 < 5 ms at 200 req/s while posts run. The same paced posts and answers are then sent to
``fixed_answer_server.py``, which answers every request with fixed bytes: its p99 is the machine's floor
under that load, beside the service's (how much of a miss is the service's).

Usage: .venv/bin/python benchmarks/api_load.py [seconds per rate] [n_jobs] [n_uploads] [--stored N]
"""

import argparse
import asyncio
import contextlib
import gc
import importlib.util
import json
import multiprocessing
import os
import select
import selectors
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
import polars as pl

from iosets.datasets import make_job_history
from iosets.schemas import JOBS

RATES = ((200, 5e-3), (1000, 10e-3))  # (requests/s, p99 target in s)
IN_FLIGHT = 64
JSON_CLIENTS = 8
UPLOAD_CLIENTS = 2
CONFIG = "[service]\nwrite_rate = 1e9\n"  # the benchmark measures ingestion, not the flood guard
POSTED_RATE = (200, 5e-3)  # GET rate while posts run, and its p99 target in s
POST_TARGET = 150  # jobs/s: the post rate the target asks for, and the paced posts' rate while GETs are judged
INSERT_CHUNK = 20_000
GENERATOR_PRIORITY = 1  # this process's real-time priority once the service is started: see raise_priority


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


def generated_jobs(n_jobs: int, stored: int) -> pl.DataFrame:
    """``stored + n_jobs`` generated jobs (JOBS columns and requested_time): ~100 jobs per app, ~300 per user."""
    total = n_jobs + stored
    n_apps, n_users = max(1, min(total // 100, 5000)), max(3, min(total // 300, 1000))
    history = make_job_history(total, n_apps=n_apps, n_users=n_users, random_state=0)
    return history.select([c for c in history.columns if c in (*JOBS.names, "requested_time")])


def store_jobs(data_dir: Path, jobs: pl.DataFrame) -> float:
    """Bulk insert ``jobs`` into the SQLite store of ``data_dir`` (received now); seconds taken."""
    from iosets.api import Settings
    from iosets.api._store import Store
    from iosets.api._store import jobs as table

    started = time.perf_counter()
    store = Store(Settings(data_dir=str(data_dir)).store_url)
    received = time.time()
    try:
        rows = jobs.drop("requested_time").with_columns(received_at=pl.lit(received))
        for chunk in rows.iter_slices(INSERT_CHUNK):
            with store._writing() as conn:
                conn.execute(table.insert(), chunk.to_dicts())
    finally:
        store.close()
    return time.perf_counter() - started


def raise_priority() -> str:
    """Run this process (the GETs' generator) under ``SCHED_FIFO``; the policy it runs under, to print.

    The generator shares the machine's cores with the service it measures, which posts keep busy; a site's
    prologs ask from other machines. A real-time task runs as soon as it wakes (a niced one still waits for
    a running task's slice, 1.5 ms and more here): its own delays (the printed lag) are then the machine's
    wake-up costs, not a wait behind the service's threads, and the latencies are the service's. It needs
    about a tenth of a core. The service and the posting clients run at the default policy and priority.
    Raising it needs root (CAP_SYS_NICE); without, the generator runs as the others and says so.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(GENERATOR_PRIORITY))
    except PermissionError:
        return "the default policy (SCHED_FIFO needs root)"
    return f"SCHED_FIFO priority {GENERATOR_PRIORITY}"


def precise_loop() -> asyncio.AbstractEventLoop:
    """The generator's event loop, waiting with ``select(2)``, whose timeout has microsecond resolution.

    The default loop's ``epoll_wait`` rounds each wait up to the next millisecond, so a GET scheduled for
    ``t`` left at up to ``t + 1 ms``: the generator's lag p99 was 1.1 ms, in every latency printed (charged to
    the service, from the scheduled time), 0.2-0.3 ms with ``select``. It watches at most 1024 descriptors;
    the generator holds fewer than 100.
    """
    return asyncio.SelectorEventLoop(selectors.SelectSelector())


def peak_memory(pid: int) -> float:
    """Peak resident memory (VmHWM) of process ``pid`` and its descendants (the refit worker), in MB."""
    total = 0.0
    pids = [pid]
    while pids:
        current = pids.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            tasks = Path(f"/proc/{current}/task").iterdir()
            children = [child for task in tasks for child in (task / "children").read_text().split()]
        except OSError:
            continue
        total += next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024
        pids += [int(child) for child in children]
    return total


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) process ``pid`` used so far, its threads included, not its children: s."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(data_dir: Path, port: int, log: Path, ready_within: float = 60.0) -> subprocess.Popen:
    """``iosets serve`` with one worker on ``data_dir``; returns once ``/readyz`` answers 200 (<= ready_within s)."""
    config = data_dir / "iosets.toml"
    config.write_text(CONFIG)
    command = [*iosets_command(), "serve", "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--data-dir", str(data_dir), "--workers", "1"]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + ready_within
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
    raise RuntimeError(f"iosets serve not ready after {ready_within:g} s:\n{log.read_text()[-2000:]}")


def start_fixed_server(port: int, within: float = 30.0) -> subprocess.Popen:
    """``fixed_answer_server.py`` on ``port`` (the machine's floor); returns once it listens (<= within s)."""
    script = Path(__file__).with_name("fixed_answer_server.py")
    process = subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.PIPE)
    assert process.stdout is not None
    if not select.select([process.stdout], [], [], within)[0] or process.stdout.readline() != b"ready\n":
        process.kill()
        raise RuntimeError(f"{script.name} did not start within {within:g} s")
    return process


def stop_server(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def job_rows(history: pl.DataFrame) -> tuple[list[dict], list[dict]]:
    """The jobs to post as JSON rows, and 4 per job of recommendation queries drawn from them.

    Queries: 80 % a job's (app, user), 10 % a known app with a new user, 10 % an app never seen.
    """
    n_jobs = history.height
    rows = history.drop("requested_time").to_dicts()
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


class Poster:
    """The posts of ``rows`` (JSON jobs) by JSON_CLIENTS clients, back to back or paced at ``rate`` jobs/s, in a
    process of their own.

    ``start`` returns once the clients begin; ``done`` tells whether they ended; ``rate`` waits for them
    and returns their jobs/s. The process is spawned: it shares nothing with this one's event loop.
    """

    def __init__(self, url: str, token: str, rows: list[dict], rate: float | None = None) -> None:
        context = multiprocessing.get_context("spawn")
        self.begun = context.Event()
        self.answer, sent = context.Pipe(duplex=False)
        self.process = context.Process(
            target=post_in_process, args=(url, token, rows, rate, self.begun, sent), name="api-load-posts"
        )

    def start(self, within: float = 60.0) -> None:
        self.process.start()
        if not self.begun.wait(within):
            self.process.kill()
            raise RuntimeError(f"the posting process did not begin within {within:g} s")

    def done(self) -> bool:
        return self.answer.poll()

    def rate(self) -> tuple[float, float]:
        """The posts' jobs/s and the posting process's CPU per post (s), once they all ended; RuntimeError with the
        posting process's error."""
        outcome = self.answer.recv()
        self.process.join()
        if isinstance(outcome, str):
            raise RuntimeError(f"the posting process failed: {outcome}")
        return outcome

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()


def post_in_process(url: str, token: str, rows: list[dict], rate: float | None, begun, answer) -> None:
    """The posting process of :class:`Poster`: sends back ``post_rows``'s outcome, or the error as a string.

    It runs under the default policy, as the service, not the generator's it was spawned from (:func:`raise_priority`).
    """
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    try:
        answer.send(asyncio.run(post_rows(url, token, rows, rate, begun)))
    except Exception as exc:  # noqa: BLE001 - the generator's process reports it
        answer.send(f"{type(exc).__name__}: {exc}")


async def post_rows(url: str, token: str, rows: list[dict], rate: float | None, begun) -> tuple[float, float]:
    """POST each row to ``/v1/jobs`` with JSON_CLIENTS clients, back to back or (``rate``) the k-th not before
    k / rate s from the start; sets ``begun`` first.

    Returns the jobs/s and this process's CPU per post (s): the rows are encoded before, and the clients are
    the minimal ones of :class:`Connections` (an httpx client costs ~1.4 ms of CPU per post, which the service
    would not get on the 2 cores they share; a site's epilogs run on other machines).
    """
    bodies = [json.dumps(row).encode() for row in rows]
    address = urllib.parse.urlsplit(url)
    assert address.hostname is not None and address.port is not None
    connections = Connections(address.hostname, address.port, token, size=JSON_CLIENTS)
    await connections.open()

    loop = asyncio.get_running_loop()
    start = 0.0  # when the clients begin (below)

    async def post_row(k: int) -> None:
        if rate is not None and (wait := start + k / rate - loop.time()) > 0:
            await asyncio.sleep(wait)
        status = await connections.request("POST", "/v1/jobs", bodies[k])
        if status not in (200, 201):
            raise RuntimeError(f"POST /v1/jobs answered {status} for row {k}")

    try:
        begun.set()
        start, cpu = loop.time(), time.process_time()
        posted = await closed_loop(post_row, len(rows), JSON_CLIENTS)
        return posted, (time.process_time() - cpu) / len(rows)
    finally:
        await connections.close()


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
    """``size`` keep-alive HTTP/1.1 connections to ``host:port``; a request waits for a free one (the in-flight cap).

    A minimal client (the request written in one piece, the answer read by its Content-Length): httpx costs
    about 1.4 ms of CPU per request here, which would take the cores the service is measured on.
    """

    def __init__(self, host: str, port: int, token: str, size: int = IN_FLIGHT) -> None:
        self.host, self.port, self.size = host, port, size
        self.head = f"Host: {host}:{port}\r\nAuthorization: Bearer {token}\r\n".encode()
        self.free: asyncio.Queue = asyncio.Queue()

    async def open(self) -> None:
        for _ in range(self.size):
            self.free.put_nowait(await asyncio.open_connection(self.host, self.port))

    async def close(self) -> None:
        while not self.free.empty():
            _, writer = self.free.get_nowait()
            writer.close()
            await writer.wait_closed()

    async def get(self, target: str) -> int:
        """GET ``target`` (path and query string), read the whole answer; its status code."""
        return await self.request("GET", target)

    async def request(self, method: str, target: str, body: bytes = b"") -> int:
        """``method target`` with ``body`` (JSON when not empty), read the whole answer; its status code."""
        reader, writer = await self.free.get()
        head = f"{method} {target} HTTP/1.1\r\n".encode() + self.head
        if body:
            head += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
        writer.write(head + b"\r\n" + body)
        answer = await reader.readuntil(b"\r\n\r\n")
        lines = answer.decode("latin-1").split("\r\n")
        length = next(int(line.split(":")[1]) for line in lines if line.lower().startswith("content-length:"))
        await reader.readexactly(length)
        self.free.put_nowait((reader, writer))
        return int(lines[0].split()[1])


@contextlib.contextmanager
def collector_paused():
    """This process's garbage collector off (what lives frozen first, never scanned again), on again after.

    The generator runs under ``SCHED_FIFO`` (:func:`raise_priority`): a collection in it holds a core that
    the service then cannot have. Its full collections took 25-33 ms here, and about 9.5 s into every run of
    GETs while posts ran, the service's event loop was runnable but waited 42 ms for a core (its
    ``/proc/PID/task/TID/schedstat``) while the generator collected: 40-45 ms answers charged to the
    service.
    """
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def open_loop(send, rate: float, seconds: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Schedule ``send(k)`` at ``rate`` per second for ``seconds`` (``send`` caps how many run at once),
    the generator's garbage collector paused (:func:`collector_paused`).

    Returns each call's latency from its scheduled time (s), the generator's own lag (s: from the
    scheduled time to the call's start, before any wait for a connection) and the count of failed
    calls (status other than 200; a broken connection stops the run).
    """
    with collector_paused():
        return await _open_loop(send, rate, seconds)


async def _open_loop(send, rate: float, seconds: float) -> tuple[np.ndarray, np.ndarray, int]:
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


@contextlib.asynccontextmanager
async def recommendations(url: str, token: str, queries: list[dict]):
    """Open connections to the service; yield them and ``recommend(k)``, the GET of the k-th query's answer."""
    targets = [f"/v1/recommendation?{urllib.parse.urlencode(query)}" for query in queries]
    address = urllib.parse.urlsplit(url)
    assert address.hostname is not None and address.port is not None
    connections = Connections(address.hostname, address.port, token)
    await connections.open()

    async def recommend(k: int) -> int:
        return await connections.get(targets[k % len(targets)])

    try:
        yield connections, recommend
    finally:
        await connections.close()


async def measure_latency(url: str, token: str, queries: list[dict], seconds: float) -> list:
    """Open-loop runs of GET /v1/recommendation at each rate of RATES, then of GET /healthz at the highest."""
    async with recommendations(url, token, queries) as (connections, recommend):

        async def healthz(k: int) -> int:
            return await connections.get("/healthz")

        await open_loop(recommend, 200, 1.0)  # warm-up: lazy imports, caches
        results = []
        for rate, target in RATES:
            results.append((f"GET /v1/recommendation @ {rate}/s", target, await open_loop(recommend, rate, seconds)))
        floor_rate = RATES[-1][0]
        results.append((f"GET /healthz @ {floor_rate}/s (floor)", None, await open_loop(healthz, floor_rate, seconds)))
        return results


async def measure(
    url: str, token: str, seconds: float, posted: pl.DataFrame, n_uploads: int, stored: int, pid: int
) -> None:
    rows, queries = job_rows(posted)
    n_jobs = len(rows)
    load = os.getloadavg()[0]
    limits = httpx.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)
    headers = {"Authorization": f"Bearer {token}"}
    n_paced = int(POST_TARGET * (seconds + 3)) if stored else 0  # posts that outlast the GETs judged meanwhile
    if n_jobs <= n_paced:
        raise ValueError(f"n_jobs must exceed {n_paced} with --stored and {seconds:g} s per rate")
    asked = queries if stored else []
    json_rate, poster_cpu, cpu_per_post, saturated = await posting(url, token, rows[n_paced:], asked, seconds, pid)
    paced = floor = None
    if stored:
        paced = (await posting(url, token, rows[:n_paced], queries, seconds, pid, rate=POST_TARGET))[3]
        floor = await machine_floor(rows[:n_paced], queries, seconds)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=30) as client:
        listed = (await client.get("/readyz")).json()
        if listed.get("jobs") != stored + n_jobs:
            raise RuntimeError(f"/readyz reports {listed.get('jobs')} jobs after {stored} stored and {n_jobs} posted")

        results = await measure_latency(url, token, queries, seconds)

        log = darshan_log().read_bytes()

        async def upload(k: int) -> None:
            files = {"log": ("dxt.darshan", log, "application/octet-stream")}
            (await client.post("/v1/jobs", files=files, data={"job_id": f"upload{k}"})).raise_for_status()

        upload_rate = await closed_loop(upload, n_uploads, UPLOAD_CLIENTS)

    print(
        "iosets serve, 1 worker, SQLite store; GETs from a second process, posts from a third, on loopback; "
        f"{os.cpu_count()} CPUs"
    )
    print(f"load average before the run: {load:.2f} (other processes share the CPUs with both)")
    print(f"stored before the run (bulk inserted): {stored} jobs")
    n_back = n_jobs - n_paced
    verdict = f"target >= {POST_TARGET} jobs/s: {'met' if json_rate >= POST_TARGET else 'NOT met'}"
    print(
        f"POST /v1/jobs, JSON rows ({JSON_CLIENTS} clients back to back, a process of their own): {n_back} jobs, "
        f"{json_rate:8.1f} jobs/s  {verdict} (the posting clients' own CPU: {poster_cpu * 1e3:.2f} ms per post)"
    )
    print(
        f"  service CPU per posted job: {cpu_per_post * 1e3:.2f} ms (its process, the GETs run meanwhile included;"
        " the refit worker apart): what the load does not change"
    )
    if saturated is not None and paced is not None:
        print_during(f"while {JSON_CLIENTS} clients post back to back (the service saturated: no target)", saturated)
        print_during(f"while {JSON_CLIENTS} clients post {paced[3]} jobs at {POST_TARGET} jobs/s", paced, judged=True)
    if floor is not None:
        asked = "  the same GETs to a server answering fixed bytes"
        print_during("while the same posts ran, just after (the machine's floor: no target)", floor, asked=asked)
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


def print_during(when: str, during: tuple, *, judged: bool = False, asked: str = "GET /v1/recommendation") -> None:
    """One line of the answers asked while posts ran, with the verdict on their target if ``judged``."""
    latencies, lags, failures = during[:3]
    p50, p99, p999 = milliseconds(latencies)
    target = POSTED_RATE[1] * 1e3
    verdict = f"  target p99 < {target:g} ms: {'met' if p99 < target else 'NOT met'}" if judged else ""
    print(
        f"{asked} @ {POSTED_RATE[0]}/s {when}: {latencies.size} requests, {failures} failed, "
        f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, p99.9 {p999:.2f} ms, lag p99 {milliseconds(lags)[1]:.2f} ms{verdict}"
    )


async def posting(
    url: str, token: str, rows: list[dict], queries: list[dict], seconds: float, pid: int, rate: float | None = None
) -> tuple:
    """Post ``rows`` (back to back, or at ``rate`` jobs/s), and with ``queries`` ask answers meanwhile.

    Returns the jobs/s, the posting clients' CPU per post, the service's CPU per post (its process: the
    answers asked meanwhile included) and what :func:`measure_during` returns followed by the count of posts
    (None without ``queries``).
    """
    poster = Poster(url, token, rows, rate)
    try:
        poster.start()
        cpu_before = cpu_seconds(pid)
        during = await measure_during(url, token, queries, seconds, poster) if queries else None
        json_rate, poster_cpu = await asyncio.to_thread(poster.rate)
        during = None if during is None else (*during, len(rows))
        return json_rate, poster_cpu, (cpu_seconds(pid) - cpu_before) / len(rows), during
    finally:
        poster.stop()


async def machine_floor(rows: list[dict], queries: list[dict], seconds: float) -> tuple:
    """The paced posts and the answers asked meanwhile, sent to ``fixed_answer_server.py``: what
    :func:`measure_during` returns there (the machine's share of the latencies, the service's left out)."""
    port = free_port()
    server = await asyncio.to_thread(start_fixed_server, port)
    try:
        url = f"http://127.0.0.1:{port}"
        return (await posting(url, "none", rows, queries, seconds, server.pid, rate=POST_TARGET))[3]
    finally:
        stop_server(server)


async def measure_during(url: str, token: str, queries: list[dict], seconds: float, poster: Poster) -> tuple:
    """Open-loop GET /v1/recommendation at POSTED_RATE for ``seconds`` while ``poster`` posts."""
    async with recommendations(url, token, queries) as (_, recommend):
        latencies, lags, failures = await open_loop(recommend, POSTED_RATE[0], seconds)
        if poster.done():
            print("warning: the posts ended before the GET run; post more jobs (n_jobs) for a full overlap")
        return latencies, lags, failures


def main(seconds: float = 10.0, n_jobs: int = 2000, n_uploads: int = 20, stored: int = 0) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="iosets-load-"))
    try:
        jobs = generated_jobs(n_jobs, stored)
        if stored:
            took = store_jobs(data_dir, jobs[:stored])
            print(f"bulk inserted {stored} jobs in {took:.1f} s")
        token = create_token(data_dir)
        port = free_port()
        started = time.perf_counter()
        server = start_server(data_dir, port, data_dir / "serve.log", ready_within=60.0 + stored / 500)
        print(f"service ready in {time.perf_counter() - started:.1f} s (evidence rebuilt, model fitted)")
        try:
            url = f"http://127.0.0.1:{port}"
            print(f"the GETs' generator runs under {raise_priority()}; the service and the posting clients as usual")
            with asyncio.Runner(loop_factory=precise_loop) as runner:
                runner.run(measure(url, token, seconds, jobs[stored:], n_uploads, stored, server.pid))
            print(f"peak resident memory (VmHWM), the service and its refit worker: {peak_memory(server.pid):.0f} MB")
        finally:
            stop_server(server)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seconds", type=float, nargs="?", default=10.0, help="seconds per GET rate (default 10)")
    parser.add_argument("n_jobs", type=int, nargs="?", default=2000, help="jobs posted (default 2000)")
    parser.add_argument("n_uploads", type=int, nargs="?", default=20, help="Darshan logs uploaded (default 20)")
    parser.add_argument("--stored", type=int, default=0, help="jobs bulk inserted before the service starts")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse(sys.argv[1:])
    main(args.seconds, args.n_jobs, args.n_uploads, args.stored)
