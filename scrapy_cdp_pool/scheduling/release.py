"""GateReleaseMiddleware: marks a request's download as over, whatever happened.

Installed near the downloader (order 950, after Scrapy's retry and redirect
middlewares in the response direction), so it sees the raw outcome of every
download before a retry or redirect turns it into a new request, and every
exception raised by any middleware's ``process_request``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.http import Response

from scrapy_cdp_pool.scheduling.gates import RequestGates, gates_for

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class GateReleaseMiddleware:
    def __init__(self, gates: RequestGates) -> None:
        self.gates = gates

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(gates_for(crawler))

    def process_response(self, request: Request, response: Response) -> Response:
        self.gates.on_finished(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        self.gates.on_finished(request)
