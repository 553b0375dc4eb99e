"""robots.txt for what the page does (issue 26): with ROBOTSTXT_OBEY, a
navigation the page's own script starts into a path robots.txt disallows is
refused before it leaves the browser (the site never sees it), counted and
logged once per host, and the request is dropped with IgnoreRequest
("Forbidden by robots.txt"), as plain Scrapy drops a request or a redirect
robots.txt forbids."""

from __future__ import annotations

import logging

import pytest
import pytest_twisted
import scrapy
from scrapy.exceptions import IgnoreRequest

from scrapy_cdp_pool.errors import NavigationForbidden
from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BACKENDS = {"lightpanda": {}, "chromium": {"CDP_POOL_BROWSER": "chromium"}}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_scripts_navigation_into_a_disallowed_path_is_refused(
    site: SiteServer, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    key = f"robots-{backend}"
    start = site.url(f"/hist/leave?to=/hist/private/{key}")
    caplog.set_level(logging.INFO)
    spider, crawler = await crawl(
        [
            scrapy.Request(start, meta={"cdp": True}),
            scrapy.Request(site.url(f"/hist/private/{key}-plain")),
        ],
        {**BACKENDS[backend], "ROBOTSTXT_OBEY": True},
    )
    assert spider.responses == []
    [failure] = [f for f in spider.failures if f.request.url == start]
    assert isinstance(failure.value, IgnoreRequest)
    assert isinstance(failure.value, NavigationForbidden)
    assert "Forbidden by robots.txt" in str(failure.value)
    hits = site.stats()["hits_by_url"]
    assert not any(key in url for url in hits if url.startswith("/hist/private/"))
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/robots_navigations_blocked"] >= 1
    assert stats["robotstxt/forbidden"] == 1  # plain Scrapy refused the plain request
    assert caplog.text.count("forbidden by robots.txt: refused") == 1


@pytest_twisted.ensureDeferred
async def test_without_robotstxt_obey_the_navigation_goes_on(site: SiteServer) -> None:
    start = site.url("/hist/leave?to=/hist/private/free")
    spider, _ = await crawl([scrapy.Request(start, meta={"cdp": True})])
    [response] = spider.responses
    assert response.css("#private::text").get() == "free"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_refused_navigation_during_an_action_is_named_once(
    site: SiteServer, backend: str
) -> None:
    """Issue 35 item 3: the page leaves (from a timer) while an action waits
    in it for an element the forbidden page would have. Before, the action
    failed with what the refusal did to the page (Lightpanda: "Execution
    context was destroyed", a DownloadFailedError), retried twice: the site
    saw the page 3 times and NavigationForbidden was never named."""
    key = f"action-{backend}"
    start = site.url(f"/hist/leave?how=timeout&to=/hist/private/{key}")
    request = scrapy.Request(
        start, meta={"cdp": True, "cdp_actions": [["wait_for_selector", "#private"]]}
    )
    spider, crawler = await crawl(
        [request], {**BACKENDS[backend], "ROBOTSTXT_OBEY": True, "RETRY_ENABLED": True}
    )
    assert spider.responses == []
    [failure] = spider.failures
    assert isinstance(failure.value, NavigationForbidden), repr(failure.value)
    hits = site.stats()["hits_by_url"]
    assert hits[f"/hist/leave?how=timeout&to=/hist/private/{key}"] == 1
    assert not any(key in url for url in hits if url.startswith("/hist/private/"))
    assert crawler.stats.get_value("retry/count") is None
