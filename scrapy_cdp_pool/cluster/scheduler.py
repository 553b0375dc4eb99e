"""ClusterScheduler: the ``SCHEDULER`` of a crawl shared by many workers on Redis.

The add-on installs it (with :class:`~scrapy_cdp_pool.cluster.ClusterDupeFilter`)
when ``CDP_POOL_CLUSTER_REDIS_URL`` is set. Each call is one atomic step in
Redis (:mod:`scrapy_cdp_pool.cluster.scripts`):

- ``enqueue_request``: the fingerprint and the push together, so a request is
  never seen without being stored; the requests of one event-loop turn (a
  callback's links) ride on the next take, pipelined before it, or go in
  one round trip per bucket of their own
  (:mod:`~scrapy_cdp_pool.cluster.yielded`). Start requests are stored once
  per crawl however many workers start: their fingerprints (``dont_filter``
  ones too) go to a set of their own.
- ``next_request``: acknowledgements of the requests the engine is done with
  (as :class:`~scrapy_cdp_pool.jobdir.DurableScheduler` does: callback
  output scheduled, items through the pipelines), then the take: the best
  request whose profile is free fleet-wide and whose host is neither paused
  nor at ``CDP_POOL_HOST_CONCURRENCY`` / ``CDP_POOL_HOST_RATE``, with a lease.
- leases are renewed every third of ``CDP_POOL_CLUSTER_LEASE_SECONDS``; the
  profile lock and host slot are given back as soon as the download is over
  (a finish hook of the crawler's
  :class:`~scrapy_cdp_pool.core.gates.RequestGates`), the request itself
  when the engine is done with it.

Cost: one Redis round trip per take (with the pushes since the last), the
releases and acknowledgements riding on the next take (a release goes on its own only
when no take comes soon: :data:`~scrapy_cdp_pool.cluster.held.RELEASE_FLUSH_S`);
a push of a fingerprint this worker knows is stored makes none
(:data:`~scrapy_cdp_pool.cluster.frontier.KNOWN_FINGERPRINTS`); renewals one
per third of a lease for all requests held. Inside Redis a take is O(log n) plus the closed gates it
parks on the way (each parked once per change of its state, never scanned
again while closed: :mod:`~scrapy_cdp_pool.cluster.scripts`). When nothing
may start, the worker does not ask again until something may have changed
(:mod:`~scrapy_cdp_pool.cluster.wake`): a request it stores, a release it
sends, an acknowledgement of a request whose profile is not released yet, a
wake token popped (another worker released a profile or host slot, or stored
a request, that gates waited for), a parked gate or a lease coming due, and
at most :data:`~scrapy_cdp_pool.cluster.wake.FALLBACK_S` after the last take.
Acknowledgements of released requests ride on the next take.

Redis unreachable (:class:`~scrapy_cdp_pool.cluster.link.ClusterLink`): no
request is taken; requests the crawl yields are kept in memory, in order, and
stored once Redis answers; acknowledgements and releases wait too; requests
held are finished. A request whose outputs could not be stored is not
acknowledged, so if the worker dies before Redis is back, its lease expires
and another worker does it again.

Stats: ``cdp_pool/cluster/taken``, ``cdp_pool/cluster/acked``,
``cdp_pool/cluster/stored``, ``cdp_pool/cluster/requeued`` (expired leases
this worker put back), ``cdp_pool/cluster/leases_lost`` (leases of this worker
that expired before it renewed them: their requests may be done twice),
``cdp_pool/cluster/redis_errors``, ``cdp_pool/cluster/unloadable``,
``cdp_pool/cluster/round_trips``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Awaitable
from contextlib import suppress
from functools import partial
from typing import TYPE_CHECKING, Any

from scrapy.core.scheduler import BaseScheduler
from scrapy.exceptions import CloseSpider
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet.defer import Deferred

from scrapy_cdp_pool import scrapy_internals
from scrapy_cdp_pool.cluster.bloom import check_crawl
from scrapy_cdp_pool.cluster.dupefilter import ClusterDupeFilter
from scrapy_cdp_pool.cluster.feed import adopt_redis_spider, requests_from_feed
from scrapy_cdp_pool.cluster.feed_watch import FeedWatch
from scrapy_cdp_pool.cluster.flush import flush_buckets, flushes_at_start
from scrapy_cdp_pool.cluster.frontier import SEEN, START_SEEN, Taken
from scrapy_cdp_pool.cluster.held import LEASE_META_KEY, HeldRequests
from scrapy_cdp_pool.cluster.keys import PROFILE_COPY_META_KEY, gate_of
from scrapy_cdp_pool.cluster.link import REDIS_ERROR, ClusterLink, link_for
from scrapy_cdp_pool.cluster.locks import ClusterProfileLocks
from scrapy_cdp_pool.cluster.poison import POISONED_META_KEY
from scrapy_cdp_pool.cluster.scripts import FEED_MARK
from scrapy_cdp_pool.cluster.wake import FALLBACK_S, WakeListener
from scrapy_cdp_pool.cluster.yielded import YieldedRequests
from scrapy_cdp_pool.core.gates import (
    _TOKEN_META_KEY,
    INVALID_META_KEY,
    NOT_BEFORE_META_KEY,
    RequestGates,
    host_of,
    not_before_problem,
    profile_of,
)
from scrapy_cdp_pool.core.queue import UNSERIALIZABLE_META_KEY
from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.errors import RedisUnavailable
from scrapy_cdp_pool.jobdir.queues import deserialize, serialize

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.dupefilters import BaseDupeFilter

logger = logging.getLogger(__name__)

FENCE_META_KEY = "_cdp_cluster_fence"
"""The fencing token of the request's profile lock (an int, from ``INCR
<prefix>fence``): a profile saved back under a token that is no longer the
profile's current one is stale."""
_PRIVATE_META_KEYS = (
    LEASE_META_KEY,
    FENCE_META_KEY,
    _TOKEN_META_KEY,
    POISONED_META_KEY,
    PROFILE_COPY_META_KEY,
)
PENDING_FRESH_S = 1.0
"""How long the fleet's figures of the last take (queued, leased) answer
``has_pending_requests`` and ``len()`` without asking Redis, seconds."""


MOST_SPARE = 64
"""Most free download slots a take says its worker fills right after it
(:meth:`~scrapy_cdp_pool.cluster.frontier.Frontier.take`'s ``spare``):
open gates beyond them wake other workers."""


class ClusterScheduler(BaseScheduler):
    def __init__(self, crawler: Crawler, link: ClusterLink, dupefilter: BaseDupeFilter) -> None:
        self.crawler = crawler
        self.link = link
        self.frontier = link.frontier
        self.df = dupefilter
        self.stats = crawler.stats
        self.gates: RequestGates = runtime_of(crawler).gates
        self.keep_open = link.keep_open
        self.spider: Spider | None = None
        self.held = HeldRequests(
            crawler,
            link,
            self.gates,
            send_figures=runtime_of(crawler).config.telemetry.metrics_port is not None,
        )
        #: requests yielded, not stored yet (this turn's, or Redis was down)
        self._unstored = YieldedRequests(crawler, link, dupefilter, self._readied)
        self._local: deque[Request] = deque()  # unserializable: fail by name here
        #: lease -> requests yielded when it was first seen finished (:meth:`_ackable`)
        self._finish_marks: dict[str, int] = {}
        self._pending: tuple[float, bool] = (0.0, False)
        self._pending_rechecked = 0.0  # the _pending[0] whose staleness wakes the engine
        self._queued: tuple[float, int] = (-math.inf, 0)  # (when, fleet-wide queued)
        self.shards = link.shards
        #: each bucket's takes (:mod:`~scrapy_cdp_pool.cluster.shards`)
        self._buckets = [_Bucket() for _ in range(self.shards.count)]
        self._turn = 0  # the bucket the next take starts from
        self.wakes = [
            WakeListener(
                link.url,
                frontier.prefix,
                partial(self._woken, bucket),
                fallback_s=FALLBACK_S * self.shards.count,
            )
            for bucket, frontier in enumerate(self.shards.frontiers)
        ]
        self.feed_watch = FeedWatch(crawler, link)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        dupefilter_cls = load_object(crawler.settings["DUPEFILTER_CLASS"])
        dupefilter: BaseDupeFilter = build_from_crawler(dupefilter_cls, crawler)
        if not isinstance(dupefilter, ClusterDupeFilter):
            logger.warning(
                "DUPEFILTER_CLASS %s.%s keeps its fingerprints in this worker only: other "
                "workers may fetch the same pages; use scrapy_cdp_pool.cluster.ClusterDupeFilter",
                dupefilter_cls.__module__, dupefilter_cls.__qualname__,
                extra={"crawler": crawler},
            )  # fmt: skip
        return cls(crawler, link_for(crawler), dupefilter)

    # -- life --------------------------------------------------------------

    def open(self, spider: Spider) -> Any:
        self.spider = spider
        self._unstored.spider = spider
        self.gates.locks = ClusterProfileLocks(self.link)
        adopt_redis_spider(self.crawler, spider, self.link.feed_key)
        start = self._start_state()
        self.link.remember_crawl()
        self.held.start_renewal()
        for wake in self.wakes:
            wake.start()
        logger.info(
            "Cluster crawl %r: worker %s, lease %.1f s; %s", self.link.name, self.link.worker,
            self.link.lease_s, start, extra={"crawler": self.crawler},
        )  # fmt: skip
        opened = self.df.open()
        self.link.opened = True
        if self.link.stopped:  # a Redis error that is a bug, logged (link.stop)
            raise CloseSpider(REDIS_ERROR)
        return opened

    def _start_state(self) -> str:
        """Flush the crawl first when the project asks for a fresh one
        (:mod:`~scrapy_cdp_pool.cluster.flush`); what it starts with, for
        the start line."""
        setting = flushes_at_start(self.crawler.settings)
        said = ""
        frontier = self.frontier
        try:
            if setting is not None:
                deleted = self.link.call("flush", lambda: flush_buckets(self.shards))
                said = (
                    f"{setting}: other workers are live, joining their crawl unflushed; "
                    if deleted < 0
                    else f"{setting}: crawl flushed at start ({deleted} keys deleted); "
                )
            added = self.link.call(
                "resume", lambda: check_crawl(self.link.client, frontier.prefix, frontier.bloom)
            )
            seen = added
            if added is None:
                seen = self.link.call("resume", self._seen_count)
            queued, leased = self.link.call("resume", self.shards.pending)
        except RedisUnavailable:
            return f"{said}Redis unreachable: the seen fingerprints could not be counted"
        bloom = frontier.bloom
        in_bloom = "" if bloom is None else f" (in a Bloom filter of {bloom.params})"
        buckets = f" in {self.shards.count} buckets" if self.shards.count > 1 else ""
        return (
            f"{said}resuming with {seen} seen fingerprints{in_bloom}, {queued} requests queued, "
            f"{leased} leased{buckets}"
        )

    def _seen_count(self) -> int:
        """Fingerprints in every bucket's set (one round trip per bucket, at start)."""
        return sum(int(self.link.client.scard(prefix + SEEN)) for prefix in self.shards.prefixes)

    def close(self, reason: str) -> Any:
        self.held.stop_renewal()
        self._unstored.stop()
        stopping = [wake.stop() for wake in self.wakes]
        self._flush_unstored()
        # a request whose callback's requests could not be stored is given
        # back (done again), not acknowledged
        done = self._ackable(self._finished_leases())
        unfinished = [lease for lease in self.held if lease not in done]
        ops = self.held.take_ops() + [f"a:{lease}" for lease in done]
        ops += [f"g:{lease}" for lease in unfinished]
        try:
            self.link.call("close", lambda: self.shards.settle(ops))
            self.stats.inc_value("cdp_pool/cluster/acked", len(done))
            self.link.call("leave", self.shards.leave)
        except RedisUnavailable:
            # stopped by a Redis error: already the one ERROR (link.stop)
            logger.log(
                logging.WARNING if self.link.stopped else logging.ERROR,
                "Cluster crawl %r: Redis %s at close; %d requests held by this worker "
                "are queued again when their lease expires, %d requests yielded were not "
                "stored (their parents are done again)", self.link.name,
                "answered with an error" if self.link.stopped else "unreachable",
                len(self.held), len(self._unstored), extra={"crawler": self.crawler},
            )  # fmt: skip
        self.stats.set_value("cdp_pool/cluster/round_trips", self.shards.calls)
        logger.info(
            "Cluster crawl %r: worker %s closing (%s); %d requests given back to the queue",
            self.link.name, self.link.worker, reason, len(unfinished),
            extra={"crawler": self.crawler},
        )  # fmt: skip
        self.held.forget(list(self.held))
        closed = self.df.close(reason)
        waits = [wait for wait in stopping if wait is not None]
        if not waits:
            return closed
        return deferred_from_coro(_after(waits, closed))

    # -- in ----------------------------------------------------------------

    def enqueue_request(self, request: Request) -> bool:
        for key in (*_PRIVATE_META_KEYS, INVALID_META_KEY):
            request.meta.pop(key, None)
        self._not_before_ms(request)  # marks an invalid value, before it is stored
        try:
            data = serialize(request, self.spider)
        except ValueError as e:
            request.meta[UNSERIALIZABLE_META_KEY] = str(e)
            self._local.append(request)  # handed out here; fails by name
            return True
        try:
            prepared = self._prepare(request, data)
        except ValueError as e:  # a priority the frontier cannot order
            request.meta[UNSERIALIZABLE_META_KEY] = str(e)
            self._local.append(request)
            return True
        if prepared is None:
            self._log_duplicate(request)
            return False
        self._unstored.add(request, *prepared)  # stored with the next take, or soon
        self._pending = (time.monotonic(), True)
        return True

    def _log_duplicate(self, request: Request) -> None:
        if self.spider is not None:
            self.df.log(request, self.spider)

    def _prepare(
        self, request: Request, data: bytes
    ) -> tuple[int, tuple[list[str], list[object]]] | None:
        """The bucket and push call of ``request``; ``None`` for a duplicate
        known here. :raises ValueError: a priority the frontier cannot order."""
        seen, fp = "", b""
        if request.meta.get("is_start_request") and request.dont_filter:
            seen, fp = START_SEEN, self.crawler.request_fingerprinter.fingerprint(request)
        elif not request.dont_filter:
            if isinstance(self.df, ClusterDupeFilter):
                seen, fp = SEEN, self.df.fingerprint(request)
            elif self.df.request_seen(request):
                return None
        host, profile = host_of(request), profile_of(request)
        gate = gate_of(host, profile, self._not_before_ms(request))
        bucket = self.shards.index(host, profile)
        call = self.shards.frontiers[bucket].prepare_push(data, gate, request.priority, seen, fp)
        return None if call is None else (bucket, call)

    def _readied(self, bucket: int) -> None:
        """A request stored made its gate ready: it may be open (else it is
        parked, or ready already, which a take or a wake token tells); the
        engine asks again (stored on their own, after its last ask)."""
        self._buckets[bucket].changed = True
        self.gates.wake()

    def _store_before_take(self) -> bool:
        """Store the requests kept that the next take cannot carry (see
        :meth:`YieldedRequests.to_carry`: with one bucket, up to
        :data:`~scrapy_cdp_pool.cluster.yielded.STORE_BATCH`, it carries
        them); whether none is left unstored that must be."""
        if self.shards.count == 1 and self._unstored.to_carry(0):
            return True
        return self._flush_unstored()

    def _flush_unstored(self) -> bool:
        """Store the requests yielded and kept (this turn's, or while Redis
        was down); whether all are stored."""
        return self._unstored.flush()

    def _not_before_ms(self, request: Request) -> int | None:
        """The request's ``cdp_not_before`` in epoch ms when it is valid and
        in the future; an invalid one is marked (:data:`INVALID_META_KEY`)."""
        if INVALID_META_KEY in request.meta:
            return None
        value = request.meta.get(NOT_BEFORE_META_KEY)
        problem = not_before_problem(value, self.gates.max_wait_s)
        if problem is not None:
            request.meta[INVALID_META_KEY] = problem  # handed out, fails by name
            return None
        if value is None or value <= time.time():
            return None
        return math.ceil(float(value) * 1000)

    # -- out ---------------------------------------------------------------

    def _woken(self, bucket: int = 0) -> None:
        """A wake token popped in ``bucket`` (gates became ready), or none for
        its listener's fallback: take there again."""
        self._buckets[bucket].changed = True
        self.gates.wake()

    def _idle(self, bucket: int) -> bool:
        """Whether the bucket's last take, which found nothing, still stands
        (see the module): nothing due yet, and, without its wake listener,
        the last take under :data:`~scrapy_cdp_pool.cluster.wake.FALLBACK_S` old."""
        state = self._buckets[bucket]
        now = time.monotonic()
        if now >= state.idle_until:
            return False
        return self.wakes[bucket].connected or now - state.last_take < FALLBACK_S

    def next_request(self) -> Request | None:
        if self._local:
            return self._local.popleft()
        if self.link.down or not self._store_before_take():
            for state in self._buckets:
                state.changed = True  # look again once Redis is back
            self.gates.wake(self.link.retry_in_s)
            return None
        if not self.gates.may_start():  # e.g. a used-up budget; it wakes the engine
            self.held.flush()  # no take to ride on
            return None
        done = self._by_bucket(self._ackable(self._finished_leases()))
        releases = self._by_bucket(self.held.take_ops(), ops=True)
        count = self.shards.count
        start, self._turn = self._turn, (self._turn + 1) % count
        request: Request | None = None
        for step in range(count):  # round-robin from a rotating start: none starved
            bucket = (start + step) % count
            acks, ops = done.get(bucket, []), releases.pop(bucket, [])
            changed = (
                ops
                or self._buckets[bucket].changed
                or self.held.unreleased(acks)
                # pushes to carry (any left here now are this take's to carry:
                # _store_before_take stored the others)
                or bool(self._unstored)
            )
            if not changed and self._idle(bucket):
                continue  # its last take found nothing, and nothing changed since
            request, reached = self._take_from(bucket, acks, ops)
            if request is not None or not reached:
                break
        left = [op for ops in releases.values() for op in ops]
        if left:  # other buckets' releases: on their own, soon
            self.held.keep_ops(left)
            self.held.flush_soon()
        return request

    def _spare(self) -> int:
        """How many more requests this worker starts right after the one it
        takes now: the engine's free download slots after it, and no more
        than its browser pool's free slots after it when a pool runs (an
        open gate past those wakes another worker, which starts it sooner).
        0 with several buckets: the worker's next takes go round the buckets,
        so the open gates one take counted on may not be the ones it takes
        next (a gate left open in one bucket, nobody woken for it: found by a
        trial against Redis)."""
        if self.shards.count > 1:
            return 0
        spare = scrapy_internals.free_download_slots(self.crawler, MOST_SPARE)
        pool = runtime_of(self.crawler).pool
        if pool is not None:
            spare = min(spare, pool.free_slots)
        return max(0, spare - 1)

    def _by_bucket(self, leases: list[str], *, ops: bool = False) -> dict[int, list[str]]:
        """``leases`` (or settle ops, ``<op>:<lease>``) by their bucket, as named here."""
        grouped: dict[int, list[str]] = {}
        for item in leases:
            bucket = self.shards.split(item[2:] if ops else item)[0]
            grouped.setdefault(bucket, []).append(item)
        return grouped

    def _take_from(
        self, bucket: int, acks: list[str], releases: list[str]
    ) -> tuple[Request | None, bool]:
        """Take from ``bucket``, with its acknowledgements and releases (as
        named here); ``(request or None, whether Redis answered)``."""
        sent = time.monotonic()
        taken = self._send_take(bucket, acks, releases)
        if taken is None:
            return None, False
        self.held.forget(acks)
        for lease in acks:
            self._finish_marks.pop(lease, None)
        if bucket == 0 and not self.link.feed_moved:
            self.feed_watch.type_seen(taken.feed_type)
        self._counted(taken)
        self._note_figures(bucket, taken)
        if taken.lease is None:
            return None, True
        lease = self.shards.lease(bucket, taken.lease)
        request = self._hand_out(lease, taken.data, taken.token, taken.poisoned, sent)
        if request is None and taken.ready_left:
            # nothing for the engine (an item parked unloadable), whose loop
            # then stops; the gates the take found open are this worker's to
            # start (no other worker was woken for them): ask again soon
            self.gates.wake()
        if request is not None and taken.profile is not None:  # read with the take
            request.meta[PROFILE_COPY_META_KEY] = (*taken.profile, taken.profile_failures)
        return request, True

    def _send_take(self, bucket: int, acks: list[str], releases: list[str]) -> Taken | None:
        """The take script on ``bucket``'s shard (its leases and ops named as
        the bucket knows them, :meth:`_spare` with it); ``None`` when Redis could not answer (the
        releases kept for the next take, the engine woken to try again)."""
        state = self._buckets[bucket]
        state.changed = False
        self.wakes[bucket].waiting(False)
        if bucket == 0 and self.link.feed_moved:
            self.feed_watch.move(self._queued[1])
        frontier = self.shards.frontiers[bucket]
        split = self.shards.split
        local_acks = [split(lease)[1] for lease in acks]
        local_ops = [op[:2] + split(op[2:])[1] for op in releases]
        feed_key = self.link.take_feed_key if bucket == 0 else ""
        state.last_take = time.monotonic()
        spare = self._spare()
        carried = self._unstored.to_carry(bucket)
        pushes = [item.call for item in carried]
        try:
            return self.link.call(
                "take",
                lambda: frontier.take(
                    local_acks, feed_key, local_ops, profile_copy=True, spare=spare, pushes=pushes
                ),
            )
        except RedisUnavailable:
            self.held.keep_ops(releases)
            state.changed = True
            self.gates.wake(self.link.retry_in_s)
            return None
        finally:
            if carried:
                self._unstored.carried(carried, frontier.pushed)

    def _note_figures(self, bucket: int, taken: Taken) -> None:
        """The bucket's queued and leased figures from ``taken``, and when
        the engine should ask again: at once if gates are still ready there,
        else when a gate or lease is due or a wake token is popped (polled
        when the bucket's wake list is not listened to)."""
        state = self._buckets[bucket]
        state.queued, state.leased = taken.queued, taken.leased
        now = time.monotonic()
        queued = sum(other.queued for other in self._buckets)
        self._pending = (now, bool(queued or any(other.leased for other in self._buckets)))
        self._queued = (now, queued)
        if taken.lease is not None and taken.ready_left:
            state.changed = True  # another take may find a gate open
            return
        # nothing (more) may start there: the engine is woken when a gate
        # or lease is due, or a token is popped
        wake = self.wakes[bucket]
        wait = math.inf if taken.wait_s is None else taken.wait_s
        state.idle_until = now + wait
        wake.waiting(True)
        if not wake.connected:  # no tokens: poll
            wait = min(wait, FALLBACK_S)
        if (taken.queued or taken.leased or self.keep_open) and wait < math.inf:
            self.gates.wake(max(0.001, wait))

    def _counted(self, taken: Taken) -> None:
        if taken.settled:
            self.stats.inc_value("cdp_pool/cluster/acked", taken.settled)
        if taken.requeued:
            self.stats.inc_value("cdp_pool/cluster/requeued", taken.requeued)
            logger.info(
                "Cluster crawl %r: %d requests whose lease expired queued again",
                self.link.name, taken.requeued, extra={"crawler": self.crawler},
            )  # fmt: skip

    def _park_unloadable(self, lease: str, data: bytes, stat: str) -> None:
        """Count ``stat`` and keep ``data`` in the crawl's 'unloadable' hash
        (on an outage its lease expires, and it is looked at again)."""
        self.stats.inc_value(stat)
        frontier, lease_id = self.shards.of_lease(lease)
        with suppress(RedisUnavailable):
            self.link.call("unloadable", lambda: frontier.park_unloadable(lease_id, data))

    def _hand_out(
        self, lease: str, data: bytes, token: int | None, poisoned: int = 0, sent: float = 0.0
    ) -> Request | None:
        """``sent``: when the take was sent (monotonic)."""
        if poisoned and data.startswith(FEED_MARK):  # its conversion stopped each worker
            logger.error(
                "Cluster crawl %r: feed item %r: its lease ran out %d times; kept in the "
                "'unloadable' hash", self.link.name, data[len(FEED_MARK) :][:200], poisoned,
                extra={"crawler": self.crawler},
            )  # fmt: skip
            self._park_unloadable(lease, data, "cdp_pool/cluster/poisoned")
            return None
        if data.startswith(FEED_MARK):
            self._feed(lease, data[len(FEED_MARK) :])
            return None
        try:
            request = deserialize(data, self.spider)
        except ValueError as e:
            logger.error(
                "Cluster crawl %r: stored request %s cannot be loaded (%s); kept in the "
                "'unloadable' hash of the crawl's Redis keys", self.link.name, lease, e,
                extra={"crawler": self.crawler},
            )  # fmt: skip
            self._park_unloadable(lease, data, "cdp_pool/cluster/unloadable")
            return None
        if token is not None:
            request.meta[FENCE_META_KEY] = token
            request.meta[_TOKEN_META_KEY] = f"cluster:{lease}"
        self.held.add(lease, request, sent or None)
        self.stats.inc_value("cdp_pool/cluster/taken")
        if poisoned:  # fails by name before any download (cluster/poison.py)
            request.meta[POISONED_META_KEY] = poisoned
            return request
        # budgets (local and fleet-wide) count a page from its hand-out, as
        # with the local queue (the profile lock was taken in Redis)
        self.gates.run_dequeue_hooks(request)
        if sent:  # its take read its host's pause: the check before its navigation
            self.link.take_checks.taken(host_of(request), sent)
        return request

    def _feed(self, lease: str, data: bytes) -> None:
        """An item of the feed: store the spider's requests for it
        (:func:`~scrapy_cdp_pool.cluster.feed.requests_from_feed`), then
        acknowledge the item (a worker killed in between leaves the item to
        be fed again: its requests are then refused by the dupefilter, unless
        they have ``dont_filter``). The engine is asked to pull again."""
        try:
            requests = requests_from_feed(self.spider, data)
        except Exception as e:
            logger.error(
                "Cluster crawl %r: feed item %r of %s gives no request (%s: %s); kept in the "
                "'unloadable' hash", self.link.name, data[:200], self.link.feed_key,
                type(e).__name__, e, exc_info=not isinstance(e, ValueError),
                extra={"crawler": self.crawler},
            )  # fmt: skip
            # else its lease expires, it is looked at again
            self._park_unloadable(lease, data, "cdp_pool/cluster/unloadable")
            return
        if not requests:
            logger.warning(
                "Cluster crawl %r: feed item %r of %s: make_request_from_data made no request",
                self.link.name, data[:200], self.link.feed_key, extra={"crawler": self.crawler},
            )  # fmt: skip
        for request in requests:
            self.enqueue_request(request)
        if not self._flush_unstored():
            return  # not stored yet: the item's lease expires and it is fed again
        with suppress(RedisUnavailable):
            self.link.call("feed", lambda: self.shards.settle([f"a:{lease}"]))
            self.stats.inc_value("cdp_pool/cluster/fed")
        self.gates.wake()

    def _finished_leases(self) -> list[str]:
        """Leases of requests the engine is done with (not acknowledged yet)."""
        return self.held.finished(scrapy_internals.requests_in_progress(self.crawler))

    def _ackable(self, finished: list[str]) -> list[str]:
        """Of ``finished``, the leases whose callbacks' requests are all
        stored: each is marked, when first seen finished, with the count of
        requests yielded so far (its own among them), and may be
        acknowledged once every request yielded before that mark is stored
        (a take carries pushes before its acknowledgements in one pipelined
        round trip, where a refused push does not stop the take: the
        acknowledgement of a parent whose requests ride on the same take waits
        for the next one)."""
        marks = self._finish_marks
        now = self._unstored.yielded
        stored = self._unstored.stored_before
        if len(marks) > 2 * len(self.held) + 64:  # leases given up or lost meanwhile
            self._finish_marks = marks = {
                lease: marks[lease] for lease in self.held if lease in marks
            }
        return [lease for lease in finished if marks.setdefault(lease, now) <= stored]

    def has_pending_requests(self) -> bool:
        if self._local or self._unstored or self.keep_open or self.link.down:
            return True
        at, pending = self._pending
        age = time.monotonic() - at
        if pending and age < PENDING_FRESH_S:
            if self._pending_rechecked != at:
                # the engine asks again only at its heartbeat (5 s) else: a
                # worker's last request done, its close waited for that
                self._pending_rechecked = at
                self.gates.wake(PENDING_FRESH_S - age)
            return True
        done = self._finished_leases()
        try:
            if done:
                settled = self.link.call(
                    "ack", lambda: self.shards.settle([f"a:{lease}" for lease in done])
                )
                self.stats.inc_value("cdp_pool/cluster/acked", settled)
                self.held.forget(done)
            queued, leased = self.link.call("pending", self.shards.pending)
        except RedisUnavailable:
            return True
        self._pending = (time.monotonic(), bool(queued or leased))
        self._queued = (time.monotonic(), queued)
        if not (queued or leased) and not self.link.crawl_is_there():
            return True  # not finished: the crawl was lost (the spider is closing)
        return bool(queued or leased)

    def __len__(self) -> int:
        """Requests queued fleet-wide (plus those this worker keeps until Redis
        answers): as of the last take when it is under :data:`PENDING_FRESH_S`
        old (the telemetry asks at every request scheduled, sent and answered:
        a round trip each would be most of a page's), else asked of Redis."""
        at, queued = self._queued
        if time.monotonic() - at >= PENDING_FRESH_S:
            try:
                queued = self.link.call("pending", self.shards.pending)[0]
            except RedisUnavailable:
                queued = 0
            else:
                self._queued = (time.monotonic(), queued)
        return queued + len(self._unstored)


class _Bucket:
    """What the scheduler knows of one bucket's takes."""

    def __init__(self) -> None:
        #: something may have changed since its last take
        self.changed = True
        #: no take before this (monotonic), unless something changed: the
        #: last take found nothing to start (see the module)
        self.idle_until = 0.0
        self.last_take = 0.0
        #: (queued, leased) as of its last take
        self.queued = 0
        self.leased = 0


async def _after(stopping: list[Awaitable[None]], closed: Any) -> None:
    """The wake listeners' connections closed, then the dupefilter's close."""
    await asyncio.gather(*stopping)  # at once: each may wait CLOSE_S (wake.py)
    if isinstance(closed, Deferred):
        await maybe_deferred_to_future(closed)
