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
from collections.abc import Callable
from typing import Any

from scrapy_cdp_pool.browser.cdp import CDPConnection, CDPConnectionClosed
from scrapy_cdp_pool.browser.pool.capabilities import ServerInfo
from scrapy_cdp_pool.browser.pool.connection import PooledConnection
from scrapy_cdp_pool.browser.pool.page_reuse import PageReuse
from scrapy_cdp_pool.settings.config import PoolConfig

logger = logging.getLogger(__name__)


class ContextLease(PageReuse):
    """A leased slot. :meth:`new_context` opens the request's browser context;
    its page may be kept for reuse (the methods of
    :class:`~scrapy_cdp_pool.browser.pool.page_reuse.PageReuse`)."""

    def __init__(self, connection: PooledConnection, config: PoolConfig) -> None:
        super().__init__()
        self.connection = connection
        self.config = config
        self.context_id: str | None = None
        self.page_open = False
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
