"""A live page whose response will never reach a callback is closed at once
and its slot freed (issue 31 item 6): a ``cdp_include_page`` request answered
500 and retried left each attempt's page open, holding a connection until
``download_timeout``; with 2 connections the rest of the crawl waited. Shown
by invariant: no live page is closed at its deadline, and the pages closed
because nothing would get them are counted."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
import scrapy
from twisted.python.failure import Failure

from tests.crawl import RecordingSpider, crawl
from tests.servers import SiteServer

BACKENDS = {"lightpanda": {}, "chromium": {"CDP_POOL_BROWSER": "chromium"}}
# far longer than the crawl needs: a page held to its deadline shows in
# live_pages_closed_at_deadline, not in a time
SETTINGS = {"CDP_POOL_CONNECTIONS": 2, "DOWNLOAD_TIMEOUT": 60, "HTTPERROR_ALLOW_ALL": False}


class ErrbackClosingSpider(RecordingSpider):
    """Its errback closes the live page of a failed response, as
    scrapy-playwright tells errbacks to."""

    async def on_error(self, failure: Failure) -> None:
        self.failures.append(failure)
        response = getattr(failure.value, "response", None)
        page = response.meta.get("cdp_page") if response is not None else None
        if page is not None:
            await page.close()


class NoErrbackSpider(RecordingSpider):
    def prepare(self, request: scrapy.Request) -> scrapy.Request:
        return request.replace(callback=self.parse)


def _rest(site: SiteServer) -> list[scrapy.Request]:
    return [
        scrapy.Request(site.url(f"/js?n=1&i={i}"), meta={"cdp": True}, priority=-1)
        for i in range(6)
    ]


def _stats(crawler: Any) -> tuple[Any, Any, Any]:
    stats = crawler.stats.get_stats()
    return (
        stats.get("cdp_pool/live_pages"),
        stats.get("cdp_pool/live_pages_closed_unreached"),
        stats.get("cdp_pool/live_pages_closed_at_deadline"),
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_retried_live_page_is_closed_at_once(site: SiteServer, backend: str) -> None:
    live = scrapy.Request(site.url("/status/500"), meta={"cdp": True, "cdp_include_page": True})
    spider, crawler = await crawl(
        [live, *_rest(site)],
        {
            **BACKENDS[backend],
            **SETTINGS,
            "RETRY_ENABLED": True,
            "RETRY_TIMES": 2,
            "RETRY_HTTP_CODES": [500],
        },
        spider_cls=ErrbackClosingSpider,
    )
    assert len(spider.responses) == 6
    # 3 attempts, each with a live page: 2 retried (closed at once), the last
    # filtered by HttpErrorMiddleware into the errback, which closes it
    assert len(spider.failures) == 1
    assert _stats(crawler) == (3, 2, 0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_filtered_live_page_without_an_errback_is_closed_at_once(
    site: SiteServer, backend: str
) -> None:
    live = scrapy.Request(site.url("/status/500"), meta={"cdp": True, "cdp_include_page": True})
    spider, crawler = await crawl(
        [live, *_rest(site)], {**BACKENDS[backend], **SETTINGS}, spider_cls=NoErrbackSpider
    )
    assert len(spider.responses) == 6
    assert _stats(crawler) == (1, 1, 0)
