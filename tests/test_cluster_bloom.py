"""``CDP_POOL_CLUSTER_DUPEFILTER = "bloom"`` on a real ``redis-server``: the
store script's Bloom filter says seen and not seen as a set would, its
measured false-positive rate stays within its bound, a flush at start
(``SCHEDULER_FLUSH_ON_START``) empties it, and workers that size it apart, or
a crawl whose fingerprints are in the other form, are refused by name."""

from __future__ import annotations

import hashlib

import pytest
from scrapy import Request
from scrapy.settings import Settings

from scrapy_cdp_pool.cluster.bloom import BLOOM, Bloom, check_crawl
from scrapy_cdp_pool.cluster.dupefilter import bloom_add
from scrapy_cdp_pool.cluster.flush import flush_if_alone
from scrapy_cdp_pool.cluster.frontier import SEEN, Frontier
from scrapy_cdp_pool.cluster.keys import gate_of
from scrapy_cdp_pool.cluster.redis_client import connect
from scrapy_cdp_pool.settings.config import PoolConfig
from tests.profiles import token
from tests.redis_server import RedisServer


def _frontier(module_redis_server: RedisServer, bloom: Bloom | None) -> Frontier:
    client = connect(module_redis_server.url, 5)
    return Frontier(client, token(), "w1", lease_s=30, bloom=bloom)


def _fp(n: int) -> bytes:
    return hashlib.sha1(
        str(n).encode(), usedforsecurity=False
    ).digest()  # as Scrapy's fingerprints: 20 bytes


def _push_all(frontier: Frontier, fps: list[bytes]) -> list[bool]:
    """Each fingerprint's request stored through the store script (pipelined,
    as the frontier's pushes, one round trip per 2,000); whether it was stored."""
    stored: list[bool] = []
    with frontier.client.pipeline(transaction=False) as pipe:
        for n, fp in enumerate(fps):
            keys, args = frontier.push_call(b"r", gate_of("h.test", ""), 0, SEEN, fp)
            frontier._push(keys=keys, args=[frontier.prefix, *args], client=pipe)
            if n % 2000 == 1999:
                stored += [bool(r) for r in pipe.execute()]
        stored += [bool(r) for r in pipe.execute()]
    return stored


def test_the_bloom_filter_says_seen_and_not_seen(module_redis_server: RedisServer) -> None:
    frontier = _frontier(module_redis_server, Bloom.sized(1000, 0.001))
    gate = gate_of("h.test", "")
    assert frontier.push(b"a", gate, 0, SEEN, _fp(1))
    assert frontier.push(b"b", gate, 0, SEEN, _fp(2))
    frontier._known.clear()  # asked of Redis, not this worker's memory
    assert not frontier.push(b"a again", gate, 0, SEEN, _fp(1))
    assert frontier.pending() == (2, 0)
    assert not frontier.client.exists(frontier.prefix + SEEN)  # no set: the bitmap
    assert frontier.client.exists(f"{frontier.prefix}{BLOOM}:0")
    # the dupefilter's own check, for callers outside the scheduler
    assert bloom_add(frontier, frontier.bloom, _fp(1)) is True  # type: ignore[arg-type]
    assert bloom_add(frontier, frontier.bloom, _fp(3)) is False  # type: ignore[arg-type]
    assert bloom_add(frontier, frontier.bloom, _fp(3)) is True  # type: ignore[arg-type]
    assert check_crawl(frontier.client, frontier.prefix, frontier.bloom) == 3


def test_the_measured_false_positive_rate_stays_within_its_bound(
    module_redis_server: RedisServer,
) -> None:
    """2,000 requests stored into a filter sized for 2,000 at 1%, then 10,000
    others looked up (their bits read, nothing set): about 1% of those are
    taken for seen (deterministic fingerprints)."""
    bloom = Bloom.sized(2_000, 0.01)
    assert (bloom.hashes, bloom.parts) == (7, 1)
    frontier = _frontier(module_redis_server, bloom)
    first = _push_all(frontier, [_fp(n) for n in range(2_000)])
    assert first.count(False) <= 10  # while filling, fewer than at capacity
    with frontier.client.pipeline(transaction=False) as pipe:
        for n in range(2_000, 12_000):
            key, offsets = bloom.place(frontier.prefix, _fp(n))
            field = pipe.bitfield(key)
            for offset in offsets:
                field.get("u1", offset)
            field.execute()
        false_positives = sum(all(bits) for bits in pipe.execute())
    assert 0 < false_positives <= 1.5 * 0.01 * 10_000, false_positives
    assert _push_all(frontier, [_fp(5)]) == [False]  # every one put in is seen
    # memory: the bitmap's bytes, not ~80 per fingerprint
    assert frontier.client.strlen(f"{frontier.prefix}{BLOOM}:0") <= bloom.memory_bytes


def test_a_flush_at_start_empties_the_filter(module_redis_server: RedisServer) -> None:
    bloom = Bloom.sized(1000, 0.001)
    frontier = _frontier(module_redis_server, bloom)
    assert check_crawl(frontier.client, frontier.prefix, bloom) == 0
    assert frontier.push(b"a", gate_of("h.test", ""), 0, SEEN, _fp(1))
    assert flush_if_alone(frontier.client, frontier.route_key, frontier.prefix, "w1", 30_000) > 0
    again = Frontier(frontier.client, frontier.prefix[10:-2], "w1", lease_s=30, bloom=bloom)
    assert again.prefix == frontier.prefix
    assert check_crawl(again.client, again.prefix, bloom) == 0
    assert again.push(b"a", gate_of("h.test", ""), 0, SEEN, _fp(1))


def test_workers_that_disagree_are_refused_by_name(module_redis_server: RedisServer) -> None:
    bloom = Bloom.sized(1000, 0.001)
    frontier = _frontier(module_redis_server, bloom)
    check_crawl(frontier.client, frontier.prefix, bloom)
    with pytest.raises(ValueError, match=r"CDP_POOL_CLUSTER_BLOOM_CAPACITY.*1000:0\.001"):
        check_crawl(frontier.client, frontier.prefix, Bloom.sized(2000, 0.001))
    with pytest.raises(ValueError, match=r'DUPEFILTER = "set".*Bloom filter'):
        check_crawl(frontier.client, frontier.prefix, None)
    as_set = _frontier(module_redis_server, None)
    assert as_set.push(b"a", gate_of("h.test", ""), 0, SEEN, _fp(1))
    with pytest.raises(ValueError, match=r'DUPEFILTER = "bloom".*1 fingerprints are in the set'):
        check_crawl(as_set.client, as_set.prefix, bloom)


def test_the_size_follows_the_capacity_and_the_rate() -> None:
    """~1.8 bytes a request at 0.1% (180 MB per 100 M), 10 bits set each; a
    filter past Redis's 2**32 bits per bitmap is split."""
    default = Bloom.sized(100_000_000, 0.001)
    assert 175e6 < default.memory_bytes < 185e6
    assert (default.hashes, default.parts) == (10, 1)
    big = Bloom.sized(1_000_000_000, 0.001)
    assert big.parts == 4
    assert big.bits <= 2**32
    key, offsets = big.place("p:", Request("https://a.test/").url.encode())
    assert key.startswith(f"p:{BLOOM}:")
    assert len(set(offsets)) == 10


def test_the_settings_are_validated() -> None:
    config = PoolConfig.from_settings(Settings({"CDP_POOL_CLUSTER_DUPEFILTER": "bloom"}))
    assert (config.cluster.bloom_capacity, config.cluster.bloom_error_rate) == (100_000_000, 0.001)
    for name, value in (
        ("CDP_POOL_CLUSTER_DUPEFILTER", "bloomy"),
        ("CDP_POOL_CLUSTER_BLOOM_CAPACITY", 0),
        ("CDP_POOL_CLUSTER_BLOOM_ERROR_RATE", 0),
        ("CDP_POOL_CLUSTER_BLOOM_ERROR_RATE", 1),
    ):
        with pytest.raises(ValueError, match=name):
            PoolConfig.from_settings(Settings({name: value}))
    for value in (0, 2):  # one range said for both (before: ">= 0" for 2, "> 0" for 0)
        with pytest.raises(ValueError, match=r"BLOOM_ERROR_RATE: .* is not a number > 0 and < 1"):
            PoolConfig.from_settings(Settings({"CDP_POOL_CLUSTER_BLOOM_ERROR_RATE": value}))
