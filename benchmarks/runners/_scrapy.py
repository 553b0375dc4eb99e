"""One Scrapy crawl of the benchmark pages, shared by the Scrapy-based runners.

The spider fetches one warm-up page first (so a download handler that launches its browser
lazily does that outside the window), waits for it, then yields the N measured requests, and
counts responses that pass the page kind's markers.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import scrapy
from _common import Tally, emit, page_urls, warmup_url
from scrapy.crawler import CrawlerProcess
from scrapy.http import TextResponse
from twisted.python.failure import Failure

WARMUP_TIMEOUT_S = 120.0

BASE_SETTINGS: dict[str, Any] = {
    "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
    "DOWNLOAD_DELAY": 0,
    "RETRY_ENABLED": False,
    "COOKIES_ENABLED": True,
    "HTTPCACHE_ENABLED": False,
    "DOWNLOAD_TIMEOUT": 60,
}


def _describe(failure: Failure) -> str:
    return "%s: %s" % (
        failure.type.__name__ if failure.type else "Error",
        str(failure.value).splitlines()[0] if str(failure.value) else "",
    )


class BenchSpider(scrapy.Spider):
    name = "bench"

    def __init__(self, args: argparse.Namespace, meta: dict, tally: Tally, **kw: Any) -> None:
        super().__init__(**kw)
        self.args = args
        self.req_meta = meta
        self.tally = tally
        self.warmed_up = asyncio.Event()

    async def start(self):
        a = self.args
        yield scrapy.Request(
            warmup_url(a.base_url, a.kind, a.pages, a.first_page),
            callback=self.after_warmup,
            errback=self.warmup_failed,
            meta=dict(self.req_meta),
            dont_filter=True,
        )
        await asyncio.wait_for(self.warmed_up.wait(), WARMUP_TIMEOUT_S)
        self.tally.start()
        # Yielded lazily: Scrapy pulls start requests as it has room, so a 10,000-page soak
        # does not hold 10,000 queued requests in memory.
        for url in page_urls(a.base_url, a.kind, a.pages, a.first_page):
            yield scrapy.Request(
                url,
                callback=self.parse_page,
                errback=self.page_failed,
                meta=dict(self.req_meta),
                dont_filter=True,
            )

    def warmup_failed(self, failure: Failure) -> None:
        emit("error", message="warm-up: " + _describe(failure))
        self.warmed_up.set()

    def after_warmup(self, response: scrapy.http.Response) -> None:
        self.warmed_up.set()

    def parse_page(self, response: scrapy.http.Response) -> None:
        html = response.text if isinstance(response, TextResponse) else ""
        self.tally.page(html, response.status)

    def page_failed(self, failure: Failure) -> None:
        self.tally.error(_describe(failure))


def crawl(
    args: argparse.Namespace, settings: dict[str, Any], meta: dict, raw_html: bool = False
) -> int:
    """Run the crawl in this process; print the result line; return an exit code."""
    tally = Tally(args.kind, args.pages, args.progress_every, raw_html=raw_html)
    failures: list[str] = []
    if args.concurrent_items:
        settings = {**settings, "CONCURRENT_ITEMS": args.concurrent_items}
    try:
        process = CrawlerProcess({**BASE_SETTINGS, **settings})
        d = process.crawl(BenchSpider, args=args, meta=meta, tally=tally)
        d.addErrback(lambda f: failures.append(_describe(f)))
        process.start()
    except Exception as e:  # noqa: BLE001 - a plugin that cannot start is this run's failure
        failures.append("%s: %s" % (type(e).__name__, e))
    if failures:
        emit("error", message="crawl failed: " + failures[0])
    tally.result()
    return 0 if tally.done and not failures else 1
