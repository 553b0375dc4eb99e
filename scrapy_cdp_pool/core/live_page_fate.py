"""LivePageFateMiddleware: a live page (``meta["cdp_include_page"]``) whose
response is filtered before the callback is closed at once.

A spider middleware placed innermost (closest to the spider): its
``process_spider_input`` runs only for a response every other middleware let
through, so the page is marked delivered to the callback; its
``process_spider_exception`` is the first to see an exception an outer
middleware raised for a response (``HttpError`` from ``HttpErrorMiddleware``)
when the request has no errback: that response will never reach a callback,
and its page is closed (:meth:`~scrapy_cdp_pool.render.live_page.LivePages.unreached`),
which frees its browser slot. A request with an errback gets the failure
with the response, page included, as scrapy-playwright hands it (the errback
closes it). Responses replaced by a new request (a retry, a redirect) are
handled by :class:`~scrapy_cdp_pool.core.release.GateReleaseMiddleware`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.render.live_page import LIVE_PAGE_META_KEY, LivePages

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response


class LivePageFateMiddleware:
    def __init__(self, live_pages: LivePages | None) -> None:
        self.live_pages = live_pages

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(runtime_of(crawler).live_pages)

    def process_spider_input(self, response: Response) -> None:
        page = response.meta.get(LIVE_PAGE_META_KEY)
        if page is not None and self.live_pages is not None:
            self.live_pages.delivered(page)

    def process_spider_exception(self, response: Response, exception: Exception) -> None:
        page = response.meta.get(LIVE_PAGE_META_KEY)
        if page is not None and self.live_pages is not None:
            self.live_pages.unreached(
                page, f"its response was filtered ({type(exception).__name__})"
            )
