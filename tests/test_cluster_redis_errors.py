"""Errors of a real ``redis-server`` that mean "cannot serve now" are outages
(:func:`~scrapy_cdp_pool.cluster.frontier.redis_outage`), named by cause,
through the frontier's own client and scripts: ``MISCONF`` (a snapshot that
could not be written, ``stop-writes-on-bgsave-error``), and a Redis that
stops answering (SIGSTOP) as a timeout after the frontier's 1 s bound. Both
end when Redis serves again (``MISCONF`` lifted by
``stop-writes-on-bgsave-error no``; SIGCONT). (Out of memory and ``READONLY`` crawls are in
tests/test_cluster_faults.py; the codes no test server can produce cheaply,
``LOADING`` and Redis Cluster's, in tests/unit/test_redis_outage_codes.py.)"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import redis
import scrapy
from scrapy.crawler import CrawlerRunner
from twisted.internet import task

from scrapy_cdp_pool.cluster.frontier import Frontier, redis_outage
from scrapy_cdp_pool.cluster.redis_client import CALL_TIMEOUT_S, connect
from tests.cluster_harness import REDIS_SERVER, RedisServer, cluster
from tests.crawl import BASE_SETTINGS, RecordingSpider
from tests.profiles import hits, token
from tests.redis_server import wait_for
from tests.servers import SiteServer

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def snapshotting_redis() -> Iterator[tuple[redis.Redis, Path, str]]:
    """A ``redis-server`` that snapshots (``save 3600 1``, so
    ``stop-writes-on-bgsave-error`` applies) into ``data/``, its socket
    outside it; the client, the data directory and the URL."""
    root = Path(tempfile.mkdtemp(prefix="cdp-redis-"))
    data = root / "data"
    data.mkdir()
    socket = root / "redis.sock"
    argv = [REDIS_SERVER, "--port", "0", "--unixsocket", str(socket), "--unixsocketperm", "700",
            "--dir", str(data), "--save", "3600 1", "--stop-writes-on-bgsave-error", "yes",
            "--daemonize", "no", "--logfile", str(root / "redis.log")]  # fmt: skip
    proc = subprocess.Popen(argv)
    client = redis.Redis(unix_socket_path=str(socket), socket_timeout=10)

    def answers() -> bool:
        try:
            return bool(client.ping())
        except (redis.ConnectionError, FileNotFoundError):
            return False

    try:
        wait_for(answers, "redis-server answers")
        yield client, data, f"unix://{socket}"
    finally:
        client.close()
        proc.kill()  # terminated, it would try a last snapshot and refuse to stop
        proc.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)


def last_bgsave(client: redis.Redis) -> str | None:
    """``ok``/``err`` once no snapshot is in progress, else ``None``."""
    info = client.info("persistence")
    return None if info["rdb_bgsave_in_progress"] else str(info["rdb_last_bgsave_status"])


def test_misconf_a_snapshot_that_could_not_be_written_is_an_outage_until_one_is(
    snapshotting_redis: tuple[redis.Redis, Path, str],
) -> None:
    client, data, _ = snapshotting_redis
    frontier = Frontier(client, token(), "w", lease_s=5)
    frontier.push(b"before", "h||", 0)  # writes accepted
    shutil.rmtree(data)  # the snapshot's directory gone: its child cannot write
    client.bgsave()
    wait_for(lambda: last_bgsave(client) == "err", "the snapshot failed")
    with pytest.raises(redis.RedisError) as refused:
        frontier.push(b"during", "h||", 0)
    with pytest.raises(redis.RedisError) as refused_set:
        client.set("k", "v")
    assert str(refused_set.value).startswith("MISCONF"), refused_set.value
    assert "cannot persist" in (redis_outage(refused.value) or ""), refused.value
    assert "cannot persist" in (redis_outage(refused_set.value) or ""), refused_set.value
    # lifted (its directory cannot come back under a running server): writes accepted
    client.config_set("stop-writes-on-bgsave-error", "no")
    frontier.push(b"after", "h||", 0)


def test_a_redis_that_stops_answering_is_a_timeout_after_the_call_bound() -> None:
    """SIGSTOP: the socket stays open and nothing is answered; the frontier's
    client (``CALL_TIMEOUT_S``) raises a timeout, an outage "timed out";
    continued, it serves again."""
    server = RedisServer()
    assert server.proc is not None
    client = connect(server.url, CALL_TIMEOUT_S)
    try:
        frontier = Frontier(client, token(), "w", lease_s=5)
        frontier.push(b"before", "h||", 0)
        os.kill(server.proc.pid, signal.SIGSTOP)
        try:
            with pytest.raises(redis.RedisError) as stopped:
                frontier.push(b"during", "h||", 0)
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
        assert isinstance(stopped.value, redis.TimeoutError), repr(stopped.value)
        assert redis_outage(stopped.value) == "timed out"
        frontier.push(b"after", "h||", 0)
    finally:
        client.close()
        server.stop()


class MisconfSpider(RecordingSpider):
    """The first page's callback makes the next snapshot fail (its directory
    removed) and waits for Redis to refuse writes (``MISCONF``), then yields
    the rest of the crawl."""

    client: redis.Redis | None = None
    data: Path | None = None
    follow: list[str] = []
    refused: list[int] = []

    def parse(self, response: scrapy.http.Response) -> Any:
        yield from super().parse(response)
        if response.meta.get("first"):
            cls = type(self)
            assert cls.client is not None
            assert cls.data is not None
            shutil.rmtree(cls.data)
            cls.client.bgsave()
            wait_for(lambda: last_bgsave(cls.client) == "err", "the snapshot failed")  # type: ignore[arg-type]
            cls.refused.append(1)
            for url in cls.follow:
                yield self.prepare(scrapy.Request(url))


@pytest_twisted.ensureDeferred
async def test_a_worker_holds_through_misconf_and_loses_nothing(
    site: SiteServer, snapshotting_redis: tuple[redis.Redis, Path, str]
) -> None:
    """A cluster worker (a real crawl) whose Redis starts refusing writes
    with ``MISCONF`` while the first page's callback yields 12 requests: one
    ERROR naming the cause, no errback sees it, the requests kept; once it is
    lifted (after the worker counted the outage) every page is fetched once
    by the site's count, the crawl finishes."""
    client, data, url = snapshotting_redis
    name = token()
    path = f"/js?n=1&k={name}&misconf="
    MisconfSpider.client = client
    MisconfSpider.data = data
    MisconfSpider.follow = [site.url(f"{path}{i}") for i in range(1, 13)]
    MisconfSpider.refused = []
    crawlers: list[Any] = []
    lifted: list[int] = []

    def lift_when_counted() -> None:
        if lifted or not crawlers or not MisconfSpider.refused:
            return
        if crawlers[0].stats.get_value("cdp_pool/cluster/redis_errors", 0) >= 1:
            client.config_set("stop-writes-on-bgsave-error", "no")
            lifted.append(1)

    runner = CrawlerRunner({**BASE_SETTINGS, **cluster(url, name)})
    crawler = runner.create_crawler(MisconfSpider)
    crawlers.append(crawler)
    poll = task.LoopingCall(lift_when_counted)
    poll.start(0.05)
    try:
        first = scrapy.Request(site.url(f"{path}0"), meta={"first": True})
        await runner.crawl(crawler, requests=[first])
    finally:
        poll.stop()
    spider = crawler.spider
    assert isinstance(spider, MisconfSpider)
    stats = crawler.stats.get_stats()
    assert lifted  # the fault happened, and was counted
    urls = [site.url(f"{path}{i}") for i in range(13)]
    assert {u: hits(site, u.removeprefix(site.base)) for u in urls} == dict.fromkeys(urls, 1)
    assert spider.failures == []
    assert stats["finish_reason"] == "finished"
    assert stats.get("cdp_pool/cluster/requeued", 0) == 0
    assert stats["log_count/ERROR"] == 1  # the outage, naming its cause
