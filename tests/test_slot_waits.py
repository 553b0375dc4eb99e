"""A request waiting for a browser slot waits as it would for one of Scrapy's
downloader slots: its ``download_timeout`` starts with its page.

Found by a fresh-user trial: on the embedded Chromium's 2 connections, two
pages that never finish held both slots, and the other requests failed with
``SlotWaitTimeout`` once their own ``download_timeout`` ran out in the queue;
plain Scrapy keeps such requests waiting and fetches them afterwards.
"""

from __future__ import annotations

import pytest_twisted
import scrapy
from scrapy.exceptions import DownloadTimeoutError

from tests.at_once import each_at_once
from tests.crawl import crawl
from tests.servers import SiteServer


@pytest_twisted.ensureDeferred
async def test_a_request_waiting_behind_a_page_longer_than_its_timeout_renders(
    site: SiteServer,
) -> None:
    # both backends at once (tests.at_once.each_at_once): each case mostly waits

    async def case(browser: str) -> None:
        # The first holds the only slot for its 7 s deadline (the site never
        # answers within it); the second's deadline is 6 s, less than its wait:
        # it renders after the first has failed.
        hog = scrapy.Request(
            site.url("/slow?ms=60000"), meta={"cdp": True, "download_timeout": 7}, priority=1
        )
        waiter = scrapy.Request(site.url("/js?n=2"), meta={"cdp": True, "download_timeout": 6})
        spider, crawler = await crawl(
            [hog, waiter],
            {"CDP_POOL_BROWSER": browser, "CDP_POOL_CONNECTIONS": 1},
        )
        assert len(spider.failures) == 1, [(f.request, f.value) for f in spider.failures]
        [failure] = spider.failures
        assert failure.request.url == hog.url
        assert failure.check(DownloadTimeoutError)
        assert "SlotWaitTimeout" not in repr(failure.value)
        [response] = spider.responses
        assert response.url == waiter.url
        assert response.css("p.item::text").getall() == ["item-1", "item-2"]
        stats = crawler.stats.get_stats()
        assert "cdp_pool/errors/SlotWaitTimeout" not in stats
        # the render's time, from its slot: within its 6 s deadline, not its 7 s wait
        assert stats["cdp_pool/render_seconds_max"] < 6

    await each_at_once({str(v): lambda v=v: case(v) for v in ["lightpanda", "chromium"]})
