"""scrapy-cdp-pool: render Scrapy requests in headless browsers over a pool of
Chrome DevTools Protocol connections (Lightpanda, Chromium, remote endpoints)."""

from scrapy_cdp_pool.addon import Addon
from scrapy_cdp_pool.budget import ConcurrencyBudget
from scrapy_cdp_pool.config import PoolConfig
from scrapy_cdp_pool.handler import CDPDownloadHandler
from scrapy_cdp_pool.identity.middleware import ProfileMiddleware
from scrapy_cdp_pool.pool.pool import ConnectionPool
from scrapy_cdp_pool.scheduling.queue import IdentityAwarePriorityQueue
from scrapy_cdp_pool.telemetry import EngineStatusExtension

__all__ = [
    "Addon",
    "CDPDownloadHandler",
    "ConcurrencyBudget",
    "ConnectionPool",
    "EngineStatusExtension",
    "IdentityAwarePriorityQueue",
    "PoolConfig",
    "ProfileMiddleware",
]
