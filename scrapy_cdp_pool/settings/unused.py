"""A browser setting the crawl has no use for: warned about once, at start.

``CDP_POOL_CHROMIUM_PATH`` and ``CDP_POOL_CHROMIUM_ARGS`` are read only by an
embedded Chromium (``CDP_POOL_BROWSER = "chromium"``, or the render ladder's
Chromium rung, ``CDP_POOL_FALLBACK = "chromium"``), and by the sign-in hooks
when they run on that Chromium; ``CDP_POOL_LIGHTPANDA_PATH`` and
``CDP_POOL_LIGHTPANDA_ARGS`` only by an embedded Lightpanda. With
``CDP_POOL_ENDPOINTS`` no embedded server starts at all. Set on a crawl that
starts none of them, they did nothing without a word (a Chromium path on a
Lightpanda crawl); read by the add-on with the rest of the settings.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings

if TYPE_CHECKING:
    from scrapy_cdp_pool.settings.config import PoolConfig

logger = logging.getLogger(__name__)

#: (setting, the embedded browser that reads it)
BROWSER_SETTINGS = (
    ("CDP_POOL_CHROMIUM_PATH", "chromium"),
    ("CDP_POOL_CHROMIUM_ARGS", "chromium"),
    ("CDP_POOL_LIGHTPANDA_PATH", "lightpanda"),
    ("CDP_POOL_LIGHTPANDA_ARGS", "lightpanda"),
)


def embedded_browsers(config: PoolConfig) -> frozenset[str]:
    """The embedded servers the crawl may start: its browser, and the
    ladder's Chromium rung; none with ``CDP_POOL_ENDPOINTS``."""
    if config.endpoints:
        return frozenset()
    return frozenset({config.browser, config.ladder.fallback or config.browser})


def unused_browser_settings(settings: BaseSettings, config: PoolConfig) -> list[str]:
    """The :data:`BROWSER_SETTINGS` the project, command line or spider set
    (above Scrapy's default priority, to a value: ``None`` and ``[]`` mean
    unset) that no embedded server of this crawl reads."""
    started = embedded_browsers(config)
    return [
        name
        for name, browser in BROWSER_SETTINGS
        if browser not in started
        and (settings.getpriority(name) or 0) > SETTINGS_PRIORITIES["default"]
        and settings.get(name) not in (None, "", [], ())
    ]


def warn_unused_browser_settings(
    settings: BaseSettings, config: PoolConfig, extra: dict[str, Any] | None = None
) -> None:
    """One WARNING per setting :func:`unused_browser_settings` finds, naming
    it and what would use it."""
    if config.endpoints:
        why = "CDP_POOL_ENDPOINTS is set, so the crawl starts no embedded browser"
    else:
        why = f"the crawl starts only an embedded {' and '.join(sorted(embedded_browsers(config)))}"
    for name in unused_browser_settings(settings, config):
        browser = dict(BROWSER_SETTINGS)[name]
        if browser == "chromium":
            users = (
                'an embedded Chromium reads it: CDP_POOL_BROWSER = "chromium", or the render '
                'ladder\'s Chromium rung, CDP_POOL_FALLBACK = "chromium" (and the sign-in hooks '
                "run on that Chromium)"
            )
        else:
            users = 'the embedded Lightpanda reads it: CDP_POOL_BROWSER = "lightpanda"'
        logger.warning("%s is set but not used: %s; %s", name, why, users, extra=extra)
