"""Issue 29, item 4: Lightpanda 1.0.2 takes a proxy per browser context
(``Target.createBrowserContext``'s ``proxyServer``), so a proxied request on
Lightpanda needs no dedicated server: HTTP (absolute-form requests) and HTTPS
(``CONNECT``), with and without credentials (in the proxy's URL: a 407 to
``CONNECT`` does not come as ``Fetch.authRequired`` on Lightpanda, the page
failed with ``CouldntConnect``), on the embedded server and on a remote one;
the page's own script goes through the proxy too, and the next context on the
same connection goes direct.

The proxies are real (``python -m tests.site.proxy``, on loopback): they map
every host to 127.0.0.1, so ``proxied.test`` loads only through one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.core.runtime import runtime_of
from tests.crawl import RecordingSpider, crawl
from tests.servers import ProxyServer, SiteServer

PASSWORD = "s3cret-" + "y" * 8


@pytest.fixture(params=["open", "auth"])
def proxy(request: pytest.FixtureRequest) -> Iterator[tuple[ProxyServer, str]]:
    """A proxy and the ``meta["proxy"]`` to reach it (with the credentials
    of the one that requires them)."""
    if request.param == "open":
        server = ProxyServer("open")
        yield server, server.url
    else:
        server = ProxyServer("auth", auth=f"u:{PASSWORD}")
        parts = urlsplit(server.url)
        yield server, f"http://u:{PASSWORD}@{parts.netloc}"
    server.stop()


def proxied(site: SiteServer, path: str) -> str:
    parts = urlsplit(site.base)
    return f"{parts.scheme}://proxied.test:{parts.port}{path}"


def record_servers(spider: RecordingSpider, response: scrapy.http.Response) -> list[Any]:
    """A ``then`` hook: the pool's server processes while a proxied page is
    in flight, and the proxied page's next request: a direct one."""
    pool = runtime_of(spider.crawler).pool
    assert pool is not None
    spider.server_pids = list(pool.server_pids())  # type: ignore[attr-defined]
    return []


@pytest.mark.parametrize("scheme", ["http", "https"])
@pytest_twisted.ensureDeferred
async def test_a_proxied_request_on_lightpanda_uses_no_dedicated_server(
    site: SiteServer,
    tls_site: SiteServer,
    proxy: tuple[ProxyServer, str],
    scheme: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, meta_proxy = proxy
    target = site if scheme == "http" else tls_site
    url = proxied(target, "/external-script?ctx")
    direct = target.url("/echo-html?direct")
    spider, crawler = await crawl(
        [
            scrapy.Request(url, meta={"cdp": True, "proxy": meta_proxy, "then": record_servers}),
            scrapy.Request(direct, meta={"cdp": True, "proxy": None}, priority=-1),
        ],
        {
            "CDP_POOL_CONNECTIONS": 1,  # the direct request takes the same connection
            "CONCURRENT_REQUESTS": 1,
            "CDP_POOL_IGNORE_HTTPS_ERRORS": True,  # the test site's self-signed certificate
        },
    )
    assert not spider.failures, [str(f.value) for f in spider.failures]
    page = spider.by_url("external-script")
    assert page.status == 200
    assert page.css("#from-script::text").get() == "loaded"  # its script came through the proxy
    assert len(spider.server_pids) == 1  # type: ignore[attr-defined]
    stats = crawler.stats
    assert stats is not None
    assert not stats.get_value("cdp_pool/dedicated_servers/started")
    echo = spider.by_url("direct")
    assert "X-Via-Proxy" not in echo.text  # the next context went direct
    server.stop()
    if scheme == "http":
        assert f"FORWARDED {url}" in server.log
        assert f"FORWARDED {proxied(target, '/external-script.js')}" in server.log
    else:
        tunnel = f"TUNNELLED proxied.test:{urlsplit(target.base).port}"
        assert tunnel in server.log
    assert not any("direct" in line for line in server.log)
    # the credentials go with every request, CONNECT included (in the
    # context's proxy URL): the authenticating proxy never refused one
    assert not any(line.startswith("DENIED") for line in server.log)
    assert PASSWORD not in caplog.text


@pytest_twisted.ensureDeferred
async def test_a_remote_lightpanda_takes_a_requests_proxy(
    site: SiteServer, lightpanda_endpoint: str
) -> None:
    """It used to refuse ``meta["proxy"]`` by name (no dedicated server for a
    remote endpoint)."""
    server = ProxyServer("remote", auth=f"u:{PASSWORD}")
    try:
        netloc = urlsplit(server.url).netloc
        url = proxied(site, "/external-script?remote")
        spider, _ = await crawl(
            [scrapy.Request(url, meta={"cdp": True, "proxy": f"http://u:{PASSWORD}@{netloc}"})],
            {"CDP_POOL_ENDPOINTS": [lightpanda_endpoint]},
        )
    finally:
        server.stop()
    assert not spider.failures, [str(f.value) for f in spider.failures]
    assert spider.by_url("external-script").css("#from-script::text").get() == "loaded"
    assert f"FORWARDED {url}" in server.log


@pytest_twisted.ensureDeferred
async def test_a_proxys_407_to_connect_is_named_and_not_retried(
    tls_site: SiteServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 35, item 5: Lightpanda reports a proxy's 407 to ``CONNECT`` (wrong
    credentials, an HTTPS site) only as ``CouldntConnect``, which was raised
    as ``DownloadConnectionRefusedError`` and retried twice, the 407 never
    named. The plugin asks the proxy and names it, once (retries on)."""
    from scrapy_cdp_pool.errors import ProxyAuthenticationRejected

    server = ProxyServer("auth407", auth=f"u:{PASSWORD}")
    try:
        netloc = urlsplit(server.url).netloc
        url = proxied(tls_site, "/echo-html?wrong")
        spider, crawler = await crawl(
            [scrapy.Request(url, meta={"cdp": True, "proxy": f"http://u:wrong-pw@{netloc}"})],
            {"CDP_POOL_IGNORE_HTTPS_ERRORS": True, "RETRY_ENABLED": True, "RETRY_TIMES": 2},
        )
    finally:
        server.stop()
    assert len(spider.failures) == 1
    error = spider.failures[0].value
    assert isinstance(error, ProxyAuthenticationRejected), repr(error)
    assert "407 Proxy Authentication Required" in str(error)
    assert "wrong-pw" not in str(error)
    assert "wrong-pw" not in caplog.text
    stats = crawler.stats
    assert stats is not None
    assert not stats.get_value("retry/count")  # the same credentials, the same answer
    tunnels = [line for line in server.log if "proxied.test" in line]
    assert len(tunnels) == 2, server.log  # the page's CONNECT and the plugin's question
