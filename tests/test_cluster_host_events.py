"""HostEvents on a real ``redis-server``: the fleet's host pauses reach a
worker as they are written (pub/sub), so its download handler's checks cost
no round trip, pauses written before it subscribed included; a start waiting
for another worker's navigation answer is woken by that answer instead of
asking again every 50 ms."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest_twisted
from twisted.internet.defer import Deferred

from scrapy_cdp_pool.cluster import scripts
from scrapy_cdp_pool.cluster.frontier import Frontier
from scrapy_cdp_pool.cluster.host_events import HostEvents
from scrapy_cdp_pool.cluster.redis_client import connect
from tests.profiles import token
from tests.redis_server import RedisServer

DEADLINE_S = 60.0


def _commands(client: Any) -> int:
    return int(client.info("stats")["total_commands_processed"])


def _until_seen(events: HostEvents, host: str) -> None:
    """Until ``events`` holds a pause of ``host`` (each check reads the
    messages already on its socket), within :data:`DEADLINE_S`."""
    deadline = time.monotonic() + DEADLINE_S
    while not events.pause_left(host):
        assert time.monotonic() < deadline, f"the pause of {host} never reached the worker"
        time.sleep(0.001)  # the poll's step: the condition above is what is waited for


def test_pauses_reach_the_worker_without_a_round_trip(module_redis_server: RedisServer) -> None:
    other = Frontier(connect(module_redis_server.url, 5), token(), "w2", lease_s=30)
    other.pause_host("before.test", 60)  # written before this worker listens
    events = HostEvents(module_redis_server.url, other.prefix)
    try:
        assert 0 < events.pause_left("before.test") <= 60  # type: ignore[operator]
        assert events.live
        assert events.pause_left("a.test") == 0.0
        # written by another worker: seen once its message arrives (Redis may
        # write it to the subscriber just after its answer to the writer: the
        # download handler asks Redis for "no pause", docs/cluster.md), then
        # with no round trip
        other.pause_host("a.test", 30)
        _until_seen(events, "a.test")
        assert 0 < events.pause_left("a.test") <= 30  # type: ignore[operator]
        other.pause_host("a.test", 5)  # a shorter pause keeps the longer one
        other.pause_host("b.test", 10)
        _until_seen(events, "b.test")  # its message follows a.test's on the subscription
        watcher = module_redis_server.client()
        before = _commands(watcher)
        assert 0 < events.pause_left("b.test") <= 10  # type: ignore[operator]
        assert _commands(watcher) == before + 1  # the first INFO: the check made no call
        assert events.pause_left("a.test") > 5  # type: ignore[operator]
        assert events.pause_left("c.test") == 0.0
    finally:
        events.stop()
    assert events.pause_left("a.test") is None


@pytest_twisted.ensureDeferred
async def test_a_start_waiting_for_an_answer_is_woken_by_it(
    module_redis_server: RedisServer,
) -> None:
    await Deferred.fromFuture(asyncio.ensure_future(_answers(module_redis_server)))


def _claims(url: str) -> tuple[Frontier, Any, Any, list[str]]:
    """A crawl's frontier on ``url``, the navigation claim and answer
    scripts, and the keys of ``a.test``'s claim."""
    client = connect(url, 5)
    frontier = Frontier(client, token(), "w1", lease_s=30)
    claim = client.register_script(scripts.CLAIM_NAVIGATION)
    answer = client.register_script(scripts.ANSWER_NAVIGATION)
    return frontier, claim, answer, list(scripts.host_keys(frontier.prefix, "a.test"))


async def _answers(module_redis_server: RedisServer) -> None:
    frontier, claim, answer, keys = _claims(module_redis_server.url)
    assert frontier.run_keyed(claim, keys, "w1:1", 60_000, "") == 0
    events = HostEvents(module_redis_server.url, frontier.prefix)
    try:
        await events.wait_answer("a.test", 60)  # first time: subscribes, returns
        assert frontier.run_keyed(claim, keys, "w2:1", 60_000, "") < 0  # waits for w1:1
        loop = asyncio.get_running_loop()
        waiting = loop.create_task(events.wait_answer("a.test", DEADLINE_S))
        await asyncio.sleep(0)  # the waiter is waiting
        assert not waiting.done()
        frontier.run_keyed(answer, keys[1:], "w9:9", 500, "a.test")  # not the last claim
        frontier.run_keyed(answer, keys[1:], "w1:1", 500, "a.test")
        started = loop.time()
        await asyncio.wait_for(waiting, DEADLINE_S)
        assert loop.time() - started < DEADLINE_S / 2  # woken, not timed out
        assert 0 < frontier.run_keyed(claim, keys, "w2:1", 60_000, "") <= 500
    finally:
        events.stop()


@pytest_twisted.ensureDeferred
async def test_an_answer_read_before_the_wait_still_wakes_it(
    module_redis_server: RedisServer,
) -> None:
    """Found in suite runs (a 30.0 s gap between two starts at a host rate of
    2/s over two workers): the answer written while a claim was refused was
    read (the socket's reader, or the wait's own read) before the wait
    cleared its event, and the waiter slept the claim's whole lease."""
    await Deferred.fromFuture(asyncio.ensure_future(_answer_before_the_wait(module_redis_server)))


async def _answer_before_the_wait(module_redis_server: RedisServer) -> None:
    frontier, claim, answer, keys = _claims(module_redis_server.url)
    events = HostEvents(module_redis_server.url, frontier.prefix)
    try:
        await events.wait_answer("a.test", 60)  # first time: subscribes, returns
        assert frontier.run_keyed(claim, keys, "w1:1", 60_000, "") == 0
        read_before = events.answers_read("a.test")
        assert frontier.run_keyed(claim, keys, "w2:1", 60_000, "") < 0  # waits for w1:1
        frontier.run_keyed(answer, keys[1:], "w1:1", 500, "a.test")
        deadline = time.monotonic() + DEADLINE_S
        while events.answers_read("a.test") == read_before:  # read by the socket's reader
            assert time.monotonic() < deadline, "the answer never reached the worker"
            await asyncio.sleep(0.001)  # the poll's step: the condition is what is waited for
        loop = asyncio.get_running_loop()
        started = loop.time()
        await asyncio.wait_for(events.wait_answer("a.test", DEADLINE_S, read_before), DEADLINE_S)
        assert loop.time() - started < DEADLINE_S / 2  # at once, not the whole wait
    finally:
        events.stop()
