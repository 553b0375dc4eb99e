"""GateReleaseMiddleware: marks a request's download as over, whatever happened.

Installed near the downloader (order 950, after Scrapy's retry and redirect
middlewares in the response direction), so it sees the raw outcome of every
download before a retry or redirect turns it into a new request, and every
exception raised by any middleware's ``process_request``.

Two paths around the scheduler queue are closed here too: a request that comes
back to the scheduler still holding its profile (a middleware returned it
instead of a response) releases it (``request_scheduled``), and a request of an
profile that never went through the queue (``engine.download_async``) waits
in :meth:`process_request` until its profile is free.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.http import Response

from scrapy_cdp_pool.core.gates import _TOKEN_META_KEY, RequestGates, profile_of
from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.render import LIVE_PAGE_META_KEY, LivePages

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class GateReleaseMiddleware:
    def __init__(self, gates: RequestGates, live_pages: LivePages | None = None) -> None:
        self.gates = gates
        self.live_pages = live_pages
        self._freed: dict[str, asyncio.Event] = {}
        self._direct = itertools.count(1)
        gates.add_finish_hook(self._on_finish)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = runtime_of(crawler)
        middleware = cls(runtime.gates, runtime.live_pages)
        crawler.signals.connect(middleware.request_scheduled, signal=signals.request_scheduled)
        return middleware

    def request_scheduled(self, request: Request) -> None:
        if _TOKEN_META_KEY in request.meta:  # its download ended with a new request
            self.gates.on_finished(request)
        page = request.meta.get(LIVE_PAGE_META_KEY)
        if page is not None and self.live_pages is not None:
            # a copy of a request whose response held a live page (a retry,
            # a redirect): that response never reaches a callback
            self.live_pages.unreached(page, "its response was replaced by a new request")

    async def process_request(self, request: Request) -> None:
        profile = profile_of(request)
        if not profile or _TOKEN_META_KEY in request.meta:
            return  # no profile, or handed out by the queue with it
        token = f"direct:{next(self._direct)}"
        while not self.gates.locks.try_acquire(profile, token):
            freed = self._freed.setdefault(profile, asyncio.Event())
            await freed.wait()
        request.meta[_TOKEN_META_KEY] = token

    def _on_finish(self, request: Request) -> None:
        freed = self._freed.pop(profile_of(request), None)
        if freed is not None:
            freed.set()  # waiters try again once the release is done

    def process_response(self, request: Request, response: Response) -> Response:
        page = request.meta.get(LIVE_PAGE_META_KEY)
        # A live page (meta["cdp_include_page"]) is still in flight until the
        # callback closes it, or its deadline does: its profile, budget share
        # and host count are released then.
        if (
            page is not None
            and self.live_pages is not None
            and self.live_pages.when_closed(page, lambda: self.gates.on_finished(request))
        ):
            return response
        self.gates.on_finished(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        self.gates.on_finished(request)
