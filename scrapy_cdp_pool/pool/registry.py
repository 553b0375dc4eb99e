"""One pool per crawler, or one per ``CDP_POOL_NAME``.

Scrapy builds one download handler per URL scheme (two for http and https), so
the pool belongs to the crawler: each handler takes it with :func:`acquire_pool`
and gives it back with :func:`release_pool`; the last release closes it.
Crawlers of one process with the same ``CDP_POOL_NAME`` share one pool (one
embedded server), made with the first crawler's settings; a crawler whose pool
settings differ is refused by :func:`check_pool_config`, naming both crawlers
and the setting.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy_cdp_pool.config import PoolConfig
from scrapy_cdp_pool.pool.pool import ConnectionPool
from scrapy_cdp_pool.settings_table import SHARED_POOL_SETTINGS

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

#: ``(PoolConfig field, setting)``: what crawlers sharing a pool must agree on
#: (declared in the settings table).
POOL_SETTINGS = SHARED_POOL_SETTINGS


@dataclass(eq=False)
class _Entry:
    pool: ConnectionPool
    name: str | None
    owner: str  # the first crawler's spider name
    holders: int = 0


_by_crawler: weakref.WeakKeyDictionary[Crawler, tuple[_Entry, list[int]]] = (
    weakref.WeakKeyDictionary()
)
_by_name: dict[str, _Entry] = {}


def _crawler_name(crawler: Crawler) -> str:
    return str(getattr(crawler.spidercls, "name", None) or crawler.spidercls.__name__)


def check_pool_config(crawler: Crawler, config: PoolConfig) -> None:
    """Refuse a crawler that would share a pool (``CDP_POOL_NAME``) made with
    other settings. Called by the add-on at start-up too, where an error
    stops the crawl loudly (Scrapy only logs a download handler's).

    :raises ValueError: naming both crawlers, the setting and both values.
    """
    name = config.pool_name
    entry = _by_name.get(name) if name is not None else None
    held = _by_crawler.get(crawler)
    if entry is None or (held is not None and held[0] is entry):
        return
    for field, setting in POOL_SETTINGS:
        ours, theirs = getattr(config, field), getattr(entry.pool.config, field)
        if ours != theirs:
            raise ValueError(
                f"CDP_POOL_NAME = {name!r}: crawler {_crawler_name(crawler)!r} sets "
                f"{setting} = {ours!r}, but the shared pool was made by crawler "
                f"{entry.owner!r} with {setting} = {theirs!r}; crawlers sharing a pool must "
                f"agree on it (allowed: {theirs!r}), or use another CDP_POOL_NAME"
            )


def acquire_pool(crawler: Crawler, config: PoolConfig) -> ConnectionPool:
    """The crawler's pool (or the one shared under ``CDP_POOL_NAME``),
    created on first use (nothing starts until the first rendered request).

    :raises ValueError: see :func:`check_pool_config`.
    """
    held = _by_crawler.get(crawler)
    if held is None:
        check_pool_config(crawler, config)
        name = config.pool_name
        entry = _by_name.get(name) if name is not None else None
        if entry is None:
            entry = _Entry(ConnectionPool(config), name, _crawler_name(crawler))
            if name is not None:
                _by_name[name] = entry
        held = _by_crawler[crawler] = (entry, [0])
    entry, holds = held
    holds[0] += 1
    entry.holders += 1
    return entry.pool


def get_pool(crawler: Crawler) -> ConnectionPool | None:
    """The crawler's pool if a handler created or joined it (for telemetry
    and tests)."""
    held = _by_crawler.get(crawler)
    return held[0].pool if held else None


async def release_pool(crawler: Crawler) -> None:
    """Give the pool back; the last holder (of every crawler sharing it)
    closes it."""
    held = _by_crawler.get(crawler)
    if held is None:
        return
    entry, holds = held
    holds[0] -= 1
    entry.holders -= 1
    if holds[0] <= 0:
        del _by_crawler[crawler]
    if entry.holders <= 0:
        if entry.name is not None and _by_name.get(entry.name) is entry:
            del _by_name[entry.name]
        await entry.pool.close()
