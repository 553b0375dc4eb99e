"""A cluster crawl that spans a real 3-node Redis Cluster's shards (issue 38
item 2): its state split into buckets, each its own hash tag, covering every
primary (scrapy_cdp_pool/cluster/shards.py). Two workers (two crawlers in
this process, each with its own browser) share the crawl:

- every page once, one request in flight per profile as the site counts it,
  each page's profile saved back under its lock (fenced in the profile's
  bucket), and the crawl's keys on all three nodes (counted per node);
- a 429's pause held across buckets: requests to one host under profiles in
  different buckets, no arrival inside a window the site announced;
- a worker whose ``CDP_POOL_CLUSTER_SHARDS`` disagrees with the stored layout
  is refused at start by name.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import redis
import scrapy
from twisted.internet import defer

from scrapy_cdp_pool.cluster.keys import key_prefix
from scrapy_cdp_pool.cluster.shards import LAYOUT_KEY, PER_PRIMARY, Buckets, bucket_prefix
from tests.crawl import RecordingSpider, crawl
from tests.fault_records import records
from tests.profiles import token, write_profile
from tests.redis_cluster import RedisClusterServers
from tests.servers import SiteServer

#: profiles hash into 3 buckets per primary at random (their names hold a
#: token): with 12, a primary held none of them, so none of the crawl's keys
#: were left on it, about once in 40 runs ((2/3)^12 per primary); with 24,
#: about once in 5,000
PROFILES = 24


@pytest.fixture(scope="module")
def redis_cluster() -> Iterator[RedisClusterServers]:
    servers = RedisClusterServers()
    yield servers
    servers.stop()


def profiles(directory: Path, count: int = PROFILES) -> list[str]:
    names = [f"p{i}-{token()}" for i in range(count)]
    for name in names:
        write_profile(directory, name, session=f"s-{name}")
    return names


def settings(url: str, name: str, directory: Path, **extra: Any) -> dict[str, Any]:
    return {"CDP_POOL_CLUSTER_REDIS_URL": url, "CDP_POOL_CLUSTER_NAME": name,
            "CDP_POOL_PROFILES_DIR": str(directory), "CDP_POOL_RENDER_ALL": True,
            "CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
            "DOWNLOAD_TIMEOUT": 60, **extra}  # fmt: skip


async def two_workers(
    requests: list[list[scrapy.Request]], config: dict[str, Any]
) -> list[tuple[RecordingSpider, Any]]:
    """Two crawlers of one cluster crawl, at once; each starts with its list."""
    done = await defer.DeferredList(
        [defer.Deferred.fromCoroutine(crawl(batch, config)) for batch in requests],
        fireOnOneErrback=True,
        consumeErrors=True,
    )
    return [result for _, result in done]


def keys_per_node(redis_cluster: RedisClusterServers, name: str) -> list[int]:
    """The crawl's keys on each node (its buckets' prefixes)."""
    counts = []
    for port in redis_cluster.ports:
        node = redis.Redis(host="127.0.0.1", port=port)
        found = [
            key
            for pattern in (f"cdp_pool:{{{name}}}:*", f"cdp_pool:shard:{{{name}|*")
            for key in node.scan_iter(match=pattern, count=1000)
        ]
        counts.append(len(found))
        node.close()
    return counts


@pytest_twisted.ensureDeferred
async def test_a_crawl_spans_the_shards_each_page_once_one_request_per_profile(
    site: SiteServer, redis_cluster: RedisClusterServers, tmp_path: Path
) -> None:
    """Before (one hash tag per crawl): every key on one node."""
    name = f"shards-{uuid.uuid4().hex[:8]}"
    names = profiles(tmp_path)
    tag = token()
    urls = [site.url(f"/session-inflight?ms=150&t={tag}&n={n}") for n in range(48)]
    batches = [
        [
            scrapy.Request(url, meta={"cdp_profile": names[n % PROFILES]})
            for n, url in enumerate(urls)
            if n % 2 == w
        ]
        for w in range(2)
    ]
    config = settings(redis_cluster.url(0), name, tmp_path, CDP_POOL_PROFILE_SAVE_STATE=True)
    done = await two_workers(batches, config)
    got: list[str] = []
    for spider, crawler in done:
        assert not spider.failures, spider.failures
        assert crawler.stats.get_value("finish_reason") == "finished"
        got += [response.request.url for response in spider.responses]
    assert sorted(got) == sorted(urls)  # every page once, over both workers
    inflight = site.stats()["inflight_max"]
    assert {n: inflight[f"session:s-{n}"] for n in names} == dict.fromkeys(names, 1)
    client = redis_cluster.client()
    tags = json.loads(client.get(key_prefix(name) + LAYOUT_KEY))
    assert len(tags) == PER_PRIMARY * 3
    owners = {redis_cluster.owner(bucket_prefix(name, t) + "seq") for t in tags}
    assert owners == {0, 1, 2}  # the buckets cover every primary
    # each page's save-back went through its profile's lock, in the profile's bucket
    assert not any(c.stats.get_value("cdp_pool/cluster/stale_profile_writes") for _, c in done)
    prefix_of = Buckets.profile_prefixes([bucket_prefix(name, t) for t in tags])
    versions = {n: int(client.hget(f"{prefix_of(n)}profile:{n}", "version") or -1) for n in names}
    # 48 pages over 24 profiles: the first page's save-back wrote the
    # browser's state (shaped unlike the seed file's), the second one's state
    # was the same and was not sent (before: version 2)
    assert versions == dict.fromkeys(names, 1), versions
    unchanged = sum(
        c.stats.get_value("cdp_pool/cluster/unchanged_profile_saves", 0) for _, c in done
    )
    assert unchanged == PROFILES
    per_node = keys_per_node(redis_cluster, name)
    assert all(count > 0 for count in per_node), per_node
    # the fingerprints spread over the buckets (each bucket its own set)
    seen = [client.scard(bucket_prefix(name, t) + "seen") for t in tags]
    assert sum(seen) == len(urls), seen
    assert sum(1 for s in seen if s) >= 3, seen


@pytest_twisted.ensureDeferred
async def test_a_429_pauses_its_host_in_every_bucket(
    site: SiteServer, redis_cluster: RedisClusterServers, tmp_path: Path
) -> None:
    """Requests to one host under 6 profiles (spread over the buckets), every
    fourth answered 429 with a 1 s ``Retry-After`` (before, 2 s: the check is
    the same, arrivals 0.25 s apart would land in either): no arrival inside a window
    the site announced, whichever worker and bucket (the navigation's claim
    checks the pause in the host's home bucket), and each pause is in every
    bucket (a take there parks the host's gates: before, in the host's own
    bucket only, the other buckets handed its requests out to wait for it)."""
    name = f"pause-{uuid.uuid4().hex[:8]}"
    names = profiles(tmp_path, 6)
    key = uuid.uuid4().hex[:10]
    batches = [
        [
            scrapy.Request(
                site.url(f"/storm?every=4&after=1&key={key}&i=w{w}-{i}"),
                meta={"cdp_profile": names[(2 * i + w) % len(names)]},
            )
            for i in range(6)
        ]
        for w in range(2)
    ]
    config = settings(
        redis_cluster.url(1), name, tmp_path, CDP_POOL_HOST_RATE=4.0, RETRY_ENABLED=False
    )
    done = await two_workers(batches, config)
    seen = records(site, key)
    assert len(seen["arrivals"]) == 12
    assert len(seen["windows"]) == 3
    inside = [t for t in seen["arrivals"] for start, end in seen["windows"] if start < t < end]
    assert inside == [], (seen["windows"], sorted(seen["arrivals"]))
    assert sum(c.stats.get_value("cdp_pool/host_pauses", 0) for _, c in done) == 3
    # each pause written to every bucket (a take there parks the host's gates)
    client = redis_cluster.client()
    tags = json.loads(client.get(key_prefix(name) + LAYOUT_KEY))
    paused = [client.zrange(bucket_prefix(name, t) + "pauses", 0, -1) for t in tags]
    assert paused == [[b"127.0.0.1"]] * len(tags), paused


def test_a_worker_disagreeing_with_the_stored_layout_is_refused_by_name(
    redis_cluster: RedisClusterServers,
) -> None:
    """The first worker's layout is stored; another count asked is refused,
    0 (auto) adopts the stored one."""
    from scrapy_cdp_pool.cluster.shards import SlotOwner, resolve_layout

    name = f"layout-{uuid.uuid4().hex[:8]}"
    client = redis_cluster.client()
    tags = resolve_layout(client, name, 0, SlotOwner(client))
    assert len(tags) == PER_PRIMARY * 3
    assert resolve_layout(client, name, 0, SlotOwner(client)) == tags
    with pytest.raises(ValueError, match=r"CDP_POOL_CLUSTER_SHARDS = 2: .* 6 buckets"):
        resolve_layout(client, name, 2, SlotOwner(client))
    assert Buckets.split(Buckets.lease(3, "17")) == (3, "17")
