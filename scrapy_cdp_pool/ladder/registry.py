"""One ladder per crawler, shared by its http and https download handlers
(held like the pool: the last handler to let go saves what was learned and
closes the Chromium pool)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.utils.job import job_dir
from scrapy.utils.misc import build_from_crawler, load_object

from scrapy_cdp_pool.config import PoolConfig
from scrapy_cdp_pool.ladder.chromium import ChromiumRung
from scrapy_cdp_pool.ladder.climb import CHROMIUM, Ladder, rung_names
from scrapy_cdp_pool.ladder.settings import LadderConfig
from scrapy_cdp_pool.ladder.store import JobdirLadderStore, LadderStore
from scrapy_cdp_pool.pool.pool import ConnectionPool

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


@dataclass(eq=False)
class LadderParts:
    """The crawler's ladder and its Chromium rung (``None`` without
    ``CDP_POOL_FALLBACK``)."""

    ladder: Ladder
    chromium: ChromiumRung | None
    holders: int = 0


_by_crawler: weakref.WeakKeyDictionary[Crawler, LadderParts] = weakref.WeakKeyDictionary()


def make_store(crawler: Crawler, config: LadderConfig) -> LadderStore | None:
    """``CDP_POOL_LADDER_STORE``'s store, else the JOBDIR's, else ``None``.

    :raises ValueError: the store class does not import (names the setting).
    """
    if config.store is not None:
        try:
            cls = load_object(config.store)
        except (ImportError, NameError, ValueError, AttributeError) as e:
            raise ValueError(
                f"CDP_POOL_LADDER_STORE: {config.store!r} does not import ({e}); "
                "allowed: the import path of a class with load() and save(state)"
            ) from None
        store: LadderStore = build_from_crawler(cls, crawler)
        return store
    directory = job_dir(crawler.settings)
    return JobdirLadderStore(directory) if directory else None


def acquire_ladder(crawler: Crawler, config: PoolConfig, primary: ConnectionPool) -> LadderParts:
    """The crawler's ladder, made by its first handler.

    :raises ValueError: a ladder setting is invalid, or the saved state is not one.
    """
    parts = _by_crawler.get(crawler)
    if parts is None:
        ladder_config = LadderConfig.from_settings(crawler.settings)
        rungs = rung_names(ladder_config, config.browser, bool(config.endpoints))
        ladder = Ladder(crawler, ladder_config, rungs, make_store(crawler, ladder_config))
        chromium = ChromiumRung(config, primary) if ladder_config.fallback == CHROMIUM else None
        parts = _by_crawler[crawler] = LadderParts(ladder, chromium)
    parts.holders += 1
    return parts


async def release_ladder(crawler: Crawler) -> None:
    """Let go; the last holder saves the learned state and closes the
    Chromium pool."""
    parts = _by_crawler.get(crawler)
    if parts is None:
        return
    parts.holders -= 1
    if parts.holders > 0:
        return
    del _by_crawler[crawler]
    parts.ladder.save()
    if parts.chromium is not None:
        await parts.chromium.close()
