"""What a cluster worker waits for at its end: the engine asked again when
the cached "requests pending" answer goes stale (not at Scrapy's 5 s
heartbeat), and the wake listeners of all buckets stopped at once (each may
wait ``CLOSE_S``: one after the other, 6 s per worker on a Redis Cluster)."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from types import SimpleNamespace
from typing import Any

import pytest_twisted
from twisted.internet.defer import Deferred

from scrapy_cdp_pool.cluster import scheduler
from scrapy_cdp_pool.cluster.scheduler import PENDING_FRESH_S, ClusterScheduler


class _Gates:
    def __init__(self) -> None:
        self.wakes: list[float] = []

    def wake(self, delay_s: float = 0.0) -> None:
        self.wakes.append(delay_s)


def _scheduler(pending_at: float) -> Any:
    return SimpleNamespace(
        _local=deque(), _unstored=deque(), keep_open=False, link=SimpleNamespace(down=False),
        _pending=(pending_at, True), _pending_rechecked=0.0, gates=_Gates(),
    )  # fmt: skip


def test_a_fresh_pending_answer_asks_the_engine_again_when_it_goes_stale_once() -> None:
    state = _scheduler(time.monotonic())
    assert ClusterScheduler.has_pending_requests(state) is True
    assert ClusterScheduler.has_pending_requests(state) is True
    (delay,) = state.gates.wakes  # one wake per figure, however often the engine asks
    assert 0 < delay <= PENDING_FRESH_S
    state._pending = (time.monotonic(), True)  # a new take's figure: its own wake
    assert ClusterScheduler.has_pending_requests(state) is True
    assert len(state.gates.wakes) == 2


@pytest_twisted.ensureDeferred
async def test_the_wake_listeners_are_stopped_at_once() -> None:
    """Each stop here waits for the other to begin: one after the other
    they would never end."""
    started = [asyncio.Event(), asyncio.Event()]

    async def stop(mine: int) -> None:
        started[mine].set()
        await started[1 - mine].wait()

    stopped = asyncio.wait_for(scheduler._after([stop(0), stop(1)], None), 60)
    await Deferred.fromFuture(asyncio.ensure_future(stopped))
