"""Fidelity to plain Scrapy (tests/fidelity2.py) on an embedded Chromium."""

from __future__ import annotations

import pytest_twisted

from tests.fidelity2 import CHROME_UA, SCRAPY_UA, FidelityCases
from tests.servers import SiteServer

#: crawls of equal settings share one embedded server (tests/crawl.py); a test
#: that counts what its own crawler's server did is marked ``own_browser``
SHARED_BROWSERS = True


class TestChromium(FidelityCases):
    browser = "chromium"

    @pytest_twisted.ensureDeferred
    async def test_scrapy_default_user_agent_without_contradicting_hints(
        self, site: SiteServer
    ) -> None:
        server, page = await self.user_agent_seen(site)
        assert server["User-Agent"] == page["userAgent"] == SCRAPY_UA
        assert not any(name.lower().startswith("sec-ch-ua") for name in server), server
        assert page["userAgentData"] is None or not page["userAgentData"]["brands"]
        assert page["webdriver"] is False

    @pytest_twisted.ensureDeferred
    async def test_a_chrome_user_agent_gets_matching_client_hints(self, site: SiteServer) -> None:
        server, page = await self.user_agent_seen(site, {"User-Agent": CHROME_UA})
        assert server["User-Agent"] == page["userAgent"] == CHROME_UA
        assert '"Google Chrome";v="124"' in server["Sec-CH-UA"]
        assert server["Sec-CH-UA-Platform"] == '"Windows"'
        assert page["userAgentData"]["platform"] == "Windows"
        assert {"brand": "Google Chrome", "version": "124"} in page["userAgentData"]["brands"]
        assert page["webdriver"] is False

    @pytest_twisted.ensureDeferred
    async def test_no_user_agent_at_all_is_chrome_without_headless(self, site: SiteServer) -> None:
        server, page = await self.user_agent_seen(site, USER_AGENT="")
        assert server["User-Agent"] == page["userAgent"]
        assert "Chrome/" in page["userAgent"]
        assert "Headless" not in page["userAgent"]
        assert "Headless" not in server.get("Sec-CH-UA", "")
