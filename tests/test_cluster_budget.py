"""The fleet budget (issue 16, item 5) on a real redis-server: two worker
processes crawling the test site never have more pages in flight together
than CDP_POOL_CLUSTER_BUDGET_MAX, as the site counts them; a dead worker's
share expires; workers must agree on the bound."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import time
import uuid
from collections.abc import Callable

import pytest
import pytest_twisted
from redis.asyncio import Redis
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from scrapy_cdp_pool.cluster.budget import _TAKE, LEASES_LOST_STAT, RECYCLE_PAGES, FleetBudget
from scrapy_cdp_pool.cluster.budget_extension import FleetBudgetExtension
from scrapy_cdp_pool.cluster.redis_client import CALL_TIMEOUT_S
from tests.cluster_harness import WorkerProcesses
from tests.cluster_ops import PREFIX
from tests.redis_server import RedisServer, wait_for
from tests.servers import SiteServer

LEASES = f"{PREFIX}budget:leases"
CHANNEL = f"{PREFIX}budget:released"
DEADLINE_S = 120.0


async def eventually(condition: Callable[[], object], what: str) -> None:
    """Wait for ``condition()``: a state the worker's background task reaches."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        if condition():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {DEADLINE_S} s: {what}")
        await asyncio.sleep(0.05)


def test_two_workers_share_one_bound(site: SiteServer, redis_server: RedisServer) -> None:
    key = f"budget-{uuid.uuid4().hex[:8]}"
    client = redis_server.client()
    # The test holds the whole budget first, so that both workers start, find it
    # used up and wait together; then it lets go and they compete for it.
    far = int(time.time() * 1000) + 600_000
    client.set(f"{PREFIX}budget:max", 3)
    client.zadd(LEASES, {"test:1": far, "test:2": far, "test:3": far})
    settings = {
        "CDP_POOL_CLUSTER_REDIS_URL": redis_server.url, "CDP_POOL_CLUSTER_NAME": "test",
        "CDP_POOL_CLUSTER_BUDGET_MAX": 3, "CDP_POOL_CONNECTIONS": 3,
        "CONCURRENT_REQUESTS": 6, "CONCURRENT_REQUESTS_PER_DOMAIN": 6,
    }  # fmt: skip
    url_lists = [
        [site.url(f"/inflight?key={key}&ms=300&w={w}&i={i}") for i in range(8)] for w in range(2)
    ]
    with WorkerProcesses(settings, url_lists) as workers:
        wait_for(lambda: client.pubsub_numsub(CHANNEL)[0][1] == 2, "both workers waiting")
        assert site.stats()["inflight_max"].get(key, 0) == 0
        client.zrem(LEASES, "test:1", "test:2", "test:3")
        client.publish(CHANNEL, 3)
        answers = workers.answers(DEADLINE_S)
    records = site.stats()
    assert records["hits"]["/inflight"] >= 16
    assert sum(1 for url in records["hits_by_url"] if f"key={key}&" in url) == 16
    assert records["inflight_max"][key] <= 3  # the bound, across both processes
    for answer in answers:
        assert answer["failures"] == 0
        stats = answer["stats"]
        assert stats["cdp_pool/cluster/budget/crawler_pages_in_flight_max"] <= 3
        assert stats["cdp_pool/cluster/budget/max"] == 3
    # the 16 requests share one frontier: either worker may take any of them,
    # and each page took one share, whichever worker rendered it
    pages = [answer["stats"]["cdp_pool/cluster/budget/crawler_pages"] for answer in answers]
    retries = [answer["stats"].get("retry/count", 0) for answer in answers]
    assert sum(pages) == 16 + sum(retries)
    assert client.zcard(LEASES) == 0  # every share given back


def test_a_dead_workers_share_expires(redis_server: RedisServer) -> None:
    """A share whose lease has passed (its worker died) is dropped by the next
    take (the workers' own script): the bound counts live shares only."""
    client = redis_server.client()
    now_s, now_us = client.time()
    now_ms = now_s * 1000 + now_us // 1000
    client.zadd(LEASES, {"dead:1": now_ms - 1, "live:1": now_ms + 600_000})
    take = client.register_script(_TAKE)
    taken = [take(keys=[LEASES], args=[2, f"w:{n}", 30_000])[0] for n in (1, 2)]
    assert taken == [1, 0]  # the dead share made room for one, not two
    assert sorted(m.decode() for m in client.zrange(LEASES, 0, -1)) == ["live:1", "w:1"]


def test_workers_must_agree_on_the_bound(redis_server: RedisServer) -> None:
    redis_server.client().set(f"{PREFIX}budget:max", 3)
    settings = {
        "ADDONS": {"scrapy_cdp_pool.Addon": 0},
        "CDP_POOL_CLUSTER_REDIS_URL": redis_server.url,
        "CDP_POOL_CLUSTER_NAME": "test",
        "CDP_POOL_CLUSTER_BUDGET_MAX": 5,
    }
    with pytest.raises(ValueError, match=r"CDP_POOL_CLUSTER_BUDGET_MAX = 5, but the cluster's"):
        FleetBudgetExtension.from_crawler(get_crawler(settings_dict=settings))


@pytest_twisted.ensureDeferred
async def test_a_take_waits_out_a_redis_outage() -> None:
    """Redis down: no page starts (the start check says no, one WARNING);
    Redis back on the same socket: the share is taken and the engine woken."""
    await Deferred.fromFuture(asyncio.ensure_future(_outage()))


async def _outage() -> None:
    server = RedisServer()
    directory = server.directory
    woken = asyncio.Event()
    budget = FleetBudget(Redis.from_url(server.url), PREFIX, max=1, owner="w", lease_s=30)
    member = budget.attach("spider", wake=woken.set)
    warned = asyncio.Event()
    handler = logging.Handler()
    handler.emit = lambda record: warned.set()  # type: ignore[method-assign]
    handler.addFilter(lambda record: "did not answer a take" in record.getMessage())
    logging.getLogger("scrapy_cdp_pool.cluster.budget").addHandler(handler)
    server.stop_keeping_directory()
    try:
        assert not member.may_start()
        await asyncio.wait_for(warned.wait(), DEADLINE_S)  # the take failed
        assert not woken.is_set()
        assert not member.may_start()
        server = RedisServer(directory)  # back, on the same socket
        await asyncio.wait_for(woken.wait(), DEADLINE_S)
        assert member.may_start()
        assert server.client().zcard(LEASES) == 1
    finally:
        logging.getLogger("scrapy_cdp_pool.cluster.budget").removeHandler(handler)
        budget.detach(member)
        await member.drain()
        await budget.redis.aclose()
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest_twisted.ensureDeferred
async def test_a_take_from_a_redis_that_stops_answering_gives_up_and_warns(
    redis_server: RedisServer,
) -> None:
    """Redis stopped (SIGSTOP: its socket open, nothing answered), the
    budget's client as the extension builds it: the take gives up after the
    call timeout, one WARNING names the outage, no page starts; continued
    (SIGCONT), the share is taken. Before: the budget's client had no socket
    timeout of its own (redis-py's default: 5 s in redis-py 8.1), not the
    frontier's 1 s bound."""
    await Deferred.fromFuture(asyncio.ensure_future(_stopped(redis_server)))


async def _stopped(redis_server: RedisServer) -> None:
    settings = {
        "ADDONS": {"scrapy_cdp_pool.Addon": 0},
        "CDP_POOL_CLUSTER_REDIS_URL": redis_server.url,
        "CDP_POOL_CLUSTER_NAME": f"stopped-{uuid.uuid4().hex[:8]}",
        "CDP_POOL_CLUSTER_BUDGET_MAX": 1,
    }
    extension = FleetBudgetExtension.from_crawler(get_crawler(settings_dict=settings))
    options = extension.budget.redis.connection_pool.connection_kwargs
    # the frontier's bound (before: none given, redis-py's default)
    assert options["socket_timeout"] == options["socket_connect_timeout"] == CALL_TIMEOUT_S
    member = extension.member
    warned = asyncio.Event()
    handler = logging.Handler()
    handler.emit = lambda record: warned.set()  # type: ignore[method-assign]
    handler.addFilter(lambda record: "did not answer a take" in record.getMessage())
    logging.getLogger("scrapy_cdp_pool.cluster.budget").addHandler(handler)
    os.kill(redis_server.proc.pid, signal.SIGSTOP)
    stopped = True
    try:
        assert not member.may_start()
        await asyncio.wait_for(warned.wait(), DEADLINE_S)  # the take gave up
        assert not member.may_start()
        os.kill(redis_server.proc.pid, signal.SIGCONT)
        stopped = False
        await eventually(member.may_start, "the share taken once Redis answers")
        assert redis_server.client().zcard(f"{extension.budget.leases_key}") == 1
    finally:
        if stopped:
            os.kill(redis_server.proc.pid, signal.SIGCONT)
        logging.getLogger("scrapy_cdp_pool.cluster.budget").removeHandler(handler)
        extension.budget.detach(member)
        await member.drain()
        await extension.budget.redis.aclose()


@pytest_twisted.ensureDeferred
async def test_shares_are_renewed_and_a_lost_one_is_counted(redis_server: RedisServer) -> None:
    await Deferred.fromFuture(asyncio.ensure_future(_renewals(redis_server)))


async def _renewals(redis_server: RedisServer) -> None:
    import scrapy

    crawler = get_crawler()
    client = redis_server.client()
    woken = asyncio.Event()
    budget = FleetBudget(
        Redis.from_url(redis_server.url), PREFIX, max=2, owner="w", lease_s=1, crawler=crawler
    )
    member = budget.attach("spider", wake=woken.set)
    try:
        assert not member.may_start()
        await asyncio.wait_for(woken.wait(), DEADLINE_S)
        request = scrapy.Request("https://example.com/", meta={"cdp": True})
        member.on_dequeued(request, 0.0)  # the page starts with the share
        (lease, first), *_ = client.zrange(LEASES, 0, -1, withscores=True)
        await eventually(lambda: client.zscore(LEASES, lease) != first, "renewed")
        client.zrem(LEASES, lease)  # lost (as if Redis dropped it while cut off)
        await eventually(lambda: crawler.stats.get_value(LEASES_LOST_STAT) == 1, "counted")
        assert member.leases_lost == 1
        member.on_finished(request)
        assert member.in_flight == 0
    finally:
        budget.detach(member)
        await member.drain()
        await budget.redis.aclose()


@pytest_twisted.ensureDeferred
async def test_an_unused_spare_share_is_given_back(redis_server: RedisServer) -> None:
    await Deferred.fromFuture(asyncio.ensure_future(_idle_spare(redis_server)))


async def _idle_spare(redis_server: RedisServer) -> None:
    client = redis_server.client()
    woken = asyncio.Event()
    budget = FleetBudget(Redis.from_url(redis_server.url), PREFIX, max=1, owner="w", lease_s=1)
    member = budget.attach("spider", wake=woken.set)
    try:
        assert not member.may_start()
        await asyncio.wait_for(woken.wait(), DEADLINE_S)
        assert client.zcard(LEASES) == 1  # taken ahead; the crawler then had nothing to start
        await eventually(lambda: client.zcard(LEASES) == 0, "the unused share given back")
        assert member._spare is None
    finally:
        budget.detach(member)
        await member.drain()
        await budget.redis.aclose()


@pytest_twisted.ensureDeferred
async def test_a_busy_worker_keeps_its_share_for_the_next_pages(redis_server: RedisServer) -> None:
    await Deferred.fromFuture(asyncio.ensure_future(_recycled(redis_server)))


async def _recycled(redis_server: RedisServer) -> None:
    """A page that ends with no spare share on its worker keeps its share
    for the next page, with no Redis call (before: a give-back and a take per
    page), for RECYCLE_PAGES pages; then it is given back for the others."""
    import scrapy

    client = redis_server.client()
    woken = asyncio.Event()
    budget = FleetBudget(Redis.from_url(redis_server.url), PREFIX, max=1, owner="w", lease_s=30)
    member = budget.attach("spider", wake=woken.set)
    try:
        assert not member.may_start()
        await asyncio.wait_for(woken.wait(), DEADLINE_S)
        (share,) = client.zrange(LEASES, 0, -1)
        before = int(client.info("stats")["total_commands_processed"])
        for page in range(RECYCLE_PAGES - 1):
            assert member.may_start()
            request = scrapy.Request(f"https://example.com/{page}", meta={"cdp": True})
            member.on_dequeued(request, 0.0)
            member.on_finished(request)
            await asyncio.sleep(0)  # a give-back would be under way now
        await member.drain()
        assert int(client.info("stats")["total_commands_processed"]) == before + 1  # INFO
        assert client.zrange(LEASES, 0, -1) == [share]
        assert member.pages == RECYCLE_PAGES - 1
        request = scrapy.Request("https://example.com/last", meta={"cdp": True})
        member.on_dequeued(request, 0.0)
        member.on_finished(request)  # its RECYCLE_PAGES-th page: given back
        await member.drain()
        assert client.zcard(LEASES) == 0
        assert not member.may_start()  # a new share taken ahead
    finally:
        budget.detach(member)
        await member.drain()
        await budget.redis.aclose()


@pytest_twisted.ensureDeferred
async def test_a_page_that_ends_beside_a_spare_keeps_its_share_a_moment(
    redis_server: RedisServer,
) -> None:
    await Deferred.fromFuture(asyncio.ensure_future(_kept(redis_server)))


async def _kept(redis_server: RedisServer) -> None:
    """A page that ends while its worker holds a spare share keeps its own
    for KEEP_S: the next page to start takes the spare and this share becomes
    the next spare, with no Redis call (before: a give-back, then a take for
    the next spare); kept with no page starting, it is given back."""
    import scrapy

    client = redis_server.client()
    woken = asyncio.Event()
    budget = FleetBudget(Redis.from_url(redis_server.url), PREFIX, max=3, owner="w", lease_s=30)
    member = budget.attach("spider", wake=woken.set)
    pages = [scrapy.Request(f"https://example.com/{n}", meta={"cdp": True}) for n in range(3)]
    try:
        for page in pages[:2]:  # two pages start, each after a share is taken ahead
            woken.clear()
            assert not member.may_start()
            await asyncio.wait_for(woken.wait(), DEADLINE_S)
            member.on_dequeued(page, 0.0)
        woken.clear()
        assert not member.may_start()
        await asyncio.wait_for(woken.wait(), DEADLINE_S)  # a third share: the spare
        before = int(client.info("stats")["total_commands_processed"])
        member.on_finished(pages[0])  # beside the spare: kept
        member.on_dequeued(pages[2], 0.0)  # takes the spare; the kept share is the next
        assert member.may_start()
        await member.drain()
        assert int(client.info("stats")["total_commands_processed"]) == before + 1  # INFO
        assert client.zcard(LEASES) == 3  # two pages, one spare: the bound, never more
        member.on_finished(pages[1])  # beside the spare again: kept, then given back
        await eventually(lambda: client.zcard(LEASES) == 2, "the kept share given back")
        assert member.may_start()  # the spare is still there
    finally:
        budget.detach(member)
        await member.drain()
        await budget.redis.aclose()
