"""Faults of a cluster worker's Redis and of the worker itself, on a real
``redis-server`` and a real crawl (embedded Lightpanda, in this process):
Redis out of memory (``maxmemory`` with ``noeviction``) and read-only, and a
worker stalled past its lease."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import redis
import scrapy
from scrapy.crawler import CrawlerRunner
from scrapy.utils.test import get_crawler
from twisted.internet import task

from scrapy_cdp_pool.cluster.frontier import Frontier, redis_outage
from scrapy_cdp_pool.cluster.held import LEASE_META_KEY
from scrapy_cdp_pool.cluster.keys import key_prefix
from scrapy_cdp_pool.cluster.link import ClusterLink
from scrapy_cdp_pool.cluster.redis_client import CALL_TIMEOUT_S, connect
from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.errors import RedisUnavailable
from scrapy_cdp_pool.settings.config import PoolConfig
from tests.cluster_harness import RedisServer, Worker, cluster, kill_left, wait_for_item
from tests.crawl import BASE_SETTINGS, RecordingSpider, crawl
from tests.jobdir_project.harness import EXIT_DEADLINE_S
from tests.profiles import token
from tests.servers import SiteServer

pytestmark = pytest.mark.timeout(180)


def test_redis_errors_that_mean_it_cannot_serve_now_are_outages(
    durable_redis_server: RedisServer,
) -> None:
    """Real errors of a real Redis: out of memory and read-only are outages
    (named), a wrong-type error (a bug) is not."""
    with durable_redis_server.client() as client:
        frontier = Frontier(client, token(), "w", lease_s=5)
        client.set("a-string", "x")
        client.config_set("maxmemory", 1)
        try:
            with pytest.raises(redis.RedisError) as oom:
                frontier.push(b"data", "h||", 0)
            with pytest.raises(redis.RedisError) as oom_set:
                client.set("k", "v")
        finally:
            client.config_set("maxmemory", 0)
        client.execute_command("REPLICAOF", "127.0.0.1", "1")  # no primary there
        try:
            with pytest.raises(redis.RedisError) as read_only:
                frontier.push(b"data", "h||", 0)
        finally:
            client.execute_command("REPLICAOF", "NO", "ONE")
        with pytest.raises(redis.RedisError) as wrong_type:
            client.lpush("a-string", "x")
    assert "out of memory" in (redis_outage(oom.value) or ""), oom.value
    assert "out of memory" in (redis_outage(oom_set.value) or ""), oom_set.value
    assert "read-only" in (redis_outage(read_only.value) or ""), read_only.value
    assert redis_outage(wrong_type.value) is None
    assert redis_outage(redis.ConnectionError("gone")) == "unreachable"
    assert redis_outage(redis.TimeoutError("slow")) == "timed out"


def test_a_take_redis_runs_after_its_sender_gave_up_leases_nothing(
    durable_redis_server: RedisServer,
) -> None:
    """Issue 39 item 3. A worker's take is sent to a Redis that stopped
    answering (SIGSTOP) past the lease of the request the worker holds; the
    client gives up (timed out), but Redis runs the take once continued.
    Before: that take put the request back (its lease ran out) and leased it
    again to the worker, which never knew: once that lease ran out too, the
    next take handed the request out as poisoned (2 deliveries of 2), though
    the worker had done it and no worker had failed on it. Now the take
    carries the latest time (Redis's clock) it may lease at, and run later it
    leases nothing: the request is handed out again, not poisoned."""
    assert durable_redis_server.proc is not None
    name = token()
    one = Frontier(connect(durable_redis_server.url, CALL_TIMEOUT_S), name, "one", lease_s=1.0,
                   max_deliveries=2)  # fmt: skip
    two = Frontier(connect(durable_redis_server.url, CALL_TIMEOUT_S), name, "two", lease_s=1.0,
                   max_deliveries=2)  # fmt: skip
    prefix = key_prefix(name)
    try:
        one.push(b"the request", "h||", 0)
        first = one.take()
        assert first.data == b"the request"
        os.kill(durable_redis_server.proc.pid, signal.SIGSTOP)
        try:
            with pytest.raises(redis.TimeoutError):
                one.take()  # its socket holds it: Redis runs it when continued
            time.sleep(2.0)  # the outage's length, past the 1 s lease (the fault itself)
        finally:
            os.kill(durable_redis_server.proc.pid, signal.SIGCONT)
        with durable_redis_server.client() as client:
            # the late take ran (it put the expired lease back), and leased nothing
            assert client.hget(f"{prefix}expired", first.lease or "") == b"1"
            assert client.zcard(f"{prefix}leases") == 0
        again = two.take()
        assert again.lease == first.lease
        assert again.poisoned == 0  # handed out to be done, not failed as poisoned
    finally:
        one.client.close()
        two.client.close()


def test_a_redis_out_of_memory_again_and_again_is_one_error(
    durable_redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 39 item 7. A Redis out of memory still serves reads: each read
    ends the outage, the next write starts another. Before: one ERROR per
    such outage (7-24 per worker over a run). Now one ERROR for the cause;
    a later outage of the same cause, and its end, at INFO; every outage
    counted in ``cdp_pool/cluster/redis_outages``."""
    crawler = get_crawler(
        scrapy.Spider, {**BASE_SETTINGS, **cluster(durable_redis_server.url, token())}
    )
    link = ClusterLink(crawler, PoolConfig.from_settings(crawler.settings))
    caplog.set_level(logging.INFO, logger="scrapy_cdp_pool.cluster.link")
    try:
        for _ in range(3):
            link.client.config_set("maxmemory", 1)
            try:
                with pytest.raises(RedisUnavailable, match="out of memory"):
                    link.call("store", lambda: link.frontier.push(b"data", "h||", 0))
            finally:
                link.client.config_set("maxmemory", 0)
            time.sleep(link.retry_in_s)  # the link's own backoff before its next try
            assert link.call("read", lambda: link.client.get("anything")) is None
    finally:
        link.client.close()
    records = [r for r in caplog.records if r.name == "scrapy_cdp_pool.cluster.link"]
    errors = [r for r in records if r.levelno == logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in records]
    assert "out of memory" in errors[0].getMessage()
    assert len([r for r in records if r.levelno == logging.WARNING]) == 1  # its first end
    assert crawler.stats.get_value("cdp_pool/cluster/redis_outages") == 3


class OutOfMemorySpider(RecordingSpider):
    """Its first page's callback makes Redis refuse writes (``maxmemory``
    below what it uses, ``noeviction``) and then yields the rest of the crawl."""

    client: redis.Redis | None = None
    follow: list[str] = []
    lease_scores: list[float] = []
    read_only = False  # a replica's refusal (READONLY) instead

    def parse(self, response: scrapy.http.Response) -> Any:
        yield from super().parse(response)
        if response.meta.get("first"):
            client = type(self).client
            assert client is not None
            if type(self).read_only:
                client.execute_command("REPLICAOF", "127.0.0.1", "1")  # no primary there
            else:
                client.config_set("maxmemory", 1)
            leases = client.zrange(f"{key_prefix(self.cluster_name)}leases", 0, -1, withscores=True)
            type(self).lease_scores = [score for _, score in leases]
            for url in type(self).follow:
                yield self.prepare(scrapy.Request(url))

    @property
    def cluster_name(self) -> str:
        return str(self.settings["CDP_POOL_CLUSTER_NAME"])


@pytest_twisted.ensureDeferred
async def test_redis_out_of_memory_is_an_outage_that_loses_nothing(
    site: SiteServer, durable_redis_server: RedisServer
) -> None:
    """Redis refuses writes (out of memory) while the first page's callback
    yields 12 requests. Before: ``OutOfMemoryError`` was not handled (the
    requests yielded were lost: 1 of 13 pages crawled, tracebacks, renewals
    stopped). Now: one ERROR naming the cause, the requests kept in memory,
    the held lease renewed during the outage (Redis 7 scripts run with
    ``allow-oom``), and once Redis accepts writes again every page is crawled
    once, none failed, nothing lost."""
    name = token()
    follow = [site.url(f"/js?n=1&k={name}&i={i}") for i in range(1, 13)]
    client = durable_redis_server.client()
    OutOfMemorySpider.client = client
    OutOfMemorySpider.follow = follow
    OutOfMemorySpider.lease_scores = []  # set by the first page's callback
    lifted: list[str] = []
    crawlers: list[Any] = []
    prefix = key_prefix(name)

    def lift_when_seen() -> None:
        """Redis accepts writes again once the worker has counted the outage
        and its lease was either renewed during it or ran out (before the
        fix: once the worker logged an error, as the outage was never counted)."""
        if lifted or not crawlers or not OutOfMemorySpider.lease_scores:
            return
        stats = crawlers[0].stats
        scores = [score for _, score in client.zrange(f"{prefix}leases", 0, -1, withscores=True)]
        seconds, micros = client.time()
        now_ms = seconds * 1000 + micros // 1000
        renewed = max(scores, default=0) > max(OutOfMemorySpider.lease_scores)
        ran_out = max(scores, default=0) < now_ms
        outage = stats.get_value("cdp_pool/cluster/redis_errors", 0) >= 1
        if (outage and (renewed or ran_out)) or (
            not outage and stats.get_value("log_count/ERROR", 0) >= 1
        ):
            client.config_set("maxmemory", 0)
            lifted.append("renewed" if renewed else "ran out")

    runner = CrawlerRunner(
        # 3 s, renewed each second: short enough to see a renewal during the
        # outage, long enough that a loaded machine's reactor renews it in time
        {
            **BASE_SETTINGS,
            **cluster(durable_redis_server.url, name, CDP_POOL_CLUSTER_LEASE_SECONDS=3.0),
        }
    )
    crawler = runner.create_crawler(OutOfMemorySpider)
    crawlers.append(crawler)
    poll = task.LoopingCall(lift_when_seen)
    poll.start(0.05)
    try:
        first = scrapy.Request(site.url(f"/js?n=1&k={name}&i=0"), meta={"first": True})
        await runner.crawl(crawler, requests=[first])
    finally:
        poll.stop()
        client.config_set("maxmemory", 0)
        client.close()
    spider = crawler.spider
    assert isinstance(spider, OutOfMemorySpider)
    stats = crawler.stats.get_stats()
    urls = Counter(response.url for response in spider.responses)
    assert urls == Counter([first.url, *follow]), urls  # every page once: 0 lost, 0 twice
    assert spider.failures == []  # no errback saw a Redis error
    assert stats["finish_reason"] == "finished"
    assert stats["cdp_pool/cluster/redis_errors"] >= 1
    assert lifted == ["renewed"]  # the lease was renewed while Redis refused writes
    assert stats.get("cdp_pool/cluster/leases_lost", 0) == 0
    assert stats["log_count/ERROR"] == 1  # the outage, naming its cause


class StallingSpider(RecordingSpider):
    """The worker stalls (its reactor blocked) after it took the request and
    before the request starts, until its lease ran out in Redis; meanwhile
    another worker takes the request (a real take, as any worker does)."""

    client: redis.Redis | None = None
    stalled: list[str] = []

    @classmethod
    def stall(cls, request: scrapy.Request, name: str) -> None:
        lease = request.meta.get(LEASE_META_KEY)
        if lease is None or cls.stalled:
            return
        client = cls.client
        assert client is not None
        prefix = key_prefix(name)
        while True:  # the lease runs out in Redis (its clock) while this worker is stuck
            seconds, micros = client.time()
            score = client.zscore(f"{prefix}leases", lease)
            if score is None or score <= seconds * 1000 + micros // 1000:
                break
            time.sleep(0.05)  # this worker's reactor is stalled: the fault itself
        other = Frontier(client, name, "another-worker", lease_s=1.0)
        taken = other.take()
        assert taken.lease == lease, taken
        cls.stalled.append(lease)


class StallMiddleware:
    @classmethod
    def from_crawler(cls, crawler: Any) -> StallMiddleware:
        return cls(str(crawler.settings["CDP_POOL_CLUSTER_NAME"]))

    def __init__(self, name: str) -> None:
        self.name = name

    def process_request(self, request: scrapy.Request) -> None:
        StallingSpider.stall(request, self.name)


@pytest_twisted.ensureDeferred
async def test_a_worker_stalled_past_its_lease_does_not_start_the_request(
    site: SiteServer, durable_redis_server: RedisServer
) -> None:
    """Before: the stalled worker started the request whose lease had gone to
    another worker (the page was fetched twice: by the stale worker at once,
    and again once the other's lease ran out). Now it is dropped right before
    it leaves for the browser (stat ``cdp_pool/cluster/lease_lost_not_started``,
    no errback), and fetched once, by whoever holds it when it is due."""
    await _crawl_one_stalled_request(site, durable_redis_server, "stall", "StallMiddleware")


async def _crawl_one_stalled_request(
    site: SiteServer, server: RedisServer, mark: str, middleware: str, **settings: Any
) -> None:
    """Crawl one page with ``middleware`` stalling the worker once (its
    ``StallingSpider.stall``); the request is fetched once, not twice, and
    counted in ``cdp_pool/cluster/lease_lost_not_started``."""
    name = token()
    StallingSpider.client = server.client()
    StallingSpider.stalled = []
    url = site.url(f"/js?n=1&k={name}&{mark}")
    try:
        spider, crawler = await crawl(
            [scrapy.Request(url)],
            cluster(
                # 5 s: the lease this worker takes the request on again (its
                # third delivery) must outlive a loaded machine's reactor hiccups
                server.url, name, CDP_POOL_CLUSTER_LEASE_SECONDS=5.0,
                DOWNLOADER_MIDDLEWARES={f"{__name__}.{middleware}": 1}, **settings,
            ),
            spider_cls=StallingSpider,
        )  # fmt: skip
    finally:
        StallingSpider.client.close()
    stats = crawler.stats.get_stats()
    assert StallingSpider.stalled  # the fault happened
    assert [response.url for response in spider.responses] == [url]  # once, not twice
    assert spider.failures == []
    assert stats["cdp_pool/cluster/lease_lost_not_started"] == 1
    assert stats["finish_reason"] == "finished"


class LeavingStallMiddleware:
    """Adds a launch check, after the worker's lease check, that stalls the
    worker's reactor on its next turn: after its lease was checked and its
    navigation sent, before the browser lets the request go to the site
    (the request waits in the browser's request interception meanwhile)."""

    @classmethod
    def from_crawler(cls, crawler: Any) -> LeavingStallMiddleware:
        return cls(crawler)

    def __init__(self, crawler: Any) -> None:
        self.name = str(crawler.settings["CDP_POOL_CLUSTER_NAME"])
        runtime_of(crawler).gates.add_launch_check(self.stall_next)

    def stall_next(self, request: scrapy.Request) -> None:
        if request.meta.get(LEASE_META_KEY) is not None and not StallingSpider.stalled:
            asyncio.get_running_loop().call_soon(StallingSpider.stall, request, self.name)


@pytest.mark.parametrize("private_networks", [False, True], ids=["all-paused", "private-allowed"])
@pytest_twisted.ensureDeferred
async def test_a_worker_stalled_while_its_request_waits_in_the_browser_does_not_send_it(
    site: SiteServer, durable_redis_server: RedisServer, private_networks: bool
) -> None:
    """Issue 39 item 5. The worker stalls right after its last lease check
    (the navigation on its way to the browser, paused in its request
    interception) until its lease ran out and another worker took the
    request. Before: the browser's paused request was let go to the site
    once the worker woke (fetched by the stale worker, and again by the one
    holding it). Now the lease is checked again, by the worker's own clock
    (no Redis call), where the request leaves the browser: failed there,
    counted in ``cdp_pool/cluster/lease_lost_not_started``, fetched once.
    ``private-allowed``: the document request is paused for this check alone
    (otherwise every request is paused for the private-network rule)."""
    await _crawl_one_stalled_request(
        site, durable_redis_server, "leaving", "LeavingStallMiddleware",
        CDP_POOL_ALLOW_PRIVATE_NETWORKS=private_networks,
    )  # fmt: skip


def run_worker(
    site: SiteServer, durable_redis_server: RedisServer, tmp_path: Path, **extra: str
) -> Worker:
    tag = token()
    url = site.url(f"/jobsite/0?tag={tag}&total=200&hubs=4")
    settings = {"JOBSITE_URL": url, "JOBSITE_HUBS": "4", "CDP_POOL_CLUSTER_NAME": f"jobsite-{tag}",
                "CONCURRENT_REQUESTS": "2", "CDP_POOL_CONNECTIONS": "2", **extra}  # fmt: skip
    return Worker(tmp_path, 0, durable_redis_server.url, settings)


def test_scrapy_crawl_exits_1_when_redis_lost_the_crawl(
    site: SiteServer, durable_redis_server: RedisServer, tmp_path: Path
) -> None:
    """A real ``scrapy crawl`` worker; Redis is flushed mid-crawl (its
    state lost, as by a restart without persistence). Before: finish_reason
    ``cdp_pool_cluster_state_lost`` and exit status 0. Now: exit status 1."""
    worker = run_worker(site, durable_redis_server, tmp_path)
    try:
        wait_for_item([worker], count=3)
        with durable_redis_server.client() as client:
            client.flushall()
        worker.proc.wait(timeout=EXIT_DEADLINE_S)
        worker._close()
    finally:
        kill_left()
    log = worker.log_file.read_text(encoding="utf-8", errors="replace")
    assert "'finish_reason': 'cdp_pool_cluster_state_lost'" in log, log[-3000:]
    assert worker.proc.returncode == 1, log[-3000:]
    assert "exit status 1" in log


def test_scrapy_crawl_exits_1_when_a_redis_error_stopped_a_cluster_worker(
    site: SiteServer, durable_redis_server: RedisServer, tmp_path: Path
) -> None:
    """The crawl's request hash in Redis is of the wrong type before the
    worker starts (an operator's mistake: not an outage, a bug), so storing
    the start request fails. Before: the error was raised, Scrapy stopped the
    engine (finish_reason ``shutdown``), exit status 0 (then 1 once an
    unasked ``shutdown`` was made to fail). Now: one ERROR naming
    ``WRONGTYPE`` and the key, finish_reason ``cdp_pool_cluster_redis_error``,
    exit status 1; a worker stopped by SIGINT still exits 0
    (test_a_worker_stopped_cleanly_leaves_nothing_undone_or_done_twice)."""
    name = f"broken-{token()}"
    with durable_redis_server.client() as client:
        client.set(f"{key_prefix(name)}req", "not a hash")
    worker = run_worker(site, durable_redis_server, tmp_path, CDP_POOL_CLUSTER_NAME=name)
    try:
        worker.proc.wait(timeout=EXIT_DEADLINE_S)
        worker._close()
    finally:
        kill_left()
    log = worker.log_file.read_text(encoding="utf-8", errors="replace")
    errors = [line for line in log.splitlines() if "] ERROR: " in line]
    assert len(errors) == 1, "\n".join(errors[:5]) or log[-3000:]
    assert "WRONGTYPE" in errors[0], errors[0]
    assert f"{key_prefix(name)}req is a string, not a hash" in errors[0], errors[0]
    assert "'finish_reason': 'cdp_pool_cluster_redis_error'" in log, log[-3000:]
    assert worker.proc.returncode == 1, log[-3000:]


def test_a_crawl_key_of_the_wrong_type_stops_every_worker_with_one_error(
    site: SiteServer, durable_redis_server: RedisServer, tmp_path: Path
) -> None:
    """Two real ``scrapy crawl`` workers; mid-crawl the crawl's ``leases``
    sorted set is replaced by a string (an operator's mistake: every take
    and renewal then fails with ``WRONGTYPE``, a bug, not an outage). Before:
    each worker logged a traceback per take and renewal for minutes (about
    100 each), and exited 0 only when signalled. Now: each stops by itself
    with one ERROR naming ``WRONGTYPE``, the call and the key, finish_reason
    ``cdp_pool_cluster_redis_error``, exit status 1, no traceback."""
    tag = token()
    name = f"jobsite-{tag}"
    url = site.url(f"/jobsite/0?tag={tag}&total=200&hubs=4")
    settings = {"JOBSITE_URL": url, "JOBSITE_HUBS": "4", "CDP_POOL_CLUSTER_NAME": name,
                "CONCURRENT_REQUESTS": "2", "CDP_POOL_CONNECTIONS": "2"}  # fmt: skip
    workers = [Worker(tmp_path, number, durable_redis_server.url, settings) for number in (0, 1)]
    leases = f"{key_prefix(name)}leases"
    try:
        wait_for_item(workers, count=6)
        with durable_redis_server.client() as client:
            pipe = client.pipeline(transaction=True)
            pipe.delete(leases)
            pipe.set(leases, "not a sorted set")
            pipe.execute()
        for worker in workers:
            worker.proc.wait(timeout=EXIT_DEADLINE_S)
            worker._close()
    finally:
        kill_left()
    for worker in workers:
        log = worker.log_file.read_text(encoding="utf-8", errors="replace")
        errors = [line for line in log.splitlines() if "] ERROR: " in line]
        assert len(errors) == 1, "\n".join(errors[:5]) or log[-3000:]
        assert "WRONGTYPE" in errors[0], errors[0]
        assert f"{leases} is a string, not a zset" in errors[0], errors[0]
        assert "Traceback" not in log, log[log.index("Traceback") - 2000 :][:5000]
        assert "'finish_reason': 'cdp_pool_cluster_redis_error'" in log, log[-3000:]
        assert worker.proc.returncode == 1, log[-3000:]


@pytest_twisted.ensureDeferred
async def test_a_read_only_redis_is_an_outage_that_loses_nothing(
    site: SiteServer, durable_redis_server: RedisServer
) -> None:
    """Redis made a replica (writes refused with ``READONLY``, as after a
    failover demoted it) while the first page's callback yields 12 requests,
    then a primary again once the worker counted the outage. Before:
    ``ReadOnlyError`` unhandled, the requests yielded lost. Now: one ERROR
    naming the cause, every page once."""
    name = token()
    follow = [site.url(f"/js?n=1&k={name}&ro={i}") for i in range(1, 13)]
    client = durable_redis_server.client()
    OutOfMemorySpider.client = client
    OutOfMemorySpider.follow = follow
    OutOfMemorySpider.lease_scores = []  # set by the first page's callback
    OutOfMemorySpider.read_only = True
    crawlers: list[Any] = []
    lifted: list[str] = []

    def lift_when_seen() -> None:
        if lifted or not crawlers or not OutOfMemorySpider.lease_scores:
            return
        stats = crawlers[0].stats
        if (
            stats.get_value("cdp_pool/cluster/redis_errors", 0) >= 1
            or stats.get_value("log_count/ERROR", 0) >= 1  # before the fix
        ):
            client.execute_command("REPLICAOF", "NO", "ONE")
            lifted.append("primary")

    runner = CrawlerRunner({**BASE_SETTINGS, **cluster(durable_redis_server.url, name)})
    crawler = runner.create_crawler(OutOfMemorySpider)
    crawlers.append(crawler)
    poll = task.LoopingCall(lift_when_seen)
    poll.start(0.05)
    try:
        first = scrapy.Request(site.url(f"/js?n=1&k={name}&ro=0"), meta={"first": True})
        await runner.crawl(crawler, requests=[first])
    finally:
        poll.stop()
        OutOfMemorySpider.read_only = False
        client.execute_command("REPLICAOF", "NO", "ONE")
        client.close()
    spider = crawler.spider
    assert isinstance(spider, OutOfMemorySpider)
    stats = crawler.stats.get_stats()
    urls = Counter(response.url for response in spider.responses)
    assert urls == Counter([first.url, *follow]), urls
    assert spider.failures == []
    assert stats["finish_reason"] == "finished"
    assert stats["log_count/ERROR"] == 1
