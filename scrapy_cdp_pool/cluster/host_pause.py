"""ClusterHostPauseMiddleware: host pauses (429, ``Retry-After``) shared by the fleet.

:class:`~scrapy_cdp_pool.resilience.HostPauseMiddleware` with its pauses also
written to Redis (``<prefix>pause:<host>``, the pause's end in Redis's clock,
expiring then), so that:

- the cluster frontier's take hands out no request to a paused host, whichever
  worker saw the 429 (the gate is parked until the pause's end);
- the download handler's check right before a request navigates (or a plain
  request is sent), :meth:`remaining`, sees pauses announced by any worker:
  pushed to each worker as they are written
  (:mod:`~scrapy_cdp_pool.cluster.host_events`), no round trip; "no pause"
  is the take's that just handed the request out (its script read the pause:
  :mod:`~scrapy_cdp_pool.cluster.take_checks`), else one ``PTTL``. Its
  earlier checks, before a request takes a browser slot and before it makes
  a context (:meth:`known_remaining`), only avoid
  holding a slot or making a context for nothing: they ask no Redis (three
  ``PTTL`` a rendered request before, one now).

With ``CDP_POOL_HOST_RATE`` it also plugs the fleet's spacing of each
host's starts (:mod:`~scrapy_cdp_pool.cluster.fleet_spacing`), which refuses
a start while the host is paused fleet-wide, into the crawler's host pacing
(:data:`~scrapy_cdp_pool.core.pacing.FLEET_SPACING`), beside its pauses.

A pause is written to Redis before it is logged ("Pausing requests to ...").
With Redis unreachable the worker's own pauses still hold on it; others'
pauses are not seen until Redis answers again (and no request is taken
meanwhile).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from scrapy import signals

from scrapy_cdp_pool.cluster.fleet_spacing import FleetSpacing
from scrapy_cdp_pool.cluster.host_events import HostEvents
from scrapy_cdp_pool.cluster.link import ClusterLink, link_for
from scrapy_cdp_pool.core.gates import RequestGates
from scrapy_cdp_pool.core.pacing import FLEET_SPACING, HostPacing
from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.errors import RedisUnavailable
from scrapy_cdp_pool.resilience.host_pause import HostPauseMiddleware
from scrapy_cdp_pool.settings.config import PoolConfig

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
logger = logging.getLogger(__name__)


class ClusterHostPauseMiddleware(HostPauseMiddleware):
    def __init__(
        self,
        crawler: Crawler,
        gates: RequestGates,
        config: PoolConfig,
        pacing: HostPacing,
        link: ClusterLink,
    ) -> None:
        super().__init__(crawler, gates, config, pacing)
        self.link = link
        #: the fleet's pauses (and navigation answers) pushed to this worker
        self.events = HostEvents(link.url, link.frontier.prefix)
        #: when (``time.monotonic()``) what the last :meth:`remaining` answered
        #: was read: that call, or the take it stood on
        #: (:mod:`~scrapy_cdp_pool.cluster.take_checks`)
        self.checked_at = 0.0
        #: host -> end (``time.monotonic()``) of a fleet pause :meth:`remaining` read
        self._read_pauses: dict[str, float] = {}
        if config.resilience.host_rate:  # the host rate held fleet-wide at the site too
            spacing = FleetSpacing(link, 1.0 / config.resilience.host_rate, config.cluster.lease_s)
            spacing.events = self.events
            pacing.plug(FLEET_SPACING, spacing)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    def _closed(self) -> None:
        self.events.stop()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = runtime_of(crawler)
        return cls(crawler, runtime.gates, runtime.config, runtime.pacing, link_for(crawler))

    def pause(self, host: str, seconds: float, status: int, header: bytes | None) -> None:
        """Pause ``host`` here at once, then for the fleet (a Redis write):
        this worker starts nothing to it from the moment the 429 is seen,
        the others from the moment the write lands."""
        super().pause(host, seconds, status, header)
        shared_s = min(seconds, self.max_s)
        if shared_s > 0:
            try:
                self.link.call("pause", lambda: self.link.shards.pause_host(host, shared_s))
            except RedisUnavailable:
                logger.warning(
                    "Pause of %s (%.1f s) not shared with the fleet: Redis unreachable",
                    host, shared_s, extra={"crawler": self.crawler},
                )  # fmt: skip

    def remaining(self, host: str) -> float:
        """This worker's pause of ``host`` or the fleet's, whichever ends
        later: a fleet pause already pushed to this worker is answered from
        memory (:mod:`~scrapy_cdp_pool.cluster.host_events`); "no pause" is
        the answer of the take that handed out a request of ``host`` just
        before (:mod:`~scrapy_cdp_pool.cluster.take_checks`: its script read
        the pause), else asked of Redis (``PTTL``). Not from the messages
        alone: Redis writes a pause's message to the subscribers after it
        answers the worker that wrote it (its pending writes are served
        newest first), so under load a check begun after that answer could
        miss it: the storm test
        (``test_no_worker_reaches_a_host_inside_a_pause_another_announced``)
        caught 2 navigations inside pauses that way, 1 run in 3.
        :attr:`checked_at` says when the answer was read (the take's send)."""
        local = super().remaining(host)
        pushed = self.events.pause_left(host)
        now = time.monotonic()
        if pushed is not None and pushed > 0:
            self.checked_at = now
            return max(local, pushed)
        if pushed is not None:  # live: a pause written since a take is pushed
            taken = self.link.take_checks.checked_at(host, now)
            if taken is not None:
                self.checked_at = taken
                self.crawler.stats.inc_value("cdp_pool/cluster/pause_checks_by_take")
                return local
        self.checked_at = now
        try:
            shared = self.link.call("pause", lambda: self.link.shards.pause_left(host))
        except RedisUnavailable:
            return local
        if shared > 0:  # kept for known_remaining (its message may be on its way)
            self._read_pauses[host] = time.monotonic() + shared
        return max(local, shared)

    def known_remaining(self, host: str) -> float:
        """This worker's pause of ``host``, the fleet's pushed to it, or one
        :meth:`remaining` read from Redis, whichever ends last; no Redis
        call (a pause announced by another worker whose message has not
        come yet is missing here: the check before the navigation asks)."""
        local = super().remaining(host)
        pushed = self.events.pause_left(host) or 0.0
        end = self._read_pauses.get(host)
        read = 0.0
        if end is not None:
            read = end - time.monotonic()
            if read <= 0:
                del self._read_pauses[host]
        return max(local, pushed, read)
