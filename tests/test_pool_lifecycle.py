"""The pool's life in real crawls: one pool per crawler, a fallback handler that
is the previous one, servers stopped at close, a killed server replaced, an
unreachable endpoint ending the crawl cleanly."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from scrapy_cdp_pool import Addon, CDPDownloadHandler
from scrapy_cdp_pool.browser.backends import CHROMIUM, LIGHTPANDA
from scrapy_cdp_pool.browser.pool.embedded_server import free_port
from scrapy_cdp_pool.browser.pool.pool import ConnectionPool
from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.settings.config import PoolConfig
from tests.crawl import crawl
from tests.servers import SiteServer, process_tree_alive

SEEN_BY_FALLBACK: list[str] = []


class RecordingFallbackHandler:
    """A project's own HTTP handler: the add-on must keep it for requests
    that are not rendered."""

    lazy = False

    def __init__(self, crawler: Any) -> None:
        pass

    @classmethod
    def from_crawler(cls, crawler: Any) -> RecordingFallbackHandler:
        return cls(crawler)

    async def download_request(self, request: scrapy.Request) -> Response:
        SEEN_BY_FALLBACK.append(request.url)
        return HtmlResponse(request.url, body=b"<p id=fallback>yes</p>", request=request)

    async def close(self) -> None:
        pass


@pytest_twisted.ensureDeferred
async def test_previous_handler_serves_requests_that_are_not_rendered(site: SiteServer) -> None:
    SEEN_BY_FALLBACK.clear()
    spider, _ = await crawl(
        [
            scrapy.Request(site.url("/js?fallback")),
            scrapy.Request(site.url("/js?r"), meta={"cdp": True}),
        ],
        {"DOWNLOAD_HANDLERS": {"http": "tests.test_pool_lifecycle.RecordingFallbackHandler"}},
    )  # fmt: skip
    assert SEEN_BY_FALLBACK == [site.url("/js?fallback")]
    assert spider.by_url("/js?fallback").css("#fallback::text").get() == "yes"
    assert spider.by_url("/js?r").css("p.item").getall()


@pytest_twisted.ensureDeferred
async def test_render_all_with_per_request_opt_out(site: SiteServer) -> None:
    spider, crawler = await crawl(
        [
            scrapy.Request(site.url("/js?all")),
            scrapy.Request(site.url("/js?out"), meta={"cdp": False}),
        ],
        {"CDP_POOL_RENDER_ALL": True},
    )  # fmt: skip
    assert spider.by_url("/js?all").css("p.item").getall()
    assert not spider.by_url("/js?out").css("p.item").getall()
    assert crawler.stats.get_value("cdp_pool/pages") == 1


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_embedded_server_is_stopped_at_close(site: SiteServer, browser: str) -> None:
    seen: dict[str, Any] = {}

    def then(spider: Any, response: Any) -> Any:
        pool = runtime_of(spider.crawler).pool
        assert pool is not None
        assert pool.server is not None
        seen["pid"] = pool.server.pid
        seen["private_dir"] = pool.server.private_dir
        seen["repr"] = repr(pool)
        return []

    spider, crawler = await crawl(
        [scrapy.Request(site.url("/js"), meta={"cdp": True, "then": then})],
        {"CDP_POOL_BROWSER": browser},
    )
    assert len(spider.responses) == 1
    # in the callback, nothing waits; the one page is closed, or still being
    # kept (a Chromium page is parked after its response is handed over)
    assert re.fullmatch(
        r"<ConnectionPool \[READY \| [01]/\d+ open, 0 waiting, [01] kept, \d+ connections\]>",
        seen["repr"],
    ), seen["repr"]
    assert seen["pid"]
    assert not process_tree_alive(seen["pid"])
    assert seen["private_dir"]
    assert not os.path.exists(seen["private_dir"])  # noqa: ASYNC240 - a test check
    assert runtime_of(crawler).pool is None  # released by both handlers


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_killed_server_is_replaced_and_later_requests_succeed(
    site: SiteServer, browser: str
) -> None:
    killed: list[int] = []

    def kill_then_follow(spider: Any, response: Any) -> Any:
        pool = runtime_of(spider.crawler).pool
        assert pool is not None
        assert pool.server is not None
        assert pool.server.pid
        killed.append(pool.server.pid)
        os.kill(pool.server.pid, signal.SIGKILL)
        return [
            scrapy.Request(site.url(f"/js?n=2&after={i}"), meta={"cdp": True}) for i in range(4)
        ]

    spider, crawler = await crawl(
        [scrapy.Request(site.url("/js?before"), meta={"cdp": True, "then": kill_then_follow})],
        {"CDP_POOL_BROWSER": browser, "RETRY_ENABLED": True, "RETRY_TIMES": 5},
    )
    assert killed
    after = sorted(r.url for r in spider.responses if "after=" in r.url)
    assert after == sorted(site.url(f"/js?n=2&after={i}") for i in range(4))
    assert all(r.css("p.item").getall() for r in spider.responses)
    assert not spider.failures
    assert crawler.stats.get_value("cdp_pool/server_restarts") >= 1


@pytest_twisted.ensureDeferred
async def test_unreachable_endpoint_ends_the_crawl_with_a_clear_error(site: SiteServer) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    spider, crawler = await crawl(
        [scrapy.Request(site.url(f"/js?dead={i}"), meta={"cdp": True}) for i in range(3)],
        {"CDP_POOL_ENDPOINTS": [dead], "CDP_POOL_CONNECT_TIMEOUT_SECONDS": 2},
    )
    assert not spider.responses
    assert crawler.stats.get_value("finish_reason") == "cdp_pool_unavailable"
    assert spider.failures
    assert all(dead in str(f.value) for f in spider.failures), spider.failures
    assert crawler.stats.get_value("log_count/ERROR") == 1  # as README.md says


async def _retire_on_the_shared_pipe() -> dict[str, Any]:
    seen: dict[str, Any] = {}
    pool = ConnectionPool(PoolConfig(browser="chromium", connections=2))
    await pool.start()
    try:
        first = pool.connections[0].cdp
        seen["shared"] = all(c.cdp is first and c.shared for c in pool.connections)
        pid = pool.server.pid if pool.server is not None else None
        await pool.connections[0].retire("a test")
        async with pool.lease() as lease:  # waits for the reconnect
            context = await lease.new_context()
            target = await lease.cdp.send(
                "Target.createTarget", {"url": "about:blank", "browserContextId": context}
            )
            seen["target"] = bool(target.get("targetId"))
        second = pool.connections[0].cdp
        seen["new_pipe"] = second is not first and all(c.cdp is second for c in pool.connections)
        seen["restarts"] = pool.server.restarts if pool.server is not None else None
        seen["new_browser"] = pool.server is not None and pool.server.pid != pid
        seen["old_gone"] = pid is not None and not process_tree_alive(pid)
    finally:
        await pool.close()
    return seen


@pytest_twisted.ensureDeferred
async def test_retiring_a_connection_on_chromiums_pipe_restarts_the_browser() -> None:
    """The embedded Chromium's connections share its one pipe: retiring one
    (a dispose that did not answer) closes the pipe, the browser exits, and
    the pool starts a new one that every connection shares again."""
    seen = await Deferred.fromFuture(asyncio.ensure_future(_retire_on_the_shared_pipe()))
    assert seen == {
        "shared": True, "target": True, "new_pipe": True, "restarts": 1,
        "new_browser": True, "old_gone": True,
    }  # fmt: skip


@pytest_twisted.ensureDeferred
async def test_settings_are_read_once_per_crawl(
    site: SiteServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The add-on reads the settings once and its runtime hands the config to
    every component (before: eleven reads per crawl). The real parser,
    counted."""
    reads: list[object] = []
    parse = PoolConfig.from_settings.__func__  # type: ignore[attr-defined]

    def counted(cls: type[PoolConfig], settings: Any) -> PoolConfig:
        reads.append(settings)
        return parse(cls, settings)  # type: ignore[no-any-return]

    monkeypatch.setattr(PoolConfig, "from_settings", classmethod(counted))
    spider, crawler = await crawl(
        [scrapy.Request(site.url("/js?once"), meta={"cdp": True})],
        {"CDP_POOL_AUTOSCALE": True, "CDP_POOL_HOST_CONCURRENCY": 2},
    )
    assert [r.url for r in spider.responses] == [site.url("/js?once")]
    assert crawler.stats.get_value("cdp_pool/pages") == 1
    assert len(reads) == 1


def test_a_component_without_the_addon_is_refused_by_name() -> None:
    crawler = get_crawler(scrapy.Spider, {})
    with pytest.raises(ValueError, match=r"set ADDONS = \{'scrapy_cdp_pool.Addon': 0\}"):
        runtime_of(crawler)
    with pytest.raises(ValueError, match="scrapy_cdp_pool's components need its add-on"):
        CDPDownloadHandler.from_crawler(crawler)


@pytest_twisted.ensureDeferred
async def test_the_runtime_holds_a_pool_per_backend() -> None:
    """A second backend's pool (the render ladder's Chromium beside the
    crawl's Lightpanda) is made on first need, embedded, apart from the
    crawl's, and closed with its last release."""
    crawler = get_crawler(scrapy.Spider, {"ADDONS": {Addon: 0}})
    runtime = runtime_of(crawler)
    assert runtime.backend is LIGHTPANDA
    own = runtime.acquire_pool()
    other = runtime.acquire_pool(CHROMIUM)
    assert other is not own
    assert runtime.acquire_pool(CHROMIUM) is other
    assert other.config.browser == "chromium"
    assert other.config.endpoints == ()
    assert runtime.pool is own
    assert runtime.pool_of(CHROMIUM) is other
    await runtime.release_pool(CHROMIUM)
    assert other.state.value != "closed"  # still held once
    await runtime.release_pool(CHROMIUM)
    assert other.state.value == "closed"
    assert runtime.pool_of(CHROMIUM) is None
    assert runtime.pool is own
    await runtime.release_pool()
    assert own.state.value == "closed"
