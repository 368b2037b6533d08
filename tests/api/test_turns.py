"""`Turns`: tasks that wait for a turn resume in arrival order, one per iteration of the event loop."""

import asyncio
import itertools

from iosets.api._turns import Turns


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
