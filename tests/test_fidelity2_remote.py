"""Settings of issue 13 on remote CDP endpoints (tests/fidelity2.py has the
cases run on each embedded backend)."""

from __future__ import annotations

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import RequestTooLarge
from scrapy_cdp_pool.render._request.request_proxy import ProxyUnsupported
from tests.crawl import crawl
from tests.servers import SiteServer


@pytest.mark.parametrize("kind", ["chromium", "lightpanda"])
@pytest_twisted.ensureDeferred
async def test_a_remote_endpoint_and_ignore_https_errors(
    tls_site: SiteServer, kind: str, request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    """A remote Chromium takes the setting per connection; a remote Lightpanda
    cannot (only its start-up flag turns verification off): the crawl warns."""
    endpoint = request.getfixturevalue(f"{kind}_endpoint")
    spider, _ = await crawl(
        [scrapy.Request(tls_site.url("/echo-html?remote"), meta={"cdp": True})],
        {"CDP_POOL_ENDPOINTS": [endpoint], "CDP_POOL_IGNORE_HTTPS_ERRORS": True},
    )
    warned = [r for r in caplog.records if "CDP_POOL_IGNORE_HTTPS_ERRORS is set" in r.message]
    if kind == "chromium":
        assert not spider.failures, [str(f.value) for f in spider.failures]
        assert spider.responses[0].status == 200
        assert not warned
    else:
        assert len(warned) == 1
        [failure] = spider.failures
        assert "CDP_POOL_IGNORE_HTTPS_ERRORS" in str(failure.value)


@pytest.mark.parametrize("what", ["body", "script"])
@pytest_twisted.ensureDeferred
async def test_a_message_a_remote_lightpanda_refuses_fails_by_name_once(
    site: SiteServer, lightpanda_endpoint: str, what: str
) -> None:
    """A remote Lightpanda started with its default --cdp-max-message-size
    (1 MiB) closes the connection on a 2 MB body or script: the request fails
    with RequestTooLarge, not retried, instead of "connection closed"."""
    if what == "body":
        request = scrapy.Request(site.url("/body-digest"), method="POST", body=b"x" * 2_000_000,
                                 meta={"cdp": True})  # fmt: skip
    else:
        script = "'" + "y" * 2_000_000 + "'.length"
        request = scrapy.Request(
            site.url("/echo-html?script"), meta={"cdp": True, "cdp_actions": [["evaluate", script]]}
        )
    spider, crawler = await crawl(
        [request],
        {"CDP_POOL_ENDPOINTS": [lightpanda_endpoint], "RETRY_ENABLED": True, "RETRY_TIMES": 2},
    )
    [failure] = spider.failures
    assert failure.check(RequestTooLarge), repr(failure.value)
    assert "-byte message" in str(failure.value)
    stats = crawler.stats.get_stats()
    assert "retry/count" not in stats
    assert stats["cdp_pool/errors/CDPRequestTooLarge"] == 1


@pytest.mark.parametrize("case", ["socks", "bearer"])
@pytest_twisted.ensureDeferred
async def test_a_meta_proxy_that_cannot_be_honoured_fails_by_name(
    site: SiteServer, lightpanda_endpoint: str, case: str
) -> None:
    """Never direct: a socks proxy is not what Scrapy's HTTP handler takes, a
    Bearer Proxy-Authorization cannot be answered by a browser. (A remote
    Lightpanda takes a proxy per context since issue 29:
    tests/test_lightpanda_context_proxy.py.)"""
    settings: dict[str, object] = {
        "RETRY_ENABLED": True, "RETRY_TIMES": 2, "CDP_POOL_ENDPOINTS": [lightpanda_endpoint],
    }  # fmt: skip
    headers = {}
    proxy = "http://127.0.0.1:9"
    if case == "socks":
        proxy = "socks5://127.0.0.1:9"
    else:
        headers["Proxy-Authorization"] = "Bearer t0ken"
    key = f"/echo-html?{case}"
    before = site.stats()["hits_by_url"].get(key, 0)
    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/echo-html?{case}"), headers=headers,
                        meta={"cdp": True, "proxy": proxy})],
        settings,
    )  # fmt: skip
    [failure] = spider.failures
    assert failure.check(ProxyUnsupported), repr(failure.value)
    assert "t0ken" not in str(failure.value)
    assert "retry/count" not in crawler.stats.get_stats()
    assert site.stats()["hits_by_url"].get(key, 0) == before
