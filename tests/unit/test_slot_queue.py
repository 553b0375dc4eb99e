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

from scrapy_cdp_pool.pool.connection import ConnectionState, PooledConnection
from scrapy_cdp_pool.pool.slots import SlotQueue


def in_a_task(test: Callable[[], Coroutine[Any, Any, None]]) -> Any:
    """Run an async test as an asyncio task of the reactor's loop (where the
    pool's futures live), not as a Deferred's coroutine."""

    @functools.wraps(test)
    async def run() -> None:
        await Deferred.fromFuture(asyncio.ensure_future(test()))

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
