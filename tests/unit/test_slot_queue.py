"""SlotQueue: who gets the next free browser-context slot. Connections are
PooledConnection records marked ready (no server behind them: the queue only
reads their counts and state)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from scrapy_cdp_pool.browser.pool.connection import ConnectionState, PooledConnection
from scrapy_cdp_pool.browser.pool.slots import SlotQueue


def in_a_task(test: Callable[..., Coroutine[Any, Any, None]]) -> Any:
    """Run an async test as an asyncio task of the reactor's loop (where the
    pool's futures live), not as a Deferred's coroutine."""

    @functools.wraps(test)
    async def run(**params: Any) -> None:
        await Deferred.fromFuture(asyncio.ensure_future(test(**params)))

    return pytest_twisted.ensureDeferred(run)


def ready(index: int, capacity: int = 1) -> PooledConnection:
    return PooledConnection(
        index=index, endpoint_index=0, capacity=capacity, state=ConnectionState.READY
    )


@in_a_task
async def test_the_least_loaded_connection_is_picked() -> None:
    connections = [ready(0, capacity=2), ready(1, capacity=2)]
    connections[0].counters.pages = 5
    queue = SlotQueue(connections)
    first = await queue.acquire()
    assert first is connections[1]  # fewer pages
    second = await queue.acquire()
    assert second is connections[0]  # fewer open contexts
    assert [c.open_contexts for c in connections] == [1, 1]


@in_a_task
async def test_waiters_are_served_in_arrival_order_as_slots_free() -> None:
    connection = ready(0)
    queue = SlotQueue([connection])
    held = await queue.acquire()
    order: list[str] = []

    async def wait(name: str) -> None:
        got = await queue.acquire()
        order.append(name)
        queue.release(got)

    waiters = [asyncio.ensure_future(wait(name)) for name in ("a", "b", "c")]
    await asyncio.sleep(0)  # let them queue up
    assert queue.waiting == 3
    queue.release(held)
    await asyncio.gather(*waiters)
    assert order == ["a", "b", "c"]
    assert connection.open_contexts == 0


@in_a_task
async def test_a_hold_stops_new_slots_until_lifted() -> None:
    queue = SlotQueue([ready(0)])
    queue.hold("memory")
    assert queue.pick() is None
    waiter = asyncio.ensure_future(queue.acquire())
    await asyncio.sleep(0)
    assert not waiter.done()
    queue.unhold("memory")
    assert (await waiter).open_contexts == 1
    assert queue.holds == frozenset()


@in_a_task
async def test_a_cancelled_waiter_takes_no_slot_and_failing_waiters_raises_in_each() -> None:
    connection = ready(0)
    queue = SlotQueue([connection])
    held = await queue.acquire()
    cancelled = asyncio.ensure_future(queue.acquire())
    failed = asyncio.ensure_future(queue.acquire())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    assert queue.waiting == 1
    queue.fail_waiters(ConnectionError("pool closed"))
    with pytest.raises(ConnectionError, match="pool closed"):
        await failed
    queue.release(held)
    assert connection.open_contexts == 0


@in_a_task
async def test_a_wait_while_every_slot_is_held_by_a_page_outlasts_its_timeout() -> None:
    """Like a request waiting for one of Scrapy's downloader slots: the page
    ahead is bounded by its own deadline, so the waiter keeps its place past
    several of its windows and gets the slot when it frees."""
    connection = ready(0)
    queue = SlotQueue([connection])
    held = await queue.acquire()
    waiting = asyncio.ensure_future(queue.acquire_within(frozenset(), 0.01))
    # three of its windows pass (each ends in a busy check that lets it go on)
    for _ in range(3):
        await asyncio.wait([waiting], timeout=0.01)
    assert not waiting.done()
    assert queue.waiting == 1
    queue.release(held)
    assert await waiting is connection
    assert connection.open_contexts == 1


@pytest.mark.parametrize("why", ["broken", "held"])
@in_a_task
async def test_a_wait_while_the_pool_cannot_serve_ends_after_its_timeout(why: str) -> None:
    connection = ready(0)
    queue = SlotQueue([connection])
    held = await queue.acquire()
    if why == "broken":  # its server restarting, or the endpoint unreachable
        connection.state = ConnectionState.BROKEN
    else:  # backpressure (the memory guard)
        queue.hold("server memory")
    with pytest.raises(TimeoutError):
        await queue.acquire_within(frozenset(), 0.01)
    assert queue.waiting == 0  # its place given up
    queue.release(held)
    assert connection.open_contexts == 0


@in_a_task
async def test_a_waiter_cancelled_after_being_handed_a_slot_gives_it_back() -> None:
    connection = ready(0)
    queue = SlotQueue([connection])
    held = await queue.acquire()
    waiting = asyncio.ensure_future(queue.acquire_within(frozenset(), 10))
    while queue.waiting == 0:  # noqa: ASYNC110 - yield (no time passes) until it queues
        await asyncio.sleep(0)
    queue.release(held)  # handed to the waiter's inner acquire...
    waiting.cancel()  # ...as the caller gives up
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert connection.open_contexts == 0
    assert await queue.acquire() is connection
