"""scrapy-playwright's settings and meta keys, and what to use here instead.

A project moved from scrapy-playwright keeps its ``PLAYWRIGHT_*`` settings and ``playwright*``
meta keys by habit; this plugin reads none of them, so each would be silently ignored. The add-on
warns once at start for each such setting, and the handler once per crawl for each such meta key
on a rendered request, with the replacement from these tables. The tables come from
scrapy-playwright's README (its settings and "Supported Request.meta keys", 2026);
``docs/migrating-from-scrapy-playwright.md`` says the same at length, and a test checks that it
names every key here.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

logger = logging.getLogger(__name__)

MIGRATION_GUIDE = "docs/migrating-from-scrapy-playwright.md"
_CDP_NOT_PLAYWRIGHT = "a CDP endpoint in CDP_POOL_ENDPOINTS (not Playwright's own protocol)"

PLAYWRIGHT_SETTINGS: dict[str, str] = {
    "PLAYWRIGHT_BROWSER_TYPE": 'CDP_POOL_BROWSER ("lightpanda" or "chromium")',
    "PLAYWRIGHT_LAUNCH_OPTIONS": "CDP_POOL_CHROMIUM_ARGS (and _PATH), CDP_POOL_LIGHTPANDA_ARGS",
    "PLAYWRIGHT_CDP_URL": "CDP_POOL_ENDPOINTS",
    "PLAYWRIGHT_CDP_KWARGS": "CDP_POOL_CONNECT_TIMEOUT_SECONDS",
    "PLAYWRIGHT_CONNECT_URL": _CDP_NOT_PLAYWRIGHT,
    "PLAYWRIGHT_CONNECT_KWARGS": _CDP_NOT_PLAYWRIGHT,
    "PLAYWRIGHT_CONTEXTS": 'profiles: CDP_POOL_PROFILES_DIR and meta["cdp_profile"]',
    "PLAYWRIGHT_MAX_CONTEXTS": "CDP_POOL_CONNECTIONS x CDP_POOL_CONTEXTS_PER_CONNECTION",
    "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": "nothing: always one page per context",
    "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS (seconds)",
    "PLAYWRIGHT_DOWNLOAD_TIMEOUT": "DOWNLOAD_TIMEOUT (a file document comes back as its bytes)",
    "PLAYWRIGHT_ABORT_REQUEST": "CDP_POOL_BLOCK_RESOURCES and CDP_POOL_BLOCK_URLS",
    "PLAYWRIGHT_PROCESS_REQUEST_HEADERS": "the Scrapy request's own headers (on the navigation)",
    "PLAYWRIGHT_RESTART_DISCONNECTED_BROWSER": "nothing: the pool always restarts or reconnects",
}

PLAYWRIGHT_META_KEYS: dict[str, str] = {
    "playwright": 'meta["cdp"]',
    "playwright_page_methods": 'meta["cdp_actions"] (plain-data actions)',
    "playwright_include_page": 'meta["cdp_include_page"]',
    "playwright_page": 'response.meta["cdp_page"] (with meta["cdp_include_page"])',
    "playwright_page_goto_kwargs": 'meta["cdp_wait_until"] and meta["cdp_navigation_timeout"]',
    "playwright_context": 'meta["cdp_profile"]',
    "playwright_context_kwargs": 'meta["cdp_profile"] (a stored profile)',
    "playwright_page_event_handlers": 'meta["cdp_capture"], ["cdp_console"], ["cdp_dialogs"]',
    "playwright_page_init_callback": 'meta["cdp_init_scripts"]',
    "playwright_security_details": "nothing (not available)",
    "playwright_suggested_filename": "nothing: the body is the file, Content-Disposition kept",
}


def warn_playwright_settings(
    names: Iterable[str], *, extra: Mapping[str, Any] | None = None
) -> list[str]:
    """Log one WARNING per ``PLAYWRIGHT_*`` setting in ``names`` (a crawler's setting names),
    with its replacement. Returns the names warned about, sorted."""
    found = sorted(name for name in names if name.startswith("PLAYWRIGHT_"))
    for name in found:
        instead = PLAYWRIGHT_SETTINGS.get(name, f"nothing known; see {MIGRATION_GUIDE}")
        logger.warning(
            "%s is a scrapy-playwright setting: scrapy-cdp-pool ignores it; use %s instead (%s)",
            name,
            instead,
            MIGRATION_GUIDE,
            extra=extra,
        )
    return found


def warn_playwright_handler(
    scheme: str, handler_path: str, *, extra: Mapping[str, Any] | None = None
) -> bool:
    """Log a WARNING when the ``DOWNLOAD_HANDLERS`` entry the add-on keeps as the
    fallback of ``scheme`` is scrapy-playwright's: requests that are not rendered
    would then open its browser. Returns whether it warned."""
    if "scrapy_playwright" not in handler_path:
        return False
    logger.warning(
        "DOWNLOAD_HANDLERS[%r] is scrapy-playwright's handler (%s): the add-on keeps it for "
        "the requests it does not render, which would start Playwright's browser; remove the "
        "entry to use Scrapy's own HTTP handler (%s)",
        scheme,
        handler_path,
        MIGRATION_GUIDE,
        extra=extra,
    )
    return True


class PlaywrightMetaWarner:
    """Warns once per crawl for each ``playwright*`` meta key seen on a rendered request.

    ``check(meta)`` costs one pass over the meta's keys (a handful) per rendered request.
    """

    def __init__(self, *, extra: Mapping[str, Any] | None = None) -> None:
        self._seen: set[str] = set()
        self._extra = extra

    def check(self, meta: Mapping[str, Any]) -> None:
        """Warn for the ``playwright*`` keys of ``meta`` not warned about yet in this crawl."""
        for key in meta:
            if key.startswith("playwright") and key not in self._seen:
                self._seen.add(key)
                instead = PLAYWRIGHT_META_KEYS.get(key, f"nothing known; see {MIGRATION_GUIDE}")
                logger.warning(
                    "meta[%r] is a scrapy-playwright key: scrapy-cdp-pool ignores it; "
                    "use %s instead (%s)",
                    key,
                    instead,
                    MIGRATION_GUIDE,
                    extra=self._extra,
                )
