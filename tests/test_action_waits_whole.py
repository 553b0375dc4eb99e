"""A render that failed in the browser climbs the render ladder (issue 27): an
action's wait that runs out on Lightpanda is tried again on Chromium, within
the request's download_timeout; and an action's wait uses its whole timeout
(it gave up at three quarters of it), as Playwright's waits do."""

from __future__ import annotations

import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import ActionTimeout
from tests.crawl import crawl
from tests.servers import SiteServer


@pytest_twisted.ensureDeferred
async def test_a_wait_that_runs_out_on_lightpanda_climbs_to_chromium(site: SiteServer) -> None:
    request = scrapy.Request(
        site.url("/ladder/canvas/1"),
        dont_filter=True,
        meta={
            "cdp": True,
            "cdp_expect": "li.item",
            "cdp_actions": [["wait_for_selector", "li.item", {"timeout": 3}]],
        },
    )
    spider, crawler = await crawl(
        [request], {"CDP_POOL_FALLBACK": "chromium", "DOWNLOAD_TIMEOUT": 60}
    )
    assert not spider.failures, spider.failures
    [response] = spider.responses
    assert response.meta["cdp_rung"] == "chromium"
    assert response.meta["cdp_fallback_reason"].startswith("lightpanda: ActionTimeout: ")
    assert len(response.css("li.item")) == 3
    assert crawler.stats.get_value("cdp_pool/ladder/climbed/ActionTimeout") == 1


@pytest_twisted.ensureDeferred
async def test_without_a_ladder_an_action_timeout_is_still_a_download_timeout(
    site: SiteServer,
) -> None:
    request = scrapy.Request(
        site.url("/hist/late?ms=600000"),
        meta={"cdp": True, "cdp_actions": [["wait_for_selector", "#late", {"timeout": 1}]]},
    )
    spider, _ = await crawl([request])
    [failure] = spider.failures
    assert isinstance(failure.value, scrapy.exceptions.DownloadTimeoutError)
    assert isinstance(failure.value.__cause__, ActionTimeout)
    assert "no element matches #late" in str(failure.value)


@pytest_twisted.ensureDeferred
async def test_a_wait_uses_its_whole_timeout(site: SiteServer) -> None:
    """#late comes 6.5 s after load; the wait has 8 s (it gave up at 6)."""
    request = scrapy.Request(
        site.url("/hist/late?ms=6500"),
        meta={"cdp": True, "cdp_actions": [["wait_for_selector", "#late", {"timeout": 8}]]},
    )
    spider, _ = await crawl([request], {"DOWNLOAD_TIMEOUT": 60})
    assert not spider.failures, spider.failures
    [response] = spider.responses
    assert response.css("#late::text").get() == "late"


@pytest_twisted.ensureDeferred
async def test_wait_for_timeout_waits_past_the_action_timeout(site: SiteServer) -> None:
    """Playwright's wait_for_timeout(ms) waits ms, whatever its default
    timeout; it failed as an action timeout past CDP_POOL_ACTION_TIMEOUT_SECONDS."""
    request = scrapy.Request(
        site.url("/hist/late?ms=1500"),
        meta={"cdp": True, "cdp_actions": [["wait_for_timeout", 3000]]},
    )
    spider, _ = await crawl([request], {"CDP_POOL_ACTION_TIMEOUT_SECONDS": 1})
    assert not spider.failures, spider.failures
    [response] = spider.responses
    assert response.css("#late::text").get() == "late"
