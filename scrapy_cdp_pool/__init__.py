"""scrapy-cdp-pool: render Scrapy requests in headless browsers over a pool of
Chrome DevTools Protocol connections (Lightpanda, Chromium, remote endpoints).

The names below are imported on first use (``scrapy_cdp_pool.Addon``, ``from
scrapy_cdp_pool import Addon``): Scrapy's command line imports the package on
every ``scrapy`` command (its ``scrapy cdp-pool`` entry point), which should
cost little. Importing the package connects the warning about ``CDP_POOL_*``
settings set without the add-on (:mod:`scrapy_cdp_pool.settings.without_addon`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.settings import without_addon as _without_addon  # noqa: F401 (receiver)

if TYPE_CHECKING:
    from scrapy_cdp_pool.addon import Addon
    from scrapy_cdp_pool.browser.pool.pool import ConnectionPool
    from scrapy_cdp_pool.budget import ConcurrencyBudget
    from scrapy_cdp_pool.core.exit_status import exit_status
    from scrapy_cdp_pool.core.handler import CDPDownloadHandler
    from scrapy_cdp_pool.core.queue import IdentityAwarePriorityQueue, ProfileAwarePriorityQueue
    from scrapy_cdp_pool.profiles.middleware import ProfileMiddleware
    from scrapy_cdp_pool.settings.config import PoolConfig
    from scrapy_cdp_pool.telemetry import EngineStatusExtension

#: each public name and the module that defines it
_MODULES = {
    "Addon": "scrapy_cdp_pool.addon",
    "CDPDownloadHandler": "scrapy_cdp_pool.core.handler",
    "ConcurrencyBudget": "scrapy_cdp_pool.budget",
    "ConnectionPool": "scrapy_cdp_pool.browser.pool.pool",
    "EngineStatusExtension": "scrapy_cdp_pool.telemetry",
    "IdentityAwarePriorityQueue": "scrapy_cdp_pool.core.queue",
    "PoolConfig": "scrapy_cdp_pool.settings.config",
    "ProfileAwarePriorityQueue": "scrapy_cdp_pool.core.queue",
    "ProfileMiddleware": "scrapy_cdp_pool.profiles.middleware",
    "exit_status": "scrapy_cdp_pool.core.exit_status",
}

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


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562).

    :raises AttributeError: ``name`` is not one of :data:`__all__`.
    """
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
