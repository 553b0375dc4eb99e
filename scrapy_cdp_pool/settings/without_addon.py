"""A ``CDP_POOL_*`` setting set while the add-on is not enabled: warned about
once per crawler (a project that followed docs/cluster.md literally, when it
left the ``ADDONS`` line out, had ``CDP_POOL_CLUSTER_REDIS_URL`` ignored
without a word).

Scrapy loads nothing of a package whose add-on is not in ``ADDONS``, so the
check cannot be one of the add-on's components. Importing this module
connects one receiver to Scrapy's ``engine_started`` signal for every sender
(pydispatcher's ``Any``: Scrapy's ``send_catch_log`` collects those
receivers too, ``scrapy/utils/signal.py``), and two things import it:

- Scrapy's command line, on every ``scrapy`` command: it loads each
  ``scrapy.commands`` entry point, and the package registers one
  (``scrapy cdp-pool``, :mod:`scrapy_cdp_pool.tools.scrapy_command`);
- ``import scrapy_cdp_pool`` (its ``__init__``), for a script that runs a
  ``CrawlerProcess`` and imports the package at all.

A script that never imports the package gets no warning (docs/install.md).
The receiver runs once per crawler, at the engine's start, and reads the
crawler's settings there: nothing per request or page.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pydispatch import dispatcher
from scrapy import signals
from scrapy.settings import SETTINGS_PRIORITIES

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

ADDON_LINE = 'ADDONS = {"scrapy_cdp_pool.Addon": 0}'
#: what names one of the package's classes (the add-on, the download handler)
_OURS = "scrapy_cdp_pool."


def settings_without_addon(crawler: Crawler) -> list[str]:
    """The ``CDP_POOL_*`` settings the crawler's project, command line or
    spider set (any priority above Scrapy's defaults), sorted, when neither
    the add-on (``ADDONS``) nor the plugin's download handler (set by hand
    in ``DOWNLOAD_HANDLERS``) is installed; ``[]`` otherwise."""
    settings = crawler.settings
    named = sorted(
        name
        for name in settings
        if isinstance(name, str)
        and name.startswith("CDP_POOL_")
        and (settings.getpriority(name) or 0) > SETTINGS_PRIORITIES["default"]
    )
    if not named:
        return []
    addons = getattr(crawler, "addons", None)
    if any(_is_ours(addon) for addon in getattr(addons, "addons", ())):
        return []
    handlers = settings.getwithbase("DOWNLOAD_HANDLERS")
    if any(_is_ours(handler) for handler in handlers.values()):
        return []
    return named


def warn_without_addon(sender: Any) -> None:
    """The ``engine_started`` receiver: ``sender`` is the crawler whose
    engine started (Scrapy's ``SignalManager`` sends with its crawler)."""
    crawler = sender
    if getattr(crawler, "settings", None) is None:
        return  # a signal sent by something other than a crawler
    named = settings_without_addon(crawler)
    if named:
        logger.warning(
            "%s %s set but the scrapy_cdp_pool add-on is not enabled, so %s nothing and "
            "no request is rendered; enable it in the project's settings: %s",
            ", ".join(named),
            "is" if len(named) == 1 else "are",
            "it does" if len(named) == 1 else "they do",
            ADDON_LINE,
            extra={"crawler": crawler},
        )


def _is_ours(obj: Any) -> bool:
    if isinstance(obj, str):
        return obj.startswith(_OURS)
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.".startswith(_OURS)


# One receiver for the process (connecting it again is a no-op); weak=False:
# the dispatcher holds the function itself.
dispatcher.connect(warn_without_addon, signal=signals.engine_started, weak=False)
