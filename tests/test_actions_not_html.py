"""Page actions on a main document that is not HTML (issue 40, item 7):
JSON, text, XML and scripts are shown by the browser as in Playwright
(Chromium's text viewer), so waits, ``evaluate`` and screenshots run on them,
while the response stays the document's bytes; other raw documents (an
image, a PDF, an attachment) are never displayed and an action there fails
with ``ActionError`` ("the page is not HTML"). Before, every action on a JSON
document failed so (2 of 12 migrated scrapy-playwright examples). Real
crawls of the test site."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import ActionError
from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BODY_TEXT = ["evaluate", "document.body ? document.body.innerText : null"]


async def _render(site: SiteServer, browser: str, path: str, actions: list[Any]) -> Any:
    spider, _ = await crawl(
        [scrapy.Request(site.url(path), meta={"cdp": True, "cdp_actions": actions})],
        {"CDP_POOL_BROWSER": browser},
    )
    return spider


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_actions_run_on_a_json_document_and_the_response_is_its_bytes(
    site: SiteServer, browser: str
) -> None:
    spider = await _render(site, browser, "/act/data?key=a", [["wait_for_timeout", 10], BODY_TEXT])
    assert not spider.failures, spider.failures[0].value
    [response] = spider.responses
    assert response.json() == {"key": "a", "n": 7}  # the bytes, not the viewer's page
    assert response.meta["cdp_results"] == [None, '{"key": "a", "n": 7}']


@pytest_twisted.ensureDeferred
async def test_a_json_document_waits_for_its_selector_and_screenshots_on_chromium(
    site: SiteServer,
) -> None:
    actions = [["wait_for_selector", "pre"], ["screenshot"]]
    spider = await _render(site, "chromium", "/act/data?key=b", actions)
    assert not spider.failures, spider.failures[0].value
    [response] = spider.responses
    assert response.json() == {"key": "b", "n": 7}
    assert response.meta["cdp_results"][1].startswith(PNG_MAGIC)


@pytest_twisted.ensureDeferred
async def test_an_action_on_an_image_document_fails_by_name(site: SiteServer) -> None:
    spider = await _render(site, "lightpanda", "/image.png", [["wait_for_timeout", 10]])
    [failure] = spider.failures
    assert isinstance(failure.value, ActionError)
    assert "action #0 wait_for_timeout[10]: the page is not HTML" in str(failure.value)
