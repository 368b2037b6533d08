"""`Turns`: tasks that wait for a turn resume in arrival order, one per iteration of the event loop; `TakeTurns`
makes a post to its path wait for one before the app starts on it, and nothing else."""

import asyncio
import itertools

from iosets.api._turns import TakeTurns, Turns


async def _resumed(n: int, cancel: int | None = None) -> list[tuple[int, int]]:
    """Start ``n`` tasks that wait for a turn (cancelling task ``cancel`` before any turn is given); each
    resumed task's number and the loop iteration it resumed in, counted by a callback that reschedules itself."""
    loop, turns = asyncio.get_running_loop(), Turns()
    iteration, resumed = [0], []

    def count() -> None:
        iteration[0] += 1
        loop.call_soon(count)

    async def post(k: int) -> None:
        await turns.wait()
        resumed.append((k, iteration[0]))

    tasks = [asyncio.create_task(post(k)) for k in range(n)]
    loop.call_soon(count)
    await asyncio.sleep(0)  # every task is waiting now; no turn was given yet
    if cancel is not None:
        tasks[cancel].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return resumed


def test_waiters_resume_in_arrival_order_never_two_in_one_iteration():
    resumed = asyncio.run(_resumed(5))
    assert [k for k, _ in resumed] == [0, 1, 2, 3, 4]
    assert all(later > earlier for (_, earlier), (_, later) in itertools.pairwise(resumed))


def test_a_cancelled_waiter_passes_its_turn_on():
    resumed = asyncio.run(_resumed(4, cancel=1))
    assert [k for k, _ in resumed] == [0, 2, 3]


async def _started(requests: list[tuple[str, str]]) -> list[tuple[int, int]]:
    """Send each (method, path) through TakeTurns at once; each request's number and the loop iteration in which
    the app behind the middleware started on it."""
    loop = asyncio.get_running_loop()
    iteration, started = [0], []

    def count() -> None:
        iteration[0] += 1
        loop.call_soon(count)

    async def app(scope, receive, send) -> None:
        started.append((scope["number"], iteration[0]))

    middleware = TakeTurns(app, Turns(), "/v1/jobs")
    scopes = [{"type": "http", "method": m, "path": p, "number": k} for k, (m, p) in enumerate(requests)]
    loop.call_soon(count)
    await asyncio.gather(*(middleware(scope, None, None) for scope in scopes))
    return started


def test_posts_of_jobs_start_one_per_iteration_and_other_requests_at_once():
    requests = [("POST", "/v1/jobs"), ("POST", "/v1/jobs"), ("GET", "/v1/recommendation"), ("POST", "/v1/jobs")]
    requests.append(("POST", "/v1/recommendations"))
    started = asyncio.run(_started(requests))
    at = dict(started)
    first = min(at.values())
    assert at[2] == at[4] == first  # the others start on the iteration they arrive in
    assert [k for k, _ in started if k in (0, 1, 3)] == [0, 1, 3]  # the posts in arrival order
    assert first < at[0] < at[1] < at[3]  # each on a later iteration than the one before
