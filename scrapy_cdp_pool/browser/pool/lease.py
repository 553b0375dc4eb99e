"""ContextLease: one slot on one pooled connection, and the fresh browser context
opened in it for one request.

The context is disposed when the lease ends, whatever happened. If disposing
does not answer within ``CDP_POOL_CONTEXT_CLOSE_TIMEOUT_SECONDS`` (a page stuck
in JavaScript), the connection is retired: closing the WebSocket makes the
server end the page, and the pool reconnects.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from scrapy_cdp_pool.browser.cdp import CDPConnection, CDPConnectionClosed
from scrapy_cdp_pool.browser.pool.capabilities import ServerInfo
from scrapy_cdp_pool.browser.pool.connection import IdlePage, PooledConnection
from scrapy_cdp_pool.browser.pool.page_reuse import clean_for_reuse, stop_page
from scrapy_cdp_pool.settings.config import PoolConfig

logger = logging.getLogger(__name__)


class ContextLease:
    """A leased slot. :meth:`new_context` opens the request's browser context."""

    def __init__(self, connection: PooledConnection, config: PoolConfig) -> None:
        self.connection = connection
        self.config = config
        self.context_id: str | None = None
        self.page_open = False
        #: set when the request's render finished normally: its page answers,
        #: so the slot can be reused as soon as the dispose is sent
        self.finished_cleanly = False
        #: profile key under which the page may be kept for the next request
        #: (``CDP_POOL_REUSE_PAGES``), ``None`` to dispose it
        self.keep_key: str | None = None
        self.target_id: str | None = None
        self.session_id: str | None = None
        #: origins the page loaded (filled while it renders), cleared before reuse
        self.origins: set[str] = set()
        #: the profile's cookies, set again in a kept page (``None``: none)
        self.keep_cookies: list[dict[str, Any]] | None = None
        #: the page's per-request commands in force (see :class:`IdlePage`)
        self.applied: dict[str, dict[str, Any]] = {}
        #: event-loop time at which the caller's block is cut short
        #: (``download_timeout``), ``None``: no deadline
        self.deadline: float | None = None
        cdp = connection.cdp
        info = connection.info
        if cdp is None or info is None:  # _pick() hands out READY connections only
            raise CDPConnectionClosed(f"connection {connection.name} is not connected")
        self.cdp: CDPConnection = cdp
        self.info: ServerInfo = info

    async def new_context(
        self,
        options: dict[str, Any] | None = None,
        cookies: list[dict[str, Any]] | None = None,
    ) -> str:
        """Create a browser context (``Target.createBrowserContext`` with
        ``options``, e.g. ``proxyServer``), set ``cookies`` in it
        (``Storage.setCookies`` parameters) and return its id."""
        result = await self.cdp.send("Target.createBrowserContext", options or {})
        context_id: str = result["browserContextId"]
        self.context_id = context_id
        self.connection.counters.contexts_opened += 1
        if cookies:
            await self.cdp.send(
                "Storage.setCookies", {"browserContextId": context_id, "cookies": cookies}
            )
        return context_id

    def deadline_passed(self) -> bool:
        """Whether :attr:`deadline` has come: a cancellation then is the
        deadline's, not the crawl's."""
        return self.deadline is not None and asyncio.get_running_loop().time() >= self.deadline

    def take_idle_page(self, key: str) -> IdlePage | None:
        """A page this connection kept for profile ``key``, now this lease's."""
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

    async def keep_page(self) -> bool:
        """Keep this lease's page open for the next request of its profile
        instead of disposing it, cleaned first (see
        :mod:`~scrapy_cdp_pool.browser.pool.page_reuse`); ``False`` when it cannot be
        kept."""
        if (
            self.keep_key is None
            or not self.finished_cleanly
            or self.context_id is None
            or self.target_id is None
            or self.session_id is None
            or self.cdp.closed
        ):
            return False
        cleaned = await clean_for_reuse(
            self.cdp,
            self.context_id,
            self.session_id,
            self.origins,
            self.keep_cookies,
            self.config.context_close_timeout_s,
        )
        if not cleaned or self.cdp.closed:
            return False
        kept = IdlePage(
            self.keep_key, self.context_id, self.target_id, self.session_id,
            applied=self.applied, no_cookies=not self.keep_cookies,
        )  # fmt: skip
        self.connection.idle_pages.append(kept)
        self.context_id = None
        if self.page_open:
            self.page_open = False
            self.connection.open_pages -= 1
        return True

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

    def page_opened(
        self,
        keep_key: str | None,
        target_id: str,
        session_id: str,
        origins: set[str],
        keep_cookies: list[dict[str, Any]] | None,
        applied: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """The render opened its page (``target_id``, ``session_id``) in this
        lease's context; ``keep_key``: see :meth:`reuse_key`; ``origins``: the
        page's origins (filled while it renders), cleared before reuse;
        ``keep_cookies``: the profile's cookies, set again in a kept page;
        ``applied``: the page's per-request commands in force (see
        :class:`IdlePage`)."""
        self.page_open = True
        self.connection.open_pages += 1
        self.connection.counters.pages += 1
        self.keep_key, self.target_id, self.session_id = keep_key, target_id, session_id
        self.origins = origins
        self.keep_cookies = keep_cookies
        self.applied = applied if applied is not None else {}

    def do_not_keep(self) -> None:
        """Dispose this lease's page at the end instead of keeping it for
        reuse (e.g. it loaded a frame of another origin, whose partitioned
        storage the clearing would not reach)."""
        self.keep_key = None

    async def render_finished(
        self, stopped_loading: Any, alongside: Awaitable[Any] | None = None
    ) -> None:
        """The render ended normally: the slot can be reused as soon as the
        dispose is sent; a page to keep is stopped at ``about:blank`` now
        (``stopped_loading``: its ``asyncio.Event``; ``alongside``: a command
        answered before it leaves; see
        :func:`~scrapy_cdp_pool.browser.pool.page_reuse.stop_page`), or disposed
        if it does not stop."""
        self.finished_cleanly = True
        if self.keep_key is None or self.session_id is None:
            return
        if not await stop_page(
            self.cdp,
            self.session_id,
            stopped_loading,
            self.config.context_close_timeout_s,
            alongside=alongside,
        ):
            self.keep_key = None  # still running: dispose it rather than keep it

    async def dispose(self, on_sent: Callable[[], None] | None = None) -> None:
        """Dispose the context (its pages close with it). Never raises.

        ``on_sent`` is called as soon as the command is queued: the server
        handles a connection's commands in order, so the slot can take the next
        context at once (one round trip less per page) while this answer is
        awaited; if it does not come, the connection is retired.
        """
        if self.page_open:
            self.page_open = False
            self.connection.open_pages -= 1
        context_id, self.context_id = self.context_id, None
        if context_id is None:
            if on_sent is not None:
                on_sent()
            return
        if self.cdp.closed:
            # The context went with this lease's WebSocket; the connection may
            # already have a new one, which does not know this context.
            self.connection.counters.contexts_closed += 1
            if on_sent is not None:
                on_sent()
            return
        await self.connection.dispose_context(
            context_id, self.config.context_close_timeout_s, on_sent
        )
