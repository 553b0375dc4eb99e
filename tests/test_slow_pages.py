"""Slow servers: the plugin's own deadlines decide when a page gives up, on both
backends, and the error names the deadline that fired.

Found by a fresh-user trial: Lightpanda's own ``--http-timeout`` (15 s per
transfer by default) failed a 20 s page with ``net::ERR_TIMED_OUT`` whatever
``DOWNLOAD_TIMEOUT`` said, and a navigation timeout on Chromium was reported as
``download_timeout``.
"""

from __future__ import annotations

import pytest
import pytest_twisted
import scrapy

from tests.at_once import each_at_once
from tests.crawl import crawl
from tests.servers import SiteServer


@pytest.mark.timeout(120)
@pytest_twisted.ensureDeferred
async def test_a_page_slower_than_lightpandas_own_transfer_timeout_loads(
    site: SiteServer,
) -> None:
    spider, _ = await crawl(
        [scrapy.Request(site.url("/slow?ms=16500"), meta={"cdp": True})],
        {
            "CDP_POOL_BROWSER": "lightpanda",
            "DOWNLOAD_TIMEOUT": 60,
            "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 40,
            "CDP_POOL_CONNECTIONS": 1,
        },
    )
    assert not spider.failures, [str(f.value) for f in spider.failures]
    assert spider.responses[0].css("#slow::text").get() == "done"


@pytest_twisted.ensureDeferred
async def test_a_navigation_timeout_names_its_setting(site: SiteServer) -> None:
    # both backends at once (tests.at_once.each_at_once): each case mostly waits

    async def case(browser: str) -> None:
        # the request's own navigation timeout decides alone (a longer
        # DOWNLOAD_TIMEOUT set by the user would otherwise decide the first byte)
        spider, _ = await crawl(
            [
                scrapy.Request(
                    site.url("/slow?ms=8000"), meta={"cdp": True, "cdp_navigation_timeout": 1}
                )
            ],
            {"CDP_POOL_BROWSER": browser, "DOWNLOAD_TIMEOUT": 60, "CDP_POOL_CONNECTIONS": 1},
        )
        assert not spider.responses
        message = str(spider.failures[0].value)
        assert "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS" in message, message
        assert "download_timeout" not in message, message

    await each_at_once({str(v): lambda v=v: case(v) for v in ["lightpanda", "chromium"]})


@pytest_twisted.ensureDeferred
async def test_a_site_slower_than_the_command_timeout_loads_within_the_navigation_timeout(
    site: SiteServer,
) -> None:
    """``Page.navigate`` is answered once the response has come: its deadline
    is the navigation's, not ``CDP_POOL_COMMAND_TIMEOUT_SECONDS`` (found by a
    fresh-user trial: a site answering after 40 s failed at the 30 s command
    timeout with a 120 s navigation timeout)."""
    # both backends at once (tests.at_once.each_at_once): each case mostly waits

    async def case(browser: str) -> None:
        spider, _ = await crawl(
            [scrapy.Request(site.url("/slow?ms=4000&command-timeout"), meta={"cdp": True})],
            {
                "CDP_POOL_BROWSER": browser,
                "DOWNLOAD_TIMEOUT": 60,
                "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 30,
                "CDP_POOL_COMMAND_TIMEOUT_SECONDS": 2,
                "CDP_POOL_CONNECTIONS": 1,
            },
        )
        assert not spider.failures, [str(f.value) for f in spider.failures]
        assert spider.responses[0].css("#slow::text").get() == "done"

    await each_at_once({str(v): lambda v=v: case(v) for v in ["lightpanda", "chromium"]})


@pytest_twisted.ensureDeferred
async def test_a_first_byte_past_the_navigation_timeout_waits_for_a_longer_download_timeout(
    site: SiteServer,
) -> None:
    """Issue 35, item 6(b): a first byte after 4 s under a download_timeout of
    8 s set on the request, and a navigation timeout of 2 s: plain Scrapy
    waits for it, so does the rendered request (it failed at the navigation
    timeout). DOWNLOAD_TIMEOUT set in the settings does the same unless
    CDP_POOL_NAVIGATION_TIMEOUT_SECONDS is set too (tests/unit/test_first_byte_timeout.py)."""
    # both backends at once (tests.at_once.each_at_once): each case mostly waits

    async def case(browser: str) -> None:
        settings = {"CDP_POOL_BROWSER": browser, "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 2}
        url = site.url(f"/slow?ms=4000&{browser}")
        spider, _ = await crawl(
            [
                scrapy.Request(url, meta={"cdp": cdp, "download_timeout": 8}, dont_filter=True)
                for cdp in (False, True)
            ],
            settings,
        )
        assert not spider.failures, [str(f.value) for f in spider.failures]
        by_cdp = {bool(r.meta.get("cdp")): r for r in spider.responses}
        assert by_cdp[False].css("#slow::text").get() == "done"
        assert by_cdp[True].css("#slow::text").get() == "done"

    await each_at_once({str(v): lambda v=v: case(v) for v in ["lightpanda", "chromium"]})
