"""``response.ip_address`` and ``response.protocol`` of a rendered response,
against plain Scrapy's for the same URL (issue 26): Chromium says where a
document came from; Lightpanda 1.0.2 does not, and they stay ``None`` there;
``response.certificate`` stays ``None`` on both, as docs/response.md says."""

from __future__ import annotations

from ipaddress import ip_address
from typing import Any

import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

CHROMIUM = {"CDP_POOL_BROWSER": "chromium", "CDP_POOL_IGNORE_HTTPS_ERRORS": True}


@pytest_twisted.ensureDeferred
async def test_chromium_fills_them_as_plain_scrapy_does(
    site: SiteServer, tls_site: SiteServer
) -> None:
    urls = [site.url("/js?n=1&conn"), tls_site.url("/echo-html?conn")]
    plain, _ = await crawl([scrapy.Request(url) for url in urls])
    rendered, _ = await crawl([scrapy.Request(url, meta={"cdp": True}) for url in urls], CHROMIUM)
    assert not plain.failures
    assert not rendered.failures
    for url in urls:
        expected = next(r for r in plain.responses if r.url == url)
        response = next(r for r in rendered.responses if r.request.url == url)
        assert response.ip_address == expected.ip_address == ip_address("127.0.0.1")
        assert response.protocol == expected.protocol == "HTTP/1.1"
        # the server's certificate over HTTPS (Network.getCertificate), none over HTTP
        assert _pem(response.certificate) == _pem(expected.certificate)
        assert (response.certificate is None) == url.startswith("http:")


def _pem(certificate: Any) -> bytes | None:
    return None if certificate is None else certificate.dumpPEM()


@pytest_twisted.ensureDeferred
async def test_lightpanda_leaves_them_unset(site: SiteServer) -> None:
    spider, _ = await crawl([scrapy.Request(site.url("/js?n=1&lp"), meta={"cdp": True})])
    [response] = spider.responses
    assert (response.ip_address, response.protocol, response.certificate) == (None, None, None)
