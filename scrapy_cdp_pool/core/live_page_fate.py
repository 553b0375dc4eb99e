"""LivePageFateMiddleware: a live page (``meta["cdp_include_page"]``) whose
response is filtered before the callback is closed at once.

A spider middleware placed innermost (closest to the spider): its
``process_spider_input`` runs only for a response every other middleware let
through, so the page is marked delivered to the callback; its
``process_spider_exception`` is the first to see an exception an outer
middleware raised for a response (``HttpError`` from ``HttpErrorMiddleware``)
when the request has no errback: that response will never reach a callback,
and its page is closed (:meth:`~scrapy_cdp_pool.render.LivePages.unreached`),
which frees its browser slot. A request with an errback gets the failure
with the response, page included, as scrapy-playwright hands it (the errback
closes it). Responses replaced by a new request (a retry, a redirect) are
handled by :class:`~scrapy_cdp_pool.core.release.GateReleaseMiddleware`.

Its ``process_spider_output`` sees every request a callback (or errback)
yields first. One whose meta holds a page (``cdp_page``, or
scrapy-playwright's ``playwright_page``), as a request built with
``meta=response.meta`` does, never costs the callback its output (an exception
raised there would end the callback's generator, losing what it yields after):

- a closed page (the callback closed it first, scrapy-playwright's documented
  habit) is dropped from the new request's meta, with one WARNING per crawl;
  the request is rendered as any other (``meta["cdp_include_page"]`` gives it
  a page of its own);
- an open page stays, and the request fails when it reaches the downloader
  (:class:`~scrapy_cdp_pool.resilience.RequestChecksMiddleware` calls
  :func:`check_not_handed_over`) with
  :class:`~scrapy_cdp_pool.errors.InvalidRequestMeta` naming the request and
  the key: through its errback, or one ERROR naming it. A live page is never
  handed to another request (it is its own request's, closed with it). When
  the callback whose page it is ends without closing it, it is closed then
  (:meth:`~scrapy_cdp_pool.render.LivePages.passed_on`, one WARNING per
  crawl), not left to hold its browser slot until its deadline.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import Request

from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.errors import InvalidRequestMeta
from scrapy_cdp_pool.render import LIVE_PAGE_META_KEY, LivePages

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Iterator
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response


logger = logging.getLogger(__name__)

#: meta keys that would hand a page to a request: the plugin's, scrapy-playwright's
PAGE_KEYS = (LIVE_PAGE_META_KEY, "playwright_page")
#: set on a request a callback yielded with an open page in its meta: the key
#: that holds it (a retry or redirect the downloader makes of a live-page
#: request also carries the page its response had, closed by the plugin, and
#: is not refused)
HANDED_OVER_META_KEY = "_cdp_page_handed_over"


def _is_closed(page: Any) -> bool:
    """Whether ``page`` is a Playwright page already closed (anything else
    counts as open: it would be handed over)."""
    is_closed = getattr(page, "is_closed", None)
    return callable(is_closed) and is_closed() is True


def _own_page(response: Any) -> Any:
    """The live page of ``response`` (the callback's own), ``None`` for none or
    for an errback's ``Failure``, which has no meta."""
    meta = getattr(response, "meta", None)
    return meta.get(LIVE_PAGE_META_KEY) if isinstance(meta, dict) else None


def check_not_handed_over(request: Request) -> None:
    """Refuse a request a callback yielded with an open page in its meta
    (marked by :class:`LivePageFateMiddleware`).

    :raises InvalidRequestMeta: naming the request and the key."""
    key = request.meta.pop(HANDED_OVER_META_KEY, None)
    if key is not None:
        raise InvalidRequestMeta(
            f"{request}: meta[{key!r}] holds a page: a live page is never handed to "
            "another request (it is its own request's, closed with it); remove the key "
            "(meta['cdp_include_page'] = True gives this request a page of its own)"
        )


class LivePageFateMiddleware:
    def __init__(self, live_pages: LivePages | None, crawler: Crawler | None = None) -> None:
        self.live_pages = live_pages
        self.crawler = crawler
        #: a closed page was dropped from a request's meta (warned once)
        self.warned_closed = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(runtime_of(crawler).live_pages, crawler)

    def _check_pages(self, request: Request, own: Any = None) -> bool:
        """Drop a closed page from ``request``'s own meta (Scrapy copies the
        ``meta`` a request is built with), warning once per crawl; mark a
        request that holds an open one, refused at the downloader. Whether
        it holds ``own`` (the callback's own live page) open."""
        holds_own = False
        for key in PAGE_KEYS:
            page = request.meta.get(key)
            if page is None:
                continue
            if not _is_closed(page):
                request.meta[HANDED_OVER_META_KEY] = key
                holds_own = holds_own or (own is not None and page is own)
                continue
            del request.meta[key]
            if self.crawler is not None and self.crawler.stats is not None:
                self.crawler.stats.inc_value("cdp_pool/live_pages_dropped_from_meta")
            if not self.warned_closed:
                self.warned_closed = True
                logger.warning(
                    "%s carried meta[%r], a live page already closed (copied from a "
                    "response's meta): dropped from its meta, and from any later request's "
                    "(warned once); a request gets a page of its own with "
                    "meta['cdp_include_page'] = True",
                    request,
                    key,
                    extra={"crawler": self.crawler},
                )
        return holds_own

    def _close_passed_on(self, page: Any, request: Request | None) -> None:
        """The callback ended: its own page, passed on open to ``request``
        (refused there) and not closed, is closed now."""
        if request is not None and self.live_pages is not None and not _is_closed(page):
            self.live_pages.passed_on(page, request)

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

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        own = _own_page(response)
        passed_to: Request | None = None
        try:
            for output in result:
                if isinstance(output, Request) and self._check_pages(output, own):
                    passed_to = passed_to or output
                yield output
        finally:
            self._close_passed_on(own, passed_to)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        own = _own_page(response)
        passed_to: Request | None = None
        try:
            async for output in result:
                if isinstance(output, Request) and self._check_pages(output, own):
                    passed_to = passed_to or output
                yield output
        finally:
            self._close_passed_on(own, passed_to)
