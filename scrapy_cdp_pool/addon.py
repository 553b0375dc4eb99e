"""Addon: the one line a user adds, ``ADDONS = {"scrapy_cdp_pool.Addon": 0}``."""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings

from scrapy_cdp_pool.config import PoolConfig
from scrapy_cdp_pool.jobdir.install import durable_settings, refuse_durable_queue
from scrapy_cdp_pool.jobdir.store import check_jobdir
from scrapy_cdp_pool.ladder.settings import LadderConfig
from scrapy_cdp_pool.paths import check_directory, check_writable_file, make_private_directory
from scrapy_cdp_pool.pool.registry import check_pool_config
from scrapy_cdp_pool.pool.servers import ServerStartError, embedded_server

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

HANDLER = "scrapy_cdp_pool.handler.CDPDownloadHandler"
PRIORITY_QUEUE = "scrapy_cdp_pool.scheduling.queue.IdentityAwarePriorityQueue"
GATE_RELEASE_MIDDLEWARE = "scrapy_cdp_pool.scheduling.release.GateReleaseMiddleware"
PROFILE_MIDDLEWARE = "scrapy_cdp_pool.identity.middleware.ProfileMiddleware"
EXTENSION = "scrapy_cdp_pool.telemetry.EngineStatusExtension"
CACHE_STORAGE = "scrapy_cdp_pool.httpcache.RenderAwareCacheStorage"
BUDGET_EXTENSION = "scrapy_cdp_pool.budget.extension.BudgetExtension"
SCRAPY_RETRY_MIDDLEWARE = "scrapy.downloadermiddlewares.retry.RetryMiddleware"
RESILIENCE_COMPONENTS = (
    ("DOWNLOADER_MIDDLEWARES", SCRAPY_RETRY_MIDDLEWARE, None),
    ("DOWNLOADER_MIDDLEWARES", "scrapy_cdp_pool.resilience.RequestChecksMiddleware", 530),
    ("DOWNLOADER_MIDDLEWARES", "scrapy_cdp_pool.resilience.FailureRecorderMiddleware", 540),
    ("DOWNLOADER_MIDDLEWARES", "scrapy_cdp_pool.resilience.RetryPolicyMiddleware", 550),
    ("DOWNLOADER_MIDDLEWARES", "scrapy_cdp_pool.resilience.HostPauseMiddleware", 960),
    ("EXTENSIONS", "scrapy_cdp_pool.resilience.HostLimits", 0),
)
ASYNCIO_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"


class Addon:
    """Installs :class:`~scrapy_cdp_pool.CDPDownloadHandler` for ``http`` and
    ``https`` and keeps the handlers that were there before as the fallback for
    requests that are not rendered (``CDP_POOL_FALLBACK_HANDLERS``).

    :raises ValueError: at start-up, when ``TWISTED_REACTOR`` is not the asyncio
        reactor (the pool runs on the asyncio event loop), a ``CDP_POOL_*``
        setting is invalid (the message names it), or the embedded server's
        binary is missing (``CDP_POOL_CHROMIUM_PATH``,
        ``CDP_POOL_LIGHTPANDA_PATH``). Scrapy only logs a download handler's
        own start-up errors, so they are raised here, loudly; so is a crawler
        whose pool settings differ from those of the pool it would share
        (``CDP_POOL_NAME``), a file or directory setting that cannot be used
        (``CDP_POOL_STATUS_FILE``, ``CDP_POOL_FAILURES_FILE``,
        ``CDP_POOL_PROFILES_DIR``, ``JOBDIR``: the message names the setting,
        the path and the OS's reason).
    :raises JobdirError: with the durable JOBDIR, another crawl holds the
        JOBDIR (:class:`~scrapy_cdp_pool.jobdir.JobdirLocked`) or its database
        is damaged, empty or not this plugin's
        (:class:`~scrapy_cdp_pool.jobdir.JobdirCorrupt`).
    """

    def __init__(self, crawler: Crawler | None = None) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def update_settings(self, settings: BaseSettings) -> None:
        config = PoolConfig.from_settings(settings)
        ladder = LadderConfig.from_settings(settings)  # its errors, loudly, at start
        if self.crawler is not None:
            check_pool_config(self.crawler, config)
        _check_paths(config, settings.get("JOBDIR"))
        if not config.endpoints:
            # with CDP_POOL_FALLBACK = "chromium", the Chromium of its rung too
            browsers = {config.browser, ladder.fallback or config.browser}
            try:
                for browser in sorted(browsers):
                    embedded_server(dataclasses.replace(config, browser=browser)).checked_binary()
            except ServerStartError as e:  # before the crawl, not at its first page
                raise ValueError(str(e)) from e
        reactor = settings.get("TWISTED_REACTOR")
        if settings.getbool("TWISTED_REACTOR_ENABLED", True) and reactor != ASYNCIO_REACTOR:
            raise ValueError(
                f"scrapy_cdp_pool needs TWISTED_REACTOR = {ASYNCIO_REACTOR!r} "
                f"(Scrapy's default); it is set to {reactor!r}"
            )
        handlers = settings.getwithbase("DOWNLOAD_HANDLERS")
        fallbacks: dict[str, Any] = {}
        for scheme in ("http", "https"):
            previous = handlers.get(scheme)
            if previous is not None and _path(previous) != HANDLER:
                fallbacks[scheme] = previous
        settings.set("CDP_POOL_FALLBACK_HANDLERS", fallbacks, "addon")
        download_handlers = settings["DOWNLOAD_HANDLERS"]
        if isinstance(download_handlers, BaseSettings):
            for scheme in ("http", "https"):
                # A handler the project set itself becomes the fallback: the
                # add-on's own wins at the project's priority.
                priority = max(
                    download_handlers.getpriority(scheme) or 0, SETTINGS_PRIORITIES["addon"]
                )
                download_handlers.set(scheme, HANDLER, priority)
        else:
            settings.set(
                "DOWNLOAD_HANDLERS",
                {**(download_handlers or {}), "http": HANDLER, "https": HANDLER},
                "addon",
            )
        settings.set("SCHEDULER_PRIORITY_QUEUE", PRIORITY_QUEUE, "addon")
        _warn_if_starved(settings, config, self.crawler)
        _wrap_cache_storage(settings)
        if settings.get("JOBDIR") and config.jobdir_durable:  # survives SIGKILL
            changes = durable_settings(settings)
            for name, value, priority in changes:
                settings.set(name, value, priority)
            if changes:  # refused now, not in the middle of the engine's start
                check_jobdir(str(settings.get("JOBDIR")))
        elif settings.get("JOBDIR"):
            refuse_durable_queue(str(settings.get("JOBDIR")))
        _add_component(settings, "DOWNLOADER_MIDDLEWARES", GATE_RELEASE_MIDDLEWARE, 950)
        _add_component(settings, "DOWNLOADER_MIDDLEWARES", PROFILE_MIDDLEWARE, 970)
        for setting, component, order in RESILIENCE_COMPONENTS:
            _add_component(settings, setting, component, order)
        _add_component(settings, "EXTENSIONS", BUDGET_EXTENSION, 0)
        extensions = settings["EXTENSIONS"]
        if isinstance(extensions, BaseSettings):
            extensions.set(EXTENSION, 500, "addon")
        else:
            settings.set("EXTENSIONS", {EXTENSION: 500, **(extensions or {})}, "addon")


def _warn_if_starved(settings: BaseSettings, config: PoolConfig, crawler: Crawler | None) -> None:
    """Warn when Scrapy's own limits let fewer requests in flight than the
    pool has slots (endpoints x connections x contexts per connection, the
    embedded server counting as one endpoint): the pool could never be full.
    Twice the slots keeps a request waiting whenever a slot frees (measured:
    the plugin did 141 pages/s on /products with CONCURRENT_REQUESTS equal
    to its slots, 165 with twice). Only a warning: raising them would also
    raise the concurrency of plain requests to each site."""
    slots = max(1, len(config.endpoints)) * config.connections * config.contexts_per_connection
    for name in ("CONCURRENT_REQUESTS", "CONCURRENT_REQUESTS_PER_DOMAIN"):
        value = settings.getint(name)
        if value < slots:
            logger.warning(
                "%s = %d is below the CDP pool's %d slots (CDP_POOL_CONNECTIONS = %d): at most "
                "%d pages render at once%s; set it to %d (twice the slots) to keep the pool fed",
                name, value, slots, config.connections, value,
                " per site" if name.endswith("_DOMAIN") else "", 2 * slots,
                extra={"crawler": crawler},
            )  # fmt: skip


def _wrap_cache_storage(settings: BaseSettings) -> None:
    """Keep rendered and plain responses apart in Scrapy's HTTP cache: the
    storage set so far is wrapped (see :mod:`scrapy_cdp_pool.httpcache`)."""
    current = settings.get("HTTPCACHE_STORAGE")
    if current is None or _path(current) == CACHE_STORAGE:
        return
    settings.set("CDP_POOL_HTTPCACHE_STORAGE", current, "addon")
    priority = max(settings.getpriority("HTTPCACHE_STORAGE") or 0, SETTINGS_PRIORITIES["addon"])
    settings.set("HTTPCACHE_STORAGE", CACHE_STORAGE, priority)


def _check_paths(config: PoolConfig, jobdir: Any) -> None:
    """:raises ValueError: naming the setting, the path and the OS's reason."""
    for name, path in (
        ("CDP_POOL_STATUS_FILE", config.status_file),
        ("CDP_POOL_FAILURES_FILE", config.failures_file),
    ):
        if path is not None:
            check_writable_file(name, path)
    if config.profiles_dir is not None:
        check_directory("CDP_POOL_PROFILES_DIR", config.profiles_dir)
    if config.snapshot_dir is not None:  # pages' HTML and screenshots: 0700
        make_private_directory("CDP_POOL_SNAPSHOT_DIR", config.snapshot_dir)
        check_directory("CDP_POOL_SNAPSHOT_DIR", config.snapshot_dir)
    if jobdir:  # Scrapy would create it 0755; it holds cookies and credentials
        make_private_directory("JOBDIR", str(jobdir))


def _add_component(settings: BaseSettings, name: str, path: str, order: int | None) -> None:
    components = settings[name]
    if isinstance(components, BaseSettings):
        if components.get(path) is None:
            components.set(path, order, "addon")
    else:
        settings.set(name, {path: order, **(components or {})}, "addon")


def _path(obj: Any) -> str:
    if isinstance(obj, str):
        return obj
    return f"{obj.__module__}.{obj.__qualname__}"
