"""FleetSpacing: ``CDP_POOL_HOST_RATE`` held across the workers of a cluster
where requests reach the site, as each worker's host pacing
(:class:`~scrapy_cdp_pool.core.pacing.HostPacing`) holds it for its own; the
part the cluster plugs into that pacing
(:data:`~scrapy_cdp_pool.core.pacing.FLEET_SPACING`), which decides when a
start claims the host.

The frontier's take spaces the *takes* of a host fleet-wide; a worker then
waits for its browser, a slot and a context, so two workers' navigations
taken an interval apart could reach the site closer (measured: 0.44 s apart
at 2 requests/s, 2 workers). So before a request takes a browser slot
(holding none, outside its ``download_timeout``) the worker waits until the
host's next start could be claimed (:meth:`FleetSpacing.wait_s`), and right
before the navigation (or a plain request's download), after its own
spacing, it claims that start in Redis (``<prefix>navigated:<host>``, one Lua step, one
round trip): refused while the host is paused fleet-wide or while the last
claim has not run out. A claim holds until its request's answer arrives (its
document's status and headers, or its end without one), at most
``CDP_POOL_CLUSTER_LEASE_SECONDS`` (a dead worker's; a worker waiting for
that answer is woken by its message,
:class:`~scrapy_cdp_pool.cluster.host_events.HostEvents`, and asks again
every :data:`POLL_S` only while it has no live subscription), and one interval after that
answer: the gap the site sees between two starts of a host, whichever
workers sent them, is never below ``1 / CDP_POOL_HOST_RATE``.

With Redis unable to serve, a claim is skipped (the worker's own spacing
still holds; the take hands out nothing meanwhile).
"""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING

from scrapy_cdp_pool.cluster import scripts
from scrapy_cdp_pool.errors import RedisUnavailable

if TYPE_CHECKING:
    from scrapy_cdp_pool.cluster.host_events import HostEvents
    from scrapy_cdp_pool.cluster.link import ClusterLink


POLL_S = 0.05
"""How often a start waiting for another worker's answer asks again, seconds,
while the worker's :class:`~scrapy_cdp_pool.cluster.host_events.HostEvents`
is not live (else the answer's message wakes it)."""


class FleetSpacing:
    """The fleet's starts of each host, ``interval_s`` apart (seconds);
    a claim waits at most ``lease_s`` (seconds) for its answer."""

    def __init__(self, link: ClusterLink, interval_s: float, lease_s: float) -> None:
        self.link = link
        self.interval_ms = max(1, round(interval_s * 1000))
        self.lease_ms = max(self.interval_ms, round(lease_s * 1000))
        frontier = link.frontier
        self._claim = frontier.client.register_script(scripts.CLAIM_NAVIGATION)
        self._answer = frontier.client.register_script(scripts.ANSWER_NAVIGATION)
        self._tokens = itertools.count(1)
        #: the fleet's answers pushed to this worker (set by the host pause
        #: middleware; ``None``: asked again every :data:`POLL_S`)
        self.events: HostEvents | None = None
        #: hosts whose last claim, as last seen, waits for its answer -> the
        #: answer messages read before that claim was asked
        self._for_answer: dict[str, int] = {}

    def claim(self, host: str) -> tuple[float, str | None]:
        """Claim the next start of ``host``: ``(0.0, token)`` when claimed,
        ``(seconds to wait, None)`` when not, ``(0.0, None)`` when Redis
        cannot serve (not claimed)."""
        token = f"{self.link.worker}:{next(self._tokens)}"
        left = self._ask(host, token, "")
        return (0.0, token) if left == 0 else (left, None)

    def wait_s(self, host: str) -> float:
        """Seconds until a claim of ``host`` could succeed (``0.0``: now, or
        Redis cannot serve); nothing is claimed."""
        return self._ask(host, "", "peek")

    def _ask(self, host: str, token: str, mode: str) -> float:
        # the claim lives in the host's home bucket (its answer is published
        # on bucket 0's channel: ``run_keyed`` passes bucket 0's prefix)
        frontier = self.link.frontier
        keys = scripts.host_keys(self.link.shards.of_host(host).prefix, host)
        read_before = self.events.answers_read(host) if self.events is not None else 0
        try:
            left_ms = int(
                self.link.call(
                    "navigation claim",
                    lambda: frontier.run_keyed(self._claim, list(keys), token, self.lease_ms, mode),
                )
            )
        except RedisUnavailable:
            return 0.0
        if left_ms < 0:  # the last claim's answer may come any time
            self._for_answer[host] = read_before
            if self.events is not None and self.events.live:
                return -left_ms / 1000  # woken by the answer (sleep)
            return min(-left_ms / 1000, POLL_S)  # look again soon
        self._for_answer.pop(host, None)
        return left_ms / 1000

    async def sleep(self, host: str, left_s: float) -> None:
        """Wait ``left_s`` as :meth:`claim` or :meth:`wait_s` said; while the
        host's last claim waits for its answer, until that answer comes
        (:meth:`HostEvents.wait_answer`) or the claim runs out."""
        events = self.events
        read_before = self._for_answer.get(host)
        if read_before is not None and events is not None and events.live:
            await events.wait_answer(host, left_s, read_before)
        else:
            await asyncio.sleep(left_s)

    def answered(self, host: str, token: str) -> None:
        """The start claimed with ``token`` has its answer (or ended): the
        next start of ``host`` may come one interval from now."""
        frontier = self.link.frontier
        keys = scripts.host_keys(self.link.shards.of_host(host).prefix, host)
        try:
            self.link.call(
                "navigation answer",
                lambda: frontier.run_keyed(self._answer, [keys[1]], token, self.interval_ms, host),
                in_outage=True,
            )
        except RedisUnavailable:
            pass  # the claim runs out with its lease
