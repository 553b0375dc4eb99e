"""The handler built from a crawler and called directly, outside a running
crawl, as Scrapy's handler tests and tools call one (issue 26 item 3), on both
embedded backends; and a request header given several values reaches the
site with all of them."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.spider import DefaultSpider
from scrapy.utils.test import get_crawler

from scrapy_cdp_pool import CDPDownloadHandler
from tests.servers import SiteServer

BACKENDS = [{"CDP_POOL_BROWSER": "lightpanda"}, {"CDP_POOL_BROWSER": "chromium"}]


async def download(settings: dict[str, Any], request: Request) -> Any:
    crawler = get_crawler(
        DefaultSpider,
        {"ADDONS": {"scrapy_cdp_pool.Addon": 0}, "CDP_POOL_RENDER_ALL": True, **settings},
    )
    crawler.spider = crawler._create_spider()
    handler = build_from_crawler(CDPDownloadHandler, crawler)
    try:
        return await handler.download_request(request)
    finally:
        await handler.close()


@pytest.mark.parametrize("backend", BACKENDS, ids=["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_a_handler_outside_a_crawl_renders_and_sends_every_header_value(
    site: SiteServer, backend: dict[str, Any]
) -> None:
    # Before: RuntimeError "Crawler.engine is not set yet" (no crawl); then the
    # site saw only "X-Custom-Header: bar".
    request = Request(
        site.url("/echo?repeated"),
        headers=[("X-Custom-Header", "foo"), ("X-Custom-Header", "bar"), ("X-One", "1")],
    )
    # in an asyncio task, as Scrapy's downloader (and its coroutine_test) runs it
    response = await deferred_from_coro(download(backend, request))
    assert response.status == 200
    headers = {k.lower(): v for k, v in response.json()["headers"].items()}
    assert headers["x-custom-header"] == "foo, bar"
    assert headers["x-one"] == "1"


@pytest_twisted.ensureDeferred
async def test_scrapy_client_settings_a_browser_ignores_are_named_once_per_crawler(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = get_crawler(
        DefaultSpider,
        {
            "ADDONS": {"scrapy_cdp_pool.Addon": 0},
            "DOWNLOAD_BIND_ADDRESS": "127.0.0.2",
            "DOWNLOADER_CLIENT_TLS_CIPHERS": "CAMELLIA256-SHA",
        },
    )
    crawler.spider = crawler._create_spider()
    handlers = [build_from_crawler(CDPDownloadHandler, crawler) for _ in ("http", "https")]
    for handler in handlers:
        await deferred_from_coro(handler.close())
    [warning] = [r.getMessage() for r in caplog.records if "not applied" in r.getMessage()]
    assert warning.startswith("DOWNLOAD_BIND_ADDRESS, DOWNLOADER_CLIENT_TLS_CIPHERS are not")


def test_an_unknown_tls_version_is_refused_as_scrapy_refuses_it() -> None:
    crawler = get_crawler(
        DefaultSpider,
        {"ADDONS": {"scrapy_cdp_pool.Addon": 0}, "DOWNLOAD_TLS_MIN_VERSION": "TLSv9"},
    )
    with pytest.raises(ValueError, match="Unknown DOWNLOAD_TLS_MIN_VERSION value: TLSv9"):
        build_from_crawler(CDPDownloadHandler, crawler)
