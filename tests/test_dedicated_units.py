"""DedicatedServers' bookkeeping when a request gives up while a server is
being stopped to make room for it.

``HeldPool`` stands in for ConnectionPool here, and says so: the subject is
DedicatedServers' own accounting, and a real server's stop cannot be held open
on demand (the crawl tests in test_profiles_proxy.py run real servers).
Synchronisation is by events, never sleeps.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest_twisted
from twisted.internet.defer import Deferred

from scrapy_cdp_pool.browser.pool.dedicated import DedicatedServers
from scrapy_cdp_pool.browser.pool.server_options import ServerOptions
from scrapy_cdp_pool.settings.config import PoolConfig

PARIS = ServerOptions(timezone_id="Europe/Paris")
TOKYO = ServerOptions(timezone_id="Asia/Tokyo")


class HeldPool:
    """A pool whose ``close()`` waits for :attr:`release`."""

    made: list[HeldPool] = []

    def __init__(self, config: PoolConfig, options: ServerOptions) -> None:
        self.options = options
        self.release = asyncio.Event()
        self.closing = asyncio.Event()
        self.closed = False
        self.connections: list[Any] = []
        self.endpoints = ["http://127.0.0.1:9"]
        self.server = None
        HeldPool.made.append(self)

    async def start(self) -> None:
        return None

    async def close(self, *, quick: bool = False) -> None:
        self.closing.set()
        await self.release.wait()
        self.closed = True


@pytest_twisted.ensureDeferred
async def test_a_stop_outlives_the_request_that_started_it() -> None:
    # Twisted drives this coroutine; the scenario is asyncio code: a task.
    await Deferred.fromFuture(asyncio.ensure_future(_a_stop_outlives_its_request()))


async def _a_stop_outlives_its_request() -> None:
    HeldPool.made = []
    servers = DedicatedServers(PoolConfig(dedicated_servers=1), HeldPool)  # type: ignore[arg-type]
    async with servers.turn(PARIS):
        pass  # Paris's server is now idle
    paris = HeldPool.made[0]

    async def tokyo_request() -> None:
        async with servers.turn(TOKYO):
            pass

    waiting = asyncio.ensure_future(tokyo_request())
    await paris.closing.wait()  # Tokyo's request is stopping Paris's server for room
    waiting.cancel()  # ... and gives up (its download_timeout) meanwhile
    await asyncio.gather(waiting, return_exceptions=True)
    assert not paris.closed
    paris.release.set()
    async with servers.turn(TOKYO) as pool:
        # The stop ran to its end, and only then did Tokyo's server start.
        assert paris.closed
        assert pool.options == TOKYO
    assert (servers.started, servers.stopped, servers.running_max) == (2, 1, 1)
    tokyo = HeldPool.made[1]
    tokyo.release.set()
    await servers.close()
    assert tokyo.closed
    assert servers.pools == {}
