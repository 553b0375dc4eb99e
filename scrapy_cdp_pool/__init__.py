"""scrapy-cdp-pool: render Scrapy requests in headless browsers over a pool of
Chrome DevTools Protocol connections (Lightpanda, Chromium, remote endpoints)."""

from scrapy_cdp_pool.addon import Addon
from scrapy_cdp_pool.browser.pool.pool import ConnectionPool
from scrapy_cdp_pool.budget import ConcurrencyBudget
from scrapy_cdp_pool.core.exit_status import exit_status
from scrapy_cdp_pool.core.handler import CDPDownloadHandler
from scrapy_cdp_pool.core.queue import IdentityAwarePriorityQueue, ProfileAwarePriorityQueue
from scrapy_cdp_pool.profiles.middleware import ProfileMiddleware
from scrapy_cdp_pool.settings.config import PoolConfig
from scrapy_cdp_pool.telemetry import EngineStatusExtension

__all__ = [
    "Addon",
    "CDPDownloadHandler",
    "ConcurrencyBudget",
    "ConnectionPool",
    "EngineStatusExtension",
    "IdentityAwarePriorityQueue",
    "PoolConfig",
    "ProfileAwarePriorityQueue",
    "ProfileMiddleware",
    "exit_status",
]
