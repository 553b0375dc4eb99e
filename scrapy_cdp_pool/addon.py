"""Addon: the one line a user adds, ``ADDONS = {"scrapy_cdp_pool.Addon": 0}``."""

from __future__ import annotations

import dataclasses
import logging
import sys
from typing import TYPE_CHECKING, Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.utils.misc import load_object

from scrapy_cdp_pool import scrapy_internals
from scrapy_cdp_pool.browser.pool.servers import embedded_server
from scrapy_cdp_pool.cluster.feed import feed_key_for
from scrapy_cdp_pool.cluster.install import (
    HOST_PAUSE_MIDDLEWARE,
    LOCAL_HOST_PAUSE_MIDDLEWARE,
    check_redis,
    cluster_settings,
)
from scrapy_cdp_pool.cluster.ops_keys import cluster_prefix
from scrapy_cdp_pool.core.handler import RENDERED_SCHEMES
from scrapy_cdp_pool.core.playwright_keys import warn_playwright_handler, warn_playwright_settings
from scrapy_cdp_pool.core.runtime import CrawlerRuntime, RuntimeOwner
from scrapy_cdp_pool.core.start_refusal import refusals_reported
from scrapy_cdp_pool.errors import ServerStartError
from scrapy_cdp_pool.jobdir.install import durable_settings, refuse_durable_queue
from scrapy_cdp_pool.jobdir.store import check_jobdir
from scrapy_cdp_pool.ladder.make import provide_ladder
from scrapy_cdp_pool.profiles.registry import provide_profiles
from scrapy_cdp_pool.settings.config import PoolConfig
from scrapy_cdp_pool.settings.unused import warn_unused_browser_settings
from scrapy_cdp_pool.shared.paths import (
    check_directory,
    check_writable_file,
    make_private_directory,
)

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

HANDLER = "scrapy_cdp_pool.core.handler.CDPDownloadHandler"
PRIORITY_QUEUE = "scrapy_cdp_pool.core.queue.ProfileAwarePriorityQueue"
GATE_RELEASE_MIDDLEWARE = "scrapy_cdp_pool.core.release.GateReleaseMiddleware"
LIVE_PAGE_FATE_MIDDLEWARE = "scrapy_cdp_pool.core.live_page_fate.LivePageFateMiddleware"
PROFILE_MIDDLEWARE = "scrapy_cdp_pool.profiles.middleware.ProfileMiddleware"
EXTENSION = "scrapy_cdp_pool.telemetry.EngineStatusExtension"
CACHE_STORAGE = "scrapy_cdp_pool.httpcache.RenderAwareCacheStorage"
BUDGET_EXTENSION = "scrapy_cdp_pool.budget.extension.BudgetExtension"
# Operations (docs/cluster.md, docs/telemetry.md): each only with its setting.
SHARED_PROFILES_MIDDLEWARE = "scrapy_cdp_pool.cluster.profile_hook.SharedProfilesMiddleware"
FLEET_BUDGET_EXTENSION = "scrapy_cdp_pool.cluster.budget_extension.FleetBudgetExtension"
POISON_MIDDLEWARE = "scrapy_cdp_pool.cluster.poison.PoisonedRequestMiddleware"
METRICS_EXTENSION = "scrapy_cdp_pool.telemetry.metrics.MetricsExtension"
SCRAPY_RETRY_MIDDLEWARE = "scrapy.downloadermiddlewares.retry.RetryMiddleware"
SCRAPY_SPIDER_STATE = "scrapy.extensions.spiderstate.SpiderState"
#: Scrapy's ``SpiderState`` with the durable JOBDIR: written whole, a refused
#: write reported as a disk's (jobdir/spider_state.py)
SPIDER_STATE = "scrapy_cdp_pool.jobdir.spider_state.DurableSpiderState"
RETRY_POLICY_MIDDLEWARE = "scrapy_cdp_pool.resilience.RetryPolicyMiddleware"
#: (setting, component, order) the add-on adds unless the project set the
#: component itself (to an order, or to None to disable it)
COMPONENTS = (
    ("DOWNLOADER_MIDDLEWARES", POISON_MIDDLEWARE, 510),
    ("DOWNLOADER_MIDDLEWARES", "scrapy_cdp_pool.resilience.RequestChecksMiddleware", 530),
    ("DOWNLOADER_MIDDLEWARES", "scrapy_cdp_pool.resilience.FailureRecorderMiddleware", 540),
    ("DOWNLOADER_MIDDLEWARES", RETRY_POLICY_MIDDLEWARE, 550),
    ("DOWNLOADER_MIDDLEWARES", GATE_RELEASE_MIDDLEWARE, 950),
    ("DOWNLOADER_MIDDLEWARES", "scrapy_cdp_pool.resilience.HostPauseMiddleware", 960),
    ("DOWNLOADER_MIDDLEWARES", PROFILE_MIDDLEWARE, 970),
    # innermost: sees only the responses that reach the callback
    ("SPIDER_MIDDLEWARES", LIVE_PAGE_FATE_MIDDLEWARE, 10000),
    ("EXTENSIONS", "scrapy_cdp_pool.resilience.HostLimits", 0),
    ("EXTENSIONS", BUDGET_EXTENSION, 0),
    ("EXTENSIONS", EXTENSION, 500),
    ("DOWNLOADER_MIDDLEWARES", SHARED_PROFILES_MIDDLEWARE, 965),
    ("EXTENSIONS", FLEET_BUDGET_EXTENSION, 0),
    ("EXTENSIONS", METRICS_EXTENSION, 510),  # after the status extension (500)
)
ASYNCIO_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
#: Scrapy's http/https handler without a Twisted reactor (``TWISTED_REACTOR_ENABLED
#: = False``): Scrapy writes it into ``DOWNLOAD_HANDLERS_BASE`` at the project's
#: priority after the add-ons ran, so the add-on's own entry must be at least there
AIOHTTP_HANDLER = "scrapy.core.downloader.handlers._aiohttp.AiohttpDownloadHandler"


class Addon(RuntimeOwner):
    """Installs :class:`~scrapy_cdp_pool.CDPDownloadHandler` for ``http`` and
    ``https`` and keeps the handlers that were there before as the fallback for
    requests that are not rendered (``CDP_POOL_FALLBACK_HANDLERS``).

    :raises ValueError: at start-up, when ``TWISTED_REACTOR`` is not the asyncio
        reactor (the pool runs on the asyncio event loop; without a reactor,
        ``TWISTED_REACTOR_ENABLED = False``, it runs on Scrapy's loop, with
        Scrapy's aiohttp handler as the fallback), a ``CDP_POOL_*``
        setting is invalid (the message names it), or the embedded server's
        binary is missing (``CDP_POOL_CHROMIUM_PATH``,
        ``CDP_POOL_LIGHTPANDA_PATH``, the ``lightpanda`` package). Scrapy only
        logs a download handler's own start-up errors, so they are raised
        here, loudly (one ERROR line on Scrapy's asyncio loop:
        :mod:`~scrapy_cdp_pool.core.start_refusal`); so is a crawler whose
        pool settings differ from those of the pool it would share
        (``CDP_POOL_NAME``), a file or directory setting that cannot be used
        (``CDP_POOL_STATUS_FILE``, ``CDP_POOL_FAILURES_FILE``,
        ``CDP_POOL_PROFILES_DIR``, ``JOBDIR``: the message names the setting,
        the path and the OS's reason).
    :raises JobdirError: with the durable JOBDIR, another crawl holds the
        JOBDIR (:class:`~scrapy_cdp_pool.jobdir.JobdirLocked`) or its database
        is damaged, empty or not this plugin's
        (:class:`~scrapy_cdp_pool.jobdir.JobdirCorrupt`).

    Built by Scrapy with the crawler, it reads the settings once
    (:class:`PoolConfig`) and makes the crawler's
    :class:`~scrapy_cdp_pool.core.runtime.CrawlerRuntime` (:attr:`runtime`), which
    the plugin's components take in their ``from_crawler``
    (:func:`~scrapy_cdp_pool.core.runtime.runtime_of`).
    """

    def __init__(self, crawler: Crawler | None = None) -> None:
        self.crawler = crawler
        self.runtime: CrawlerRuntime | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def update_settings(self, settings: BaseSettings) -> None:
        with refusals_reported(self.crawler):  # one ERROR line, not asyncio's traceback
            self._update_settings(settings)

    def _update_settings(self, settings: BaseSettings) -> None:
        scrapy_internals.check()
        config = PoolConfig.from_settings(settings)
        extra = {"crawler": self.crawler} if self.crawler is not None else None
        warn_playwright_settings(settings, extra=extra)
        warn_unused_browser_settings(settings, config, extra=extra)
        if self.crawler is not None:
            runtime = CrawlerRuntime(self.crawler, config)
            provide_profiles(runtime)  # the parts the core calls, made on first use
            provide_ladder(runtime)
            runtime.check_pool()
            self.runtime = runtime
        _check_paths(config, settings.get("JOBDIR"))
        _check_binaries(config)
        reactor = settings.get("TWISTED_REACTOR")
        if settings.getbool("TWISTED_REACTOR_ENABLED", True) and reactor != ASYNCIO_REACTOR:
            raise ValueError(
                f"scrapy_cdp_pool needs TWISTED_REACTOR = {ASYNCIO_REACTOR!r} "
                f"(Scrapy's default); it is set to {reactor!r}"
            )
        _install_handler(settings, extra)
        _set_priority_queue(settings, self.crawler)
        _warn_if_starved(settings, config, self.crawler)
        _wrap_cache_storage(settings)
        _install_scheduler(settings, config, self.crawler)
        _install_components(
            settings,
            cluster=config.cluster.redis_url is not None,
            metrics=config.telemetry.metrics_port is not None,
        )


def _check_binaries(config: PoolConfig) -> None:
    """:raises ValueError: an embedded server's binary is missing (with
    ``CDP_POOL_FALLBACK = "chromium"``, the Chromium of its rung too), or
    cannot be started here: on Windows, which has no process groups and no
    descriptors handed to a child, only remote endpoints serve."""
    if config.endpoints:
        return
    if sys.platform == "win32":
        raise ValueError(
            f"CDP_POOL_BROWSER = {config.browser!r}: the embedded servers need a POSIX "
            "system (Linux, macOS); on Windows start Chromium with "
            "--remote-debugging-port=9222 and set "
            'CDP_POOL_ENDPOINTS = ["http://127.0.0.1:9222"]'
        )
    browsers = {config.browser, config.ladder.fallback or config.browser}
    try:
        for browser in sorted(browsers):
            embedded_server(dataclasses.replace(config, browser=browser)).checked_binary()
    except ServerStartError as e:  # before the crawl, not at its first page
        raise ValueError(str(e)) from None  # the message says it all


def _install_handler(settings: BaseSettings, extra: dict[str, Any] | None) -> None:
    """The add-on's handler for http and https; the handlers that were there
    before are kept as the fallback (``CDP_POOL_FALLBACK_HANDLERS``)."""
    handlers = settings.getwithbase("DOWNLOAD_HANDLERS")
    reactorless = not settings.getbool("TWISTED_REACTOR_ENABLED", True)
    fallbacks: dict[str, Any] = {}
    for scheme in RENDERED_SCHEMES:
        previous = handlers.get(scheme)
        if reactorless and scheme not in settings.getdict("DOWNLOAD_HANDLERS"):
            previous = AIOHTTP_HANDLER  # what Scrapy's reactorless defaults install
        if previous is not None and _path(previous) != HANDLER:
            fallbacks[scheme] = previous
            warn_playwright_handler(scheme, _path(previous), extra=extra)
    settings.set("CDP_POOL_FALLBACK_HANDLERS", fallbacks, "addon")
    download_handlers = settings["DOWNLOAD_HANDLERS"]
    if isinstance(download_handlers, BaseSettings):
        for scheme in RENDERED_SCHEMES:
            # A handler the project set itself becomes the fallback: the
            # add-on's own wins at the project's priority (at least: Scrapy's
            # reactorless defaults are written there, see AIOHTTP_HANDLER).
            priority = max(
                download_handlers.getpriority(scheme) or 0, SETTINGS_PRIORITIES["project"]
            )
            download_handlers.set(scheme, HANDLER, priority)
    else:
        settings.set(
            "DOWNLOAD_HANDLERS",
            {**(download_handlers or {}), "http": HANDLER, "https": HANDLER},
            "addon",
        )


def _install_scheduler(
    settings: BaseSettings, config: PoolConfig, crawler: Crawler | None = None
) -> None:
    """The cluster's scheduler (one crawl over many workers), or the durable
    JOBDIR's (survives SIGKILL), as the settings ask."""
    if config.cluster.redis_url is not None:
        for name, value, priority in cluster_settings(settings):
            settings.set(name, value, priority)
        feed_key = prefix = None
        if crawler is not None:
            feed_key = feed_key_for(crawler.spidercls, settings, config.cluster.feed_key)
            prefix = cluster_prefix(config, crawler)
        check_redis(config.cluster.redis_url, feed_key, prefix)
    elif settings.get("JOBDIR") and config.jobdir.durable:
        changes = durable_settings(settings)
        for name, value, priority in changes:
            settings.set(name, value, priority)
        if changes:  # refused now, not in the middle of the engine's start
            check_jobdir(str(settings.get("JOBDIR")))
            _replace_component(settings, "EXTENSIONS", SCRAPY_SPIDER_STATE, SPIDER_STATE)
    elif settings.get("JOBDIR"):
        refuse_durable_queue(str(settings.get("JOBDIR")))


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
                "%d %s at once%s; set it to %d (twice the slots) to keep the pool fed",
                name,
                value,
                slots,
                config.connections,
                value,
                "page renders" if value == 1 else "pages render",
                " per site" if name.endswith("_DOMAIN") else "",
                2 * slots,
                extra={"crawler": crawler},
            )


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
        ("CDP_POOL_STATUS_FILE", config.telemetry.status_file),
        ("CDP_POOL_FAILURES_FILE", config.resilience.failures_file),
    ):
        if path is not None:
            check_writable_file(name, path)
    if config.profiles.dir is not None:
        check_directory("CDP_POOL_PROFILES_DIR", config.profiles.dir)
    if config.snapshot_dir is not None:  # pages' HTML and screenshots: 0700
        make_private_directory("CDP_POOL_SNAPSHOT_DIR", config.snapshot_dir)
        check_directory("CDP_POOL_SNAPSHOT_DIR", config.snapshot_dir)
    if jobdir:  # Scrapy would create it 0755; it holds cookies and credentials
        make_private_directory("JOBDIR", str(jobdir))


#: components added only with their feature on (CDP_POOL_CLUSTER_REDIS_URL,
#: CDP_POOL_METRICS_PORT): a crawl without them never imports redis-py or
#: prometheus_client, not even to find the component's class
_CLUSTER_ONLY = (SHARED_PROFILES_MIDDLEWARE, FLEET_BUDGET_EXTENSION, POISON_MIDDLEWARE)


def _install_components(
    settings: BaseSettings, *, cluster: bool = False, metrics: bool = False
) -> None:
    """Add the plugin's middlewares and extensions, each at its order unless
    the project set it itself (to another order, or None to disable it).
    Scrapy's ``RetryMiddleware`` is replaced by ``RetryPolicyMiddleware``
    (a subclass): at the project's order if the project lists it, and
    disabled in Scrapy's base list, so that a request is retried once per
    failure, not twice. In a cluster crawl host pauses are the fleet's
    (:class:`~scrapy_cdp_pool.cluster.host_pause.ClusterHostPauseMiddleware`)."""
    name = "DOWNLOADER_MIDDLEWARES"
    scrapy_retry = load_object(SCRAPY_RETRY_MIDDLEWARE)
    policy = load_object(RETRY_POLICY_MIDDLEWARE)
    listed = {load_object(key): order for key, order in settings.getdict(name).items()}
    if listed.get(scrapy_retry) is not None and policy not in listed:
        settings.replace_in_component_priority_dict(name, scrapy_retry, policy)
    for setting, path, order in COMPONENTS:
        if (path in _CLUSTER_ONLY and not cluster) or (path == METRICS_EXTENSION and not metrics):
            continue
        if cluster and path == LOCAL_HOST_PAUSE_MIDDLEWARE:
            path = HOST_PAUSE_MIDDLEWARE
        settings.setdefault_in_component_priority_dict(setting, load_object(path), order)
    settings.set_in_component_priority_dict(name, scrapy_retry, None)


def _replace_component(settings: BaseSettings, name: str, theirs: str, ours: str) -> None:
    """Scrapy's component ``theirs`` (in ``name`` or its ``_BASE``) replaced
    by ``ours`` at the same order; a project that disabled it (None) or
    listed ``ours`` keeps its choice."""
    scrapy_class, our_class = load_object(theirs), load_object(ours)
    listed = {load_object(key): order for key, order in settings.getdict(name).items()}
    if our_class in listed or (scrapy_class in listed and listed[scrapy_class] is None):
        return
    base = {load_object(key): order for key, order in settings.getdict(f"{name}_BASE").items()}
    order = listed.get(scrapy_class, base.get(scrapy_class))
    if order is None:
        return
    settings.set_in_component_priority_dict(name, scrapy_class, None)
    settings.set_in_component_priority_dict(name, our_class, order)


def _set_priority_queue(settings: BaseSettings, crawler: Crawler | None) -> None:
    """Install :data:`PRIORITY_QUEUE`, unless the project set a
    ``SCHEDULER_PRIORITY_QUEUE`` of its own: that one is kept, with a warning
    saying what it disables."""
    current = settings.get("SCHEDULER_PRIORITY_QUEUE")
    ours = load_object(PRIORITY_QUEUE)
    chosen = (settings.getpriority("SCHEDULER_PRIORITY_QUEUE") or 0) > SETTINGS_PRIORITIES[
        "default"
    ]
    if not chosen or current is None:
        settings.set("SCHEDULER_PRIORITY_QUEUE", PRIORITY_QUEUE, "addon")
        return
    cls = load_object(current)
    if isinstance(cls, type) and issubclass(cls, ours):
        return
    logger.warning(
        "SCHEDULER_PRIORITY_QUEUE = %r is kept (the project set it), in place of %s: "
        "requests of one profile (meta['cdp_profile']) may be in flight at once, and "
        "retry backoff (meta['cdp_not_before']), host pauses after 429/Retry-After and "
        "CDP_POOL_HOST_CONCURRENCY / CDP_POOL_HOST_RATE no longer hold requests in the queue",
        _path(current),
        PRIORITY_QUEUE,
        extra={"crawler": crawler},
    )


def _path(obj: Any) -> str:
    if isinstance(obj, str):
        return obj
    return f"{obj.__module__}.{obj.__qualname__}"
