"""GateReleaseMiddleware: marks a request's download as over, whatever happened.

Installed near the downloader (order 950, after Scrapy's retry and redirect
middlewares in the response direction), so it sees the raw outcome of every
download before a retry or redirect turns it into a new request, and every
exception raised by any middleware's ``process_request``.

Two paths around the scheduler queue are closed here too: a request that comes
back to the scheduler still holding its identity (a middleware returned it
instead of a response) releases it (``request_scheduled``), and a request of an
identity that never went through the queue (``engine.download_async``) waits
in :meth:`process_request` until its identity is free.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.http import Response

from scrapy_cdp_pool.runtime import runtime_of
from scrapy_cdp_pool.scheduling.gates import _TOKEN_META_KEY, RequestGates, identity_of

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class GateReleaseMiddleware:
    def __init__(self, gates: RequestGates) -> None:
        self.gates = gates
        self._freed: dict[str, asyncio.Event] = {}
        self._direct = itertools.count(1)
        gates.add_finish_hook(self._on_finish)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        middleware = cls(runtime_of(crawler).gates)
        crawler.signals.connect(middleware.request_scheduled, signal=signals.request_scheduled)
        return middleware

    def request_scheduled(self, request: Request) -> None:
        if _TOKEN_META_KEY in request.meta:  # its download ended with a new request
            self.gates.on_finished(request)

    async def process_request(self, request: Request) -> None:
        identity = identity_of(request)
        if not identity or _TOKEN_META_KEY in request.meta:
            return  # no identity, or handed out by the queue with it
        token = f"direct:{next(self._direct)}"
        while not self.gates.locks.try_acquire(identity, token):
            freed = self._freed.setdefault(identity, asyncio.Event())
            await freed.wait()
        request.meta[_TOKEN_META_KEY] = token

    def _on_finish(self, request: Request) -> None:
        freed = self._freed.pop(identity_of(request), None)
        if freed is not None:
            freed.set()  # waiters try again once the release is done

    def process_response(self, request: Request, response: Response) -> Response:
        self.gates.on_finished(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        self.gates.on_finished(request)
