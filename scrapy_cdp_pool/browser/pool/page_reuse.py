"""Page reuse (``CDP_POOL_REUSE_PAGES``): a page kept open for the next request
of its profile, made as clean as a fresh browser context.

All of it lives here. :class:`PageReuse` (the base of
:class:`~scrapy_cdp_pool.browser.pool.lease.ContextLease`) is the one interface
the render path has to it: :meth:`~PageReuse.reuse_key`,
:meth:`~PageReuse.take_idle_page` or :meth:`~PageReuse.evict_idle_pages`,
:meth:`~PageReuse.page_opened` and :meth:`~PageReuse.render_finished`; the pool
calls :meth:`~PageReuse.keep_page` when the lease ends. How a page is cleaned:

1. Before the response is handed to Scrapy (:func:`stop_page`, two round
   trips and the blank page's load): the page's session storage is emptied,
   its cookie writes still on their way are let reach the cookie store (a
   read of ``document.cookie``), and it navigates to
   ``about:blank``: its scripts and timers stop, so nothing runs (or fetches)
   between requests.

When the page is parked, before its slot is handed on (:func:`clean_for_reuse`):

2. every storage of the origins it loaded (main frame and frames:
   local storage, IndexedDB, Cache Storage, service workers...: see
   :data:`ORIGIN_STORAGE_TYPES`) is cleared with ``Storage.clearDataForOrigin``,
   and the context's cookies with ``Storage.clearCookies``: a service worker
   registered by one request cannot answer the
   next one's navigation, which always reaches the network;
3. a profile's cookies are set again (its localStorage is written again by
   the page's start-up script on every new document), so the next request
   sees exactly the profile's stored state, as in a fresh context.

A page that cannot be cleaned within ``CDP_POOL_CONTEXT_CLOSE_TIMEOUT_SECONDS``
is disposed instead. Storage that Chromium keys by a top-level site (the
partitioned storage of third-party frames) is not reached by origin: a page
that loaded a frame of another origin is not kept (see
:mod:`~scrapy_cdp_pool.render._page.child_frames`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

from scrapy_cdp_pool.browser.cdp import CDPConnection, CDPError
from scrapy_cdp_pool.browser.pool.capabilities import ServerInfo
from scrapy_cdp_pool.browser.pool.connection import IdlePage, PooledConnection
from scrapy_cdp_pool.settings.config import PoolConfig

logger = logging.getLogger(__name__)

#: the page's session storage emptied, and ``document.cookie`` read: Chromium
#: answers that read after every cookie the page wrote before it has reached
#: the cookie store (one pipe, in order), so none lands after the kept page's
#: cookies are cleared (a page that wrote 1,000 cookies had 173 of them back
#: in the next request's context: its header refused, 400)
_CLEAR_SESSION_STORAGE = (
    "try { sessionStorage.clear(); } catch (e) {} try { void document.cookie; } catch (e) {}"
)

#: what ``Storage.clearDataForOrigin`` clears per origin: every storage a page
#: can write, without ``"all"``'s cookies by origin (the context's cookies are
#: cleared at once with ``Storage.clearCookies``) and GPU shader cache (not
#: visible to pages). Measured on Chromium 156, 4 kept pages: 40-46 ms per
#: clearing against 86-119 ms with ``"all"``.
ORIGIN_STORAGE_TYPES = (
    "local_storage,indexeddb,cache_storage,service_workers,file_systems,"
    "shared_storage,storage_buckets,interest_groups,websql"
)


async def stop_page(
    cdp: CDPConnection,
    session_id: str,
    stopped_loading: asyncio.Event,
    timeout_s: float,
    alongside: Awaitable[Any] | None = None,
) -> bool:
    """Empty the page's session storage, then navigate it to ``about:blank``
    and wait until it stopped loading (``stopped_loading``: set by the page's
    ``Page.frameStoppedLoading`` for its main frame): a late load event of
    ``about:blank`` must not reach the next request's page, which would take
    it for its own and read a half-parsed document. Returns ``False`` when
    the page did not answer within ``timeout_s`` seconds (it must then not be
    kept).

    ``alongside``: a command already sent (the render's cookie read), waited
    for with the session storage's clearing, so that it is answered before
    the page leaves (its unload handlers cannot add to it) without a round
    trip of its own; its outcome is the caller's to read."""
    try:
        async with asyncio.timeout(timeout_s):
            # In turn: Chromium runs the script in the renderer and the
            # navigation in the browser process, which would cut the script off.
            clear = {"expression": _CLEAR_SESSION_STORAGE}
            cleared = cdp.post("Runtime.evaluate", clear, session_id)
            if alongside is None:
                await cleared
            else:
                # shielded: a timeout here cancels the gather, which would
                # cancel the caller's cookie read with it, and the caller's
                # await of it would raise CancelledError into a task nobody
                # cancelled: the request then never ended, the crawl never exited
                outcomes = await asyncio.gather(
                    cleared, asyncio.shield(alongside), return_exceptions=True
                )
                if isinstance(outcomes[0], BaseException):
                    raise outcomes[0]
            stopped_loading.clear()
            await cdp.post("Page.navigate", {"url": "about:blank"}, session_id)
            await stopped_loading.wait()
    except (CDPError, TimeoutError) as e:
        logger.debug("A page to keep for reuse could not be stopped: %r", e)
        return False
    return True


async def clean_for_reuse(
    cdp: CDPConnection,
    context_id: str,
    session_id: str,
    origins: set[str],
    cookies: list[dict[str, Any]] | None,
    timeout_s: float,
) -> bool:
    """Clear a stopped page's storage (see the module's docstring); ``cookies`` are
    the profile's (``Storage.setCookies`` parameters), ``None`` for none.
    Returns ``False`` when the page could not be cleaned (dispose it)."""
    try:
        async with asyncio.timeout(timeout_s):
            clears = [
                # on the page's session: its browser context's storage
                cdp.post(
                    "Storage.clearDataForOrigin",
                    {"origin": origin, "storageTypes": ORIGIN_STORAGE_TYPES},
                    session_id,
                )
                for origin in sorted(origins)
            ]
            clears.append(cdp.post("Storage.clearCookies", {"browserContextId": context_id}))
            await asyncio.gather(*clears)
            if cookies:
                await cdp.post(
                    "Storage.setCookies", {"browserContextId": context_id, "cookies": cookies}
                )
    except (CDPError, TimeoutError) as e:
        logger.debug("A page kept for reuse could not be cleaned, disposing it: %r", e)
        return False
    return True


T = TypeVar("T")


class RenderedPage(Protocol):
    """What the pool needs of a page the render opened: its target and session,
    the origins it loaded (filled while it renders; cleared before reuse) and
    its per-request commands in force (see :class:`IdlePage`)."""

    @property
    def target_id(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def origins(self) -> set[str]: ...
    @property
    def applied(self) -> dict[str, dict[str, Any]]: ...


class PageReuse:
    """The page reuse of one leased slot (base of
    :class:`~scrapy_cdp_pool.browser.pool.lease.ContextLease`, which sets the
    attributes declared here)."""

    connection: PooledConnection
    config: PoolConfig
    cdp: CDPConnection
    info: ServerInfo
    #: the lease's browser context (a kept page's, once taken)
    context_id: str | None
    page_open: bool

    def __init__(self) -> None:
        self._finished_cleanly = False
        #: key under which the page may be kept (see :meth:`reuse_key`),
        #: ``None`` to dispose it
        self._keep_key: str | None = None
        self._page: RenderedPage | None = None
        #: the profile's cookies, set again in a kept page (``None``: none)
        self._keep_cookies: list[dict[str, Any]] | None = None

    @property
    def finished_cleanly(self) -> bool:
        """Whether the render finished normally (:meth:`render_finished`): its
        page answers, so the slot can be reused as soon as the dispose is sent."""
        return self._finished_cleanly

    @property
    def opened_page(self) -> RenderedPage | None:
        """The page the render opened in this lease's context, if any."""
        return self._page

    def reuse_key(self, profile: str | None) -> str | None:
        """The key under which this lease's page may be kept for the next
        request of its profile, or ``None`` for a fresh context disposed at
        the end (``CDP_POOL_REUSE_PAGES``; by default on Chromium, where a
        fresh context and page cost ~0.6 s of CPU, and not on Lightpanda,
        where they cost ~20 ms: the backend's
        :attr:`~scrapy_cdp_pool.browser.backends.Backend.reuse_pages_by_default`).
        ``profile``: the request's context's key (``""`` for none), ``None``
        when its page must never be shared (init scripts, state saved back)."""
        reuse = self.config.reuse_pages
        if reuse is None:
            reuse = self.info.backend.reuse_pages_by_default
        return profile if reuse else None

    def take_idle_page(self, key: str) -> IdlePage | None:
        """A page this connection kept under ``key``, now this lease's."""
        for index, idle in enumerate(self.connection.idle_pages):
            if idle.key == key:
                del self.connection.idle_pages[index]
                self.context_id = idle.context_id
                return idle
        return None

    async def evict_idle_pages(self) -> None:
        """Dispose kept pages so that this lease's new context stays within
        the connection's capacity."""
        connection = self.connection
        while connection.idle_pages and (
            len(connection.idle_pages) + connection.open_contexts > connection.capacity
        ):
            idle = connection.idle_pages.pop(0)
            await connection.dispose_context(idle.context_id, self.config.context_close_timeout_s)

    def page_opened(
        self,
        page: RenderedPage,
        keep_key: str | None,
        keep_cookies: list[dict[str, Any]] | None,
    ) -> None:
        """The render opened ``page`` in this lease's context; ``keep_key``:
        see :meth:`reuse_key`; ``keep_cookies``: the profile's cookies, set
        again in a kept page."""
        self.page_open = True
        self.connection.open_pages += 1
        self.connection.counters.pages += 1
        self._page, self._keep_key, self._keep_cookies = page, keep_key, keep_cookies

    async def render_finished(
        self,
        stopped_loading: asyncio.Event,
        alongside: Awaitable[T] | None = None,
        keepable: bool = True,
    ) -> T | None:
        """The render ended normally: the slot can be reused as soon as the
        dispose is sent; a page to keep is stopped at ``about:blank`` now
        (``stopped_loading``: its ``asyncio.Event``; see :func:`stop_page`),
        or disposed if it does not stop or is not ``keepable`` (e.g. it
        loaded a frame of another origin, whose partitioned storage the
        clearing would not reach).

        ``alongside``: a command already sent (the render's cookie read),
        answered before the page leaves; its result is returned, and if it
        fails the render did not finish cleanly and its error is raised."""
        if not keepable:
            self._keep_key = None
        self._finished_cleanly = True
        try:
            if self._keep_key is not None and self._page is not None:
                stopped = await stop_page(
                    self.cdp,
                    self._page.session_id,
                    stopped_loading,
                    self.config.context_close_timeout_s,
                    alongside=alongside,
                )
                if not stopped:
                    self._keep_key = None  # still running: dispose it rather than keep it
            return await alongside if alongside is not None else None
        except BaseException:
            self._finished_cleanly = False
            raise

    async def keep_page(self) -> bool:
        """Keep this lease's page open for the next request of its profile
        instead of disposing it, cleaned first (see the module's docstring);
        ``False`` when it cannot be kept."""
        page = self._page
        if (
            self._keep_key is None
            or not self._finished_cleanly
            or self.context_id is None
            or page is None
            or self.cdp.closed
        ):
            return False
        cleaned = await clean_for_reuse(
            self.cdp,
            self.context_id,
            page.session_id,
            page.origins,
            self._keep_cookies,
            self.config.context_close_timeout_s,
        )
        if not cleaned or self.cdp.closed:
            return False
        kept = IdlePage(
            self._keep_key, self.context_id, page.target_id, page.session_id,
            applied=page.applied, no_cookies=not self._keep_cookies,
        )  # fmt: skip
        self.connection.idle_pages.append(kept)
        self.context_id = None
        if self.page_open:
            self.page_open = False
            self.connection.open_pages -= 1
        return True
