"""This plugin (scrapy-cdp-pool): the Scrapy crawl with ADDONS = {"scrapy_cdp_pool.Addon": 0}
and meta {"cdp": True}, on its embedded Lightpanda or Chromium, or (with --endpoint) on a
server the harness started, through CDP_POOL_ENDPOINTS."""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any

from _common import REPO_ROOT, emit, parser
from _scrapy import crawl

#: default features a run may switch off (``--off NAME``), each by its setting
#: where it has one; the rest are benchmark-only patches of the one call that
#: does the feature's work per page
FEATURES: dict[str, dict[str, Any]] = {
    "private_network": {"CDP_POOL_ALLOW_PRIVATE_NETWORKS": True},
    "shadow_roots": {"CDP_POOL_SHADOW_ROOTS": "none"},
    "cookies": {"COOKIES_ENABLED": False},  # no jar: no cookie read-back per page
    "http_cache": {"CDP_POOL_HTTP_CACHE": False},
    "telemetry": {"EXTENSIONS": {"scrapy_cdp_pool.telemetry.EngineStatusExtension": None}},
    "download_signals": {},  # patched below
    "render_stats": {},  # patched below
    "cache_guard": {},  # patched below: kept pages' subresources not paused at the response
    # kept pages (Chromium), each patched below: no storage clearing between requests; no
    # stop at about:blank (a kept page is navigated straight to the next URL). Both are
    # what makes a kept page as clean as a fresh context: measured here, never skipped
    "page_cleaning": {},
    "page_stop": {},
    # Chromium: no Network domain (its events carry the document's Set-Cookie
    # headers there): patched below, measured here, never skipped
    "network_events": {},
}


def _replace(owner: Any, name: str, make: Any, keyword: str = "") -> None:
    """Replace ``owner.name`` with ``make(original)``; fails at once when the
    render path moved (no such name, or no such ``keyword`` argument), so a
    patch can never silently measure nothing."""
    original = getattr(owner, name)  # AttributeError: the function moved
    if keyword and keyword not in inspect.signature(original).parameters:
        raise TypeError("%s.%s takes no %r argument" % (owner.__name__, name, keyword))
    setattr(owner, name, make(original))


def _with(keyword: str, value: Any) -> Any:
    """A wrapper factory: the coroutine function called with ``keyword=value``."""

    def make(original: Any) -> Any:
        @functools.wraps(original)  # its signature, for the next patch's check
        async def called(*args: Any, **kwargs: Any) -> Any:
            return await original(*args, **{**kwargs, keyword: value})

        return called

    return make


def patch_off(feature: str) -> None:
    """Switch off a default feature that has no setting (benchmark only).

    :raises AttributeError, TypeError: the call it patches is no longer where
        the render path calls it (tests/unit/test_benchmarks_run.py)."""
    if feature == "download_signals":
        from scrapy_cdp_pool.core import rendering

        _replace(
            rendering,
            "send_download_signals",
            lambda _: lambda crawler, request, response: response,
        )
    elif feature == "render_stats":
        from scrapy_cdp_pool.core.render_stats import RenderStats

        _replace(RenderStats, "result", lambda _: lambda self, *args, **kwargs: None)
    elif feature in ("cache_guard", "network_events"):
        from scrapy_cdp_pool.render._request import opening

        if feature == "cache_guard":
            for name in ("open_page", "take_over_page"):
                _replace(opening, name, _with("guard_cache", False), "guard_cache")
        else:
            _replace(opening, "open_page", _with("network_events", False), "network_events")
    elif feature == "page_cleaning":
        from scrapy_cdp_pool.browser.pool import page_reuse

        async def cleaned(*args: Any, **kwargs: Any) -> bool:
            return True

        _replace(page_reuse, "clean_for_reuse", lambda _: cleaned)
    elif feature == "page_stop":
        from scrapy_cdp_pool.browser.pool import page_reuse

        async def stopped(cdp: Any, session_id: str, loading: Any, timeout_s: float,
                          alongside: Any = None) -> bool:  # fmt: skip
            if alongside is not None:
                await alongside
            return True

        _replace(page_reuse, "stop_page", lambda _: stopped)


if __name__ == "__main__":
    ap = parser(__doc__)
    ap.add_argument("--browser", choices=("lightpanda", "chromium"), default="lightpanda")
    ap.add_argument("--block", default="", help="CDP_POOL_BLOCK_RESOURCES, comma-separated")
    ap.add_argument("--wait-until", default="", help="CDP_POOL_WAIT_UNTIL (default: the plugin's)")
    ap.add_argument("--no-http-cache", action="store_true", help="CDP_POOL_HTTP_CACHE = False")
    ap.add_argument(
        "--shadow-roots", default="", help="CDP_POOL_SHADOW_ROOTS (default: the plugin's)"
    )
    ap.add_argument("--chromium-path", default="", help="CDP_POOL_CHROMIUM_PATH")
    ap.add_argument("--fresh-contexts", action="store_true", help="CDP_POOL_REUSE_PAGES = False")
    ap.add_argument(
        "--off",
        default="",
        help="comma-separated default features to switch off: %s" % ", ".join(FEATURES),
    )
    ap.add_argument(
        "--defaults",
        action="store_true",
        help="leave CDP_POOL_CONNECTIONS and CONCURRENT_REQUESTS* unset (a new user's crawl)",
    )
    args = ap.parse_args()
    # An installed scrapy_cdp_pool (or one on PYTHONPATH) wins; else the repository's.
    sys.path.append(str(REPO_ROOT))
    try:
        import scrapy_cdp_pool  # noqa: F401
    except Exception as e:  # noqa: BLE001 - the package may not import yet: report it
        emit("error", message="import scrapy_cdp_pool: %s: %s" % (type(e).__name__, e))
        sys.exit(2)
    settings = {
        "ADDONS": {"scrapy_cdp_pool.Addon": 0},
        "CDP_POOL_BROWSER": args.browser,
        "CDP_POOL_CONNECTIONS": args.concurrency,
        # Twice the pool's slots (Scrapy's defaults, 16 and 8 per domain, are
        # more): a request is always waiting when a slot frees, so no slot idles
        # while Scrapy handles a response.
        "CONCURRENT_REQUESTS": 2 * args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2 * args.concurrency,
    }
    if args.defaults:
        for name in (
            "CDP_POOL_CONNECTIONS",
            "CONCURRENT_REQUESTS",
            "CONCURRENT_REQUESTS_PER_DOMAIN",
        ):
            del settings[name]
    if args.endpoint:
        settings["CDP_POOL_ENDPOINTS"] = [args.endpoint]
    if args.wait_until:
        settings["CDP_POOL_WAIT_UNTIL"] = args.wait_until
    if args.fresh_contexts:
        settings["CDP_POOL_REUSE_PAGES"] = False
    if args.no_http_cache:
        settings["CDP_POOL_HTTP_CACHE"] = False
    if args.shadow_roots:
        settings["CDP_POOL_SHADOW_ROOTS"] = args.shadow_roots
    if args.block:
        settings["CDP_POOL_BLOCK_RESOURCES"] = args.block.split(",")
    if args.chromium_path:
        settings["CDP_POOL_CHROMIUM_PATH"] = args.chromium_path
    for feature in filter(None, args.off.split(",")):
        if feature not in FEATURES:
            emit(
                "error",
                message="--off: unknown feature %r (one of: %s)" % (feature, ", ".join(FEATURES)),
            )
            sys.exit(2)
        settings.update(FEATURES[feature])
        patch_off(feature)
    sys.exit(crawl(args, settings, meta={"cdp": True}))
