"""The JavaScript heap ceiling of the browsers the plugin starts
(``CDP_POOL_PAGE_HEAP_LIMIT_MB``), and how a page that reached it is told
from other crashes.

- Lightpanda: ``--v8-max-heap-mb N`` (per browser instance, that is per CDP
  connection). A page that reaches it is stopped: the server logs
  ``"JS heap limit reached"`` and a ``"JS heap limit script"`` line with the
  page's URL on stderr (read by :mod:`~scrapy_cdp_pool.browser.pool.lightpanda_reports`),
  and closes that page's connection; the server and its other connections go on.
- Chromium: ``--js-flags=--max-old-space-size=N`` (per renderer). The page's
  renderer crashes (``Inspector.targetCrashed``); the browser and other pages
  go on. Chromium does not say why a renderer crashed, so every crash of a
  page on a capped embedded Chromium is reported as over the ceiling.

Remote endpoints (``CDP_POOL_ENDPOINTS``) are started by someone else: no
ceiling is set there, and their crashes stay :class:`PageCrashed`.
"""

from __future__ import annotations

from scrapy_cdp_pool.browser.backends import Backend
from scrapy_cdp_pool.settings.config import PoolConfig


def heap_limit_args(config: PoolConfig, backend: Backend) -> list[str]:
    """The command-line arguments that cap a started ``backend`` server's
    JavaScript heap at ``config.page_heap_limit_mb`` MB
    (:meth:`Backend.heap_limit_args <scrapy_cdp_pool.browser.backends.Backend.heap_limit_args>`);
    none when the setting is ``None`` or the user's own arguments
    (``CDP_POOL_LIGHTPANDA_ARGS`` / ``CDP_POOL_CHROMIUM_ARGS``) already set one."""
    limit = config.page_heap_limit_mb
    if limit is None:
        return []
    return backend.heap_limit_args(limit, backend.user_args(config))
