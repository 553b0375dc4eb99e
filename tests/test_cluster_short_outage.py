"""A Redis outage shorter than a lease redoes nothing (issue 31 item 4): a
real ``redis-server`` stops answering (SIGSTOP by its PID: its socket open,
nothing answered, as a Redis stuck or cut off) while a cluster worker (a real
crawl, embedded Lightpanda, in this process) has requests in flight and a
callback yields more; it is continued (SIGCONT) once the worker has counted
the outage, well within the 10 s lease. Every page is fetched exactly once by
the site's own count, nothing is put back for another delivery, and the crawl
finishes."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.crawler import CrawlerRunner
from twisted.internet import task

from tests.cluster_harness import RedisServer, cluster
from tests.crawl import BASE_SETTINGS, RecordingSpider
from tests.profiles import hits, token
from tests.servers import SiteServer

pytestmark = pytest.mark.timeout(180)

LEASE_S = 10.0


class StoppingSpider(RecordingSpider):
    """The first page's callback stops Redis, then yields the rest of the
    crawl (stored once Redis answers again)."""

    redis_pid = 0
    follow: list[str] = []
    stopped: list[int] = []

    def parse(self, response: scrapy.http.Response) -> Any:
        yield from super().parse(response)
        if response.meta.get("first"):
            cls = type(self)
            os.kill(cls.redis_pid, signal.SIGSTOP)
            cls.stopped.append(cls.redis_pid)
            for url in cls.follow:
                yield self.prepare(scrapy.Request(url))


@pytest_twisted.ensureDeferred
async def test_a_redis_outage_shorter_than_a_lease_redoes_nothing(
    site: SiteServer, durable_redis_server: RedisServer
) -> None:
    name = token()
    assert durable_redis_server.proc is not None
    path = f"/js?n=1&k={name}&i="
    first = scrapy.Request(site.url(f"{path}0"), meta={"first": True})
    beside = [scrapy.Request(site.url(f"{path}{i}")) for i in range(1, 5)]  # in flight meanwhile
    StoppingSpider.redis_pid = durable_redis_server.proc.pid
    StoppingSpider.follow = [site.url(f"{path}{i}") for i in range(5, 17)]
    StoppingSpider.stopped = []
    crawlers: list[Any] = []
    continued: list[float] = []

    def continue_when_counted() -> None:
        """SIGCONT once the worker counted the outage (a condition it reports)."""
        if continued or not StoppingSpider.stopped or not crawlers:
            return
        if crawlers[0].stats.get_value("cdp_pool/cluster/redis_errors", 0) >= 1:
            os.kill(StoppingSpider.redis_pid, signal.SIGCONT)
            continued.append(1)

    settings = cluster(durable_redis_server.url, name, CDP_POOL_CLUSTER_LEASE_SECONDS=LEASE_S)
    runner = CrawlerRunner({**BASE_SETTINGS, **settings, "CONCURRENT_REQUESTS": 4})
    crawler = runner.create_crawler(StoppingSpider)
    crawlers.append(crawler)
    poll = task.LoopingCall(continue_when_counted)
    poll.start(0.05)
    try:
        await runner.crawl(crawler, requests=[first, *beside])
    finally:
        poll.stop()
        if StoppingSpider.stopped and not continued:
            os.kill(StoppingSpider.redis_pid, signal.SIGCONT)
    spider = crawler.spider
    assert isinstance(spider, StoppingSpider)
    stats = crawler.stats.get_stats()
    assert continued  # the fault happened, and ended
    urls = [site.url(f"{path}{i}") for i in range(17)]
    # each page fetched once, by the site's own count: 0 lost, 0 twice
    assert {url: hits(site, url.removeprefix(site.base)) for url in urls} == dict.fromkeys(urls, 1)
    assert sorted(r.url for r in spider.responses) == sorted(urls)
    assert spider.failures == []
    assert stats["finish_reason"] == "finished"
    assert stats["cdp_pool/cluster/redis_errors"] >= 1
    # nothing put back for another delivery, no lease ran out, nothing dropped
    assert stats.get("cdp_pool/cluster/requeued", 0) == 0
    assert stats.get("cdp_pool/cluster/leases_lost", 0) == 0
    assert stats.get("cdp_pool/cluster/lease_lost_not_started", 0) == 0
    assert stats["cdp_pool/cluster/taken"] == 17
    assert stats["cdp_pool/cluster/acked"] == 17
    assert stats["log_count/ERROR"] == 1  # the outage, naming its cause
