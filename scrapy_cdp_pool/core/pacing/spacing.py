"""RequestSpacing: the one place where the delay between two starts of one
slot is enforced for what the site sees: Scrapy's (``DOWNLOAD_DELAY`` and its
jitter, ``DOWNLOAD_SLOTS``, a request's ``download_slot``, AutoThrottle) and,
as a slot of its own per host, ``1 / CDP_POOL_HOST_RATE``
(:class:`~scrapy_cdp_pool.core.pacing.host_rate.HostRate`).

Why here and not only in Scrapy's downloader: Scrapy spaces the *dispatch*
of a slot's requests (its ``Slot.lastseen``); a rendered request then waits
for the pool to start, for a browser slot, for its context, before its
navigation reaches the site. Those waits differ from request to request, so
requests dispatched a delay apart could navigate back to back (measured with
a 1 s delay and no jitter: 0.0 to 0.85 s apart). So each request of a spaced
slot also waits in the download handler:

1. :meth:`RequestSpacing.reserve`, before it takes a browser slot (holding
   none, outside its ``download_timeout``): for its slots' batons (one
   request of a slot at a time from here to its start, so that none waits
   holding a browser slot), for the answer to the slot's last start (its
   document's status and headers, or its end without one: the site has
   seen that request by then), and for one delay after that answer;
2. right before the navigation (a plain request: its download), the same
   condition checked again (:meth:`RequestSpacing.wait`), the host's pause
   checked, and :meth:`RequestSpacing.claim`, in the same event-loop step
   as the navigation command is queued.

The gap the site sees between two requests of one slot is so never below
the delay drawn for the later one; a slot's requests do not overlap (plain
Scrapy's would, at a site slower to answer than the delay).

A delay is drawn for each request as Scrapy's slot draws it
(``Slot.download_delay()``, read when the request reserves its turn: the
``jitter`` of the slot, and a delay AutoThrottle changed, are used as they
are). Nothing is waited for where no delay applies.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scrapy.utils.httpobj import urlparse_cached

from scrapy_cdp_pool.scrapy_internals import downloader_slot

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler


@dataclass
class _Clock:
    """One spaced slot."""

    #: held from a request's turn to its start: one request of the slot at a
    #: time between the two, so none waits holding a browser slot
    baton: asyncio.Lock = field(default_factory=asyncio.Lock)
    anchor: float = -math.inf  # the last start, or the arrival of its answer
    owner: object = None  # the turn that started last
    #: set once the last start has its answer (or ended without one)
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    delay: float = 0.0  # the longest delay drawn for it: forgotten once past

    def idle(self, now: float) -> bool:
        return not self.baton.locked() and self.answered.is_set() and self.anchor + self.delay < now


@dataclass
class Turn:
    """One request's place in its slots: each key with the delay drawn for it."""

    spacings: list[tuple[str, float]] = field(default_factory=list)
    started: bool = False
    ended: bool = False
    #: ``(host, token)``: the fleet's start this turn claimed
    #: (:class:`~scrapy_cdp_pool.core.pacing.plugs.FleetSpacing`), until its answer
    fleet: tuple[str, str] | None = None


class RequestSpacing:
    """The crawler's request spacing; one per crawler, held by its
    :class:`~scrapy_cdp_pool.core.pacing.HostPacing` (``pacing.spacing``).

    ``host_interval_s``: the least time between two starts of one host
    (``1 / CDP_POOL_HOST_RATE``), ``0.0`` for none.
    """

    def __init__(self, crawler: Crawler, host_interval_s: float = 0.0) -> None:
        self.crawler = crawler
        self.host_interval_s = host_interval_s
        self._clocks: dict[str, _Clock] = {}
        self._next_prune = 0.0

    def _spacings(self, request: Request) -> list[tuple[str, float]]:
        spacings: dict[str, float] = {}
        found = downloader_slot(self.crawler, request)
        if found is not None:
            key, slot = found
            delay = float(slot.download_delay())
            if delay > 0:
                spacings[f"slot:{key}"] = delay
        if self.host_interval_s > 0:
            spacings[f"host:{urlparse_cached(request).hostname or ''}"] = self.host_interval_s
        return sorted(spacings.items())  # batons taken in one order: no deadlock

    async def reserve(self, request: Request) -> Turn | None:
        """Wait for ``request``'s turn in its spaced slots, holding no browser
        slot: the slots' batons (one request at a time from here to its
        start), the answer to the last start of each, and one delay after it.
        ``None`` when no delay applies to it. The caller must :meth:`end` a
        turn it got, whatever happens."""
        spacings = self._spacings(request)
        if not spacings:
            return None
        self._prune(time.monotonic())
        turn = Turn(spacings)
        taken: list[_Clock] = []
        try:
            for key, delay in spacings:
                clock = self._clocks.get(key)
                if clock is None:
                    clock = self._clocks[key] = _Clock()
                    clock.answered.set()
                clock.delay = max(clock.delay, delay)
                await clock.baton.acquire()
                taken.append(clock)
            await self.wait(turn)
        except BaseException:
            for clock in taken:
                clock.baton.release()
            raise
        return turn

    def _prune(self, now: float) -> None:
        """Forget the slots no request would wait for (once a minute at most)."""
        if now < self._next_prune:
            return
        self._next_prune = now + 60.0
        for key in [key for key, clock in self._clocks.items() if clock.idle(now)]:
            del self._clocks[key]

    async def wait(self, turn: Turn) -> None:
        """Wait until ``turn`` may start: the last start of each of its slots
        has its answer, and one delay has passed since that answer. Returns
        without yielding to the event loop once that time has come, so that
        the caller can :meth:`claim` and start in the same step."""
        while True:
            for key, delay in turn.spacings:
                clock = self._clocks[key]
                if not clock.answered.is_set():
                    await clock.answered.wait()
                    break
                left = clock.anchor + delay - time.monotonic()
                if left > 0:
                    await asyncio.sleep(left)
                    break
            else:
                return

    def claim(self, turn: Turn) -> None:
        """``turn``'s request starts now (its navigation or download): its
        slots' batons go to the next request, which waits for its answer."""
        now = time.monotonic()
        turn.started = True
        for key, _ in turn.spacings:
            clock = self._clocks[key]
            clock.anchor, clock.owner = now, turn
            clock.answered = asyncio.Event()
            clock.baton.release()

    def arrived(self, turn: Turn) -> None:
        """``turn``'s answer arrived (its document's status and headers): the
        site saw the request by now, so the next start of each slot that
        ``turn`` started last is one delay from now. Called again (a
        redirect the browser followed, a page's own navigation), it moves
        that time on."""
        now = time.monotonic()
        for key, _ in turn.spacings:
            clock = self._clocks.get(key)
            if clock is not None and clock.owner is turn:
                clock.anchor = max(clock.anchor, now)
                clock.answered.set()

    def end(self, turn: Turn | None) -> None:
        """``turn``'s request is over, whatever happened: its batons go back
        if it never started; if it did, its end counts as its answer when no
        answer came (a failure: the site may have seen it)."""
        if turn is None or turn.ended:
            return
        turn.ended = True
        if not turn.started:
            for key, _ in turn.spacings:
                self._clocks[key].baton.release()
            return
        now = time.monotonic()
        for key, _ in turn.spacings:
            clock = self._clocks.get(key)
            if clock is not None and clock.owner is turn and not clock.answered.is_set():
                clock.anchor = max(clock.anchor, now)
                clock.answered.set()
