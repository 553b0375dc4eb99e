"""A live page its callback passes on open to another request (scrapy-
playwright's habit: ``meta=response.meta``) and never closes is closed when
that callback ends (issue 40, item 7): the other request is refused (a live
page is never handed over), so nothing else would close it, and it held its
browser slot until the crawl's end (or its ``download_timeout``). Real crawls
of the test site on the embedded Lightpanda."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import InvalidRequestMeta
from tests.crawl import RecordingSpider, crawl
from tests.servers import SiteServer


class PassingSpider(RecordingSpider):
    """Yields a follow-up with the response's meta (its open page in it) and
    leaves the page open, or closes it after (``meta["close_after"]``)."""

    async def parse(self, response: scrapy.http.Response) -> Any:
        self.responses.append(response)
        page = response.meta["cdp_page"]
        yield scrapy.Request(
            response.urljoin("/live/button?key=passed"),
            meta=dict(response.meta),
            callback=self.parse,
            errback=self.on_error,
            dont_filter=True,
        )
        yield {"title": await page.title()}  # the page is still the callback's here
        if response.meta["close_after"]:
            await page.close()


@pytest.mark.parametrize("close_after", [False, True])
@pytest_twisted.ensureDeferred
async def test_a_page_passed_on_and_left_open_is_closed_when_its_callback_ends(
    site: SiteServer, caplog: pytest.LogCaptureFixture, close_after: bool
) -> None:
    request = scrapy.Request(
        site.url("/live/button?key=first"),
        meta={"cdp": True, "cdp_include_page": True, "close_after": close_after},
    )
    spider, crawler = await crawl(
        [request], {"DOWNLOAD_TIMEOUT": 120}, spider_cls=PassingSpider
    )  # fmt: skip
    stats = crawler.stats.get_stats()
    assert stats["item_scraped_count"] == 1  # the callback kept its page to its end
    [failure] = spider.failures  # the follow-up: refused, by name
    assert failure.check(InvalidRequestMeta)
    messages = [r.getMessage() for r in caplog.records]
    # Before: "The live page of ... is still open at the crawl's end: closed now"
    assert not [m for m in messages if "still open at the crawl's end" in m]
    assert stats["cdp_pool/live_pages_closed_at_deadline"] == 0
    passed_on = [m for m in messages if "was passed on to" in m]
    assert stats["cdp_pool/live_pages_closed_passed_on"] == len(passed_on) == (not close_after)
    assert stats["cdp_pool/contexts_opened"] == stats["cdp_pool/contexts_closed"] == 1
