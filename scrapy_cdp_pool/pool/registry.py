"""One pool per crawler.

Scrapy builds one download handler per URL scheme (two for http and https), so
the pool belongs to the crawler: each handler takes it with :func:`acquire_pool`
and gives it back with :func:`release_pool`; the last release closes it.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from scrapy_cdp_pool.config import PoolConfig
from scrapy_cdp_pool.pool.pool import ConnectionPool

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

_pools: weakref.WeakKeyDictionary[Crawler, tuple[ConnectionPool, list[int]]] = (
    weakref.WeakKeyDictionary()
)


def acquire_pool(crawler: Crawler, config: PoolConfig) -> ConnectionPool:
    """The crawler's pool, created on first use (nothing starts until the first
    rendered request)."""
    entry = _pools.get(crawler)
    if entry is None:
        entry = _pools[crawler] = (ConnectionPool(config), [0])
    entry[1][0] += 1
    return entry[0]


def get_pool(crawler: Crawler) -> ConnectionPool | None:
    """The crawler's pool if a handler created it (for telemetry and tests)."""
    entry = _pools.get(crawler)
    return entry[0] if entry else None


async def release_pool(crawler: Crawler) -> None:
    """Give the pool back; the last holder closes it."""
    entry = _pools.get(crawler)
    if entry is None:
        return
    pool, users = entry
    users[0] -= 1
    if users[0] <= 0:
        del _pools[crawler]
        await pool.close()
