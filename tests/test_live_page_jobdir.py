"""Live pages with a durable JOBDIR (issue 18 item 2): the page itself is never
stored (it is a handle to this process's browser); a request that carries one
in its meta (a copy of a live-page request: a retry, or a follow-up given the
response's meta) is stored without it and gets a page of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest_twisted
import scrapy

from scrapy_cdp_pool.jobdir import open_jobdir
from tests.crawl import RecordingSpider, crawl
from tests.servers import SiteServer


class FollowingSpider(RecordingSpider):
    """The first page's callback yields a follow-up with the response's whole
    meta (its live page included); each callback checks its page and closes it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pages: list[tuple[str, str, Any]] = []

    async def parse(self, response: scrapy.http.Response) -> Any:
        self.responses.append(response)
        page = response.meta["cdp_page"]
        self.pages.append((response.url, page.url, page))
        await page.close()
        if "first" in response.url:
            yield response.follow(
                response.url.replace("first", "second"), self.parse,
                meta=dict(response.meta), errback=self.on_error,
            )  # fmt: skip


@pytest_twisted.ensureDeferred
async def test_a_request_carrying_a_live_page_is_stored_without_it(
    site: SiteServer, tmp_path: Path
) -> None:
    jobdir = tmp_path / "job"
    request = scrapy.Request(
        site.url("/live/button?key=first"), meta={"cdp": True, "cdp_include_page": True}
    )
    spider, crawler = await crawl([request], {"JOBDIR": str(jobdir)}, spider_cls=FollowingSpider)
    # Before: UnserializableRequestError naming meta["cdp_page"].
    assert not spider.failures, spider.failures
    assert [(url, page_url) for url, page_url, _ in spider.pages] == [
        (site.url("/live/button?key=first"), site.url("/live/button?key=first")),
        (site.url("/live/button?key=second"), site.url("/live/button?key=second")),
    ]
    first_page, second_page = (page for _, _, page in spider.pages)
    assert first_page is not second_page
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/live_pages"] == 2
    assert stats["cdp_pool/jobdir/acked"] == 2
    store = open_jobdir(jobdir)
    assert list(store.rows()) == []  # both finished
    store.close()
