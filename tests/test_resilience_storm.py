"""A rate-limit storm: a host answers every third request with 429 and
``Retry-After`` (1 or 2 s). Once the handler has received a response announcing
a pause, no request to that host starts its navigation until the pause ends,
whatever stage the request waited in: the scheduler queue, Scrapy's downloader,
a browser slot.

Checked without a time threshold, on one clock (``time.monotonic()`` is
system-wide on Linux): the site records each arrival and each window it
announced; a spy on the render path's document tracker records when the
crawler received each 429 (the ``received_at`` of its main document, taken at
the browser's response stage, before the pause is set; a plain request's: when
:class:`~scrapy_cdp_pool.resilience.HostPauseMiddleware` read it); spies on
:meth:`Page.navigate` and on Scrapy's HTTP handler (they call the real
methods) record when each navigation, or plain download, started. No
navigation starts between the crawler receiving a window's 429 and the end of
that window, and every arrival inside a window comes from a navigation that
started before the handler received that 429. (Each window is checked against
its own 429, matched by URL: another window's 429 received earlier may
announce a pause that ends first, and a 429 the browser delivers late cannot
be acted on sooner. Counting arrivals
more than a few tens of ms into a window instead fails now and then on a loaded
machine: a navigation sent just before the 429 reached the handler can take
more than 50 ms to reach the site.)"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy import Request
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.http import Response

from scrapy_cdp_pool.render._page.document import DocumentResponse, DocumentTracker
from scrapy_cdp_pool.render._page.page import Page
from scrapy_cdp_pool.resilience.host_pause import HostPauseMiddleware
from tests.at_once import each_at_once
from tests.crawl import crawl
from tests.fault_records import records, storm_violations
from tests.servers import SiteServer


def spy_starts(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """URL -> ``time.monotonic()`` when its navigation (rendered) or its
    download by Scrapy's HTTP handler (plain) started."""
    started: dict[str, float] = {}
    navigate = Page.navigate
    download = HTTP11DownloadHandler.download_request

    async def spy_navigate(page: Page, timeout_s: float) -> None:
        started[page.spec.url] = time.monotonic()
        await navigate(page, timeout_s)

    async def spy_download(handler: HTTP11DownloadHandler, request: Request) -> Response:
        started[request.url] = time.monotonic()
        return await download(handler, request)

    monkeypatch.setattr(Page, "navigate", spy_navigate)
    monkeypatch.setattr(HTTP11DownloadHandler, "download_request", spy_download)
    return started


def spy_429s(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """URL -> ``time.monotonic()`` when the crawler received its 429: a
    rendered one's main document ``received_at`` (the render path's, before
    the pause is set), a plain one's when :class:`HostPauseMiddleware` read
    it (and set the pause)."""
    received: dict[str, float] = {}
    on_document = DocumentTracker.on_document
    process_response = HostPauseMiddleware.process_response

    def spy(tracker: DocumentTracker, document: DocumentResponse) -> None:
        if document.status == 429:
            received[document.url] = document.received_at
        on_document(tracker, document)

    def spy_plain(middleware: HostPauseMiddleware, request: Request, response: Response) -> Any:
        if response.status == 429:
            received.setdefault(response.url, time.monotonic())
        return process_response(middleware, request, response)

    monkeypatch.setattr(DocumentTracker, "on_document", spy)
    monkeypatch.setattr(HostPauseMiddleware, "process_response", spy_plain)
    return received


#: (browser, connections, requests): 15, 10, 10 and 10 windows (90, 60, 60
#: and 30 requests before: the windows follow each other, so a crawl lasts
#: about their sum)
CASES = {
    "lightpanda": ("lightpanda", None, 45),
    "lightpanda-one-connection": ("lightpanda", 1, 30),
    "chromium": ("chromium", None, 30),
    "plain": ("plain", None, 30),
}


@pytest_twisted.ensureDeferred
async def test_no_request_reaches_a_host_inside_a_pause_it_announced(
    site: SiteServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The four cases' crawls at once (:func:`tests.at_once.each_at_once`; one
    parametrized case after another, each held a worker of the suite while it
    waited out its windows): each its own key at the site, its spies' records
    read by its own URLs, a pause one crawler sets never seen by another
    (each crawler keeps its own)."""
    navigations = spy_starts(monkeypatch)
    received = spy_429s(monkeypatch)

    async def case(browser: str, connections: int | None, requests: int) -> None:
        settings: dict[str, Any] = {
            "CDP_POOL_BROWSER": browser if browser != "plain" else "lightpanda"
        }
        if connections is not None:
            settings["CDP_POOL_CONNECTIONS"] = connections
        key = uuid.uuid4().hex[:10]
        url = site.url(f"/storm?key={key}&every=3&after=1,2,1&i=")
        spider, crawler = await crawl(
            [
                scrapy.Request(f"{url}{i}", meta={"cdp": browser != "plain"})
                for i in range(requests)
            ],
            settings,
        )
        assert not spider.failures
        assert len(spider.responses) == requests
        seen = records(site, key)
        assert len(seen["arrivals"]) == requests
        assert len(seen["windows"]) == requests // 3
        mine = {u: at for u, at in navigations.items() if u.startswith(url)}
        mine_received = {u: at for u, at in received.items() if u.startswith(url)}
        assert len(mine) == requests
        assert len(mine_received) == requests // 3
        started_inside, unexplained = storm_violations(seen, url, mine, mine_received)
        late_50ms = {  # the site-only figure: arrivals more than 50 ms into a window
            arrival
            for start, end in seen["windows"]
            for arrival in seen["arrivals"]
            if start + 0.05 < arrival < end
        }
        figures = (
            f"{len(started_inside)} of {requests} navigations started inside a known pause, "
            f"{len(late_50ms)} arrivals more than 50 ms into a window"
        )
        print(figures)
        assert not started_inside, figures
        assert not unexplained, (figures, unexplained)
        stats = crawler.stats.get_stats()
        if browser != "plain":  # many wait for a browser slot: some are held in the handler
            assert stats["cdp_pool/host_pause_waits"] > 0
        assert stats.get("cdp_pool/contexts_opened") == stats.get("cdp_pool/contexts_closed")

    await each_at_once({name: lambda c=cases: case(*c) for name, cases in CASES.items()})
