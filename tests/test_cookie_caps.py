"""Cookies a page writes are copied into Scrapy's jar within a browser's caps
(issue 31): 500 script cookies and one of 5000 bytes made every later plain
request to the host carry a ``Cookie`` header past the server's 8 KB limit
(400). At most 180 per domain are copied, none over 4096 bytes, with one
WARNING."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BACKENDS = {"lightpanda": {}, "chromium": {"CDP_POOL_BROWSER": "chromium"}}
FOLLOW_UPS = 20


def _then(site: SiteServer) -> Any:
    def follow(spider: Any, response: scrapy.http.Response) -> list[scrapy.Request]:
        return [
            scrapy.Request(site.url(f"/flood/count?i={i}"), meta={"cdp": False})
            for i in range(FOLLOW_UPS)
        ]

    return follow


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_page_writing_500_cookies_leaves_later_requests_working(
    site: SiteServer, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    start = scrapy.Request(
        site.url("/flood/page?n=500"),
        meta={"cdp": True, "cdp_actions": [["wait_for_selector", "#done"]], "then": _then(site)},
    )
    spider, crawler = await crawl([start], BACKENDS[backend])
    assert not spider.failures, [str(f.value) for f in spider.failures]
    counts = [r for r in spider.responses if "/flood/count" in r.url]
    assert len(counts) == FOLLOW_UPS
    assert [r.status for r in counts] == [200] * FOLLOW_UPS
    for response in counts:
        assert 0 < int(response.css("#count::text").get()) <= 180
    warnings = [r for r in caplog.records if "not copied into Scrapy's" in r.getMessage()]
    dropped = crawler.stats.get_value("cdp_pool/cookies_dropped")
    # Lightpanda's store keeps the 500 (not the 5000-byte one): the jar caps them
    if backend == "lightpanda":
        assert len(warnings) == 1
        assert dropped == 500 - 180
    else:  # Chromium's own store capped them already (180 per domain, purged to 150)
        assert not warnings
        assert dropped is None


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_cookie_bomb_leaves_later_rendered_pages_of_its_host_answered(
    site: SiteServer, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 39 item 7: a page writes 1,000 cookies of 64 bytes; the jar
    keeps 180 (the per-domain cap), whose header (about 13 KB) the site
    refuses (400, past its 8190-byte header line, as Apache and nginx do).
    Before: every later rendered page of the host was answered 400. Now a
    rendered request sends at most MAX_COOKIE_HEADER_BYTES of them: answered
    200, the rest counted in ``cdp_pool/cookies_not_sent``, one WARNING."""
    follow_ups = 6

    def follow(spider: Any, response: scrapy.http.Response) -> list[scrapy.Request]:
        return [
            scrapy.Request(site.url(f"/flood/count?bomb={i}"), meta={"cdp": True})
            for i in range(follow_ups)
        ]

    start = scrapy.Request(
        site.url("/flood/page?n=1000&size=64"),
        # the read of document.cookie is answered once the page's cookie
        # writes reached Chromium's store (they land there asynchronously, so
        # a read-back into the jar right after #done saw 13-90 of them in
        # loaded suite runs; Playwright's context.cookies() reads the same store)
        meta={"cdp": True, "then": follow, "cdp_actions": [
            ["wait_for_selector", "#done"], ["evaluate", "document.cookie.length"]]},
    )  # fmt: skip
    # At the defaults: on Chromium the bomb's page is kept for the next
    # request (CDP_POOL_REUSE_PAGES). Before, its cookie writes were still
    # reaching the cookie store when the kept page's cookies were cleared:
    # 173 of them were back in the next request's context, whose header
    # (with Scrapy's 111) the site refused (400, 3 of 3 runs).
    settings = {**BACKENDS[backend], "HTTPERROR_ALLOW_ALL": True}
    spider, crawler = await crawl([start], settings)
    counts = [r for r in spider.responses if "/flood/count" in r.url]
    assert [r.status for r in counts] == [200] * follow_ups, [str(f.value) for f in spider.failures]
    for response in counts:
        # each cookie: "cNNNN=" and 64 bytes, "; " between: 8000 bytes hold 111
        assert 100 <= int(response.css("#count::text").get()) <= 111
    assert crawler.stats.get_value("cdp_pool/cookies_not_sent") >= follow_ups
    warnings = [r for r in caplog.records if "of Scrapy's jar not sent" in r.getMessage()]
    assert len(warnings) == 1
