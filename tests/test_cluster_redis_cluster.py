"""A cluster crawl on a real 3-node Redis Cluster (issue 30 item 1): the URL
names a node that does not serve the crawl's hash slot (the client follows
MOVED), start requests and a scrapy-redis feed on the crawl's hash tag are
each fetched once; a feed key in another slot is refused at start by name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.cluster.keys import key_prefix
from tests.crawl import crawl
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
async def test_a_feed_key_in_another_hash_slot_is_refused_at_start(
    site: SiteServer, redis_cluster: RedisClusterServers
) -> None:
    name = token()
    with pytest.raises(ValueError, match=r"CDP_POOL_CLUSTER_FEED_KEY: .* hash slot") as refused:
        await crawl(
            [scrapy.Request(site.url("/hist/hash?when=now"))],
            settings(redis_cluster, name, CDP_POOL_CLUSTER_FEED_KEY=f"{name}:start_urls"),
        )
    assert "{" + name + "}:start_urls" in str(refused.value)
