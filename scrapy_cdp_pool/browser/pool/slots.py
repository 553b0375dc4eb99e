"""SlotQueue: who gets the next free browser-context slot of a pool.

A slot is one context on a connection with room (``open_contexts`` below its
capacity). Callers wait in arrival order; each is handed the connection with
the fewest open contexts (then the fewest pages) among those whose server
honours what it requires. A waiter whose capabilities no free connection has
does not hold back later ones. Holds (backpressure, e.g. the memory guard)
stop new slots being handed out until lifted.

A wait for a slot is bounded the way a request waiting for one of Scrapy's
downloader slots is not: only while the pool cannot serve it
(:meth:`SlotQueue.acquire_within`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from dataclasses import dataclass

from scrapy_cdp_pool.browser.pool.connection import ConnectionState, PooledConnection


@dataclass(eq=False)
class _Waiter:
    future: asyncio.Future[PooledConnection]
    requires: frozenset[str]


class SlotQueue:
    """Slots of ``connections`` (the pool's own list, read as it changes).
    ``holds`` may be shared with other queues (a pool and its dedicated
    servers' pools are held together)."""

    def __init__(
        self,
        connections: list[PooledConnection],
        holds: collections.Counter[str] | None = None,
    ) -> None:
        self.connections = connections
        self.holds_count: collections.Counter[str] = (
            holds if holds is not None else collections.Counter()
        )
        self._waiters: collections.deque[_Waiter] = collections.deque()

    async def acquire(self, requires: frozenset[str] = frozenset()) -> PooledConnection:
        """Wait for a slot; its connection's ``open_contexts`` is already
        counted. Give it back with :meth:`release`."""
        connection = self._take_now(requires)
        if connection is not None:
            return connection
        waiter = _Waiter(asyncio.get_running_loop().create_future(), requires)
        self._waiters.append(waiter)
        self.wake()
        try:
            return await waiter.future
        except asyncio.CancelledError:
            future = waiter.future
            if future.done() and not future.cancelled() and future.exception() is None:
                self.release(future.result())  # handed a slot as we were cancelled
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise

    async def acquire_within(
        self, requires: frozenset[str], timeout_s: float | None
    ) -> PooledConnection:
        """:meth:`acquire`, given up only when the pool cannot serve it.

        A wait while every slot is held by a page in flight is like a request
        waiting for one of Scrapy's downloader slots: not part of its
        ``download_timeout``, as each page ahead of it is bounded by its own.
        So at each ``timeout_s`` seconds of waiting the wait goes on if
        :meth:`busy`, and ends otherwise (no connection it could use ready,
        e.g. its server restarting or unreachable, or a hold in force).

        :raises TimeoutError: it ended so (the waiter's place is given up).
        """
        connection = self._take_now(requires)
        if connection is not None or timeout_s is None:
            return connection or await self.acquire(requires)
        waiting = asyncio.ensure_future(self.acquire(requires))
        try:
            while True:
                await asyncio.wait([waiting], timeout=timeout_s)
                if waiting.done() or not self.busy(requires):
                    break
        except BaseException:  # cancelled: no slot may stay counted
            if not waiting.done():
                waiting.cancel()  # acquire gives back a slot handed meanwhile
            elif not waiting.cancelled() and waiting.exception() is None:
                self.release(waiting.result())
            raise
        if waiting.done():
            return waiting.result()
        waiting.cancel()
        raise TimeoutError

    def busy(self, requires: frozenset[str] = frozenset()) -> bool:
        """Whether the pool is up and serving: no hold in force and a
        connection that honours ``requires`` ready (each slot then frees when
        its page ends)."""
        return not self.holds and any(
            c.state is ConnectionState.READY and _honours(c, requires) for c in self.connections
        )

    def release(self, connection: PooledConnection) -> None:
        connection.open_contexts -= 1
        self.wake()

    def fail_waiters(self, error: BaseException) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.future.done():
                waiter.future.set_exception(error)

    def hold(self, reason: str) -> None:
        self.holds_count[reason] += 1

    def unhold(self, reason: str) -> None:
        if self.holds_count[reason] > 0:
            self.holds_count[reason] -= 1
        if self.holds_count[reason] <= 0:
            del self.holds_count[reason]
        self.wake()

    @property
    def holds(self) -> frozenset[str]:
        return frozenset(reason for reason, count in self.holds_count.items() if count > 0)

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if not w.future.done())

    def pick(self, requires: frozenset[str] = frozenset()) -> PooledConnection | None:
        """The best connection with room for ``requires``, or ``None``."""
        if self.holds:
            return None
        best: PooledConnection | None = None
        for connection in self.connections:
            if not _honours(connection, requires):
                continue
            if connection.has_room and (
                best is None
                or (connection.open_contexts, connection.counters.pages)
                < (best.open_contexts, best.counters.pages)
            ):
                best = connection
        return best

    def _take_now(self, requires: frozenset[str]) -> PooledConnection | None:
        """A free slot at once, when nobody is waiting ahead."""
        if self._waiters:
            return None
        connection = self.pick(requires)
        if connection is not None:
            connection.open_contexts += 1
        return connection

    def wake(self) -> None:
        """Hand free slots to waiters in arrival order."""
        for waiter in list(self._waiters):
            if waiter.future.done():
                self._waiters.remove(waiter)
                continue
            connection = self.pick(waiter.requires)
            if connection is None:
                if self.holds or not any(c.has_room for c in self.connections):
                    return
                continue
            self._waiters.remove(waiter)
            connection.open_contexts += 1
            waiter.future.set_result(connection)


def _honours(connection: PooledConnection, requires: frozenset[str]) -> bool:
    """Whether ``connection``'s server honours every capability in ``requires``."""
    return not requires or (
        connection.info is not None and not requires & connection.info.unsupported
    )
