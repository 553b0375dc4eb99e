"""The feed read as scrapy-redis reads it, on a real ``redis-server``: the key's
three forms (list, set, sorted set, chosen by its ``TYPE``), another type
refused at start by name, JSON items turned into requests, and scrapy-redis's
own ``RedisSpider`` / ``RedisCrawlSpider`` run unchanged until the crawl ends
by the cluster's rule (real crawls, embedded Lightpanda)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.crawler import CrawlerRunner
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import Rule
from scrapy_redis.spiders import RedisCrawlSpider, RedisSpider

from scrapy_cdp_pool.cluster.frontier import Frontier
from scrapy_cdp_pool.cluster.keys import key_prefix
from scrapy_cdp_pool.cluster.redis_client import connect
from scrapy_cdp_pool.cluster.scripts import FEED_MARK
from tests.cluster_harness import RedisServer, Worker, all_items, cluster, kill_left
from tests.crawl import BASE_SETTINGS, crawl
from tests.profiles import token
from tests.servers import SiteServer


def fill(client: Any, kind: str, key: str, items: list[str]) -> None:
    """Push ``items`` as a scrapy-redis user would, to a ``kind`` key (a
    sorted set scored so that the first item has the highest score)."""
    if kind == "list":
        client.rpush(key, *items)
    elif kind == "set":
        client.sadd(key, *items)
    else:
        client.zadd(key, {item: len(items) - i for i, item in enumerate(items)})


def fed(frontier: Frontier, key: str) -> tuple[list[str], str]:
    """The feed entries the takes hand out, in order, and the last take's
    unreadable type."""
    found: list[str] = []
    while True:
        taken = frontier.take(feed_key=key)
        if taken.lease is None:
            return found, taken.feed_type
        assert taken.data.startswith(FEED_MARK)
        found.append(taken.data[len(FEED_MARK) :].decode())
        frontier.settle([f"a:{taken.lease}"])


@pytest.mark.parametrize("kind", ["list", "set", "zset"])
def test_each_form_of_the_feed_is_read_by_its_type(
    module_redis_server: RedisServer, kind: str
) -> None:
    """A list from the left, a set in any order, a sorted set highest score
    first (scrapy-redis's order), more items than one take moves (16)."""
    key = f"{token()}:start_urls"
    items = [f"https://example.com/{n}" for n in range(40)]
    client = connect(module_redis_server.url, 5)
    fill(client, kind, key, items)
    frontier = Frontier(client, token(), "w0", lease_s=30)
    found, unreadable = fed(frontier, key)
    assert unreadable == ""
    if kind == "set":
        found, items = sorted(found), sorted(items)
    assert found == items
    assert not client.exists(key)


def test_a_key_of_another_type_is_left_alone_by_the_take(module_redis_server: RedisServer) -> None:
    """A key turned into a hash mid-crawl: the take reads nothing (no
    WRONGTYPE on every take) and says which type it found."""
    key = f"{token()}:start_urls"
    client = connect(module_redis_server.url, 5)
    client.hset(key, "url", "https://example.com/")
    frontier = Frontier(client, token(), "w0", lease_s=30)
    assert fed(frontier, key) == ([], "hash")
    assert client.hget(key, "url") == b"https://example.com/"


def test_a_feed_key_of_another_type_is_refused_at_start(module_redis_server: RedisServer) -> None:
    name = token()
    with module_redis_server.client() as client:
        client.set(f"{name}:start_urls", "https://example.com/")

    class Named(RedisSpider):
        pass

    Named.name = name
    runner = CrawlerRunner({**BASE_SETTINGS, **cluster(module_redis_server.url, name)})
    with pytest.raises(ValueError, match=rf"feed key '{name}:start_urls' is a Redis string"):
        runner.create_crawler(Named)._apply_settings()


def test_scrapy_redis_scheduler_is_refused_at_start_by_name(
    module_redis_server: RedisServer,
) -> None:
    runner = CrawlerRunner(
        {**BASE_SETTINGS, **cluster(module_redis_server.url, token()),
         "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter"}
    )  # fmt: skip

    class Spider(scrapy.Spider):
        name = "plain"

    with pytest.raises(ValueError, match="remove DUPEFILTER_CLASS"):
        runner.create_crawler(Spider)._apply_settings()


@pytest.mark.parametrize("kind", ["list", "set", "zset"])
@pytest_twisted.ensureDeferred
async def test_urls_and_json_items_of_each_form_are_crawled(
    site: SiteServer, module_redis_server: RedisServer, kind: str
) -> None:
    """Plain URLs and scrapy-redis's JSON items (``url``, ``meta``,
    ``method``, ``headers``, ``body``; other keys as form data) in one feed."""
    name = token()
    feed = f"{name}:start_urls"
    urls = [site.url(f"/jobsite/{n}?tag={name}&total=20&hubs=2") for n in range(3)]
    post = {
        "url": site.url(f"/echo?tag={name}"), "method": "post", "meta": {"job": 7, "cdp": False},
        "headers": {"X-Feed": "yes"}, "body": "a=1",
    }  # fmt: skip
    form = {"url": site.url("/echo"), "meta": {"cdp": False}, "q": "x y"}
    items = [*urls, json.dumps(post), json.dumps(form)]
    with module_redis_server.client() as client:
        fill(client, kind, feed, items)
    spider, crawler = await crawl(
        [], cluster(module_redis_server.url, name, CDP_POOL_CLUSTER_FEED_KEY=feed)
    )
    assert not spider.failures
    assert sorted(r.url for r in spider.responses if "/jobsite/" in r.url) == sorted(urls)
    echoed = {r.url: json.loads(r.text) for r in spider.responses if "/echo" in r.url}
    assert len(echoed) == 2
    posted = echoed[post["url"]]
    assert posted["method"] == "POST"
    assert bytes.fromhex(posted["body_hex"]) == b"a=1"
    assert posted["headers"]["X-Feed"] == "yes"
    assert [r.meta["job"] for r in spider.responses if r.url == post["url"]] == [7]
    # scrapy-redis's form (a FormRequest): a GET's form data is the URL's query
    assert spider.by_url("/echo?q=").url == site.url("/echo?q=x+y")
    assert crawler.stats.get_value("cdp_pool/cluster/fed") == 5
    assert crawler.stats.get_value("finish_reason") == "finished"
    with module_redis_server.client() as client:
        assert not client.exists(feed)
        assert not client.exists(f"{key_prefix(name)}req")


def redis_spider_settings(server: RedisServer, name: str) -> dict[str, Any]:
    """What a scrapy-redis project keeps: its own Redis settings, pointing at
    the same Redis (the spider's own client is never used)."""
    return {
        **BASE_SETTINGS, **cluster(server.url, name), "REDIS_URL": server.url,
        "REDIS_START_URLS_AS_SET": True, "CLOSESPIDER_TIMEOUT": 300,
    }  # fmt: skip


class FeedSpider(RedisSpider):
    """A scrapy-redis spider as its users write it: ``redis_key``,
    ``parse``, nothing else (its ``start_requests`` and idle handler are
    scrapy-redis's)."""

    name = "feedspider"
    redis_key = "%(name)s:urls:" + token()
    seen: list[str] = []

    def parse(self, response: Any) -> Any:
        self.seen.append(response.url)
        yield {"url": response.url}


class FeedCrawlSpider(RedisCrawlSpider):
    """A ``RedisCrawlSpider`` following the links of the test site's hubs."""

    name = "feedcrawl"
    seen: list[str] = []
    rules = (Rule(LinkExtractor(allow=r"/jobsite/\d+"), callback="parse_page", follow=False),)

    def parse_page(self, response: Any) -> Any:
        self.seen.append(response.url)


@pytest_twisted.ensureDeferred
async def test_a_redis_spider_ends_when_the_frontier_is_empty(
    site: SiteServer, module_redis_server: RedisServer
) -> None:
    """scrapy-redis keeps a ``RedisSpider`` open for ever by default (its idle
    handler): under the cluster, the crawl ends as every cluster crawl does,
    each URL fetched once, all of them read by the cluster's feed."""
    name = token()
    key = FeedSpider.redis_key % {"name": "feedspider"}
    urls = [site.url(f"/jobsite/{n}?tag={name}&total=20&hubs=2") for n in range(4)]
    with module_redis_server.client() as client:
        client.sadd(key, *urls)
    runner = CrawlerRunner(redis_spider_settings(module_redis_server, name))
    crawler = runner.create_crawler(FeedSpider)
    await runner.crawl(crawler)
    assert sorted(FeedSpider.seen) == sorted(urls)
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert crawler.stats.get_value("cdp_pool/cluster/fed") == len(urls)
    with module_redis_server.client() as client:
        assert not client.exists(key)


@pytest_twisted.ensureDeferred
async def test_a_redis_crawl_spider_follows_its_rules_and_ends(
    site: SiteServer, module_redis_server: RedisServer
) -> None:
    """A ``RedisCrawlSpider`` fed a hub through its default key (a set, as
    scrapy-redis's ``REDIS_START_URLS_AS_SET`` has it): its rules follow the
    hub's links, then the crawl ends."""
    name = token()
    hub = site.url(f"/jobsite/1?tag={name}&total=8&hubs=1")
    with module_redis_server.client() as client:
        client.sadd("feedcrawl:start_urls", hub)
    runner = CrawlerRunner(redis_spider_settings(module_redis_server, name))
    crawler = runner.create_crawler(FeedCrawlSpider)
    await runner.crawl(crawler)
    assert FeedCrawlSpider.seen
    assert len(FeedCrawlSpider.seen) == len(set(FeedCrawlSpider.seen))
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert crawler.stats.get_value("cdp_pool/cluster/fed") == 1


@pytest.mark.timeout(600)
def test_three_redis_spider_workers_share_one_set_feed(
    site: SiteServer, module_redis_server: RedisServer, tmp_path: Path
) -> None:
    """``scrapy crawl`` of a ``RedisSpider`` on three machines (processes),
    its key a set of plain URLs and JSON items: each page once across the
    workers, every item read by the cluster's feed, each worker ending by
    itself (scrapy-redis's idle handler would keep them open for ever)."""
    tag = token()
    key = f"feed:{tag}"
    pages = 30
    urls = [site.url(f"/jobsite/{n}?tag={tag}&total={pages}&hubs=1") for n in range(pages)]
    items = [url if n % 2 else json.dumps({"url": url, "meta": {"cdp": True}})
             for n, url in enumerate(urls)]  # fmt: skip
    with module_redis_server.client() as client:
        client.sadd(key, *items)
    settings = {
        "CDP_POOL_CLUSTER_NAME": f"redisfeed-{tag}", "REDIS_START_URLS_KEY": key,
        "REDIS_URL": module_redis_server.url, "REDIS_START_URLS_AS_SET": "True",
        "CDP_POOL_RENDER_ALL": "True", "CONCURRENT_REQUESTS": "2", "CDP_POOL_CONNECTIONS": "1",
    }  # fmt: skip
    workers = [
        Worker(tmp_path, i, module_redis_server.url, settings, spider="redisfeed") for i in range(3)
    ]
    try:
        for worker in workers:
            worker.finish()
    finally:
        kill_left()
    assert all_items(workers) == {n: 1 for n in range(pages)}
    assert sum(worker.stat("cdp_pool/cluster/fed") for worker in workers) == pages
    for worker in workers:
        assert "'finish_reason': 'finished'" in worker.log_file.read_text(encoding="utf-8")
    with module_redis_server.client() as client:
        assert not client.exists(key)
