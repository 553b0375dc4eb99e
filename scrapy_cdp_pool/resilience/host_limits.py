"""HostLimits: ``CDP_POOL_HOST_CONCURRENCY``, enforced exactly where requests
start: the scheduler queue.

Scrapy's own per-domain concurrency is not enforced by its asyncio downloader
when ``DOWNLOAD_DELAY`` is 0, so the limit is a host gate of the queue
(:class:`~scrapy_cdp_pool.core.gates.RequestGates`). A request counts as
in flight from the moment the queue hands it out to the end of its download,
whatever the outcome. Every request goes through the queue, rendered or not,
so the limit holds for both. ``CDP_POOL_HOST_RATE`` is the host pacing's
(:mod:`scrapy_cdp_pool.core.pacing.host_rate`); the in-flight figure is
recorded with either setting.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.exceptions import NotConfigured

from scrapy_cdp_pool.core.gates import RequestGates, host_of
from scrapy_cdp_pool.core.runtime import runtime_of

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

_SLOT_META_KEY = "_cdp_host_slot"


class HostLimits:
    """An extension (the add-on installs it); ``NotConfigured`` when neither
    ``CDP_POOL_HOST_CONCURRENCY`` nor ``CDP_POOL_HOST_RATE`` is set. Stat:
    ``cdp_pool/host_in_flight_max``, the most requests in flight to one host.
    ``concurrency``: the limit, ``None`` for none (the figure only)."""

    def __init__(self, crawler: Crawler, gates: RequestGates, concurrency: int | None) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.gates = gates
        self.concurrency = concurrency
        self.in_flight: Counter[str] = Counter()
        self._slots: dict[str, str] = {}  # token in the request's meta -> host
        self._tokens = itertools.count(1)
        if concurrency is not None:
            gates.add_host_check(self.is_open)
        gates.add_dequeue_hook(self.on_dequeued)
        gates.add_finish_hook(self.on_finished)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = runtime_of(crawler)
        config = runtime.config
        if config.resilience.host_concurrency is None and config.resilience.host_rate is None:
            raise NotConfigured  # no per-host limit: nothing to install
        return cls(crawler, runtime.gates, config.resilience.host_concurrency)

    def is_open(self, host: str) -> bool:
        """Host gate: room under the concurrency limit (reopened by
        :meth:`on_finished`)."""
        return self.concurrency is None or self.in_flight[host] < self.concurrency

    def on_dequeued(self, request: Request, now: float) -> None:
        stale = self._slots.pop(request.meta.get(_SLOT_META_KEY, ""), None)
        if stale is not None:
            # A copy of a request that never finished (a middleware replaced
            # it in process_request): give its slot back.
            self._release(stale)
        host = host_of(request)
        token = f"{id(self)}:{next(self._tokens)}"
        request.meta[_SLOT_META_KEY] = token
        self._slots[token] = host
        self.in_flight[host] += 1
        self.stats.max_value("cdp_pool/host_in_flight_max", self.in_flight[host])

    def on_finished(self, request: Request) -> None:
        host = self._slots.pop(request.meta.pop(_SLOT_META_KEY, ""), None)
        if host is not None:
            self._release(host)

    def _release(self, host: str) -> None:
        self.in_flight[host] -= 1
        if self.in_flight[host] <= 0:
            del self.in_flight[host]
