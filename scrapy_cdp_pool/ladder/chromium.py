"""The Chromium pool of the fallback rung (``CDP_POOL_FALLBACK = "chromium"``),
made on first need beside the crawler's main pool.

Without ``CDP_POOL_ENDPOINTS`` it is an embedded Chromium (``CDP_POOL_CHROMIUM_PATH``,
``CDP_POOL_CHROMIUM_ARGS``) with the main pool's connection settings; its
server starts at the first fallback, not before. With endpoints, it is the
endpoints among them that answer as Chromium (found by the main pool's
discovery); none is an error at the first fallback
(:class:`~scrapy_cdp_pool.render.errors.PoolUnavailable`, naming the setting).
"""

from __future__ import annotations

import asyncio
import dataclasses

from scrapy_cdp_pool.config import PoolConfig
from scrapy_cdp_pool.pool.pool import ConnectionPool
from scrapy_cdp_pool.render.errors import PoolUnavailable


class ChromiumRung:
    """The fallback rung's pool, made once (:meth:`pool`), closed with the
    crawl (:meth:`close`)."""

    def __init__(self, config: PoolConfig, primary: ConnectionPool) -> None:
        self.config = config
        self.primary = primary
        self._pool: ConnectionPool | None = None
        self._lock = asyncio.Lock()

    @property
    def started(self) -> ConnectionPool | None:
        """The pool if it was made (for stats and tests)."""
        return self._pool

    async def pool(self) -> ConnectionPool:
        """:raises PoolUnavailable: no endpoint of ``CDP_POOL_ENDPOINTS`` is Chromium."""
        if self._pool is not None:
            return self._pool
        async with self._lock:
            if self._pool is None:
                self._pool = ConnectionPool(await self._config())
        return self._pool

    async def _config(self) -> PoolConfig:
        if not self.config.endpoints:
            return dataclasses.replace(self.config, browser="chromium", dedicated_servers=0)
        await self.primary.start()
        chromium = tuple(
            endpoint
            for endpoint, info in zip(self.primary.endpoints, self.primary.infos, strict=True)
            if info is not None and info.kind == "chromium"
        )
        if not chromium:
            kinds = ", ".join(info.label for info in self.primary.infos if info is not None)
            raise PoolUnavailable(
                f"CDP_POOL_FALLBACK = 'chromium': no endpoint of CDP_POOL_ENDPOINTS is "
                f"Chromium (they are: {kinds or 'not answering'})"
            )
        return dataclasses.replace(self.config, endpoints=chromium, dedicated_servers=0)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
