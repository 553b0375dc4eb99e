"""A request with a bad page action fails by name before any browser work
(issue 18 item 4), in a real crawl: it never reaches the site, the others go
on. The checks themselves: tests/unit/test_action_args.py."""

from __future__ import annotations

import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.profiles import hits, token
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True


@pytest_twisted.ensureDeferred
async def test_a_request_with_a_bad_action_fails_before_any_browser_work(
    site: SiteServer,
) -> None:
    key = token()
    spider, _ = await crawl(
        [scrapy.Request(site.url(f"/act/input?bad={key}"), meta={"cdp": True, "cdp_actions": [
            ["select_option", "#sel", {"index": "first"}]]}),
         scrapy.Request(site.url(f"/act/input?good={key}"), meta={"cdp": True, "cdp_actions": [
            ["select_option", "#sel", {"index": 2}]]})],
        {"CDP_POOL_BROWSER": "lightpanda"},
    )  # fmt: skip
    [failure] = spider.failures
    assert f"/act/input?bad={key}" in str(failure.value)
    assert "meta['cdp_actions']: action #0 'select_option': keyword index='first'" in str(
        failure.value
    )
    assert hits(site, f"/act/input?bad={key}") == 0
    assert spider.by_url("good=").meta["cdp_results"] == [["c"]]
