"""Issue 35, item 5(e): ``response.certificate`` of a rendered HTTPS page on
Chromium is the server's certificate, as plain Scrapy's (a Twisted
``Certificate``, the same DER), read with ``Network.getCertificate``;
Lightpanda hands none over (``None``, docs/response.md)."""

from __future__ import annotations

import pytest
import pytest_twisted
import scrapy
from cryptography.hazmat.primitives.serialization import Encoding
from twisted.internet.ssl import Certificate

from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True


def der(certificate: Certificate) -> bytes:
    return certificate.original.to_cryptography().public_bytes(Encoding.DER)


@pytest.mark.parametrize("browser", ["chromium", "lightpanda"])
@pytest_twisted.ensureDeferred
async def test_a_rendered_https_page_has_the_servers_certificate(
    tls_site: SiteServer, site: SiteServer, browser: str
) -> None:
    spider, _ = await crawl(
        [
            scrapy.Request(tls_site.url("/echo-html?plain"), meta={"cdp": False}),
            scrapy.Request(tls_site.url("/echo-html?rendered"), meta={"cdp": True}),
            scrapy.Request(site.url("/echo-html?http"), meta={"cdp": True}),
        ],
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_IGNORE_HTTPS_ERRORS": True},
    )
    assert not spider.failures, [str(f.value) for f in spider.failures]
    plain = spider.by_url("plain").certificate
    assert isinstance(plain, Certificate)
    rendered = spider.by_url("rendered").certificate
    assert spider.by_url("?http").certificate is None  # no TLS, as plain Scrapy
    if browser == "lightpanda":
        assert rendered is None  # Lightpanda 1.0.2 has no Network.getCertificate
        return
    assert isinstance(rendered, Certificate)
    assert der(rendered) == der(plain)
