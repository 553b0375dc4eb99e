"""``meta["cdp_include_page"]``: the rendered page, live, as a Playwright
``Page`` in ``response.meta["cdp_page"]``, for what plain data cannot say.

The render runs as any other, in its leased slot; then, instead of disposing
the context, the render's own CDP session is detached (its interception
stops), Playwright is connected over CDP to the same page through a private
relay on the request's own connection (render/_live/live_relay.py), and the response
goes to Scrapy while the slot and the context stay held (and the request
gates: a profile's lock, a budget's share, a host's count, released by
:class:`~scrapy_cdp_pool.core.release.GateReleaseMiddleware` through
:meth:`LivePages.when_closed`). The callback drives the page and closes
it (``await page.close()``); then the relay and Playwright's connection are
closed and the context is disposed, which frees the slot. A page still open at
the request's deadline (``download_timeout``, counted from the moment it
got its slot) is closed then, with a WARNING. A page whose response will
never reach a callback (a middleware retried or redirected it into a new
request, or ``HttpErrorMiddleware`` filtered it and the request has no
errback) is closed at once (:meth:`LivePages.unreached`), freeing its slot.

Under a profile with ``CDP_POOL_PROFILE_SAVE_STATE``, the profile's storage
state is read when the page is closed (its localStorage just before the
close, then the context's cookies: render/_request/storage_state.py) and saved before
the profile is released: what the callback did to the page counts.

Playwright's driver (one Node.js process) is started at the crawl's first live
page and stopped with the crawl (:meth:`LivePages.close`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.errors import LivePageFailed
from scrapy_cdp_pool.render._live.live_context import adapt_context
from scrapy_cdp_pool.render._live.live_relay import LiveRelay
from scrapy_cdp_pool.render._request.redirects import is_handed_back
from scrapy_cdp_pool.render._request.session import RenderResult
from scrapy_cdp_pool.render._request.storage_state import LiveState

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page, Playwright
    from scrapy import Request
    from scrapy.crawler import Crawler

    from scrapy_cdp_pool.browser.pool.lease import ContextLease
    from scrapy_cdp_pool.render._request.context_options import ContextOptions

#: writes a profile's storage state (a Playwright ``storageState`` dict)
SaveState = Callable[[dict[str, Any]], Awaitable[None]]

# the name it logged under before render/ went private (log lines, LOG filters)
logger = logging.getLogger("scrapy_cdp_pool.render.live_page")

#: ``response.meta`` key of a live page
LIVE_PAGE_META_KEY = "cdp_page"
#: seconds to connect Playwright to the relay, and to close its connection
CONNECT_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 5.0


class LivePage:
    """One request's page, open in the callback's hands."""

    def __init__(
        self,
        request: Request,
        relay: LiveRelay,
        browser: Browser,
        page: Page,
        timeout_s: float,
        state: tuple[LiveState, SaveState] | None = None,
    ) -> None:
        self.request = request
        #: the profile's state to read and save when the page is closed
        self.state = state
        self.relay = relay
        self.browser = browser
        self.page = page
        self.timeout_s = timeout_s
        self.closed_at_deadline = False
        #: the response reached the spider's callback (see LivePages.delivered)
        self.delivered = False
        self.closing: asyncio.Task[None] | None = None
        #: set once Playwright's connection and the relay are closed
        self.closed = asyncio.Event()
        #: called once the page is closed and its lease ended (see :meth:`LivePages.when_closed`)
        self.on_closed: list[Callable[[], None]] = []

    async def hold(self, crawler: Crawler | None) -> None:
        """Wait until the page is closed (by the callback, the crawl's end,
        or the connection); cancelled at the request's deadline, when the
        page is closed with a WARNING. Then Playwright's connection and the
        relay are closed (the caller disposes the context)."""
        try:
            await self.relay.done.wait()
        except asyncio.CancelledError:
            self.closed_at_deadline = True
            logger.warning(
                "The live page of %s (meta['cdp_include_page']) was not closed within "
                "download_timeout = %g s (await page.close() in the callback): closed now. "
                "Its browser slot was held until now (a response a middleware retried or "
                "dropped never reaches the callback)",
                self.request,
                self.timeout_s,
                extra={"crawler": crawler},
            )
            raise
        finally:
            try:
                await self._save_state(crawler)
            finally:
                await self.shutdown()
                self.closed.set()

    async def _save_state(self, crawler: Crawler | None) -> None:
        """Read the profile's storage state (the page is closed then) and
        save it; a failure is logged, naming the request."""
        if self.state is None:
            return
        reader, save = self.state
        self.state = None
        try:
            state = await reader.read()
        except Exception as e:  # noqa: BLE001 - CDP's or the reader's errors, logged
            logger.warning(
                "The storage state of the profile of %s was not saved when its live page "
                "was closed: %s",
                self.request,
                e,
                extra={"crawler": crawler},
            )
            return
        await save(state)

    def close_soon(self, reason: str) -> None:
        """End :meth:`hold` (the crawl is closing)."""
        self.relay.finish(reason)

    async def shutdown(self) -> None:
        """Close the relay (Playwright's connection ends with it); Playwright's
        own ``browser.close()`` goes on in :attr:`closing`, off the slot's time
        (~0.2-0.5 s through its driver)."""
        await self.relay.close()
        self.closing = asyncio.get_running_loop().create_task(self._close_browser())

    async def _close_browser(self) -> None:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(CLOSE_TIMEOUT_S):
                await self.browser.close()


class LivePages:
    """The crawler's live pages and the Playwright driver they share.

    Counts: :attr:`opened`, :attr:`open_max`, :attr:`closed_at_deadline`;
    :attr:`open` is the pages open now (telemetry)."""

    def __init__(self, crawler: Crawler | None = None) -> None:
        self.crawler = crawler
        self.open: set[LivePage] = set()
        self.opened = 0
        self.open_max = 0
        self.closed_at_deadline = 0
        #: live pages closed because their response would never reach a callback
        self.closed_unreached = 0
        #: live pages their callback passed on to another request and left open
        self.closed_passed_on = 0
        self._playwright: Playwright | None = None
        self._starting: asyncio.Lock | None = None
        self._closed = False
        #: Playwright connections being closed (see LivePage.shutdown)
        self._closing: set[asyncio.Task[None]] = set()
        self._holders: set[asyncio.Task[tuple[RenderResult, Page | None]]] = set()

    async def render(
        self,
        lease: AbstractAsyncContextManager[ContextLease],
        in_lease: Callable[[ContextLease], Awaitable[RenderResult]],
        request: Request,
        timeout_s: float,
        max_message_bytes: int | None,
        options: ContextOptions | None = None,
        save: SaveState | None = None,
    ) -> tuple[RenderResult, Page | None]:
        """Enter ``lease``, render with ``in_lease(lease)`` and hand the page
        over: the result and the live page (``None`` for a redirect handed back
        to Scrapy: the next hop's page is the one handed over). The lease is
        held by a task of its own until the page is closed. ``options``: the
        context's (a profile's); with ``save``, the profile's storage state
        is read when the page is closed and given to it (see
        :class:`~scrapy_cdp_pool.render._request.storage_state.LiveState`).

        :raises: what the lease or ``in_lease`` raise, and
            :class:`LivePageFailed`.
        """
        loop = asyncio.get_running_loop()
        handed: asyncio.Future[tuple[RenderResult, Page | None]] = loop.create_future()
        holder = loop.create_task(
            self._hold(
                lease, in_lease, request, timeout_s, max_message_bytes, (options, save), handed
            ),
            name=f"cdp-pool live page {request.url}",
        )
        self._holders.add(holder)  # the loop keeps only a weak reference
        holder.add_done_callback(self._holders.discard)
        try:
            await asyncio.wait([holder, handed], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            holder.cancel()
            raise
        if handed.done():
            return handed.result()
        return holder.result()  # raises the render's error

    async def _hold(
        self,
        lease_cm: AbstractAsyncContextManager[ContextLease],
        in_lease: Callable[[ContextLease], Awaitable[RenderResult]],
        request: Request,
        timeout_s: float,
        max_message_bytes: int | None,
        state: tuple[ContextOptions | None, SaveState | None],
        handed: asyncio.Future[tuple[RenderResult, Page | None]],
    ) -> tuple[RenderResult, Page | None]:
        live: LivePage | None = None
        try:
            async with lease_cm as lease:
                result = await in_lease(lease)
                if is_handed_back(result.status, result.headers):
                    handed.set_result((result, None))
                    return result, None
                live = await self._open(lease, result, request, timeout_s, max_message_bytes)
                options, save = state
                stored = options.local_storage if options is not None else ()
                adapt_context(live.page, live.relay.done.is_set, stored)
                if options is not None and save is not None and lease.context_id is not None:
                    reader = LiveState(
                        lease.cdp, lease.context_id, live.relay.target_id, options, CLOSE_TIMEOUT_S
                    )
                    live.relay.before_close = reader.before_close
                    live.state = (reader, save)
                handed.set_result((result, live.page))
                self.open.add(live)
                self.open_max = max(self.open_max, len(self.open))
                await live.hold(self.crawler)
        except TimeoutError:
            if live is None or not live.closed_at_deadline:
                raise
            self.closed_at_deadline += 1
        except Exception as e:
            if not handed.done():
                raise  # the render's error, for download_request
            logger.warning(
                "Closing the live page of %s failed: %r",
                request,
                e,
                extra={"crawler": self.crawler},
            )
        finally:
            if live is not None:
                self.open.discard(live)
                if live.closing is not None:
                    self._closing.add(live.closing)
                    live.closing.add_done_callback(self._closing.discard)
                for callback in live.on_closed:
                    callback()
        return handed.result()

    async def _open(
        self,
        lease: ContextLease,
        result: RenderResult,
        request: Request,
        timeout_s: float,
        max_message_bytes: int | None,
    ) -> LivePage:
        page = lease.opened_page
        if lease.context_id is None or page is None:
            raise LivePageFailed(f"{request}: the render left no page to hand over")
        # The render's session goes: its request interception, blocking and
        # event subscriptions end with it; Playwright attaches its own.
        await lease.cdp.send("Target.detachFromTarget", {"sessionId": page.session_id})
        relay = LiveRelay(
            lease.cdp, lease.context_id, page.target_id, result.url, max_message_bytes
        )
        url = await relay.start()
        try:
            playwright = await self._driver()
            try:
                browser = await playwright.chromium.connect_over_cdp(
                    url, timeout=CONNECT_TIMEOUT_S * 1000
                )
            except Exception as e:  # noqa: BLE001 - Playwright's errors, named below
                message = str(e).replace(relay.token, "<secret>")
                raise LivePageFailed(
                    f"{request}: Playwright could not connect to the live page: {message}"
                ) from None
            pages = [page for context in browser.contexts for page in context.pages]
            if len(pages) != 1:
                await browser.close()
                raise LivePageFailed(
                    f"{request}: Playwright sees {len(pages)} pages through the relay, not 1"
                )
        except BaseException:
            await relay.close()
            raise
        self.opened += 1
        return LivePage(request, relay, browser, pages[0], timeout_s)

    async def _driver(self) -> Playwright:
        if self._closed:
            raise LivePageFailed("the crawl is closing: no new live page")
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._playwright is None:
                from playwright.async_api import async_playwright

                self._playwright = await async_playwright().start()
        return self._playwright

    def _find(self, page: object) -> LivePage | None:
        return next((live for live in self.open if live.page is page), None)

    def delivered(self, page: object) -> None:
        """``page``'s response is going to the spider's callback: it is the
        callback's to close from now on."""
        live = self._find(page)
        if live is not None:
            live.delivered = True

    def unreached(self, page: object, why: str) -> bool:
        """Close ``page`` now, a live page whose response will never reach a
        callback (``why``); ``False`` when it is none, was delivered or is
        closing already."""
        live = self._find(page)
        if live is None or live.delivered or live.relay.done.is_set():
            return False
        self.closed_unreached += 1
        if self.closed_unreached == 1:
            logger.info(
                "The live page of %s was closed at once: %s, so no callback gets it "
                "(further ones are counted in cdp_pool/live_pages_closed_unreached)",
                live.request,
                why,
                extra={"crawler": self.crawler},
            )
        live.close_soon(why)
        return True

    def passed_on(self, page: object, request: object) -> bool:
        """Close ``page`` now, a live page its callback put in the meta of
        ``request`` (refused at the downloader: a live page is never handed
        to another request) and ended without closing: nothing else would
        close it before its deadline. ``False`` when it is none or is closing
        already. One WARNING per crawl."""
        live = self._find(page)
        if live is None or live.relay.done.is_set():
            return False
        self.closed_passed_on += 1
        if self.closed_passed_on == 1:
            logger.warning(
                "The live page of %s was passed on to %s and its callback ended without "
                "closing it: closed now (a live page is never handed to another request; "
                "further ones are counted in cdp_pool/live_pages_closed_passed_on)",
                live.request,
                request,
                extra={"crawler": self.crawler},
            )
        live.close_soon("passed on to another request")
        return True

    def when_closed(self, page: object, callback: Callable[[], None]) -> bool:
        """Call ``callback()`` once ``page``, a live page still open, is closed
        and its slot given back (the request gates hold its profile, budget
        share and host count until then); ``False`` when ``page`` is not one."""
        for live in self.open:
            if live.page is page:
                live.on_closed.append(callback)
                return True
        return False

    async def close(self) -> None:
        """Close the pages still open (each with a WARNING) and stop the
        driver. Idempotent."""
        self._closed = True
        still_open = list(self.open)
        for live in still_open:
            if live.relay.done.is_set():
                continue  # closed by its callback, or already closing
            logger.warning(
                "The live page of %s is still open at the crawl's end: closed now",
                live.request,
                extra={"crawler": self.crawler},
            )
            live.close_soon("the crawl is closing")
        await asyncio.gather(*(live.closed.wait() for live in still_open))
        await asyncio.gather(*self._closing, return_exceptions=True)
        playwright, self._playwright = self._playwright, None
        if playwright is not None:
            with contextlib.suppress(Exception):
                await playwright.stop()
