"""Fidelity to plain Scrapy (tests/fidelity2.py) on the embedded Lightpanda."""

from __future__ import annotations

import json

import pytest
import pytest_twisted
import scrapy

from tests.fidelity2 import CHROME_UA, SCRAPY_UA, FidelityCases
from tests.servers import SiteServer

#: crawls of equal settings share one embedded server (tests/crawl.py); a test
#: that counts what its own crawler's server did is marked ``own_browser``
SHARED_BROWSERS = True


class TestLightpanda(FidelityCases):
    browser = "lightpanda"

    @pytest_twisted.ensureDeferred
    async def test_a_user_agent_without_mozilla_is_honoured(self, site: SiteServer) -> None:
        server, page = await self.user_agent_seen(site)
        assert server["User-Agent"] == page["userAgent"] == SCRAPY_UA

    @pytest_twisted.ensureDeferred
    async def test_a_mozilla_user_agent_is_replaced_with_one_warning(
        self, site: SiteServer, caplog: pytest.LogCaptureFixture
    ) -> None:
        spider, _ = await self.crawl(
            [scrapy.Request(site.url(f"/ua?{i}"), meta={"cdp": True}) for i in range(3)],
            USER_AGENT=CHROME_UA,
        )
        assert len(spider.responses) == 3
        warnings = [r for r in caplog.records if "Lightpanda refuses user agents" in r.message]
        assert len(warnings) == 1
        sent = json.loads(spider.responses[0].css("#headers::text").get(""))["User-Agent"]
        assert sent.startswith("Lightpanda/")
        assert repr(sent) in warnings[0].getMessage()
