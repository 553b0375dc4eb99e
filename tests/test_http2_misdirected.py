"""HTTP/2 and ``421 Misdirected Request`` on both embedded backends, against
plain Scrapy, with a real HTTP/2 server on loopback (tests/h2_site.py: 421 to
``/misdirected`` over HTTP/2, 200 over HTTP/1.1).

Both browsers negotiate HTTP/2 and neither falls back to HTTP/1.1 on a 421
(Chromium asks once more over HTTP/2): the 421 is the response. Plain Scrapy's
handler speaks HTTP/1.1 only and gets the page. ``CDP_POOL_HTTP2 = False``
starts the browsers on HTTP/1.1 only, and the rendered page is plain Scrapy's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted
import scrapy

from tests.crawl import crawl
from tests.servers import H2Site

BACKENDS = ["lightpanda", "chromium"]
TLS = {"CDP_POOL_IGNORE_HTTPS_ERRORS": True}  # the server's certificate is self-signed


@pytest.fixture
def h2_site() -> Iterator[H2Site]:
    site = H2Site()
    yield site
    site.stop()


def _requests(site: H2Site, path: str) -> list[scrapy.Request]:
    """``path`` rendered, and fetched by plain Scrapy (a query tells them apart)."""
    return [
        scrapy.Request(site.url(f"{path}?rendered"), meta={"cdp": True}),
        scrapy.Request(site.url(f"{path}?plain"), meta={"cdp": False}),
    ]


def _seen(spider: Any) -> dict[str, tuple[int, str | None]]:
    """Per request (``rendered``, ``plain``): status, and the protocol the page says."""
    return {
        r.url.rsplit("?", 1)[1]: (r.status, r.css("#proto::text").get()) for r in spider.responses
    }


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_a_421_over_http2_is_the_browser_s_response(h2_site: H2Site, browser: str) -> None:
    # What each backend does on its own (the documented behaviour; passes
    # before and after): HTTP/2 is negotiated, and the 421 comes back.
    spider, _ = await crawl(
        [*_requests(h2_site, "/ok"), *_requests(h2_site, "/misdirected")],
        {"CDP_POOL_BROWSER": browser, **TLS},
    )
    assert not spider.failures, spider.failures
    statuses = sorted((r.url.split("/")[-1], r.status) for r in spider.responses)
    assert statuses == [
        ("misdirected?plain", 200),
        ("misdirected?rendered", 421),
        ("ok?plain", 200),
        ("ok?rendered", 200),
    ]
    assert spider.by_url("/ok?rendered").css("#proto::text").get() == "h2"
    assert spider.by_url("/ok?plain").css("#proto::text").get() == "http/1.1"
    served = h2_site.served()
    assert served["h2 /misdirected?rendered"] == {"lightpanda": 1, "chromium": 2}[browser]
    assert "http/1.1 /misdirected?rendered" not in served  # no fallback to HTTP/1.1


@pytest.mark.parametrize("browser", BACKENDS)
@pytest_twisted.ensureDeferred
async def test_http2_off_renders_over_http11_as_plain_scrapy(h2_site: H2Site, browser: str) -> None:
    # Before: CDP_POOL_HTTP2 was an unknown setting, and the crawl did not start.
    spider, _ = await crawl(
        _requests(h2_site, "/misdirected"),
        {"CDP_POOL_BROWSER": browser, "CDP_POOL_HTTP2": False, **TLS},
    )
    assert not spider.failures, spider.failures
    assert _seen(spider) == {"rendered": (200, "http/1.1"), "plain": (200, "http/1.1")}
    assert not [key for key in h2_site.served() if key.startswith("h2 ")]
