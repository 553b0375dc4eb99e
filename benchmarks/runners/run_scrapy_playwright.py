"""scrapy-playwright 0.0.48, the peer:
--mode default   launches /usr/bin/chromium (or BENCH_CHROMIUM) with the harness's flags, its
                 defaults otherwise
--mode tuned     the same, plus PLAYWRIGHT_ABORT_REQUEST (images, fonts, media, stylesheets),
                 the browser's own request headers (no header rewriting), extra flags
--mode cdp       PLAYWRIGHT_CDP_URL to --endpoint (Lightpanda), PLAYWRIGHT_MAX_PAGES_PER_CONTEXT 1
"""

from __future__ import annotations

import os
import sys

from _common import parser
from _scrapy import crawl

#: BENCH_CHROMIUM: the binary Playwright launches (the shell,
#: /usr/lib/chromium/chromium-headless-shell, is what Playwright's own headless
#: mode runs)
CHROMIUM = os.environ.get("BENCH_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TUNED_FLAGS = [
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--blink-settings=imagesEnabled=false",
    "--disable-renderer-backgrounding",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-ipc-flooding-protection",
    "--no-default-browser-check",
    "--disable-features=Translate,OptimizationHints,MediaRouter,PaintHolding",
]
BLOCKED_TYPES = frozenset({"image", "font", "media", "stylesheet"})


def abort_heavy(request) -> bool:
    return request.resource_type in BLOCKED_TYPES


if __name__ == "__main__":
    ap = parser(__doc__)
    ap.add_argument("--mode", choices=("default", "tuned", "cdp"), default="default")
    args = ap.parse_args()
    handler = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
    settings = {
        "DOWNLOAD_HANDLERS": {"http": handler, "https": handler},
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
        "PLAYWRIGHT_BROWSER_TYPE": "chromium",
    }
    if args.mode == "cdp":
        settings["PLAYWRIGHT_CDP_URL"] = args.endpoint
        settings["PLAYWRIGHT_MAX_PAGES_PER_CONTEXT"] = 1
    else:
        flags = FLAGS + (TUNED_FLAGS if args.mode == "tuned" else [])
        settings["PLAYWRIGHT_LAUNCH_OPTIONS"] = {"executable_path": CHROMIUM, "args": flags}
    if args.mode == "tuned":
        settings["PLAYWRIGHT_ABORT_REQUEST"] = "run_scrapy_playwright.abort_heavy"
        settings["PLAYWRIGHT_PROCESS_REQUEST_HEADERS"] = None
    sys.exit(crawl(args, settings, meta={"playwright": True}))
