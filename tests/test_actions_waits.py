"""Actions that wait for the page or move it (issue 18 item 4):
``wait_for_function``, ``wait_for_url``, ``wait_for_response``, ``goto``,
``scroll_until_stable``, against the test site's ``/act/*`` pages; the page
reports what it reached to the site (``report(...)``) right after the wait."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.exceptions import DownloadConnectionRefusedError, DownloadFailedError

from scrapy_cdp_pool.browser.pool.embedded_server import free_port
from scrapy_cdp_pool.errors import ActionUnsupported
from tests.crawl import crawl
from tests.profiles import hits, token
from tests.servers import SiteServer
from tests.site.actions import FEED_PAGE_SIZE, FEED_PAGES
from tests.test_actions_input import reports

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BACKENDS = ["lightpanda", "chromium"]
REPORT_STATE = ["evaluate", "report({ready: window.ready || null, url: location.href})"]


async def run(
    site: SiteServer, browser: str, path: str, actions: list[Any], **settings: Any
) -> tuple[scrapy.http.Response, str]:
    key = token()
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"{path}?key={key}"),
                        meta={"cdp": True, "cdp_actions": actions})],
        {"CDP_POOL_BROWSER": browser, **settings},
    )  # fmt: skip
    assert not spider.failures, spider.failures[0].value
    return spider.responses[0], key


@pytest.mark.parametrize("browser", BACKENDS)
@pytest.mark.parametrize("polling", ["raf", 50])
@pytest_twisted.ensureDeferred
async def test_wait_for_function_returns_the_truthy_value_once_the_page_has_it(
    site: SiteServer, browser: str, polling: Any
) -> None:
    response, key = await run(site, browser, "/act/wait", [
        ["click", "#go"],
        ["wait_for_function", "(arg) => window.ready && window.ready.n * arg",
         {"arg": 2, "polling": polling}],
        REPORT_STATE,
    ])  # fmt: skip
    assert response.meta["cdp_results"][1] == 14
    [state] = reports(site, key)
    assert state["ready"] == {"key": key, "n": 7}


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_wait_for_url_sees_a_history_push_and_a_new_document(
    site: SiteServer, browser: str
) -> None:
    response, key = await run(site, browser, "/act/wait", [
        ["click", "#go"],
        ["wait_for_url", "*/act/wait/pushed?*"],
        REPORT_STATE,
        ["click", "#leave"],
        ["wait_for_url", "re:/act/next\\?key=\\w+$", {"wait_until": "domcontentloaded"}],
    ])  # fmt: skip
    first, second = reports(site, key)
    assert first["url"] == site.url(f"/act/wait/pushed?key={key}")
    assert first["ready"] == {"key": key, "n": 7}  # the push comes after the data
    assert second == {"next": site.url(f"/act/wait/pushed?key={key}")}
    assert response.url == site.url(f"/act/next?key={key}")
    assert response.css("#next::text").get() == "next"


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_wait_for_response_waits_for_the_next_match_or_takes_one_just_received(
    site: SiteServer, browser: str
) -> None:
    response, key = await run(site, browser, "/act/wait", [
        ["click", "#go"],
        ["wait_for_response", "*/act/data?*"],  # arrives 300 ms after the click
        ["wait_for_function", "window.done === 1"],
        ["click", "#go"],
        ["wait_for_function", "window.done === 2"],
        # The second call arrived during the previous action: still found
        # (and not the first one again).
        ["wait_for_response", "re:/act/data\\?"],
    ])  # fmt: skip
    results = response.meta["cdp_results"]
    for call, result in ((1, results[1]), (2, results[5])):
        assert result["url"] == site.url(f"/act/data?key={key}&call={call}")
        assert result["status"] == 200
        assert result["method"] == "GET"
        assert result["resource_type"] == "fetch"
        content_type = {k.lower(): v for k, v in result["headers"].items()}["content-type"]
        assert content_type.startswith("application/json")
    assert hits(site, f"/act/data?key={key}&call=1") == 1
    assert hits(site, f"/act/data?key={key}&call=2") == 1


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_goto_loads_another_page_with_its_referer(site: SiteServer, browser: str) -> None:
    key = token()
    target = site.url(f"/act/next?key={key}")
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/act/wait?key={key}"), meta={"cdp": True, "cdp_actions": [
            ["goto", target, {"referer": site.url("/from-goto")}]]})],
        {"CDP_POOL_BROWSER": browser},
    )  # fmt: skip
    assert not spider.failures, spider.failures[0].value
    response = spider.responses[0]
    assert response.meta["cdp_results"] == [{"url": target, "status": 200}]
    assert response.url == target
    assert response.css("#next::text").get() == "next"
    assert reports(site, key) == [{"next": site.url("/from-goto")}]


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_goto_a_url_that_cannot_load_fails_the_request(
    site: SiteServer, browser: str
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}/nothing-listens"
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/act/wait?key={token()}"), meta={"cdp": True, "cdp_actions": [
            ["goto", nowhere]]})],
        {"CDP_POOL_BROWSER": browser},
    )  # fmt: skip
    [failure] = spider.failures
    # NavigationFailed, which the handler hands to Scrapy as its download error
    assert isinstance(failure.value, (DownloadFailedError, DownloadConnectionRefusedError))
    assert f"{nowhere}: navigation failed" in str(failure.value)


@pytest_twisted.ensureDeferred
async def test_scroll_until_stable_gets_every_card_of_an_infinite_feed_on_chromium(
    site: SiteServer,
) -> None:
    response, key = await run(
        site, "chromium", "/act/feed", [["scroll_until_stable", ".card", {"stable_ms": 500}]]
    )
    total = FEED_PAGES * FEED_PAGE_SIZE
    [result] = response.meta["cdp_results"]
    assert result["stopped"] == "stable"
    assert result["count"] == total
    assert len(response.css(".card")) == total
    assert response.css(".card::text").getall()[-1] == f"card-{total}"
    assert [r["feed_page"] for r in reports(site, key)] == list(range(1, FEED_PAGES + 1))


@pytest_twisted.ensureDeferred
async def test_scroll_until_stable_swaps_every_lazy_image_on_chromium(site: SiteServer) -> None:
    """Issue 35, item 6(c): it jumped from the top to the bottom, so 40 of 60
    lazy images in between never came into view; Playwright's wheel scrolling
    swaps all 60. It scrolls with mouse-wheel input a screen at a time."""
    response, _ = await run(
        site, "chromium", "/act/lazy-images", [["scroll_until_stable", {"stable_ms": 300}]]
    )
    [result] = response.meta["cdp_results"]
    assert result["stopped"] == "stable"
    assert len(response.css("img.lazy")) == 60
    assert len(response.css("img.lazy[src]")) == 60


@pytest_twisted.ensureDeferred
async def test_scroll_until_stable_stops_at_max_scrolls(site: SiteServer) -> None:
    response, key = await run(
        site, "chromium", "/act/feed", [["scroll_until_stable", ".card", {"max_scrolls": 2}]]
    )
    [result] = response.meta["cdp_results"]
    assert result["stopped"] == "max_scrolls"
    assert result["scrolls"] == 2
    assert len(response.css(".card")) < FEED_PAGES * FEED_PAGE_SIZE
    assert len(reports(site, key)) < FEED_PAGES  # the site was not asked for every page


@pytest_twisted.ensureDeferred
async def test_scroll_until_stable_is_refused_on_lightpanda_before_the_page_opens(
    site: SiteServer,
) -> None:
    key = token()
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/act/feed?key={key}"),
                        meta={"cdp": True, "cdp_actions": [["scroll_until_stable", ".card"]]})],
        {"CDP_POOL_BROWSER": "lightpanda", "RETRY_ENABLED": True},
    )  # fmt: skip
    [failure] = spider.failures
    assert isinstance(failure.value, ActionUnsupported), failure.value
    assert "scroll_until_stable" in str(failure.value)
    assert hits(site, f"/act/feed?key={key}") == 0
