"""CrawlerRuntime: one crawler's parts of the plugin, made and owned by the
add-on.

The add-on (:class:`~scrapy_cdp_pool.Addon`, built by Scrapy with the crawler)
reads the crawler's ``CDP_POOL_*`` settings once (:class:`PoolConfig`) and makes
the runtime; every component (the download handler, the middlewares, the
scheduler queue, the extensions) takes what it needs from it in its
``from_crawler``, through :func:`runtime_of`. Nothing is kept in module-level
registries: the runtime lives as long as its crawler.

What it holds: the config; the request gates; the pools, one per
:class:`~scrapy_cdp_pool.browser.backends.Backend`, made on first need (shared
with other crawlers of the same ``CDP_POOL_NAME``,
:mod:`scrapy_cdp_pool.core.sharing`); the live pages handed to callbacks and
their Playwright driver; and the parts optional features keep per crawler
(:mod:`scrapy_cdp_pool.core.parts`: the stored profiles, the render ladder, the
durable JOBDIR's store, ...), made on first need by the maker the add-on or the
feature gives. The runtime never imports a feature.

Nothing of a crawl is kept at module level. What the process owns, by design,
is: the pools and budgets shared under one ``CDP_POOL_NAME``
(:mod:`scrapy_cdp_pool.core.sharing`, ``POOLS``; ``BUDGETS`` in the budget
feature); the metrics endpoints, since a port is the process's (``_endpoints``,
``_endpoints_lock`` in :mod:`scrapy_cdp_pool.telemetry.metrics`); the JOBDIR
databases found sound at start, by inode, size and mtime (``_scanned``); the
one sweep of dead processes' private directories (``_swept``); compiled URL
patterns (``_cache``, a pure function's memo); the retry jitter's random source
(``_rng``). tests/unit/test_module_state.py keeps this list true.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar, cast

from scrapy_cdp_pool.browser.backends import Backend, backend_of
from scrapy_cdp_pool.browser.pool.pool import ConnectionPool
from scrapy_cdp_pool.core.gates import RequestGates
from scrapy_cdp_pool.core.pacing import HostPacing
from scrapy_cdp_pool.core.parts import BudgetView, PartKey
from scrapy_cdp_pool.core.sharing import POOLS, pool_settings
from scrapy_cdp_pool.render import LivePages
from scrapy_cdp_pool.settings.config import PoolConfig

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


logger = logging.getLogger(__name__)

T = TypeVar("T")

ADDON_PATH = "scrapy_cdp_pool.Addon"


class CrawlerRuntime:
    """One crawler's plugin state; see the module's docstring.

    ``config`` is read once per crawl, when the add-on is applied (after the
    spider's ``custom_settings``; an add-on applied later that changes a
    ``CDP_POOL_*`` or ``DOWNLOAD_*`` setting is not seen).
    """

    def __init__(self, crawler: Crawler, config: PoolConfig) -> None:
        self.crawler = crawler
        self.config = config
        self.backend: Backend = backend_of(config)
        #: the concurrency budget the crawler is a member of (set by
        #: :class:`~scrapy_cdp_pool.budget.BudgetExtension`), ``None`` for none
        self.budget: BudgetView | None = None
        #: the cluster crawl's link to Redis
        #: (:class:`~scrapy_cdp_pool.cluster.link.ClusterLink`, made by the
        #: cluster's components on first use; typed loosely: the runtime does
        #: not import the components above it), ``None`` outside a cluster crawl
        self.cluster: object | None = None
        self._pools: dict[Backend, ConnectionPool] = {}
        self._pool_holds: dict[Backend, int] = {}
        self._parts: dict[PartKey[Any], Any] = {}
        self._makers: dict[PartKey[Any], Callable[[], Any]] = {}

    # Parts of optional features -------------------------------------------

    def provide(self, key: PartKey[T], make: Callable[[], T]) -> None:
        """Register how ``key``'s part is made (on first :meth:`part`); the
        add-on does it for the parts the core calls."""
        self._makers[key] = make

    def part(self, key: PartKey[T], make: Callable[[], T] | None = None) -> T:
        """The crawler's one ``key`` part, made on first need by the maker
        given to :meth:`provide`, else by ``make``.

        :raises LookupError: no maker for ``key`` (a component used without
            the add-on that provides it), naming the part.
        """
        if key in self._parts:
            return cast(T, self._parts[key])
        maker = self._makers.get(key, make)
        if maker is None:
            raise LookupError(f"scrapy_cdp_pool: no {key.name} on this crawler's runtime")
        part = self._parts[key] = maker()
        return cast(T, part)

    @cached_property
    def gates(self) -> RequestGates:
        """The crawler's request gates (profile busy, host paused/limited)."""
        return RequestGates(self.crawler, max_wait_s=self.config.resilience.retry_backoff_max_s)

    @cached_property
    def pacing(self) -> HostPacing:
        """The crawler's host pacing (delays, host rate, host pauses): made
        by the download handler, or by a feature plugging a part in, whichever
        comes first; it holds the queue through :attr:`gates`."""
        return HostPacing(self.crawler, self.gates, self.config.resilience.host_rate)

    @cached_property
    def live_pages(self) -> LivePages:
        """The crawl's live pages (``meta["cdp_include_page"]``) and the
        Playwright driver they share."""
        return LivePages(self.crawler)

    # Pools ---------------------------------------------------------------

    def check_pool(self) -> None:
        """Refuse a crawler that would share a pool (``CDP_POOL_NAME``) made
        with other settings; called by the add-on, where an error stops the
        crawl loudly (Scrapy only logs a download handler's).

        :raises ValueError: naming both crawlers, the setting and both values.
        """
        POOLS.check(self.config.pool_name, self.crawler, pool_settings(self.config))

    def acquire_pool(self, backend: Backend | None = None) -> ConnectionPool:
        """The pool of ``backend`` (default: the crawl's, :attr:`backend`),
        made on first need (nothing starts until its first lease); each
        acquire is matched by a :meth:`release_pool`. The crawl's own pool is
        the one shared under ``CDP_POOL_NAME``.

        :raises ValueError: see :meth:`check_pool`.
        """
        backend = backend or self.backend
        pool = self._pools.get(backend)
        if pool is None:
            config = backend.pool_config(self.config)
            name = self.config.pool_name if backend == self.backend else None
            if name is not None:
                pool = POOLS.join(
                    name, self.crawler, pool_settings(config), lambda: ConnectionPool(config)
                )
            else:
                pool = ConnectionPool(config)
            self._pools[backend] = pool
        self._pool_holds[backend] = self._pool_holds.get(backend, 0) + 1
        return pool

    @property
    def pool(self) -> ConnectionPool | None:
        """The crawl's own pool, if a handler made or joined it (for
        telemetry, the budget and tests)."""
        return self._pools.get(self.backend)

    def other_pools(self) -> list[ConnectionPool]:
        """The pools of backends other than the crawl's own (the render
        ladder's Chromium), for telemetry."""
        return [pool for backend, pool in self._pools.items() if backend != self.backend]

    def pool_of(self, backend: Backend) -> ConnectionPool | None:
        """``backend``'s pool, if one was made."""
        return self._pools.get(backend)

    async def release_pool(self, backend: Backend | None = None) -> None:
        """Give back a pool taken with :meth:`acquire_pool`; the last holder
        (of every crawler sharing it) closes it."""
        backend = backend or self.backend
        holds = self._pool_holds.get(backend, 0) - 1
        if holds > 0:
            self._pool_holds[backend] = holds
            return
        self._pool_holds.pop(backend, None)
        pool = self._pools.pop(backend, None)
        if pool is None:
            return
        name = self.config.pool_name if backend == self.backend else None
        if name is None or POOLS.leave(name, self.crawler):
            await pool.close()


class RuntimeOwner:
    """What owns a crawler's runtime: :class:`~scrapy_cdp_pool.Addon`, found
    with Scrapy's ``crawler.get_addon(RuntimeOwner)``."""

    runtime: CrawlerRuntime | None = None


def runtime_of(crawler: Crawler) -> CrawlerRuntime:
    """The crawler's runtime, made by the add-on.

    :raises ValueError: the add-on is not in ``ADDONS`` (a component of the
        plugin wired by hand, e.g. the download handler in
        ``DOWNLOAD_HANDLERS``), naming the setting to add.
    """
    addon = crawler.get_addon(RuntimeOwner)
    runtime = addon.runtime if addon is not None else None
    if runtime is None:
        raise ValueError(
            f"scrapy_cdp_pool's components need its add-on: set ADDONS = "
            f"{{{ADDON_PATH!r}: 0}} (it installs them; they cannot be wired by hand)"
        )
    return runtime
