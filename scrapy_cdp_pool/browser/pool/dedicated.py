"""Dedicated embedded Lightpanda servers, one per :class:`ServerOptions` (a
time zone; a proxy for a Playwright sign-in): for profiles the shared
server cannot honour.

Each dedicated server is a :class:`ConnectionPool` of its own (the same
start-up, reconnects, restarts and context disposal), with
``CDP_POOL_CONNECTIONS`` connections, started on first use by the main pool
(see ``ConnectionPool.lease``). At most ``CDP_POOL_DEDICATED_SERVERS`` run at
once: when another is needed, the least recently used one with no request in
flight (and past its first :data:`SLICE_S` seconds) is stopped first; when
none can be, the request waits for its turn, in arrival order (not part of
its ``download_timeout``: see ``ConnectionPool.lease``). Only the profile's
requests go to its server: every page a dedicated server loads goes through
its proxy, if it has one.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from scrapy_cdp_pool.browser.pool.server_options import ServerOptions
from scrapy_cdp_pool.errors import DedicatedServerFailed, PoolUnavailable
from scrapy_cdp_pool.settings.config import PoolConfig

if TYPE_CHECKING:
    from scrapy_cdp_pool.browser.pool.pool import ConnectionPool

logger = logging.getLogger(__name__)

#: seconds a dedicated server serves its profiles, once started, before it
#: may be stopped to make room for another
SLICE_S = 1.0


class DedicatedServers:
    """The dedicated servers of one main pool. ``make_pool(config, options)``
    builds a server's pool (the main pool passes one that shares its holds)."""

    def __init__(
        self, config: PoolConfig, make_pool: Callable[[PoolConfig, ServerOptions], ConnectionPool]
    ) -> None:
        self.config = config
        self.limit = config.dedicated_servers
        self.pools: collections.OrderedDict[ServerOptions, ConnectionPool] = (
            collections.OrderedDict()
        )  # least recently used first
        self.started = 0
        self.stopped = 0  # to make room for another
        self.running_max = 0
        self._make_pool = make_pool
        self._users: collections.Counter[ServerOptions] = collections.Counter()
        self._stopping = 0
        self._closing: set[asyncio.Task[None]] = set()  # stops under way
        self._queue: collections.deque[object] = collections.deque()  # waiting, in order
        self._released = asyncio.Event()
        self._closed = False
        self._warned = False
        self._slice_ends: dict[ServerOptions, float] = {}  # loop time
        self._timer: asyncio.TimerHandle | None = None

    @asynccontextmanager
    async def turn(self, options: ServerOptions) -> AsyncIterator[ConnectionPool]:
        """The dedicated server for ``options`` (its pool, not yet started:
        see :meth:`start`), kept for the block: a turn, waited for in the
        order :meth:`_take` gives.

        :raises PoolUnavailable: the main pool is closing.
        """
        pool = await self._take(options)
        try:
            yield pool
        finally:
            self._give_back(options)

    @staticmethod
    async def start(pool: ConnectionPool, options: ServerOptions) -> None:
        """Start a dedicated server's pool (once; later calls return at once).

        :raises DedicatedServerFailed: that server did not start.
        """
        try:
            await pool.start()
        except PoolUnavailable as e:
            raise DedicatedServerFailed(
                f"the dedicated Lightpanda server for {options.label} did not start: {e}"
            ) from e

    @asynccontextmanager
    async def endpoint(self, options: ServerOptions) -> AsyncIterator[str]:
        """The CDP endpoint of the dedicated server for ``options`` (for a
        Playwright sign-in hook), kept running until the block ends.

        :raises DedicatedServerFailed: that server did not start.
        """
        async with self.turn(options) as pool:
            await self.start(pool, options)
            yield pool.endpoints[0]

    async def _take(self, options: ServerOptions) -> ConnectionPool:
        """The pool for ``options``, counted as used until :meth:`_give_back`.

        With no request waiting for a server, a running one is joined at
        once. Otherwise requests queue in arrival order, even those whose
        server runs, except during the server's first :data:`SLICE_S`
        seconds: the head takes its server, or starts it when there is room,
        or stops the least recently used idle server whose slice is over. So
        profiles that share a server cannot keep it for ever while another
        waits for room (it drains, then is handed over), and a server, once
        started, serves its profiles for a while before it may be stopped
        (a start costs ~0.1 s: restarting for every page would cost more
        than the pages)."""
        ticket = object()
        queued = False
        loop = asyncio.get_running_loop()
        try:
            while True:
                if self._closed:
                    raise PoolUnavailable("the CDP pool is closing")
                pool = self.pools.get(options)
                first = not self._queue or self._queue[0] is ticket
                if pool is not None and (first or loop.time() < self._slice_ends[options]):
                    self.pools.move_to_end(options)
                    self._users[options] += 1
                    return pool
                if first and pool is None:
                    if len(self.pools) + self._stopping < self.limit:
                        return self._start(options)
                    idle = [o for o in self.pools if not self._users[o]]
                    done = next((o for o in idle if loop.time() >= self._slice_ends[o]), None)
                    if done is not None:
                        self._warn_thrash(done, options)
                        self.stopped += 1
                        await self._stop(done, "to make room")
                        continue
                    if idle:  # look again when the first of their slices is over
                        self._wake_at(min(self._slice_ends[o] for o in idle))
                if not queued:
                    self._queue.append(ticket)
                    queued = True
                released = self._released
                await released.wait()
        finally:
            if queued:
                self._queue.remove(ticket)
                self._notify()  # the next in line may go now

    def _wake_at(self, when: float) -> None:
        """Wake the waiters at loop time ``when`` (one timer: the earliest)."""
        timer = self._timer
        if timer is not None and not timer.cancelled() and timer.when() <= when:
            return
        if timer is not None:
            timer.cancel()
        self._timer = asyncio.get_running_loop().call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None  # asyncio may run it a little early: the next look sets another
        self._notify()

    def _warn_thrash(self, stopped: ServerOptions, wanted: ServerOptions) -> None:
        if self._warned:
            return
        self._warned = True
        logger.warning(
            "CDP_POOL_DEDICATED_SERVERS = %d dedicated servers are running: stopping the one "
            "for %s to start one for %s. With more distinct proxies and time zones in flight "
            "than that, servers take turns (each keeps its profiles for %.0f s, and a start "
            "costs ~0.1 s): raise the setting if memory allows (~11 MB PSS each)",
            self.limit,
            stopped.label,
            wanted.label,
            SLICE_S,
        )

    def _start(self, options: ServerOptions) -> ConnectionPool:
        # Its server is made by embedded_server(config, options).
        config = dataclasses.replace(self.config, endpoints=(), dedicated_servers=0)
        pool = self.pools[options] = self._make_pool(config, options)
        self._slice_ends[options] = asyncio.get_running_loop().time() + SLICE_S
        self._users[options] += 1
        self.started += 1
        self.running_max = max(self.running_max, len(self.pools))
        logger.info(
            "Starting a dedicated Lightpanda server for %s (%d running, at most %d: "
            "CDP_POOL_DEDICATED_SERVERS)",
            options.label,
            len(self.pools),
            self.limit,
        )
        return pool

    async def _stop(self, options: ServerOptions, why: str) -> None:
        """Stop the server for ``options``. The stop itself is shielded: a
        request whose deadline ends while it waits for the stop leaves it
        running to its end, so no server is left behind untracked."""
        pool = self.pools.pop(options)
        self._slice_ends.pop(options, None)
        self._stopping += 1
        logger.info("Stopping the dedicated Lightpanda server for %s %s", options.label, why)
        task = asyncio.get_running_loop().create_task(
            self._close(pool), name=f"cdp-pool stop dedicated server for {options.label}"
        )
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        await asyncio.shield(task)

    async def _close(self, pool: ConnectionPool) -> None:
        try:
            await pool.close(quick=True)
        finally:
            self._stopping -= 1
            self._notify()

    def _give_back(self, options: ServerOptions) -> None:
        self._users[options] -= 1
        if self._users[options] <= 0:
            del self._users[options]
        self._notify()

    def _notify(self) -> None:
        released, self._released = self._released, asyncio.Event()
        released.set()

    def wake(self) -> None:
        """Let each dedicated pool hand out slots again (after a hold is lifted)."""
        for pool in self.pools.values():
            pool.wake()

    async def wait_disposed(self) -> None:
        await asyncio.gather(*(p.wait_disposed() for p in self.pools.values()))

    async def close(self) -> None:
        """Stop every dedicated server; later leases fail. Idempotent."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        self._notify()
        await asyncio.gather(
            *(self._stop(options, "(the pool is closing)") for options in list(self.pools)),
            return_exceptions=True,
        )
        await asyncio.gather(*self._closing, return_exceptions=True)

    def pids(self) -> list[int]:
        """PIDs of the running dedicated servers."""
        return [
            pid
            for pool in self.pools.values()
            if pool.server is not None and (pid := pool.server.pid) is not None
        ]
