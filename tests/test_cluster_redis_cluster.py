"""A cluster crawl on a real 3-node Redis Cluster (issue 30 item 1): the URL
names a node that does not serve the crawl's hash slot (the client follows
MOVED), start requests and a scrapy-redis feed on the crawl's hash tag are
each fetched once; a feed key in another slot is read (moved into the crawl's
keys by the worker), a spider that reads no feed needs no feed setting, and a
``redis://`` URL naming a cluster node is refused at start by name (issue 38)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted
import scrapy
from redis.crc import key_slot

from scrapy_cdp_pool.cluster.keys import key_prefix
from tests.crawl import RecordingSpider, crawl
from tests.profiles import token
from tests.redis_cluster import RedisClusterServers
from tests.servers import SiteServer


@pytest.fixture(scope="module")
def redis_cluster() -> Iterator[RedisClusterServers]:
    servers = RedisClusterServers()
    yield servers
    servers.stop()


def settings(redis_cluster: RedisClusterServers, name: str, **extra: Any) -> dict[str, Any]:
    prefix = key_prefix(name)
    # a node that does not serve the crawl's slot: the client must follow MOVED
    other = next(i for i in range(3) if i != redis_cluster.owner(prefix))
    return {"CDP_POOL_CLUSTER_REDIS_URL": redis_cluster.url(other), "CDP_POOL_CLUSTER_NAME": name,
            "CDP_POOL_RENDER_ALL": True, **extra}  # fmt: skip


@pytest_twisted.ensureDeferred
async def test_a_crawl_runs_on_a_redis_cluster_each_page_once(
    site: SiteServer, redis_cluster: RedisClusterServers
) -> None:
    name = token()
    feed_key = "{" + name + "}:start_urls"
    fed = [site.url(f"/hist/hash?when=now&feed={n}") for n in range(3)]
    redis_cluster.client().rpush(feed_key, *fed)
    started = [scrapy.Request(site.url(f"/hist/hash?when=now&start={n}")) for n in range(3)]
    spider, crawler = await crawl(
        started,
        settings(
            redis_cluster, name, CDP_POOL_CLUSTER_FEED_KEY=feed_key, CDP_POOL_CLUSTER_BUDGET_MAX=2
        ),
    )
    assert not spider.failures, spider.failures
    urls = sorted(r.request.url for r in spider.responses)
    assert urls == sorted([*fed, *(r.url for r in started)])
    assert crawler.stats.get_value("finish_reason") == "finished"
    # the fleet budget (redis-py's asyncio cluster client) kept its bound there
    assert redis_cluster.client().get(f"{key_prefix(name)}budget:max") == b"2"


@pytest_twisted.ensureDeferred
async def test_a_spider_that_reads_no_feed_runs_with_no_feed_setting(
    site: SiteServer, redis_cluster: RedisClusterServers
) -> None:
    """Issue 38 item 3. Before: refused at start (the default feed key
    ``recording:start_urls`` is in another hash slot than the crawl's keys)."""
    name = token()
    assert key_slot(b"recording:start_urls") != key_slot(key_prefix(name).encode())
    started = [scrapy.Request(site.url(f"/hist/hash?when=now&start={n}")) for n in range(3)]
    spider, crawler = await crawl(started, settings(redis_cluster, name))
    assert not spider.failures, spider.failures
    assert sorted(r.request.url for r in spider.responses) == sorted(r.url for r in started)
    assert crawler.stats.get_value("finish_reason") == "finished"


def feed_spider(name: str) -> type[RecordingSpider]:
    """A spider named ``name``: its scrapy-redis feed key is ``<name>:start_urls``."""
    return type("FeedSpider", (RecordingSpider,), {"name": name})


@pytest.mark.parametrize("kind", ["list", "set", "zset"])
@pytest_twisted.ensureDeferred
async def test_a_scrapy_redis_feed_key_in_another_hash_slot_is_read(
    site: SiteServer, redis_cluster: RedisClusterServers, kind: str
) -> None:
    """Issue 38 item 3: scrapy-redis's ``<spider>:start_urls`` (no setting),
    in another slot than the crawl's keys, as a list, a set or a sorted set,
    a URL and a JSON object among its items: each fed once. Before: refused
    at start."""
    name = token()
    spider_name = f"feed-{name}"
    feed_key = f"{spider_name}:start_urls"
    assert key_slot(feed_key.encode()) != key_slot(key_prefix(name).encode())
    fed = [site.url(f"/hist/hash?when=now&feed={n}") for n in range(20)]
    items = [*fed[:-1], json.dumps({"url": fed[-1], "meta": {"via": "json"}})]
    client = redis_cluster.client()
    if kind == "list":
        client.rpush(feed_key, *items)
    elif kind == "set":
        client.sadd(feed_key, *items)
    else:
        client.zadd(feed_key, {item: n for n, item in enumerate(items)})
    started = [scrapy.Request(site.url("/hist/hash?when=now&start=0"))]
    spider, crawler = await crawl(
        started, settings(redis_cluster, name), spider_cls=feed_spider(spider_name)
    )
    assert not spider.failures, spider.failures
    urls = sorted(r.request.url for r in spider.responses)
    assert urls == sorted([*fed, started[0].url])
    assert spider.by_url("feed=19").meta.get("via") == "json"
    assert crawler.stats.get_value("cdp_pool/cluster/fed") == len(items)
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert client.exists(feed_key) == 0  # all moved


@pytest_twisted.ensureDeferred
async def test_a_redis_url_naming_a_cluster_node_is_refused_by_name(
    site: SiteServer, redis_cluster: RedisClusterServers
) -> None:
    """Issue 38 item 3: ``redis://`` naming a node of a Redis Cluster, the
    slot's owner or another, is refused at start in one line that names
    ``redis+cluster://``, before any crawl work (no key of the crawl written).
    Before: a raw ``MovedError`` (exit 1), or ``MovedError`` lines until the
    crawl timed out."""
    name = token()
    prefix = key_prefix(name)
    for node in range(3):
        url = redis_cluster.url(node).replace("redis+cluster://", "redis://")
        with pytest.raises(ValueError, match=r"redis\+cluster://") as refused:
            await crawl(
                [scrapy.Request(site.url("/hist/hash?when=now"))],
                {"CDP_POOL_CLUSTER_REDIS_URL": url, "CDP_POOL_CLUSTER_NAME": name,
                 "CDP_POOL_RENDER_ALL": True},
            )  # fmt: skip
        assert "\n" not in str(refused.value)
        assert "Redis Cluster" in str(refused.value)
    client = redis_cluster.client()
    assert client.exists(f"{prefix}epoch", f"{prefix}seq") == 0
