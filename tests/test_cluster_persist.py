"""Issue 40, item 4: scrapy-redis's ``SCHEDULER_PERSIST = False`` and
``SCHEDULER_FLUSH_ON_START = True`` honoured by a cluster crawl, on a real
``redis-server``: run twice, it fetches everything twice (before: the second
run found every fingerprint seen and fetched nothing); unset, the crawl
persists as before; a worker that finds another one live joins its crawl
unflushed. Each start says how many seen fingerprints the crawl resumes with.

Real in-process crawls of the test site (plain requests: the dupefilter's
work does not depend on rendering): one start page that yields five more.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.cluster.keys import key_prefix, redis_time_ms
from tests.cluster_harness import RedisServer, cluster
from tests.crawl import RecordingSpider, crawl
from tests.profiles import token
from tests.servers import SiteServer

CHILDREN = 5
START_LINE = re.compile(r"Cluster crawl '([^']+)': worker \S+, lease [\d.]+ s; (.*)")


def children(spider: RecordingSpider, response: scrapy.http.Response) -> list[scrapy.Request]:
    """The start page's follow-ups (a module function: stored requests are pickled)."""
    return [response.follow(f"/echo?child={n}") for n in range(CHILDREN)]


async def run(site: SiteServer, redis_url: str, name: str, **extra: Any) -> int:
    """One worker's crawl of ``name``; how many responses it got."""
    start = scrapy.Request(site.url(f"/echo?start={name}"), meta={"then": children})
    settings = cluster(redis_url, name, CDP_POOL_RENDER_ALL=False, **extra)
    spider, crawler = await crawl([start], settings)
    assert not spider.failures, spider.failures
    assert crawler.stats.get_value("finish_reason") == "finished"
    return len(spider.responses)


def start_lines(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    found = [START_LINE.search(r.getMessage()) for r in caplog.records]
    return [m.group(2) for m in found if m is not None and m.group(1) == name]


@pytest.mark.parametrize(
    "fresh",
    [{"SCHEDULER_PERSIST": False}, {"SCHEDULER_FLUSH_ON_START": True}],
    ids=["SCHEDULER_PERSIST=False", "SCHEDULER_FLUSH_ON_START=True"],
)
@pytest_twisted.ensureDeferred
async def test_a_crawl_that_does_not_persist_fetches_everything_on_each_run(
    site: SiteServer, durable_redis_server: RedisServer, caplog: pytest.LogCaptureFixture,
    fresh: dict[str, bool],
) -> None:  # fmt: skip
    name = token()
    [setting] = fresh
    with caplog.at_level(logging.INFO, logger="scrapy_cdp_pool.cluster.scheduler"):
        first = await run(site, durable_redis_server.url, name, **fresh)
        second = await run(site, durable_redis_server.url, name, **fresh)
    assert (first, second) == (1 + CHILDREN, 1 + CHILDREN)
    said = start_lines(caplog, name)
    assert len(said) == 2, said
    for (
        line
    ) in said:  # nothing to flush before the first run; the first run's keys before the second
        assert re.fullmatch(
            rf"{setting}: crawl flushed at start \(\d+ keys deleted\); resuming with 0 seen "
            r"fingerprints, 0 requests queued, 0 leased",
            line,
        ), line
    assert "(0 keys deleted)" in said[0]
    assert "(0 keys deleted)" not in said[1]


@pytest_twisted.ensureDeferred
async def test_a_crawl_persists_by_default_and_says_what_it_resumes_with(
    site: SiteServer, durable_redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    name = token()
    with caplog.at_level(logging.INFO, logger="scrapy_cdp_pool.cluster.scheduler"):
        first = await run(site, durable_redis_server.url, name)
        second = await run(site, durable_redis_server.url, name, SCHEDULER_PERSIST=True)
    assert (first, second) == (1 + CHILDREN, 0)  # the start page was seen: nothing new
    assert start_lines(caplog, name) == [
        "resuming with 0 seen fingerprints, 0 requests queued, 0 leased",
        f"resuming with {1 + CHILDREN} seen fingerprints, 0 requests queued, 0 leased",
    ]


@pytest_twisted.ensureDeferred
async def test_a_worker_that_finds_another_live_joins_its_crawl_unflushed(
    site: SiteServer, durable_redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    name = token()
    first = await run(site, durable_redis_server.url, name)
    with durable_redis_server.client() as client:  # another worker's heartbeat, an hour ahead: live
        beat = redis_time_ms(client.time()) + 3_600_000
        client.zadd(f"{key_prefix(name)}workers", {"other": beat})
    with caplog.at_level(logging.INFO, logger="scrapy_cdp_pool.cluster.scheduler"):
        second = await run(site, durable_redis_server.url, name, SCHEDULER_PERSIST=False)
    assert (first, second) == (1 + CHILDREN, 0)
    joined = (
        "SCHEDULER_PERSIST: other workers are live, joining their crawl unflushed; resuming "
        f"with {1 + CHILDREN} seen fingerprints, 0 requests queued, 0 leased"
    )
    assert start_lines(caplog, name) == [joined]
