"""SlotQueue: who gets the next free browser-context slot of a pool.

A slot is one context on a connection with room (``open_contexts`` below its
capacity). Callers wait in arrival order; each is handed the connection with
the fewest open contexts (then the fewest pages) among those whose server
honours what it requires. A waiter whose capabilities no free connection has
does not hold back later ones. Holds (backpressure, e.g. the memory guard)
stop new slots being handed out until lifted.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from dataclasses import dataclass

from scrapy_cdp_pool.pool.connection import PooledConnection


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
        if not self._waiters:
            connection = self.pick(requires)
            if connection is not None:
                connection.open_contexts += 1
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
            if requires and (connection.info is None or requires & connection.info.unsupported):
                continue
            if connection.has_room and (
                best is None
                or (connection.open_contexts, connection.counters.pages)
                < (best.open_contexts, best.counters.pages)
            ):
                best = connection
        return best

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
