"""Live pages with a durable JOBDIR (issue 18 item 2): the page itself is never
stored (it is a handle to this process's browser); a request that carries one
in its meta (a retry's copy of a live-page request) is stored without it and
gets a page of its own. (A callback that hands its page to a new request fails
by name: tests/test_live_page_state.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest_twisted
import scrapy
from twisted.python.failure import Failure

from scrapy_cdp_pool.jobdir import open_jobdir
from tests.crawl import RecordingSpider, crawl
from tests.servers import SiteServer


class ErrbackClosingSpider(RecordingSpider):
    """Its errback keeps the failed response's page and closes it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pages: list[Any] = []

    async def on_error(self, failure: Failure) -> None:
        self.failures.append(failure)
        page = failure.value.response.meta["cdp_page"]
        self.pages.append(page)
        await page.close()


@pytest_twisted.ensureDeferred
async def test_a_request_carrying_a_live_page_is_stored_without_it(
    site: SiteServer, tmp_path: Path
) -> None:
    jobdir = tmp_path / "job"
    request = scrapy.Request(site.url("/status/500"), meta={"cdp": True, "cdp_include_page": True})
    spider, crawler = await crawl(
        [request],
        {"JOBDIR": str(jobdir), "HTTPERROR_ALLOW_ALL": False, "RETRY_ENABLED": True,
         "RETRY_TIMES": 1, "RETRY_HTTP_CODES": [500]},
        spider_cls=ErrbackClosingSpider,
    )  # fmt: skip
    # Before: UnserializableRequestError naming meta["cdp_page"] (the retry's copy).
    [failure] = spider.failures
    assert type(failure.value).__name__ == "HttpError"
    [page] = spider.pages  # the retry's own page
    assert page.is_closed()
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/live_pages"] == 2  # one per attempt
    assert stats["cdp_pool/live_pages_closed_unreached"] == 1  # the retried attempt's
    assert stats["retry/count"] == 1
    store = open_jobdir(jobdir)
    assert list(store.rows()) == []  # finished
    store.close()
