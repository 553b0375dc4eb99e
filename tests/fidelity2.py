"""Rendered requests keep what plain Scrapy does with them (issue 13: proxies,
user agent, large bodies, pages that navigate themselves, TLS errors), written
once and run on each embedded backend (``test_fidelity2_*.py``).

Each test is a real crawl of the real test site; proxies are real
(``python -m tests.site.proxy``), and the HTTPS site is the test site with a
self-signed certificate made at start-up (``python -m tests.site --tls``).
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import SiteServer


class FidelityCases:
    """Run on each embedded backend by a subclass setting :attr:`browser`."""

    browser = ""

    def backend_settings(self) -> dict[str, Any]:
        return {"CDP_POOL_BROWSER": self.browser}

    async def crawl(self, requests: list[scrapy.Request], **settings: Any) -> Any:
        return await crawl(requests, {**self.backend_settings(), **settings})

    # Item 6: large request bodies -----------------------------------------

    @pytest_twisted.ensureDeferred
    async def test_a_5_mb_post_body_arrives_byte_exact(self, site: SiteServer) -> None:
        body = os.urandom(5 * 1024 * 1024)
        spider, _ = await self.crawl([
            scrapy.Request(site.url("/body-digest"), method="POST", body=body,
                           headers={"Content-Type": "application/octet-stream"},
                           meta={"cdp": True}),
        ])  # fmt: skip
        assert not spider.failures, [str(f.value) for f in spider.failures]
        seen = json.loads(spider.responses[0].body)
        assert seen == {
            "method": "POST", "length": len(body), "sha256": hashlib.sha256(body).hexdigest(),
        }  # fmt: skip

    # Item 9: TLS errors ------------------------------------------------------

    @pytest_twisted.ensureDeferred
    async def test_a_self_signed_site_fails_naming_the_setting(self, tls_site: SiteServer) -> None:
        spider, _ = await self.crawl(
            [scrapy.Request(tls_site.url("/echo-html?tls"), meta={"cdp": True})]
        )
        assert not spider.responses
        [failure] = spider.failures
        assert "CDP_POOL_IGNORE_HTTPS_ERRORS" in str(failure.value), str(failure.value)

    @pytest_twisted.ensureDeferred
    async def test_a_self_signed_site_loads_with_the_setting(self, tls_site: SiteServer) -> None:
        spider, _ = await self.crawl(
            [scrapy.Request(tls_site.url("/echo-html?tls"), meta={"cdp": True})],
            CDP_POOL_IGNORE_HTTPS_ERRORS=True,
        )
        assert not spider.failures, [str(f.value) for f in spider.failures]
        response = spider.responses[0]
        assert response.status == 200
        assert json.loads(response.css("#echo::text").get(""))["query"] == "tls"
