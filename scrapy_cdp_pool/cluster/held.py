"""HeldRequests: the requests one worker holds under a lease, from the take to
the acknowledgement.

- :meth:`release` (a finish hook of the crawler's
  :class:`~scrapy_cdp_pool.core.gates.RequestGates`): the download is
  over, the profile lock and host slot go back with the scheduler's next take
  (:meth:`take_ops`, no round trip of their own), or on their own after
  :data:`RELEASE_FLUSH_S` when no take came (the engine takes nothing while a
  budget is used up); kept for later while Redis cannot be reached;
- :meth:`finished`: the leases of the requests the engine is done with, for the
  scheduler's next call to acknowledge;
- every third of ``CDP_POOL_CLUSTER_LEASE_SECONDS`` all leases (and profile
  locks taken outside the queue) are renewed in one round trip, during an
  outage too (a renewal never stops); a lease found lost (it ran out: this
  worker was cut off or stalled) is dropped, counted in
  ``cdp_pool/cluster/leases_lost`` and logged;
- :meth:`check_launch` (a launch check of the gates), right before a request
  leaves for the browser or the download: a request whose lease ran out, or
  whose profile lock no longer has its fencing token, is dropped there
  (:class:`~scrapy_cdp_pool.errors.LeaseLost`, its errback not called; stat
  ``cdp_pool/cluster/lease_lost_not_started``): another worker may have it.
  Known lost locally when its last renewal is a lease old (a worker stalled
  past its lease finds out at once, before any renewal); known held when the
  take, or the last renewal (which reports a lease lost when its profile lock
  is no longer held with its fencing token), was sent less than half a lease
  ago (Redis set the lease's and the lock's expiry a lease after it received
  the call, and only an expired lease or profile lock goes to another worker:
  :data:`SURE_HELD`); else asked of Redis (one round trip); while Redis cannot
  answer, the local view decides.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Container, Iterator
from typing import TYPE_CHECKING, Any

from scrapy.utils.asyncio import call_later

from scrapy_cdp_pool.cluster.figures import read_all_figures
from scrapy_cdp_pool.cluster.link import ClusterLink
from scrapy_cdp_pool.core.gates import _TOKEN_META_KEY, RequestGates
from scrapy_cdp_pool.errors import LeaseLost, RedisUnavailable
from scrapy_cdp_pool.telemetry.signals import cluster_figures_updated

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

LEASE_META_KEY = "_cdp_cluster_lease"
"""The id of the lease under which this worker holds the request."""
SURE_HELD = 0.5
"""A lease whose take or renewal was sent less than this fraction of a lease
ago is held without asking Redis (the margin covers Redis's clock stepping)."""
RELEASE_FLUSH_S = 0.01
"""How long a release waits to ride on the scheduler's next take (the engine
asks for its next request right after a download ends) before it is sent on
its own, seconds."""


class HeldRequests:
    def __init__(
        self,
        crawler: Crawler,
        link: ClusterLink,
        gates: RequestGates,
        *,
        send_figures: bool = False,
    ) -> None:
        """``send_figures``: read the cluster's figures at each renewal and send
        them to the metrics (``CDP_POOL_METRICS_PORT`` set)."""
        self.crawler = crawler
        self.send_figures = send_figures
        self.link = link
        self.gates = gates
        self._requests: dict[str, Request] = {}  # lease id -> request handed out
        self._renewed: dict[str, float] = {}  # lease id -> monotonic time of take or renewal
        self._lost: set[str] = set()  # leases a renewal found lost (their requests not started)
        self._ops: list[str] = []  # releases waiting for Redis
        self._released: set[str] = set()  # leases whose release was queued
        self._renewal: Any = None
        self._flush_timer: Any = None
        gates.add_finish_hook(self.release)
        gates.add_launch_check(self.check_launch)
        gates.add_leaving_check(self.check_leaving)

    def add(self, lease: str, request: Request, sent: float | None = None) -> None:
        """``sent``: when the take was sent (monotonic; default now)."""
        request.meta[LEASE_META_KEY] = lease
        self._requests[lease] = request
        self._renewed[lease] = time.monotonic() if sent is None else sent

    def forget(self, leases: list[str]) -> None:
        for lease in leases:
            self._requests.pop(lease, None)
            self._renewed.pop(lease, None)
            self._lost.discard(lease)
            self._released.discard(lease)

    def check_launch(self, request: Request) -> None:
        """Right before ``request`` leaves for the browser or the download.

        :raises LeaseLost: this worker no longer holds its lease (or its
            profile lock's fencing token): dropped, not started."""
        lease = request.meta.get(LEASE_META_KEY)
        if lease is None:
            return  # not from the cluster's queue
        why = self._why_lost(lease)
        if why is not None:
            self._drop(request, lease, why)

    def _drop(self, request: Request, lease: str, why: str) -> None:
        """Not started: ``lease`` is no longer this worker's.

        :raises LeaseLost: always."""
        self._requests.pop(lease, None)
        self._renewed.pop(lease, None)
        self._lost.discard(lease)
        self.crawler.stats.inc_value("cdp_pool/cluster/lease_lost_not_started")
        logger.warning(
            "Cluster crawl %r: %s not started: %s; another worker may do it",
            self.link.name, request, why, extra={"crawler": self.crawler},
        )  # fmt: skip
        request.errback = None  # the worker holding it now answers for it
        raise LeaseLost(f"{request}: {why}")

    def check_leaving(self, request: Request) -> None:
        """Where ``request``'s navigation leaves the browser for the site
        (paused in its request interception, it may have waited there since
        :meth:`check_launch` while this worker stalled). By this worker's
        clock only, no Redis call: the lease is gone once a lease has passed
        since its take or last renewal was sent (Redis set its expiry a lease
        after it received that call), or a renewal found it lost.

        :raises LeaseLost: dropped, as by :meth:`check_launch`."""
        lease = request.meta.get(LEASE_META_KEY)
        if lease is None:
            return
        why = self._why_lost_locally(lease)
        if why is not None:
            self._drop(request, lease, why)

    def _why_lost(self, lease: str) -> str | None:
        """Why this worker no longer holds ``lease``; ``None`` if it does (or
        if the lease is not held here any more: a copy of a request already
        acknowledged, downloaded outside the scheduler, is not judged here)."""
        why = self._why_lost_locally(lease)
        renewed = self._renewed.get(lease)
        if why is not None or lease not in self._requests or renewed is None:
            return why
        idle_s = time.monotonic() - renewed
        if idle_s < self.link.lease_s * SURE_HELD:
            return None
        try:
            held = self.link.call("lease check", lambda: self.link.shards.holds(lease))
        except RedisUnavailable:
            return None  # within its lease by this worker's clock
        if not held:
            return "Redis says its lease or identity lock is no longer this worker's"
        return None

    def _why_lost_locally(self, lease: str) -> str | None:
        """Why ``lease`` is lost by what this worker knows (``None``: held,
        or not judged here, see :meth:`_why_lost`)."""
        if lease in self._lost:
            return "its lease was found lost at a renewal"
        renewed = self._renewed.get(lease)
        if lease not in self._requests or renewed is None:
            return None
        idle_s = time.monotonic() - renewed
        if idle_s >= self.link.lease_s:
            return f"its lease was last renewed {idle_s:.1f} s ago (lease {self.link.lease_s:g} s)"
        return None

    def finished(self, in_progress: Container[Request]) -> list[str]:
        """Leases of the requests the engine no longer holds (not acknowledged yet)."""
        return [lease for lease, request in self._requests.items() if request not in in_progress]

    def unreleased(self, leases: list[str]) -> bool:
        """Whether one of ``leases`` still holds its profile lock and host
        slot (no release queued: its acknowledgement releases them)."""
        return any(lease not in self._released for lease in leases)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._requests))

    def __len__(self) -> int:
        return len(self._requests)

    def release(self, request: Request) -> None:
        """The download is over: give back the profile lock and host slot with
        the next take, or within :data:`RELEASE_FLUSH_S` (the request itself
        is acknowledged when the engine is done with it)."""
        lease = request.meta.get(LEASE_META_KEY)
        if lease is None or lease not in self._requests:
            return
        request.meta.pop(_TOKEN_META_KEY, None)  # released here, in one step
        self._ops.append(f"r:{lease}")
        self._released.add(lease)
        if self._flush_timer is None:
            self._flush_timer = call_later(RELEASE_FLUSH_S, self._flush_late)

    def flush_soon(self) -> None:
        """Send the releases waiting within :data:`RELEASE_FLUSH_S` (those of
        buckets the scheduler's take did not go to)."""
        if self._ops and self._flush_timer is None:
            self._flush_timer = call_later(RELEASE_FLUSH_S, self._flush_late)

    def _flush_late(self) -> None:
        self._flush_timer = None
        self.flush()

    def flush(self) -> bool:
        """Send the releases not sent yet (no take came, or Redis could not be
        reached); whether none is left."""
        if not self._ops:
            return True
        ops = list(self._ops)
        try:
            self.link.call("release", lambda: self.link.shards.settle(ops))
        except RedisUnavailable:
            return False
        del self._ops[: len(ops)]
        self.gates.wake()
        return True

    def take_ops(self) -> list[str]:
        """The releases still waiting (the caller sends them), forgotten here."""
        ops, self._ops = self._ops, []
        return ops

    def keep_ops(self, ops: list[str]) -> None:
        """Releases from :meth:`take_ops` that could not be sent: kept, first."""
        self._ops[:0] = ops

    def start_renewal(self) -> None:
        self._renewal = call_later(self.link.lease_s / 3, self._renew)

    def stop_renewal(self) -> None:
        if self._renewal is not None:
            self._renewal.cancel()
            self._renewal = None
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None

    def _renew(self) -> None:
        """Renew every lease held, then schedule the next renewal, whatever
        happened (an outage, or a bug logged here: renewals never stop)."""
        try:
            self._renew_now()
            if self.send_figures:
                self._send_figures()
        except Exception:
            logger.exception(
                "Cluster crawl %r: renewing leases failed", self.link.name,
                extra={"crawler": self.crawler},
            )  # fmt: skip
        finally:
            if self._renewal is not None:  # not stopped meanwhile
                self.start_renewal()

    def _renew_now(self) -> None:
        locks = getattr(self.gates.locks, "direct", {})
        leases = list(self._requests)
        if not (leases or locks or self.link.shards.count > 1):
            return  # with buckets: bucket 0's heartbeat all the same (shards.Buckets.renew)
        sent = time.monotonic()
        try:
            # tried during an outage's backoff too: a Redis that refuses
            # writes for lack of memory still renews (the script may use memory)
            lost = self.link.call(
                "renew",
                lambda: self.link.shards.renew(leases, list(locks.items())),
                in_outage=True,
            )
        except RedisUnavailable:
            return
        for lease in leases:
            if lease in self._renewed:
                self._renewed[lease] = sent
        for lease in lost:
            self._renewed.pop(lease, None)
            request = self._requests.pop(lease, None)
            if request is not None:
                self._lost.add(lease)
                self.crawler.stats.inc_value("cdp_pool/cluster/leases_lost")
                logger.warning(
                    "Cluster crawl %r: the lease of %s (%s) expired before it was renewed; "
                    "another worker may do it again", self.link.name, request, lease,
                    extra={"crawler": self.crawler},
                )  # fmt: skip

    def _send_figures(self) -> None:
        """The cluster's figures to the metrics (``CDP_POOL_METRICS_PORT``)."""
        try:
            figures = self.link.call(
                "figures",
                lambda: read_all_figures(
                    self.link.client, self.link.shards.prefixes, self.link.lease_s
                ),
            )
        except RedisUnavailable:
            return  # the metrics keep the last figures read
        self.crawler.signals.send_catch_log(cluster_figures_updated, figures=figures)
