"""Actions run on HTML documents only (issue 40, item 7): a JSON main
document is taken as its bytes and never displayed, so a request with
actions there fails at its first action with ``ActionError`` ("the page is
not HTML"), not retried; without actions its response is the JSON. What
docs/page-control.md and the scrapy-playwright migration page say (before,
neither did: 2 of 12 migrated examples failed on it)."""

from __future__ import annotations

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import ActionError
from tests.crawl import crawl
from tests.servers import ROOT, SiteServer


@pytest_twisted.ensureDeferred
async def test_actions_on_a_json_document_fail_by_name_and_without_them_it_is_read(
    site: SiteServer,
) -> None:
    spider, _ = await crawl(
        [
            scrapy.Request(site.url("/act/data?key=a"),
                           meta={"cdp": True, "cdp_actions": [["wait_for_timeout", 10]]}),
            scrapy.Request(site.url("/act/data?key=b"), meta={"cdp": True}),
        ],
        {"CDP_POOL_BROWSER": "lightpanda"},
    )  # fmt: skip
    [failure] = spider.failures
    assert isinstance(failure.value, ActionError)
    assert "action #0 wait_for_timeout[10]: the page is not HTML" in str(failure.value)
    [response] = spider.responses
    assert response.json() == {"key": "b", "n": 7}


@pytest.mark.parametrize("page", ["page-control.md", "migrating-from-scrapy-playwright.md"])
def test_the_docs_say_actions_need_an_html_document(page: str) -> None:
    text = " ".join((ROOT / "docs" / page).read_text(encoding="utf-8").split())
    assert "the page is not HTML" in text
