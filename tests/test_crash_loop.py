"""A browser server that keeps dying (a crash loop: issue 39, 106 kills in
60 s logged 111 WARNINGs and no ERROR) is named once, as an ERROR, after
CRASH_LOOP_RESTARTS restarts within CRASH_LOOP_WINDOW_S; the restarts
before it are WARNINGs, those after it INFO. A real embedded Lightpanda,
SIGKILLed each time it runs."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from scrapy_cdp_pool.browser.pool.embedded_server import CRASH_LOOP_RESTARTS, EmbeddedServer
from scrapy_cdp_pool.browser.pool.servers import embedded_server
from scrapy_cdp_pool.settings.config import PoolConfig


async def _kill_and_restart(server: EmbeddedServer, kills: int) -> None:
    for _ in range(kills):
        pid = server.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while server.running:  # reaped: its death seen
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        await server.ensure_running()


@pytest_twisted.ensureDeferred
async def test_a_server_crash_loop_is_one_error(caplog: pytest.LogCaptureFixture) -> None:
    """Before: one WARNING per restart, never an ERROR."""
    caplog.set_level(logging.INFO, logger="scrapy_cdp_pool.browser.pool.embedded_server")
    server = embedded_server(PoolConfig())
    await Deferred.fromFuture(asyncio.ensure_future(server.ensure_running()))
    kills = CRASH_LOOP_RESTARTS + 2
    try:
        await Deferred.fromFuture(asyncio.ensure_future(_kill_and_restart(server, kills)))
    finally:
        await Deferred.fromFuture(asyncio.ensure_future(server.stop()))
    records = [r for r in caplog.records if "restart" in r.getMessage()]
    levels = [r.levelno for r in records]
    assert (
        levels
        == [logging.WARNING] * (CRASH_LOOP_RESTARTS - 1) + [logging.ERROR] + [logging.INFO] * 2
    ), [r.getMessage() for r in records]
    assert "keeps dying" in records[CRASH_LOOP_RESTARTS - 1].getMessage()
