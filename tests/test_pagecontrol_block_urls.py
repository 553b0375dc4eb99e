"""Blocking by URL pattern (``CDP_POOL_BLOCK_URLS``, issue 18 item 5) on both
embedded backends: a blocked script and a blocked ``fetch`` never reach the
site (it counts every request), the rest of the page loads."""

from __future__ import annotations

import pytest
import pytest_twisted
import scrapy

from tests.contract import token
from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BACKENDS = ["lightpanda", "chromium"]


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_blocked_urls_never_reach_the_site_and_are_counted(
    site: SiteServer, browser: str
) -> None:
    blocked, control = token(), token()
    requests = [
        scrapy.Request(site.url(f"/pc/block?key={key}"),
                       meta={"cdp": True, "cdp_actions": [["wait_for_selector", "#done"]]})
        for key in (blocked, control)
    ]  # fmt: skip
    spider, crawler = await crawl(
        requests[:1],
        {"CDP_POOL_BROWSER": browser,
         "CDP_POOL_BLOCK_URLS": ["*/pc/tracker.js?*", "re:/pc/beacon\\?"]},
    )  # fmt: skip
    control_spider, control_crawler = await crawl(requests[1:], {"CDP_POOL_BROWSER": browser})
    assert not spider.failures, spider.failures
    assert not control_spider.failures, control_spider.failures
    hits = site.stats()["hits_by_url"]
    assert hits.get(f"/pc/tracker.js?key={blocked}") is None
    assert hits.get(f"/pc/beacon?key={blocked}") is None
    assert hits[f"/pc/api?key={blocked}"] == 1
    assert hits[f"/pc/block?key={blocked}"] == 1
    response = spider.responses[0]
    assert response.css("#tracker::text").get() == "none"
    assert response.css("#beacon::text").get() == "failed"
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/resources_blocked/url"] == 2
    assert stats["cdp_pool/resources_blocked"] == 2
    # The same page without the setting: both requests reach the site.
    assert hits[f"/pc/tracker.js?key={control}"] == 1
    assert hits[f"/pc/beacon?key={control}"] == 1
    assert control_spider.responses[0].css("#tracker::text").get() == "loaded"
    assert control_spider.responses[0].css("#beacon::text").get() == "sent"
    assert "cdp_pool/resources_blocked" not in control_crawler.stats.get_stats()


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_pattern_matching_the_page_itself_does_not_block_it(
    site: SiteServer, browser: str
) -> None:
    key = token()
    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/pc/init?key={key}"), meta={"cdp": True})],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_BLOCK_URLS": ["*/pc/init*"]},
    )
    assert not spider.failures, spider.failures
    assert spider.responses[0].status == 200
    assert "cdp_pool/resources_blocked" not in crawler.stats.get_stats()
