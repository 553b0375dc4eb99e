"""One pooled CDP connection: its WebSocket, its open contexts, its health.

A connection is ``CONNECTING`` until its WebSocket opens, ``READY`` while it
serves, ``BROKEN`` after it dropped or was retired (the pool reconnects it), and
``CLOSED`` once the pool closes.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scrapy_cdp_pool.browser.cdp import CDPConnection, CDPConnectionClosed, CDPError
from scrapy_cdp_pool.browser.pool.capabilities import ServerInfo
from scrapy_cdp_pool.browser.pool.lightpanda_reports import LightpandaReports

logger = logging.getLogger(__name__)


class ConnectionState(enum.Enum):
    CONNECTING = "connecting"
    READY = "ready"
    BROKEN = "broken"
    CLOSED = "closed"


@dataclass(frozen=True)
class IdlePage:
    """A page kept open after a clean render, to be navigated again by the
    next request of the same profile (``key``) on this connection."""

    key: str
    context_id: str
    target_id: str
    session_id: str
    #: the per-request commands in force on the page (method -> params, as
    #: last answered): the next request sends only those that differ
    applied: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: its context holds no cookie (cleaned, and no profile cookies set again)
    no_cookies: bool = False


@dataclass
class ConnectionCounters:
    """Counts over the connection's life, across reconnects."""

    pages: int = 0
    contexts_opened: int = 0
    contexts_closed: int = 0
    reconnects: int = 0
    retired: int = 0


@dataclass(eq=False)
class PooledConnection:
    """A slot-holder in the pool.

    ``open_contexts`` counts the browser contexts leased on this connection
    (from the lease until the context is disposed); it never exceeds
    ``capacity``.
    """

    index: int
    endpoint_index: int
    capacity: int
    state: ConnectionState = ConnectionState.CONNECTING
    cdp: CDPConnection | None = None
    info: ServerInfo | None = None
    open_contexts: int = 0
    open_pages: int = 0
    counters: ConnectionCounters = field(default_factory=ConnectionCounters)
    #: pages kept for reuse (``CDP_POOL_REUSE_PAGES``); with the leased ones,
    #: never more live contexts than ``capacity``
    idle_pages: list[IdlePage] = field(default_factory=list)
    #: its CDP connection is shared with the pool's other connections (the
    #: embedded Chromium's pipe): retiring it restarts the browser
    shared: bool = False
    #: what its server (started by the pool) says on stderr about the pages it
    #: closed; ``None`` for a remote endpoint or a server that says nothing
    reports: LightpandaReports | None = None

    def drop_idle_pages(self) -> None:
        """Forget the kept pages of a connection that is gone: they went
        with it."""
        self.counters.contexts_closed += len(self.idle_pages)
        self.idle_pages.clear()

    @property
    def has_room(self) -> bool:
        return self.state is ConnectionState.READY and self.open_contexts < self.capacity

    @property
    def name(self) -> str:
        return f"#{self.index}"

    def attach(self, cdp: CDPConnection, info: ServerInfo) -> None:
        self.cdp = cdp
        self.info = info
        self.state = ConnectionState.READY

    async def dispose_context(
        self, context_id: str, timeout_s: float, on_sent: Callable[[], None] | None = None
    ) -> None:
        """Dispose one browser context of this connection and count it closed.
        Never raises: a dispose that fails or gets no answer within
        ``timeout_s`` seconds retires the connection (a page stuck in
        JavaScript). ``on_sent`` is called once the command is queued (or at
        once when the connection is already gone, taking the context with it)."""
        cdp = self.cdp
        if cdp is None or cdp.closed:
            self.counters.contexts_closed += 1
            if on_sent is not None:
                on_sent()
            return
        answer = cdp.post(
            "Target.disposeBrowserContext", {"browserContextId": context_id}, timeout_s=timeout_s
        )
        if on_sent is not None:
            on_sent()
        try:
            await answer
        except CDPConnectionClosed:
            pass
        except CDPError as e:
            await self.retire(f"disposing browser context {context_id} failed: {e}")
        self.counters.contexts_closed += 1

    async def retire(self, reason: str) -> None:
        """Close the WebSocket (the server then ends every page on it, even one
        stuck in JavaScript); the pool replaces the connection. On a
        :attr:`shared` channel (the embedded Chromium's pipe) that closes the
        pipe: the browser exits, the pages of the other connections fail (and
        are retried), and the pool starts a new browser."""
        if self.cdp is None or self.cdp.closed:
            return
        self.counters.retired += 1
        logger.warning(
            "Retiring CDP connection %s: %s%s",
            self.name,
            reason,
            " (it shares the browser's pipe: restarting the browser)" if self.shared else "",
        )
        await self.cdp.close()

    def row(self, endpoint: str | None) -> dict[str, Any]:
        """Index, endpoint, state, open contexts and pages, and life-time
        counters (pages, contexts opened/closed, reconnects, retired)."""
        return {
            "connection": self.index,
            "endpoint": endpoint,
            "state": self.state.value,
            "open_contexts": self.open_contexts,
            "open_pages": self.open_pages,
            "pages": self.counters.pages,
            "contexts_opened": self.counters.contexts_opened,
            "contexts_closed": self.counters.contexts_closed,
            "reconnects": self.counters.reconnects,
            "retired": self.counters.retired,
        }
