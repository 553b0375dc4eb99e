"""Run a real Scrapy crawl in the test's reactor and keep what it saw."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest_twisted
import scrapy
from scrapy.crawler import Crawler, CrawlerRunner
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from scrapy_cdp_pool.core.runtime import CrawlerRuntime, runtime_of

BASE_SETTINGS: dict[str, Any] = {
    "ADDONS": {"scrapy_cdp_pool.Addon": 0},
    "TELNETCONSOLE_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
    "LOG_LEVEL": "INFO",
    "RETRY_ENABLED": False,
    "HTTPERROR_ALLOW_ALL": True,
    "DOWNLOAD_TIMEOUT": 30,
    "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 10,
    "CDP_POOL_CONNECTIONS": 2,
}


class RecordingSpider(scrapy.Spider):
    """Sends the requests it is given and keeps responses and failures.

    A request's ``meta["then"]``, a callable ``(spider, response) -> iterable``,
    yields follow-up requests.
    """

    name = "recording"

    def __init__(self, requests: list[scrapy.Request], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.to_send = requests
        self.responses: list[scrapy.http.Response] = []
        self.failures: list[Failure] = []

    async def start(self) -> Any:
        for request in self.to_send:
            yield self.prepare(request)

    def prepare(self, request: scrapy.Request) -> scrapy.Request:
        return request.replace(callback=self.parse, errback=self.on_error)

    def parse(self, response: scrapy.http.Response) -> Any:
        self.responses.append(response)
        then = response.meta.get("then")
        if then is not None:
            for request in then(self, response):
                yield self.prepare(request)

    def on_error(self, failure: Failure) -> None:
        self.failures.append(failure)

    def by_url(self, fragment: str) -> scrapy.http.Response:
        matches = [r for r in self.responses if fragment in r.url]
        assert len(matches) == 1, (fragment, [r.url for r in self.responses])
        return matches[0]


def hold_pool(settings: dict[str, Any]) -> CrawlerRuntime:
    """The pool of ``settings`` (which name it: ``CDP_POOL_NAME``) held open
    by a crawler of its own, for crawlers of the same settings to join by
    name between tests; closed by :func:`release_held`."""
    runtime = runtime_of(get_crawler(None, settings))
    runtime.acquire_pool()
    return runtime


def release_held(runtime: CrawlerRuntime) -> None:
    """Give back the pool :func:`hold_pool` held (its last holder closes
    it); blocks the test's reactor until it is closed."""
    pytest_twisted.blockon(Deferred.fromFuture(asyncio.ensure_future(runtime.release_pool())))


#: settings (as a key) -> the runtime holding the embedded server that
#: crawls of those settings share (:func:`hold_pool`), and those settings
#: with its name, while a module of ``SHARED_BROWSERS = True`` runs
#: (tests/conftest.py); ``None``: each crawl starts its own server
_holders: dict[str, tuple[CrawlerRuntime, dict[str, Any]]] | None = None


def share_browsers() -> None:
    """From now on, crawls with the same settings share one embedded server."""
    global _holders
    _holders = {}


def stop_sharing() -> None:
    """Close the servers kept open since :func:`share_browsers`."""
    global _holders
    holders, _holders = _holders or {}, None
    for runtime, _ in holders.values():
        release_held(runtime)


@contextmanager
def not_shared() -> Iterator[None]:
    """Within it, each crawl starts its own embedded server (a test marked
    ``own_browser``: tests/conftest.py), whatever :func:`share_browsers` said."""
    global _holders
    holders, _holders = _holders, None
    try:
        yield
    finally:
        _holders = holders


def _shared(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings``, with the name of the pool that crawls of the same
    settings share while :func:`share_browsers` is on, held open between
    them by a crawler of its own (as Scrapy's handler suites' server is:
    tests/scrapy_suite/suite.py). A start of Chromium's headless shell cost
    ~0.6 CPU-s in a suite run (browser, GPU and zygote processes over 218
    starts). Crawls of remote endpoints, of a pool name of their own or
    with a file their crawler opens as it is made (``CDP_POOL_STATUS_FILE``,
    ``CDP_POOL_FAILURES_FILE``: the holder, never closed as a crawl, would
    leave it open) are left alone; only settings equal in every key share
    (so the shared pool's check of its crawlers' settings passes)."""
    if (
        _holders is None
        or "CDP_POOL_NAME" in settings
        or "CDP_POOL_ENDPOINTS" in settings
        or any(name.endswith("_FILE") for name in settings)
    ):
        return settings
    key = repr(sorted((name, repr(value)) for name, value in settings.items()))
    if key not in _holders:
        named = {**settings, "CDP_POOL_NAME": f"tests-shared-{len(_holders)}"}
        _holders[key] = (hold_pool(named), named)
    return _holders[key][1]


async def crawl(
    requests: list[scrapy.Request], settings: dict[str, Any] | None = None,
    spider_cls: type[RecordingSpider] = RecordingSpider,
) -> tuple[RecordingSpider, Crawler]:  # fmt: skip
    """Crawl ``requests`` with the add-on and ``settings`` on top of
    :data:`BASE_SETTINGS`; return the spider (responses, failures) and the
    crawler (stats). In a module of ``SHARED_BROWSERS = True``, crawls of
    the same settings share one embedded server (:func:`_shared`)."""
    runner = CrawlerRunner(_shared({**BASE_SETTINGS, **(settings or {})}))
    crawler = runner.create_crawler(spider_cls)
    await runner.crawl(crawler, requests=requests)
    # a crawl that fails its exit status (core/exit_status.py) keeps its spider there
    spider = crawler.spider or getattr(crawler, "cdp_pool_closed_spider", None)
    assert isinstance(spider, RecordingSpider)
    return spider, crawler
