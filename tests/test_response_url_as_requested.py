"""``Request("http://host:port")`` (no path) comes back with the request's
URL, as plain Scrapy's response keeps it (issue 35 item 5: 4 of Scrapy's
handler tests per backend failed on it): with w3lib before 2.6 without the
"/", which the browser adds; from w3lib 2.6 Scrapy's request URL has it too."""

from __future__ import annotations

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

BACKENDS = {"lightpanda": {}, "chromium": {"CDP_POOL_BROWSER": "chromium"}}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_url_without_a_path_keeps_the_requests_writing(
    site: SiteServer, backend: str
) -> None:
    bare = site.url("")
    assert not bare.endswith("/")
    plain, _ = await crawl([scrapy.Request(bare)])
    rendered, _ = await crawl([scrapy.Request(bare, meta={"cdp": True})], BACKENDS[backend])
    assert not rendered.failures, [str(f.value) for f in rendered.failures]
    (reference,) = plain.responses
    (response,) = rendered.responses
    # plain Scrapy's: the request's URL as Scrapy writes it (w3lib 2.6 and later
    # add the "/" of an empty path; earlier versions kept it out)
    assert reference.url == scrapy.Request(bare).url
    assert response.url == reference.url
    assert response.status == reference.status
