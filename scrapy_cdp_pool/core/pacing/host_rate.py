"""HostRate: ``CDP_POOL_HOST_RATE``, starts of one host at least
``1 / CDP_POOL_HOST_RATE`` seconds apart, enforced by the crawler's host
pacing alone (:class:`~scrapy_cdp_pool.core.pacing.HostPacing`), at the two
moments a request starts:

- where the scheduler queue hands requests out (:meth:`HostRate.is_open`, a
  host gate of :class:`~scrapy_cdp_pool.core.gates.RequestGates`; a cluster's
  take spaces its hand-outs in Redis instead, the same interval);
- where they reach the site (the navigation, or a plain request's download),
  as a browser's waits for its start or a slot would bunch them: a slot of
  its own per host in :class:`~scrapy_cdp_pool.core.pacing.spacing.RequestSpacing`,
  and in a cluster the fleet's claim of the host's next start
  (:data:`~scrapy_cdp_pool.core.pacing.plugs.FLEET_SPACING`).

Every request goes through the queue, rendered or not, so the rate holds for
both.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from scrapy_cdp_pool.core.gates import host_of

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_cdp_pool.core.gates import RequestGates


class HostRate:
    """The queue's side of the host rate: the last hand-out of each host.
    ``interval_s``: ``1 / CDP_POOL_HOST_RATE`` seconds."""

    def __init__(self, gates: RequestGates, interval_s: float) -> None:
        self.gates = gates
        self.interval_s = interval_s
        self._last_start: dict[str, float] = {}  # host -> time.monotonic()

    def is_open(self, host: str) -> bool:
        """Host gate: the host's last hand-out at least one interval ago; when
        not, the engine is woken once it is."""
        last = self._last_start.get(host)
        if last is not None:
            remaining = last + self.interval_s - time.monotonic()
            if remaining > 0:
                self.gates.wake(remaining)
                return False
            del self._last_start[host]
        return True

    def on_dequeued(self, request: Request, now: float) -> None:
        """Dequeue hook: ``request`` was handed out at ``now`` (``time.monotonic()``)."""
        self._last_start[host_of(request)] = now
