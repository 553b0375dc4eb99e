"""This plugin (scrapy-cdp-pool): the Scrapy crawl with ADDONS = {"scrapy_cdp_pool.Addon": 0}
and meta {"cdp": True}, on its embedded Lightpanda or Chromium, or (with --endpoint) on a
server the harness started, through CDP_POOL_ENDPOINTS."""

from __future__ import annotations

import sys

from _common import REPO_ROOT, emit, parser
from _scrapy import crawl

if __name__ == "__main__":
    ap = parser(__doc__)
    ap.add_argument("--browser", choices=("lightpanda", "chromium"), default="lightpanda")
    ap.add_argument("--block", default="", help="CDP_POOL_BLOCK_RESOURCES, comma-separated")
    ap.add_argument("--wait-until", default="", help="CDP_POOL_WAIT_UNTIL (default: the plugin's)")
    ap.add_argument("--no-http-cache", action="store_true", help="CDP_POOL_HTTP_CACHE = False")
    ap.add_argument(
        "--shadow-roots", default="", help="CDP_POOL_SHADOW_ROOTS (default: the plugin's)"
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
    if args.no_http_cache:
        settings["CDP_POOL_HTTP_CACHE"] = False
    if args.shadow_roots:
        settings["CDP_POOL_SHADOW_ROOTS"] = args.shadow_roots
    if args.block:
        settings["CDP_POOL_BLOCK_RESOURCES"] = args.block.split(",")
    sys.exit(crawl(args, settings, meta={"cdp": True}))
