"""ConnectionPool: CDP connections spread over endpoints, browser contexts leased
FIFO to the connection with the fewest open.

Lifecycle: ``NEW`` → ``STARTING`` (embedded server started, endpoints discovered,
connections opened) → ``READY`` → ``CLOSING`` → ``CLOSED``. A connection that
drops is reconnected in the background with backoff (restarting the embedded
server first if it died); a lease waits for a free slot in arrival order and
never fails for lack of one: its caller's deadline bounds the wait.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import logging
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from scrapy_cdp_pool.browser.backends import LIGHTPANDA, backend_of
from scrapy_cdp_pool.browser.cdp import CDPConnection, CDPError
from scrapy_cdp_pool.browser.pool.capabilities import ServerInfo, discover
from scrapy_cdp_pool.browser.pool.connection import ConnectionState, PooledConnection
from scrapy_cdp_pool.browser.pool.connection_setup import set_up_connection
from scrapy_cdp_pool.browser.pool.dedicated import DedicatedServers
from scrapy_cdp_pool.browser.pool.embedded_server import EmbeddedServer
from scrapy_cdp_pool.browser.pool.lease import ContextLease
from scrapy_cdp_pool.browser.pool.routing import (
    check_capabilities,
    dedicated_requires,
)
from scrapy_cdp_pool.browser.pool.server_flags import loads_iframes
from scrapy_cdp_pool.browser.pool.server_options import ServerOptions
from scrapy_cdp_pool.browser.pool.servers import embedded_server
from scrapy_cdp_pool.browser.pool.slots import SlotQueue
from scrapy_cdp_pool.errors import (
    PoolStartTimeout,
    PoolUnavailable,
    ServerMisconfigured,
    ServerStartError,
    SlotWaitTimeout,
)
from scrapy_cdp_pool.messages import redact_url
from scrapy_cdp_pool.settings.config import PoolConfig

logger = logging.getLogger(__name__)

_RECONNECT_BACKOFF_S = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)

SERVER_START_ATTEMPTS = 3
"""How many times the pool tries to bring up its embedded server (start it,
read what it is, open a first connection) before it gives up (the crawl then
ends ``cdp_pool_unavailable``, exit status 1): a browser killed as it starts
costs a retry, not the crawl. A server that died once started is restarted
without limit (see :meth:`ConnectionPool._reconnect`)."""

SERVER_START_BACKOFF_S = (0.5, 2.0)
"""Seconds waited before the second and the third attempt (with jitter:
between half and all of it)."""


class PoolState(enum.Enum):
    NEW = "new"
    STARTING = "starting"
    READY = "ready"
    CLOSING = "closing"
    CLOSED = "closed"


class ConnectionPool:
    """The crawler's pool of CDP connections (shared by its http and https
    download handlers).

    ``config.connections`` connections are opened per endpoint. With no
    ``CDP_POOL_ENDPOINTS`` the pool starts its own server (``CDP_POOL_BROWSER``),
    and, when that is Lightpanda, :attr:`dedicated` servers for profiles
    whose time zone it takes only per server (``dedicated_to``: the
    options of such a server's own pool). ``holds`` is shared
    with the pool that made this one (a dedicated server's pool).
    """

    def __init__(
        self,
        config: PoolConfig,
        holds: collections.Counter[str] | None = None,
        dedicated_to: ServerOptions | None = None,
    ) -> None:
        self.config = config
        #: warnings given about its endpoints (once each: connection_setup.py)
        self._warned: set[tuple[str, str]] = set()
        self.dedicated_to = dedicated_to
        self.state = PoolState.NEW
        self.server: EmbeddedServer | None = None
        self.endpoints: list[str] = list(config.endpoints)
        self.infos: list[ServerInfo | None] = []
        self.connections: list[PooledConnection] = []
        self.pages_in_flight = 0
        self.pages_in_flight_max = 0
        #: failed starts of the embedded server tried again (``cdp_pool/server_start_retries``)
        self.start_retries = 0
        self._start_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._disposals: set[asyncio.Task[None]] = set()
        self.slots = SlotQueue(self.connections, holds)
        self.dedicated: DedicatedServers | None = None
        backend = backend_of(config)
        if config.dedicated_servers > 0 and not config.endpoints and backend.dedicated_servers:
            self.dedicated = DedicatedServers(config, self._dedicated_pool)

    def _dedicated_pool(self, config: PoolConfig, options: ServerOptions) -> ConnectionPool:
        return ConnectionPool(config, self.slots.holds_count, options)

    # Lifecycle ---------------------------------------------------------

    async def start(self) -> None:
        """Start once; concurrent callers wait for the same start.

        :raises PoolUnavailable: the embedded server did not start, or no
            connection could be opened to any endpoint (the message says why).
        """
        if self.state in (PoolState.CLOSING, PoolState.CLOSED):
            raise PoolUnavailable("the CDP pool is closed")
        if self._start_task is None:
            self._start_task = asyncio.ensure_future(self._start())
        await asyncio.shield(self._start_task)

    async def _start(self) -> None:
        self.state = PoolState.STARTING
        if self.endpoints:  # remote endpoints: one try (the handler says why)
            await self._start_once()
            return
        self.server = embedded_server(self.config, self.dedicated_to)
        attempt = 1
        while True:
            try:
                await self._start_once()
                return
            except PoolUnavailable as e:
                retryable = not isinstance(e.__cause__, ServerMisconfigured)
                if not retryable or attempt >= SERVER_START_ATTEMPTS:
                    if attempt > 1:
                        raise PoolUnavailable(f"{e} (after {attempt} attempts)") from e
                    raise
                delay = SERVER_START_BACKOFF_S[min(attempt, len(SERVER_START_BACKOFF_S)) - 1]
                delay *= random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not a secret
                logger.warning(
                    "The embedded %s server did not start (attempt %d of %d): %s; "
                    "trying again in %.1f s",
                    self.server.kind, attempt, SERVER_START_ATTEMPTS, e, delay,
                )  # fmt: skip
                self.start_retries += 1
                await self._undo_start()
                await asyncio.sleep(delay)
                attempt += 1

    async def _undo_start(self) -> None:
        """Back to before a failed start: its connections closed and
        forgotten, the server stopped."""
        for connection in self.connections:
            if connection.cdp is not None:
                await connection.cdp.close()
        self.connections.clear()  # the slot queue reads this same list
        for task in list(self._tasks):  # reconnects of the failed start
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.infos = []
        self.endpoints = []
        if self.server is not None:
            await self.server.stop(grace_s=1.0)

    async def _start_once(self) -> None:
        await self._discover_endpoints()
        self._make_connections()
        results = await asyncio.gather(
            *(self._connect(c) for c in self.connections), return_exceptions=True
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        if len(errors) == len(results):
            raise PoolUnavailable(f"no CDP connection could be opened: {errors[0]}")
        for connection, result in zip(self.connections, results, strict=True):
            if isinstance(result, BaseException):
                self._schedule_reconnect(connection)
        self.state = PoolState.READY
        self._log_ready()
        self.slots.wake()

    async def _discover_endpoints(self) -> None:
        """Start the embedded server (if any) and ask each endpoint what it
        is (:attr:`infos`; ``None`` for one that does not answer, named in
        an ERROR).

        :raises PoolUnavailable: the server cannot start, or no endpoint answers.
        """
        if self.server is not None:
            try:
                self.endpoints = [await self.server.ensure_running()]
            except ServerStartError as e:
                raise PoolUnavailable(
                    f"cannot start the embedded {self.server.kind} server: {e}"
                ) from e
        infos = await asyncio.gather(
            *(self._discover(i) for i in range(len(self.endpoints))), return_exceptions=True
        )
        self.infos = [None if isinstance(info, BaseException) else info for info in infos]
        if not any(self.infos):  # one ERROR, the handler's, names them all
            raise PoolUnavailable(
                "no CDP endpoint answers: "
                + "; ".join(
                    f"{redact_url(e)}: {i}" for e, i in zip(self.endpoints, infos, strict=True)
                )
            )
        for endpoint, info in zip(self.endpoints, infos, strict=True):
            if isinstance(info, BaseException):
                logger.error("CDP endpoint %s does not answer: %s", redact_url(endpoint), info)

    def _make_connections(self) -> None:
        """``CDP_POOL_CONNECTIONS`` connections per endpoint, each with the
        contexts it may hold (``CDP_POOL_CONTEXTS_PER_CONNECTION``, lowered
        with a warning to what the server allows)."""
        index = 0
        for endpoint_index, known in enumerate(self.infos):
            capacity = self.config.contexts_per_connection
            limit = known.max_contexts_per_connection if known is not None else None
            if known is not None and limit is not None:
                if capacity > limit:
                    logger.warning(
                        "CDP_POOL_CONTEXTS_PER_CONNECTION=%d lowered to %d: %s allows "
                        "no more browser contexts per connection",
                        capacity,
                        limit,
                        known.label,
                    )
                capacity = min(capacity, limit)
            reports = self.server.reports if self.server is not None else None
            for _ in range(self.config.connections):
                self.connections.append(
                    PooledConnection(index, endpoint_index, capacity, reports=reports)
                )
                index += 1

    def _log_ready(self) -> None:
        logger.info(
            "CDP pool ready: %s; endpoints %s; %d connection(s) x %d context(s)",
            ", ".join(sorted({i.label for i in self.infos if i})),
            ", ".join(redact_url(e) for e in self.endpoints),
            len(self.connections),
            max((c.capacity for c in self.connections), default=0),
        )
        lightpanda = self.server is not None and self.server.backend is LIGHTPANDA
        if lightpanda and not loads_iframes(self.config.lightpanda_args):
            # DEBUG: on every Lightpanda crawl, an INFO line was noise
            # (docs/backends.md says it, with the cost of loading them)
            logger.debug(
                "The embedded Lightpanda loads no <iframe> (a page's frames stay empty); "
                'CDP_POOL_LIGHTPANDA_ARGS = ["--load-resources", "iframe"] loads them '
                "(docs/backends.md: the cost, measured)"
            )

    async def _discover(self, endpoint_index: int) -> ServerInfo:
        if self.server is not None and endpoint_index == 0:
            return await self.server.server_info(self.config.connect_timeout_s)
        return await discover(self.endpoints[endpoint_index], self.config.connect_timeout_s)

    async def _connect(self, connection: PooledConnection) -> None:
        connection.state = ConnectionState.CONNECTING
        info = self.infos[connection.endpoint_index]
        if self.server is not None and connection.endpoint_index == 0:
            endpoint = await self.server.ensure_running()
            if endpoint != self.endpoints[0] or info is None:
                self.endpoints[0] = endpoint
                info = self.infos[0] = await self._discover(0)
        elif info is None:
            info = self.infos[connection.endpoint_index] = await self._discover(
                connection.endpoint_index
            )
        if self.server is not None and connection.endpoint_index == 0:
            # The embedded server's own channel: Lightpanda's Unix socket (a
            # connection each), Chromium's pipe (one, every connection shares it).
            cdp = await self.server.connect(info, self.config.connect_timeout_s)
            connection.shared = self.server.shared_channel
        else:
            cdp = await CDPConnection.open(
                info.ws_url,
                open_timeout_s=self.config.connect_timeout_s,
                command_timeout_s=self.config.command_timeout_s,
                max_message_bytes=self.config.max_message_bytes,
            )
        if self.state in (PoolState.CLOSING, PoolState.CLOSED):
            await cdp.close()
            return
        if info.backend.auto_attach:
            await cdp.enable_auto_attach()
        await set_up_connection(
            cdp, info, self.config, embedded=self.server is not None, warned=self._warned
        )
        connection.attach(cdp, info)
        cdp.on_close(lambda: self._on_connection_closed(connection, cdp))

    def _on_connection_closed(self, connection: PooledConnection, cdp: CDPConnection) -> None:
        if connection.cdp is not cdp or self.state in (PoolState.CLOSING, PoolState.CLOSED):
            return
        connection.state = ConnectionState.BROKEN
        # Contexts on a dropped connection are gone with it.
        connection.drop_idle_pages()
        if cdp.close_error() is None:  # else the connection warned already
            logger.warning("CDP connection %s %s", connection.name, cdp.close_reason)
        self._schedule_reconnect(connection)

    def _schedule_reconnect(self, connection: PooledConnection) -> None:
        connection.state = ConnectionState.BROKEN
        self._spawn(self._reconnect(connection), f"cdp-pool reconnect {connection.name}")

    async def _reconnect(self, connection: PooledConnection) -> None:
        attempt = 0
        while self.state not in (PoolState.CLOSING, PoolState.CLOSED):
            try:
                await self._connect(connection)
            except (CDPError, OSError, ServerStartError) as e:
                delay = _RECONNECT_BACKOFF_S[min(attempt, len(_RECONNECT_BACKOFF_S) - 1)]
                attempt += 1
                logger.debug(
                    "Reconnecting %s failed (%r); next try in %.2f s", connection.name, e, delay
                )
                await asyncio.sleep(delay)
                continue
            connection.counters.reconnects += 1
            logger.info("CDP connection %s reconnected", connection.name)
            self.slots.wake()
            return

    async def close(self, *, quick: bool = False) -> None:
        """Fail waiting leases, close every connection, stop the embedded
        server. Idempotent.

        ``quick``: the server is going away for good (a dedicated server
        stopped to make room): contexts still being disposed are not waited
        for, and the server gets 0.5 s, not 5, to exit before SIGKILL (a
        server stuck on a hung proxy took the whole 5 s, and the room with it).
        """
        if self.state is PoolState.CLOSED:
            return
        self.state = PoolState.CLOSING
        self.slots.fail_waiters(PoolUnavailable("the CDP pool is closing"))
        if self._start_task is not None and not self._start_task.done():
            # Discovery and connecting are asyncio all the way down (no
            # thread left behind to keep the interpreter alive at exit).
            self._start_task.cancel()
            await asyncio.gather(self._start_task, return_exceptions=True)
        # Disposals are bounded by CDP_POOL_CONTEXT_CLOSE_TIMEOUT_SECONDS.
        if quick:
            for disposal in self._disposals:
                disposal.cancel()
        await asyncio.gather(*self._disposals, return_exceptions=True)
        if self.dedicated is not None:
            await self.dedicated.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for connection in self.connections:
            connection.drop_idle_pages()
            if connection.cdp is not None:
                await connection.cdp.close()
            connection.state = ConnectionState.CLOSED
        if self.server is not None:
            await self.server.stop(grace_s=0.5 if quick else 5.0)
        self.state = PoolState.CLOSED

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # Leasing -------------------------------------------------------------

    @asynccontextmanager
    async def lease(
        self,
        requires: frozenset[str] = frozenset(),
        server_options: ServerOptions | None = None,
        timeout_s: float | None = None,
    ) -> AsyncIterator[ContextLease]:
        """A slot on the connection with the fewest open contexts, among the
        endpoints that have the capabilities in ``requires``, waited for in FIFO
        order. The slot is freed once the lease's context is disposed (in the
        background if the caller leaves early).

        When no endpoint has them but a dedicated server started with
        ``server_options`` would (:meth:`dedicated_requires`), the slot is on
        that server, once it is this request's turn to use one.

        ``timeout_s`` (seconds; ``None``: none) bounds the start of a pool of
        remote endpoints (``CDP_POOL_ENDPOINTS``: their ``/json/version``
        answers) and, from the moment it has its slot, the caller's block
        (the render). A browser the plugin starts itself (the embedded
        server, a dedicated server) is the handler's set-up, as plain
        Scrapy's first request does not pay for its handler's: its start is
        bounded by ``CDP_POOL_SERVER_START_TIMEOUT_SECONDS`` (failing as
        :class:`PoolUnavailable`), not by ``timeout_s``. A wait
        for a slot or for a dedicated server's turn is like a request waiting
        for one of Scrapy's downloader slots: its page is not started yet, and
        the wait is bounded by the pages ahead of it, each by its own
        deadline. Only a wait while the pool cannot serve it (no connection
        ready, or slots held) ends after ``timeout_s``
        (:meth:`~scrapy_cdp_pool.browser.pool.slots.SlotQueue.acquire_within`).

        :raises PoolStartTimeout: ``timeout_s`` passed while the remote
            endpoints were answering ``/json/version``.
        :raises SlotWaitTimeout: ``timeout_s`` passed while waiting for a slot
            and the pool could not serve it.
        :raises TimeoutError: ``timeout_s`` passed in the caller's block.
        :raises CapabilityUnavailable: no endpoint has those capabilities.
        :raises DedicatedServerFailed: the dedicated server did not start.
        :raises PoolUnavailable: the pool could not start or is closing.
        """
        # A browser the plugin starts is its own set-up, not the request's:
        # bounded by CDP_POOL_SERVER_START_TIMEOUT_SECONDS, not by timeout_s.
        # Remote endpoints answering /json/version within it are the
        # request's connection, as plain Scrapy's is.
        try:
            async with asyncio.timeout(timeout_s if self.config.endpoints else None):
                await self.start()
        except TimeoutError as e:
            raise PoolStartTimeout(_start_timeout_text(timeout_s)) from e
        left = self.dedicated_requires(requires, server_options)
        phase = "slot"  # which wait a timeout ends: the slot or the caller's block
        try:
            if left is not None and server_options is not None and self.dedicated is not None:
                async with self.dedicated.turn(server_options) as pool:
                    await self.dedicated.start(pool, server_options)  # embedded, as above
                    # its slot waited for, and its page bounded, as on this pool
                    async with pool.lease(left, timeout_s=timeout_s) as lease:
                        phase = "leased"
                        self._page_started()
                        try:
                            yield lease
                        finally:
                            self.pages_in_flight -= 1
                return
            phase = "slot"
            if requires:
                self.check_capabilities(requires)
            connection = await self.slots.acquire_within(requires, timeout_s)
            phase = "leased"
            lease = ContextLease(connection, self.config)
            self._page_started()
            try:
                async with asyncio.timeout(timeout_s) as deadline:  # the page's, from its slot
                    lease.deadline = deadline.when()
                    yield lease
            finally:
                self.pages_in_flight -= 1
                task = asyncio.get_running_loop().create_task(
                    self._dispose(lease), name=f"cdp-pool dispose {connection.name}"
                )
                self._disposals.add(task)
                task.add_done_callback(self._disposals.discard)
        except TimeoutError as e:
            if phase == "slot":
                raise SlotWaitTimeout(self._slot_wait_text(timeout_s)) from e
            raise

    def _slot_wait_text(self, timeout_s: float | None) -> str:
        """Why a wait for a slot ended (see :meth:`SlotQueue.acquire_within`)."""
        if self.holds:
            why = "slots held: " + ", ".join(sorted(self.holds))
        else:
            why = "no connection of the pool ready: its server restarting or unreachable"
        return f"no browser slot within download_timeout = {timeout_s:g} s ({why})"

    def _page_started(self) -> None:
        self.pages_in_flight += 1
        self.pages_in_flight_max = max(self.pages_in_flight_max, self.pages_in_flight)

    def dedicated_requires(
        self, requires: frozenset[str], server_options: ServerOptions | None
    ) -> frozenset[str] | None:
        """See :func:`~scrapy_cdp_pool.browser.pool.routing.dedicated_requires`;
        ``None`` too when the pool has no dedicated servers."""
        if self.dedicated is None:
            return None
        return dedicated_requires(self.infos, requires, server_options)

    def check_capabilities(self, requires: frozenset[str]) -> None:
        """See :func:`~scrapy_cdp_pool.browser.pool.routing.check_capabilities`; the
        message says when ``CDP_POOL_DEDICATED_SERVERS = 0`` is why."""
        off = (
            self.server is not None
            and self.server.backend.dedicated_servers
            and self.config.dedicated_servers == 0
        )
        check_capabilities(self.infos, requires, dedicated_off=off)

    async def wait_disposed(self) -> None:
        """Wait until every finished lease's context is disposed (each bounded
        by ``CDP_POOL_CONTEXT_CLOSE_TIMEOUT_SECONDS``), pages kept for reuse
        included: after it, no context is open on any connection."""
        await asyncio.gather(*self._disposals, return_exceptions=True)
        await asyncio.gather(
            *(self._dispose_idle(c) for c in self.connections if c.idle_pages),
            return_exceptions=True,
        )
        if self.dedicated is not None:
            await self.dedicated.wait_disposed()

    async def _dispose_idle(self, connection: PooledConnection) -> None:
        idle, connection.idle_pages = connection.idle_pages, []
        for page in idle:
            await connection.dispose_context(page.context_id, self.config.context_close_timeout_s)

    async def _dispose(self, lease: ContextLease) -> None:
        freed = False

        def free_slot() -> None:
            nonlocal freed
            if not freed:
                freed = True
                self.slots.release(lease.connection)

        try:
            if await lease.keep_page():
                return
            # A page that may be stuck (the render failed) keeps its slot until
            # the server confirms the dispose, or the connection is retired.
            await lease.dispose(on_sent=free_slot if lease.finished_cleanly else None)
        finally:
            free_slot()

    def hold(self, reason: str) -> None:
        """Stop handing out new slots until :meth:`unhold` with the same
        ``reason`` (backpressure, e.g. the memory guard); leases already out
        are not affected and waiting ones keep their FIFO order. Dedicated
        servers are held too.

        Holds are counted: crawlers sharing a pool may each hold it for the
        same reason, and it is lifted when every one of them has released it."""
        self.slots.hold(reason)

    def unhold(self, reason: str) -> None:
        self.slots.unhold(reason)
        self.wake()

    def wake(self) -> None:
        """Hand free slots to waiters (here and on dedicated servers)."""
        self.slots.wake()
        if self.dedicated is not None:
            self.dedicated.wake()

    @property
    def holds(self) -> frozenset[str]:
        """The reasons new pages are held back right now."""
        return self.slots.holds

    # Introspection -------------------------------------------------------

    def __repr__(self) -> str:
        """State, pages open against slots, leases waiting for a slot and
        kept pages (as httpcore's pool shows its requests), e.g.
        ``<ConnectionPool [READY | 3/8 open, 5 waiting, 1 kept, 4 connections]>``."""
        connections = self.connections
        open_now, slots = self._open_and_slots()
        kept = sum(len(c.idle_pages) for c in connections)
        return (
            f"<{type(self).__name__} [{self.state.name} | {open_now}/{slots} open, "
            f"{self.waiting} waiting, {kept} kept, {len(connections)} connections]>"
        )

    @property
    def waiting(self) -> int:
        """Leases waiting for a free slot."""
        return self.slots.waiting

    @property
    def free_slots(self) -> int:
        """Pages this pool opens now without a wait: its slots less the
        pages open and the leases waiting (the pool's, not its dedicated
        servers')."""
        open_now, slots = self._open_and_slots()
        return max(0, slots - open_now - self.waiting)

    def _open_and_slots(self) -> tuple[int, int]:
        """(pages open, slots) over this pool's connections."""
        connections = self.connections
        return sum(c.open_contexts for c in connections), sum(c.capacity for c in connections)

    def owns(self, connection: PooledConnection) -> bool:
        """Whether ``connection`` is one of this pool's (not a dedicated
        server's)."""
        index = connection.index
        return index < len(self.connections) and self.connections[index] is connection

    def server_pids(self) -> list[int]:
        """PIDs of the embedded server and of the running dedicated ones."""
        pids = [self.server.pid] if self.server is not None and self.server.pid else []
        return pids + (self.dedicated.pids() if self.dedicated is not None else [])

    def endpoint_name(self, index: int) -> str | None:
        """Endpoint ``index`` as logs, stats and status lines show it: its
        password and token masked (:func:`~scrapy_cdp_pool.messages.redact_url`);
        ``None`` when there is none (the pool not started yet)."""
        return redact_url(self.endpoints[index]) if index < len(self.endpoints) else None

    def snapshot(self) -> list[dict[str, Any]]:
        """Per connection, :meth:`PooledConnection.row`."""
        return [c.row(self.endpoint_name(c.endpoint_index)) for c in self.connections]


def _start_timeout_text(timeout_s: float | None) -> str:
    return (
        f"the CDP pool did not start within download_timeout = {timeout_s:g} s (the embedded "
        "server starting, or its endpoints answering /json/version)"
    )
