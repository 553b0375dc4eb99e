"""RequestSpacing and SlotConcurrency on their own (Scrapy's downloader slot
stood in for): every wait ends, whatever happens to the request holding a
turn or a place. The delays themselves are checked on the test site's clock
in tests/test_politeness.py."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import pytest_twisted
from scrapy import Request
from twisted.internet.defer import Deferred

from scrapy_cdp_pool.core.pacing.concurrency import SlotConcurrency
from scrapy_cdp_pool.core.pacing.spacing import RequestSpacing


@dataclass
class StandInSlot:
    delay: float
    concurrency: int = 1

    def download_delay(self) -> float:
        return self.delay


@dataclass
class StandInDownloader:
    slot: StandInSlot
    slots: dict[str, StandInSlot] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.slots["example.com"] = self.slot

    def get_slot_key(self, request: Request) -> str:
        return "example.com"


@dataclass
class StandInCrawler:
    engine: Any


def crawler(delay: float, concurrency: int = 1) -> Any:
    engine = type("Engine", (), {"downloader": StandInDownloader(StandInSlot(delay, concurrency))})
    return StandInCrawler(engine)


REQUEST = Request("https://example.com/")


def in_task(coro: Coroutine[Any, Any, None]) -> Deferred[None]:
    """``coro`` as an asyncio task (the plugin's waits are asyncio's)."""
    return Deferred.fromFuture(asyncio.ensure_future(coro))


@pytest_twisted.ensureDeferred
async def test_no_delay_no_turn() -> None:
    await in_task(_test_no_delay_no_turn())


async def _test_no_delay_no_turn() -> None:
    assert await RequestSpacing(crawler(0.0)).reserve(REQUEST) is None


@pytest_twisted.ensureDeferred
async def test_a_turn_that_never_started_lets_the_next_request_go() -> None:
    await in_task(_test_a_turn_that_never_started_lets_the_next_request_go())


async def _test_a_turn_that_never_started_lets_the_next_request_go() -> None:
    spacing = RequestSpacing(crawler(0.01))
    first = await spacing.reserve(REQUEST)
    assert first is not None
    second = asyncio.ensure_future(spacing.reserve(REQUEST))
    await asyncio.sleep(0)
    assert not second.done()  # the first holds the slot's baton
    spacing.end(first)  # it failed before its navigation
    assert await second is not None


@pytest_twisted.ensureDeferred
async def test_the_next_request_waits_for_the_answer_of_the_last_start() -> None:
    await in_task(_test_the_next_request_waits_for_the_answer_of_the_last_start())


async def _test_the_next_request_waits_for_the_answer_of_the_last_start() -> None:
    spacing = RequestSpacing(crawler(0.01))
    first = await spacing.reserve(REQUEST)
    assert first is not None
    spacing.claim(first)
    second = asyncio.ensure_future(spacing.reserve(REQUEST))
    await asyncio.sleep(0.05)  # past the delay: still waiting for the answer
    assert not second.done()
    spacing.arrived(first)
    assert await second is not None


@pytest_twisted.ensureDeferred
async def test_a_cancelled_wait_for_a_turn_holds_nothing() -> None:
    await in_task(_test_a_cancelled_wait_for_a_turn_holds_nothing())


async def _test_a_cancelled_wait_for_a_turn_holds_nothing() -> None:
    spacing = RequestSpacing(crawler(0.01))
    first = await spacing.reserve(REQUEST)
    assert first is not None
    waiting = asyncio.ensure_future(spacing.reserve(REQUEST))
    await asyncio.sleep(0)
    waiting.cancel()
    spacing.end(first)
    assert await spacing.reserve(REQUEST) is not None


@pytest_twisted.ensureDeferred
async def test_a_slots_places_are_handed_over_in_order_and_cancelled_waits_skipped() -> None:
    await in_task(_test_a_slots_places_are_handed_over_in_order_and_cancelled_waits_skipped())


async def _test_a_slots_places_are_handed_over_in_order_and_cancelled_waits_skipped() -> None:
    concurrency = SlotConcurrency(crawler(0.0, concurrency=1))
    order: list[str] = []
    release = asyncio.Event()

    async def hold(name: str) -> None:
        async with concurrency.held(REQUEST):
            order.append(name)
            await release.wait()

    first = asyncio.ensure_future(hold("first"))
    await asyncio.sleep(0)
    cancelled = asyncio.ensure_future(hold("cancelled"))
    last = asyncio.ensure_future(hold("last"))
    await asyncio.sleep(0)
    assert order == ["first"]
    cancelled.cancel()
    release.set()
    await asyncio.gather(first, last, return_exceptions=True)
    assert order == ["first", "last"]
    async with concurrency.held(REQUEST):  # nothing left held
        pass
