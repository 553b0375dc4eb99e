"""A page whose deadline passes while the whole Chromium is unresponsive is
not named stalled: it fails as ``BrowserUnresponsive``, retried (issue 31
item 3, every normal page done). Beside hostile pages (a ``window.open``
storm, 1,000 frames) the browser process itself stops answering, and an
innocent neighbour's stall probe got no answer: it failed as
``PageScriptStalled``, not retried. Here the browser process is stopped
(``SIGSTOP`` by its PID, the pool's own server) once the page's document is
in, so its deadline passes with no command answered, as beside a hostile
page; it is continued once the request has failed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any

import pytest_twisted
import scrapy
from scrapy import signals
from scrapy.exceptions import DownloadTimeoutError
from twisted.python.failure import Failure

from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.errors import BrowserUnresponsive, PageScriptStalled
from tests.at_once import each_at_once
from tests.contract import token
from tests.crawl import RecordingSpider, crawl
from tests.profiles import hits
from tests.servers import SiteServer


class FreezingSpider(RecordingSpider):
    """Stops the pool's browser process once the site has had the page's
    image request (its document has committed: the page is then probed at
    its deadline) and continues it when the request has failed (retried or
    given to the errback)."""

    site: SiteServer
    never_hits: int
    #: the path whose next hit on the site stops the browser
    freeze_on = "/never"
    stopped: int | None = None
    first_failure: str | None = None
    #: the retry's download_timeout, if set (it is waited out)
    retry_timeout: float | None = None

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.on_scheduled, signal=signals.request_scheduled)
        return spider

    async def start(self) -> Any:
        async for request in super().start():
            yield request
        self.freezer = asyncio.get_running_loop().create_task(self.freeze())

    async def freeze(self) -> None:
        # waits for a condition the site reports (its hit counter), not for time
        while hits(self.site, self.freeze_on) == self.never_hits:  # noqa: ASYNC110 - another process
            await asyncio.sleep(0.05)
        pool = runtime_of(self.crawler).pool
        assert pool is not None
        assert pool.server is not None
        assert pool.server.pid
        self.stopped = pool.server.pid
        os.kill(self.stopped, signal.SIGSTOP)

    def thaw(self) -> None:
        if self.stopped is not None:
            with contextlib.suppress(ProcessLookupError):  # restarted: killed meanwhile
                os.kill(self.stopped, signal.SIGCONT)
            self.stopped = None

    def on_scheduled(self, request: scrapy.Request) -> None:
        if request.meta.get("retry_times"):
            self.thaw()
            if self.retry_timeout is not None:
                request.meta["download_timeout"] = self.retry_timeout

    def on_error(self, failure: Failure) -> None:
        self.thaw()
        super().on_error(failure)


async def _crawl_frozen(
    site: SiteServer, path: str, meta: dict[str, Any], **spider_attributes: Any
) -> tuple[FreezingSpider, Any]:
    """Crawl one request to ``path`` (``meta``) on one Chromium connection
    with retries, by a subclass of :class:`FreezingSpider` with
    ``spider_attributes`` (so that crawls of several cases run at once); the
    spider thawed (in case the test failed before the request did)."""
    spider_cls = type("FreezingCase", (FreezingSpider,), {"site": site, **spider_attributes})
    spider, crawler = await crawl(
        [scrapy.Request(site.url(path), meta=meta)],
        {"CDP_POOL_BROWSER": "chromium", "CDP_POOL_CONNECTIONS": 1, "RETRY_ENABLED": True},
        spider_cls=spider_cls,
    )
    assert isinstance(spider, FreezingSpider)
    spider.thaw()
    return spider, crawler


@pytest_twisted.ensureDeferred
async def test_a_browser_stopped_at_a_deadline_is_named_unresponsive_and_retried(
    site: SiteServer,
) -> None:
    """Both cases below at once (tests.at_once.each_at_once: each mostly
    waits out its deadlines; each crawl its own Chromium, stopped alone)."""
    await each_at_once({
        "document-in": lambda: _a_deadline_passing_while_the_whole_browser_is_stopped(site),
        "document-not-in": lambda: _a_browser_stopped_before_the_document_arrived(site),
    })  # fmt: skip


async def _a_deadline_passing_while_the_whole_browser_is_stopped(site: SiteServer) -> None:
    """Retried, not stalled. The first attempt fails as ``BrowserUnresponsive`` (the browser did
    not answer ``Browser.getVersion`` beside the probe) and is retried; the
    retry, on a browser that answers, is a page waiting on the network: a
    ``DownloadTimeoutError``. Before: ``PageScriptStalled`` ("the page's main
    thread stayed busy outside any script"), not retried (1 hit)."""
    path = f"/hanging-image?frozen={token()}"
    # 8 s: under load the document must have arrived (else a plain timeout);
    # the retry, waited out, 5 s (8 before): its navigation reaches the site
    # within it on a loaded machine
    meta = {"cdp": True, "download_timeout": 8, "max_retry_times": 1}
    spider, crawler = await _crawl_frozen(
        site, path, meta, never_hits=hits(site, "/never"), retry_timeout=5
    )
    stats = crawler.stats.get_stats()
    assert "cdp_pool/errors/PageScriptStalled" not in stats, stats
    assert stats["cdp_pool/errors/BrowserUnresponsive"] == 1
    assert stats["retry/count"] == 1
    assert hits(site, path) == 2  # retried once
    assert len(spider.failures) == 1
    failure = spider.failures[0]
    assert failure.check(DownloadTimeoutError), failure.value
    assert not failure.check(PageScriptStalled)
    assert not failure.check(BrowserUnresponsive)  # the retry's: the browser answered


async def _a_browser_stopped_before_the_document_arrived(site: SiteServer) -> None:
    """Issue 39 item 7: the browser is stopped once the site has the
    navigation's request (its document never arrives, so the page itself
    cannot be probed). The first attempt fails as ``BrowserUnresponsive``,
    retried (the browser alone did not answer ``Browser.getVersion``); the
    retry, on a browser that answers, is a plain ``DownloadTimeoutError``.
    Before: both attempts were plain timeouts, the frozen browser unnamed."""
    path = f"/slow?ms=60000&frozen={token()}"
    meta = {"cdp": True, "download_timeout": 4, "max_retry_times": 1}
    spider, crawler = await _crawl_frozen(site, path, meta, never_hits=0, freeze_on=path)
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/errors/BrowserUnresponsive"] == 1, stats
    assert stats["retry/count"] == 1
    assert hits(site, path) == 2  # retried once
    [failure] = spider.failures
    assert failure.check(DownloadTimeoutError), failure.value
    assert not failure.check(BrowserUnresponsive)  # the retry's: the browser answered
