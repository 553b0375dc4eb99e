"""SlotConcurrency: a downloader slot's concurrency (``CONCURRENT_REQUESTS_PER_DOMAIN``,
``CONCURRENT_REQUESTS_PER_IP``, a ``DOWNLOAD_SLOTS`` entry's ``concurrency``)
held for the requests in the download handler's hands.

Why here and not only in Scrapy's downloader: Scrapy 2.19's downloader, under
the asyncio reactor and without a delay, hands a slot's queued requests to the
handler all at once (it counts a request as transferring only once its
download task runs), so the site saw 4 to 6 pages at once with
``CONCURRENT_REQUESTS_PER_DOMAIN = 2``, plain requests included.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scrapy_cdp_pool.scrapy_internals import downloader_slot

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler


@dataclass
class _Permits:
    in_use: int = 0
    waiters: deque[asyncio.Future[None]] = field(default_factory=deque)


class SlotConcurrency:
    """At most Scrapy's ``Slot.concurrency`` requests of one downloader slot
    in the download handler's hands at once (see the module); one per
    crawler, held by its :class:`~scrapy_cdp_pool.core.gates.RequestGates`
    (``gates.concurrency``)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._slots: dict[str, _Permits] = {}

    @asynccontextmanager
    async def held(self, request: Request) -> AsyncIterator[None]:
        """Hold one of the slot's places for the block (waited for in FIFO
        order); no wait outside a running crawl."""
        found = downloader_slot(self.crawler, request)
        if found is None:
            yield
            return
        key, slot = found
        limit = max(1, int(slot.concurrency))
        permits = self._slots.setdefault(key, _Permits())
        if permits.in_use >= limit or permits.waiters:
            waiter = asyncio.get_running_loop().create_future()
            permits.waiters.append(waiter)
            try:
                await waiter  # the place is handed over by the one leaving
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._release(key, permits)  # handed over, then cancelled
                else:
                    permits.waiters.remove(waiter)
                raise
        else:
            permits.in_use += 1
        try:
            yield
        finally:
            self._release(key, permits)

    def _release(self, key: str, permits: _Permits) -> None:
        while permits.waiters:
            waiter = permits.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the place goes to it: in_use unchanged
                return
        permits.in_use -= 1
        if permits.in_use <= 0:
            del self._slots[key]
