"""Faults survived: a page stuck in JavaScript, an embedded server killed, a
remote endpoint that goes away and comes back, a server that refuses
connections because it is full. Real servers, real crawls; checked by what
succeeded, what failed and how, and the pool's counters."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadTimeoutError
from twisted.python.failure import Failure

from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.errors import PageScriptStalled
from tests.contract import token
from tests.crawl import RecordingSpider, crawl
from tests.profiles import hits
from tests.servers import LightpandaProcess, SiteServer
from tests.site.shop import PRODUCTS

CDP: dict[str, Any] = {"cdp": True}
RETRYING: dict[str, Any] = {
    "RETRY_ENABLED": True,
    "RETRY_TIMES": 5,
    "CDP_POOL_RETRY_BACKOFF_BASE_SECONDS": 0.2,
    "CDP_POOL_RETRY_BACKOFF_MAX_SECONDS": 2,
}


def assert_contexts_balanced(crawler: Crawler) -> None:
    stats = crawler.stats.get_stats()
    assert stats.get("cdp_pool/contexts_opened") == stats.get("cdp_pool/contexts_closed")


class FollowUpOnErrorSpider(RecordingSpider):
    """A failed request's ``meta["then_on_error"]`` (a list of requests) is sent
    once it has failed."""

    def on_error(self, failure: Failure) -> Any:
        super().on_error(failure)
        request = getattr(failure, "request", None)
        for follow_up in (request.meta.get("then_on_error") or []) if request else []:
            yield self.prepare(follow_up)


# A page stuck in JavaScript --------------------------------------------------


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_busy_page_times_out_alone_and_its_connection_serves_again(
    site: SiteServer, browser: str
) -> None:
    """One connection: the ``for(;;){}`` page fails at its deadline as a
    timeout; the request sent after it can only run on that connection, once
    its context is closed or the connection replaced."""
    after = scrapy.Request(site.url("/js?n=2&after-busy"), meta={"cdp": True})
    spider, crawler = await crawl(
        [
            scrapy.Request(
                site.url("/busy-loop"),
                # Chromium: 6 s, for its document to have arrived under load (else a
                # plain timeout, not the stall the test expects)
                meta={
                    "cdp": True,
                    "download_timeout": 3 if browser == "lightpanda" else 6,
                    "then_on_error": [after],
                },
            )
        ],
        {
            "CDP_POOL_BROWSER": browser,
            "CDP_POOL_CONNECTIONS": 1,
            "CDP_POOL_CONTEXT_CLOSE_TIMEOUT_SECONDS": 2,
        },
        spider_cls=FollowUpOnErrorSpider,
    )
    assert len(spider.failures) == 1
    # Chromium's stuck page is named (see the test below); Lightpanda's
    # watchdog is at half of DOWNLOAD_TIMEOUT, later than this request's 3 s
    expected = PageScriptStalled if browser == "chromium" else DownloadTimeoutError
    assert spider.failures[0].check(expected), spider.failures[0].value
    if browser == "lightpanda":
        assert "download_timeout = 3 s" in str(spider.failures[0].value)
    assert spider.by_url("after-busy").css("p.item::text").getall() == ["item-1", "item-2"]
    stats = crawler.stats.get_stats()
    assert stats[f"cdp_pool/failures/{expected.__name__}"] == 1
    if browser == "lightpanda":  # stuck: disposing the context does not answer
        assert stats["cdp_pool/retired"] == 1
        assert stats["cdp_pool/reconnects"] == 1
    assert_contexts_balanced(crawler)


@pytest_twisted.ensureDeferred
async def test_busy_page_leaves_requests_on_other_connections_alone(site: SiteServer) -> None:
    spider, crawler = await crawl(
        [
            scrapy.Request(site.url("/busy-loop"), meta={"cdp": True, "download_timeout": 3}),
            *(scrapy.Request(site.url(f"/js?n=1&other={i}"), meta={"cdp": True}) for i in range(3)),
        ],
        {"CDP_POOL_CONNECTIONS": 2, "CDP_POOL_CONTEXT_CLOSE_TIMEOUT_SECONDS": 2},
    )
    assert [f.check(DownloadTimeoutError) for f in spider.failures] == [DownloadTimeoutError]
    assert sorted(r.url for r in spider.responses) == [
        site.url(f"/js?n=1&other={i}") for i in range(3)
    ]
    assert all(r.css("p.item").getall() for r in spider.responses)
    assert_contexts_balanced(crawler)


@pytest_twisted.ensureDeferred
async def test_lightpanda_watchdog_is_set_below_the_download_timeout(site: SiteServer) -> None:
    """The embedded Lightpanda ends a page stuck in JavaScript itself, before
    ``DOWNLOAD_TIMEOUT`` (``--watchdog-ms``), and closes its connection: the
    request fails by name (``PageScriptStalled``, from the server's stderr;
    before: "connection closed"), is not retried, the pool reconnects without
    having to retire the connection, and the next page works."""
    seen: dict[str, Any] = {}
    key = token()

    def then(spider: Any, response: Any) -> Any:
        pool = runtime_of(spider.crawler).pool
        assert pool is not None
        assert pool.server is not None
        assert pool.server.pid
        seen["argv"] = Path(f"/proc/{pool.server.pid}/cmdline").read_bytes().split(b"\0")
        after = scrapy.Request(site.url("/js?n=1&after-watchdog"), meta={"cdp": True})
        return [
            scrapy.Request(
                site.url(f"/busy-loop?watchdog={key}"),
                meta={"cdp": True, "then_on_error": [after]},
            )
        ]

    spider, crawler = await crawl(
        [scrapy.Request(site.url("/js?first"), meta={"cdp": True, "then": then})],
        {"DOWNLOAD_TIMEOUT": 8, "CDP_POOL_CONNECTIONS": 1, "RETRY_ENABLED": True},
        spider_cls=FollowUpOnErrorSpider,
    )
    argv = seen["argv"]
    assert argv[argv.index(b"--watchdog-ms") + 1] == b"4000"
    assert len(spider.failures) == 1
    failure = spider.failures[0]
    assert failure.check(PageScriptStalled), failure.value
    assert "busy for" in str(failure.value)
    assert "watchdog" in str(failure.value)
    assert hits(site, f"/busy-loop?watchdog={key}") == 1  # not retried
    assert spider.by_url("after-watchdog").css("p.item").getall()
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/errors/PageScriptStalled"] == 1
    assert "retry/count" not in stats
    assert stats["cdp_pool/reconnects"] == 1
    assert stats.get("cdp_pool/retired", 0) == 0
    assert_contexts_balanced(crawler)


@pytest.mark.parametrize("at", ["parse", "load"])
@pytest_twisted.ensureDeferred
async def test_chromium_page_stuck_in_script_fails_by_name_and_is_not_retried(
    site: SiteServer, at: str
) -> None:
    """On Chromium, a page whose script never yields (while the document is
    parsed, or in its load handler) fails at its 6 s deadline as
    ``PageScriptStalled``, not retried (before: a ``DownloadTimeoutError``,
    retried twice more); its main thread did not answer the probe. The other
    pages of the crawl render."""
    path = f"/busy-loop?at={at}&stall={token()}"
    spider, crawler = await crawl(
        [
            # 6 s: under load its document must have arrived (else a plain timeout)
            scrapy.Request(site.url(path), meta={"cdp": True, "download_timeout": 6}),
            *(scrapy.Request(site.url(f"/js?n=2&beside={i}"), meta=CDP) for i in range(3)),
        ],
        {"CDP_POOL_BROWSER": "chromium", "RETRY_ENABLED": True},
    )
    assert len(spider.failures) == 1
    failure = spider.failures[0]
    assert failure.check(PageScriptStalled), failure.value
    message = str(failure.value)
    assert site.url(path) in message
    assert "did not yield within download_timeout on Chromium" in message
    assert hits(site, path) == 1  # not retried
    assert sorted(r.url for r in spider.responses) == [
        site.url(f"/js?n=2&beside={i}") for i in range(3)
    ]
    assert all(r.css("p.item::text").getall() == ["item-1", "item-2"] for r in spider.responses)
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/errors/PageScriptStalled"] == 1
    assert stats["cdp_pool/failures/PageScriptStalled"] == 1
    assert "retry/count" not in stats
    assert_contexts_balanced(crawler)


@pytest_twisted.ensureDeferred
async def test_chromium_page_stuck_in_script_is_named_after_the_navigation_and_action_timeouts(
    site: SiteServer,
) -> None:
    """Issue 39: the navigation's wait for the load event ends
    (``cdp_navigation_timeout``) and the page, stuck in its script while
    parsed or in its load handler, never reached its load event: its DOM is
    read within ``CDP_POOL_ACTION_TIMEOUT_SECONDS`` (not the rest of
    ``download_timeout``, which a loaded page's big serialization keeps:
    tests/test_big_pages.py), then probed and named, not retried. Before: the
    read held the request for its whole 60 s ``download_timeout`` (180 s by
    default), the message naming ``download_timeout``."""
    paths = [f"/busy-loop?stall={token()}", f"/busy-loop?at=load&stall={token()}"]
    meta = {"cdp": True, "download_timeout": 60, "cdp_navigation_timeout": 2}
    spider, crawler = await crawl(
        [scrapy.Request(site.url(path), meta=meta) for path in paths],
        {
            "CDP_POOL_BROWSER": "chromium",
            "CDP_POOL_CONNECTIONS": 2,
            "CDP_POOL_ACTION_TIMEOUT_SECONDS": 2,
            "RETRY_ENABLED": True,
        },
    )
    assert len(spider.failures) == 2
    for failure in spider.failures:
        assert failure.check(PageScriptStalled), failure.value
        message = str(failure.value)
        assert "did not yield within its deadline (no load event" in message, message
        assert "action timeout of 2 s (CDP_POOL_ACTION_TIMEOUT_SECONDS)" in message
    assert [hits(site, path) for path in paths] == [1, 1]
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/errors/PageScriptStalled"] == 2
    assert "retry/count" not in stats


#: pages only waiting on the network, each its own way
NETWORK_WAITS = [
    "/hanging-image",  # the document is in, its image never comes: no load event
    "/slow?ms=60000",  # no document yet
    # loaded, then navigating to a slow page (Chromium holds the probe
    # while a navigation is pending: not probed)
    "/behaviour/scheme?when=inline&to=%2Fslow%3Fms%3D60000",
]


@pytest_twisted.ensureDeferred
async def test_chromium_pages_waiting_on_the_network_still_time_out_and_are_retried(
    site: SiteServer,
) -> None:
    """A page that is only waiting on the network answers the probe (or, with
    no document yet or a navigation pending, is not probed): it stays a
    ``DownloadTimeoutError``, retried. The three ways in one crawl (three
    parametrized crawls before, each waiting out the same two timeouts)."""
    wait = token()
    urls = [site.url(f"{path}{'&' if '?' in path else '?'}wait={wait}") for path in NETWORK_WAITS]
    spider, crawler = await crawl(
        # 5 s: the retry's navigation reaches the site within it on a loaded machine
        [
            scrapy.Request(url, meta={"cdp": True, "download_timeout": 5, "max_retry_times": 1})
            for url in urls
        ],
        {"CDP_POOL_BROWSER": "chromium", "RETRY_ENABLED": True},
    )
    failed = {failure.request.url: failure for failure in spider.failures}
    assert sorted(failed) == sorted(urls)
    for url, failure in failed.items():
        assert failure.check(DownloadTimeoutError), (url, failure.value)
        assert not failure.check(PageScriptStalled), url
        assert hits(site, url.removeprefix(site.base)) == 2, url  # retried once
    stats = crawler.stats.get_stats()
    assert stats["retry/count"] == len(urls)
    assert "cdp_pool/errors/PageScriptStalled" not in stats
    assert stats["cdp_pool/failures/DownloadTimeoutError"] == len(urls)
    assert_contexts_balanced(crawler)


# Servers that die, go away or are full -----------------------------------------


def product_crawl(site: SiteServer, on_page: Any) -> list[scrapy.Request]:
    """The shop: listing pages (``on_page(spider, page)`` is called on each)
    and every product page once."""

    def listing(spider: Any, response: Any) -> Any:
        on_page(spider, response)
        for href in response.css(".product a::attr(href)").getall():
            yield response.follow(href, meta={"cdp": True})
        next_page = response.css("a.next::attr(href)").get()
        if next_page:
            yield response.follow(next_page, meta={"cdp": True, "then": listing})

    return [scrapy.Request(site.url("/products?page=1"), meta={"cdp": True, "then": listing})]


def product_names(spider: RecordingSpider) -> list[str]:
    return [
        name
        for response in spider.responses
        if "/product/" in response.url
        for name in response.css("h1.name::text").getall()
    ]


@pytest_twisted.ensureDeferred
async def test_embedded_server_killed_mid_crawl_every_item_exactly_once(
    site: SiteServer,
) -> None:
    killed: list[int] = []

    def kill_on_page_2(spider: Any, response: Any) -> None:
        if "page=2" in response.url:
            pool = runtime_of(spider.crawler).pool
            assert pool is not None
            assert pool.server is not None
            assert pool.server.pid
            killed.append(pool.server.pid)
            os.kill(pool.server.pid, signal.SIGKILL)

    spider, crawler = await crawl(
        product_crawl(site, kill_on_page_2), {**RETRYING, "CDP_POOL_CONNECTIONS": 3}
    )
    assert killed
    names = product_names(spider)
    assert sorted(names) == sorted(p["name"] for p in PRODUCTS.values())
    assert not spider.failures
    assert crawler.stats.get_value("cdp_pool/server_restarts") == 1
    assert_contexts_balanced(crawler)


class RestartableLightpanda(LightpandaProcess):
    """A remote endpoint that can be killed and started again on its port."""

    def __init__(self) -> None:
        super().__init__()
        self.argv = list(self.proc.args)  # type: ignore[arg-type]

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def restart(self) -> None:
        self.proc = subprocess.Popen(
            self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/json/version", timeout=2).close()
                return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("lightpanda did not restart") from None
                time.sleep(0.05)


@pytest_twisted.ensureDeferred
async def test_remote_endpoint_gone_mid_crawl_and_back(site: SiteServer) -> None:
    """The endpoint dies while pages are in flight and is started again: they
    fail retryably, connections come back with backoff, nothing hangs and every
    item arrives once."""
    endpoint = RestartableLightpanda()
    restarted: list[asyncio.Future[None]] = []

    def kill_on_page_2(spider: Any, response: Any) -> None:
        if "page=2" in response.url:
            endpoint.kill()
            restarted.append(asyncio.get_running_loop().run_in_executor(None, endpoint.restart))

    try:
        spider, crawler = await crawl(
            product_crawl(site, kill_on_page_2),
            {**RETRYING, "CDP_POOL_ENDPOINTS": [endpoint.endpoint], "CDP_POOL_CONNECTIONS": 3},
        )
        await restarted[0]
    finally:
        endpoint.stop()
    assert sorted(product_names(spider)) == sorted(p["name"] for p in PRODUCTS.values())
    assert not spider.failures
    assert crawler.stats.get_value("cdp_pool/reconnects") >= 1
    assert_contexts_balanced(crawler)


@pytest_twisted.ensureDeferred
async def test_full_server_refusing_connections_with_503(
    site: SiteServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Lightpanda answers HTTP 503 past ``--cdp-max-connections``: the refused
    connections are retried with backoff; the crawl completes on the others."""
    full = LightpandaProcess(max_connections=1)
    caplog.set_level("DEBUG", logger="scrapy_cdp_pool.browser.pool.pool")
    try:
        spider, crawler = await crawl(
            [scrapy.Request(site.url(f"/js?n=1&full={i}"), meta={"cdp": True}) for i in range(4)],
            {**RETRYING, "CDP_POOL_ENDPOINTS": [full.endpoint], "CDP_POOL_CONNECTIONS": 3},
        )
    finally:
        full.stop()
    assert not spider.failures
    assert len(spider.responses) == 4
    assert any("HTTP 503" in record.getMessage() for record in caplog.records)
    assert_contexts_balanced(crawler)
