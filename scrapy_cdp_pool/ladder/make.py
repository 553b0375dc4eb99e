"""The crawler's ladder, as the runtime makes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy.utils.job import job_dir
from scrapy.utils.misc import build_from_crawler, load_object

from scrapy_cdp_pool.browser.pool.pool import ConnectionPool
from scrapy_cdp_pool.core.parts import RENDER_LADDER
from scrapy_cdp_pool.ladder.chromium import Acquire, ChromiumRung, Release
from scrapy_cdp_pool.ladder.climb import Ladder
from scrapy_cdp_pool.ladder.store import JobdirLadderStore, LadderStore
from scrapy_cdp_pool.settings.config import PoolConfig

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_cdp_pool.core.runtime import CrawlerRuntime


def make_store(crawler: Crawler, config: PoolConfig) -> LadderStore | None:
    """``CDP_POOL_LADDER_STORE``'s store (the class, or its import path, built
    with Scrapy's ``build_from_crawler``), else the JOBDIR's, else ``None``."""
    if config.ladder.store is not None:
        cls = config.ladder.store
        store: LadderStore = build_from_crawler(
            load_object(cls) if isinstance(cls, str) else cls, crawler
        )
        return store
    directory = job_dir(crawler.settings)
    return JobdirLadderStore(directory) if directory else None


def make_ladder(
    crawler: Crawler,
    config: PoolConfig,
    primary: Callable[[], ConnectionPool | None],
    acquire: Acquire,
    release: Release,
) -> Ladder:
    """The crawler's :class:`Ladder`; ``primary``, ``acquire`` and ``release``
    are the runtime's (its own pool, and a pool per backend).

    :raises ValueError: the saved state is not one (names the file).
    """
    chromium = ChromiumRung(config, primary, acquire, release)
    return Ladder(crawler, config, make_store(crawler, config), chromium)


def provide_ladder(runtime: CrawlerRuntime) -> None:
    """Register how the crawl's ladder is made (on first use by a download
    handler: it counts in the crawler's stats), on the runtime's pools
    (called by the add-on).

    The maker raises ValueError when the saved state is not one.
    """
    runtime.provide(
        RENDER_LADDER,
        lambda: make_ladder(
            runtime.crawler,
            runtime.config,
            lambda: runtime.pool,
            runtime.acquire_pool,
            runtime.release_pool,
        ),
    )
