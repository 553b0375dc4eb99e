"""The Chromium pool of the render ladder's fallback rung
(``CDP_POOL_FALLBACK = "chromium"``), taken on first need beside the crawl's
own pool.

Without ``CDP_POOL_ENDPOINTS`` it is the runtime's embedded Chromium pool
(:meth:`~scrapy_cdp_pool.core.runtime.CrawlerRuntime.acquire_pool` with
:data:`~scrapy_cdp_pool.browser.backends.CHROMIUM`: the crawl's settings, its server
started at the first fallback, not before). With endpoints, it is a pool on the
endpoints among them that answer as Chromium (found by the crawl's pool's
discovery); none is an error at the first fallback
(:class:`~scrapy_cdp_pool.errors.PoolUnavailable`, naming the setting).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable

from scrapy_cdp_pool.browser.backends import CHROMIUM, Backend
from scrapy_cdp_pool.browser.pool.pool import ConnectionPool
from scrapy_cdp_pool.errors import PoolUnavailable
from scrapy_cdp_pool.settings.config import PoolConfig

#: the runtime's ``acquire_pool`` / ``release_pool``
Acquire = Callable[[Backend], ConnectionPool]
Release = Callable[[Backend], Awaitable[None]]


class ChromiumRung:
    """The fallback rung's pool, taken once (:meth:`pool`) and given back by
    :meth:`close`. ``primary``: the crawl's own pool, when made."""

    def __init__(
        self,
        config: PoolConfig,
        primary: Callable[[], ConnectionPool | None],
        acquire: Acquire,
        release: Release,
    ) -> None:
        self.config = config
        self._primary = primary
        self._acquire = acquire
        self._release = release
        self._pool: ConnectionPool | None = None
        self._own = False  # a pool on the Chromium endpoints, closed by us
        self._lock = asyncio.Lock()

    @property
    def started(self) -> ConnectionPool | None:
        """The pool if it was taken (for stats and tests)."""
        return self._pool

    async def pool(self) -> ConnectionPool:
        """The Chromium pool of the fallback rung, made on first need.

        :raises PoolUnavailable: no endpoint of ``CDP_POOL_ENDPOINTS`` is
            Chromium (or the crawl's pool is not made).
        """
        if self._pool is not None:
            return self._pool
        async with self._lock:
            if self._pool is None:
                if self.config.endpoints:
                    self._pool = ConnectionPool(await self._endpoints_config())
                    self._own = True
                else:
                    self._pool = self._acquire(CHROMIUM)
        return self._pool

    async def _endpoints_config(self) -> PoolConfig:
        primary = self._primary()
        if primary is None:
            raise PoolUnavailable("CDP_POOL_FALLBACK = 'chromium': the crawl's pool is not made")
        await primary.start()
        chromium = tuple(
            endpoint
            for endpoint, info in zip(primary.endpoints, primary.infos, strict=True)
            if info is not None and info.backend == CHROMIUM
        )
        if not chromium:
            kinds = ", ".join(info.label for info in primary.infos if info is not None)
            raise PoolUnavailable(
                f"CDP_POOL_FALLBACK = 'chromium': no endpoint of CDP_POOL_ENDPOINTS is "
                f"Chromium (they are: {kinds or 'not answering'})"
            )
        return dataclasses.replace(self.config, endpoints=chromium, dedicated_servers=0)

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if self._own:
            await pool.close()
        else:
            await self._release(CHROMIUM)
