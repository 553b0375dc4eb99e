"""The embedded Lightpanda's HTTP cache of subresources (CDP_POOL_HTTP_CACHE).

Real crawls on the test site's /cache/<key>/page, whose five scripts carry
each kind of cache header; the site counts every fetch. The pages are
rendered one after the other (each request follows the previous response),
each with its own cookie, so that a stored response could only be reused
across identities.
"""

from __future__ import annotations

import asyncio
import stat
from collections.abc import Coroutine
from typing import Any

import psutil
import pytest
import pytest_twisted
import scrapy
from twisted.internet.defer import Deferred

from scrapy_cdp_pool.browser.pool.server_flags import HTTP_CACHE_DIR
from scrapy_cdp_pool.browser.pool.server_options import ServerOptions
from scrapy_cdp_pool.browser.pool.servers import embedded_server
from scrapy_cdp_pool.settings.config import PoolConfig
from tests.crawl import crawl
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True

USERS = ("alice", "bob", "carol")


async def _crawl_pages(site: SiteServer, key: str, settings: dict[str, Any]) -> list[str]:
    """Render /cache/<key>/page once per user, in turn, each with its own
    ``user`` cookie; return each page's ``data-ran`` (the scripts that ran)."""
    url = site.url(f"/cache/{key}/page")

    def request(index: int) -> scrapy.Request:
        return scrapy.Request(
            f"{url}?n={index}",
            cookies={"user": USERS[index]},
            meta={"cdp": True, "cookiejar": index, "then": then, "n": index},
            dont_filter=True,
        )

    def then(spider: Any, response: Any) -> list[scrapy.Request]:
        n = response.meta["n"] + 1
        return [request(n)] if n < len(USERS) else []

    spider, _ = await crawl([request(0)], {"CDP_POOL_CONNECTIONS": 1, **settings})
    assert not spider.failures, spider.failures
    ran = [str(r.css("body::attr(data-ran)").get()) for r in spider.responses]
    assert len(ran) == len(USERS)
    return ran


def _fetches(site: SiteServer, key: str) -> dict[str, int]:
    hits = site.stats()["hits"]
    prefix = f"/cache/{key}/"
    return {
        path.removeprefix(prefix).removesuffix(".js"): count
        for path, count in hits.items()
        if path.startswith(prefix) and path.endswith(".js")
    }


@pytest_twisted.ensureDeferred
async def test_cacheable_scripts_are_fetched_once_and_the_rest_every_time(
    site: SiteServer,
) -> None:
    """Default settings: the ``public, max-age`` bundle is fetched for the
    first page only; ``no-store``, ``private``, ``Set-Cookie`` and
    ``Vary: Cookie`` scripts are fetched for every page, and each page's
    ``Vary: Cookie`` script is the one for its own cookie (Lightpanda alone
    would serve alice's to bob and carol)."""
    ran = await _crawl_pages(site, "on", {})
    for page, user in zip(ran, USERS, strict=True):
        assert page == f"bundle;no-store;set-cookie;vary-cookie:{user};private;cookie-set;"
    assert _fetches(site, "on") == {
        "bundle": 1, "no-store": 3, "set-cookie": 3, "vary-cookie": 3, "private": 3,
    }  # fmt: skip


@pytest_twisted.ensureDeferred
async def test_a_kept_chromium_page_serves_each_cookie_its_own_variant(site: SiteServer) -> None:
    """On Chromium a page kept for the next request (the default) keeps its
    context's HTTP cache, and the anonymous identity's page serves every
    Scrapy cookie jar: the bundle is taken from it, but each page gets the
    ``Vary: Cookie`` script of its own cookie (without the response-stage
    answer, Chromium served alice's to bob and carol). Measured, not
    asserted: Chromium's own cache also keeps the ``private`` and
    ``Set-Cookie`` scripts for the next jar (fetched once; the cached one
    sets no cookie)."""
    ran = await _crawl_pages(site, "chromium", {"CDP_POOL_BROWSER": "chromium"})
    for page, user in zip(ran, USERS, strict=True):
        assert f"bundle;no-store;set-cookie;vary-cookie:{user};private;" in page
    fetches = _fetches(site, "chromium")
    assert (fetches["bundle"], fetches["no-store"], fetches["vary-cookie"]) == (1, 3, 3)


@pytest_twisted.ensureDeferred
async def test_without_the_cache_every_page_fetches_every_script(site: SiteServer) -> None:
    ran = await _crawl_pages(site, "off", {"CDP_POOL_HTTP_CACHE": False})
    for page, user in zip(ran, USERS, strict=True):
        assert page == f"bundle;no-store;set-cookie;vary-cookie:{user};private;cookie-set;"
    assert _fetches(site, "off") == {
        "bundle": 3, "no-store": 3, "set-cookie": 3, "vary-cookie": 3, "private": 3,
    }  # fmt: skip


def _argv(pid: int | None) -> list[str]:
    assert pid is not None
    return psutil.Process(pid).cmdline()


def _in_a_task(coro: Coroutine[Any, Any, None]) -> Deferred[None]:
    return Deferred.fromFuture(asyncio.ensure_future(coro))


@pytest.mark.parametrize("dedicated", [False, True])
@pytest_twisted.ensureDeferred
async def test_each_server_has_its_own_private_cache_removed_at_stop(dedicated: bool) -> None:
    """The main server and each dedicated server (one per proxy or time
    zone) have their own cache directory, mode 0700, in their private
    directory, removed when they stop."""
    await _in_a_task(_own_private_cache(dedicated))


async def _own_private_cache(dedicated: bool) -> None:
    config = PoolConfig(connections=1)
    options = ServerOptions(timezone_id="Asia/Tokyo") if dedicated else None
    server = embedded_server(config, options)
    other = embedded_server(config)
    try:
        await server.ensure_running()
        await other.ensure_running()
        assert server.private_dir is not None
        assert other.private_dir is not None
        cache = server.private_dir / HTTP_CACHE_DIR
        assert stat.S_IMODE(cache.stat().st_mode) == 0o700
        assert stat.S_IMODE(server.private_dir.stat().st_mode) == 0o700
        argv = _argv(server.pid)
        assert argv[argv.index("--http-cache-dir") + 1] == str(cache)
        assert other.private_dir / HTTP_CACHE_DIR != cache
    finally:
        await server.stop()
        await other.stop()
    assert not cache.exists()
    assert not cache.parent.exists()


@pytest_twisted.ensureDeferred
async def test_the_setting_off_starts_lightpanda_without_a_cache() -> None:
    await _in_a_task(_no_cache())


async def _no_cache() -> None:
    server = embedded_server(PoolConfig(connections=1, http_cache=False))
    try:
        await server.ensure_running()
        assert server.private_dir is not None
        argv = _argv(server.pid)
        assert "--http-cache-dir" not in argv
        assert not (server.private_dir / HTTP_CACHE_DIR).exists()
    finally:
        await server.stop()
