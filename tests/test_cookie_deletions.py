"""Issue 35, item 6(a): a page that signs out by script (``fetch()`` answered
``Set-Cookie: session=; Max-Age=0``, or ``document.cookie`` with
``Max-Age=0``) deletes the cookie in the browser; Scrapy's jar follows, so the
next request goes out signed out, as it would from the browser."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
import scrapy

from tests.crawl import RecordingSpider, crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True


@pytest.mark.parametrize("how", ["fetch", "cookie"])
@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_a_page_that_signs_out_deletes_the_cookie_from_scrapys_jar(
    site: SiteServer, browser: str, how: str
) -> None:
    def sign_out(spider: RecordingSpider, response: scrapy.http.Response) -> Any:
        actions = [["wait_for_function", "() => document.body.innerText.includes('signed out')"]]
        meta = {"cdp": True, "cdp_actions": actions, "then": whoami}
        yield scrapy.Request(site.url(f"/sign-out?how={how}"), meta=meta)

    def whoami(spider: RecordingSpider, response: scrapy.http.Response) -> Any:
        yield scrapy.Request(site.url("/whoami?after"), meta={"cdp": False})

    first = scrapy.Request(
        site.url("/login?user=al&next=/whoami?before"), meta={"cdp": False, "then": sign_out}
    )
    spider, _ = await crawl([first], {"CDP_POOL_BROWSER": browser})
    assert not spider.failures, [repr(f.value) for f in spider.failures]
    assert "valid-al" in spider.by_url("before").text  # signed in
    assert spider.by_url("sign-out").css("#state::text").get() == "signed out"
    assert "valid-al" not in spider.by_url("after").text  # the jar let the cookie go
