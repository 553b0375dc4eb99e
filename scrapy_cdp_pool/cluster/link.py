"""ClusterLink: one crawler's connection to its cluster crawl, and what it does
when Redis cannot be reached.

Every part of a worker (scheduler, dupefilter, host pauses, profile locks)
goes through the crawler's one link (:func:`link_for`): one client, one
worker id, one :class:`~scrapy_cdp_pool.cluster.frontier.Frontier`, one view of
whether Redis can serve. A call that fails with an error meaning "Redis cannot
serve now" (:func:`~scrapy_cdp_pool.cluster.frontier.redis_outage`:
unreachable, timed out, out of memory, read-only, loading, a cluster
redirect...) starts an outage: no call is tried again before a backoff (0.5 s
doubled per failure, up to :data:`MAX_BACKOFF_S`; renewals of leases are tried
at their time all the same), the outage is logged once when it starts (one
ERROR naming the cause) and once when it ends, and
``cdp_pool/cluster/redis_errors`` counts the failures. An outage of a cause
already logged at ERROR (a Redis out of memory that serves reads, so each read
ends the outage and the next write starts another: 7-24 ERRORs per worker
before) is logged at INFO, its end too; every outage is counted in
``cdp_pool/cluster/redis_outages``.

Any other error Redis answers a call with (:func:`redis_bug`: a key of the
crawl of the wrong type, ``WRONGTYPE``; an unknown command; a script error) is
a bug that waiting does not mend: the worker stops (:meth:`ClusterLink.stop`).
One ERROR names the call, the error and, for ``WRONGTYPE``, the crawl's keys
of the wrong type; the spider closes with ``finish_reason``
``cdp_pool_cluster_redis_error`` (exit status 1); from then on the link
refuses calls as during an outage (:class:`~scrapy_cdp_pool.errors.RedisUnavailable`,
which every caller handles quietly), except renewals of the leases held while
the requests in flight finish. Before, each call raised the error again: a
traceback per take and renewal for as long as the worker ran. An error that
is not Redis's (a ``ValueError`` of the caller's arguments) is raised as it is.

The link checks that Redis still holds the crawl when an outage ends and
before the scheduler calls the crawl done: the first worker writes a random
``<prefix>epoch`` key (:meth:`ClusterLink.remember_crawl`). A Redis that
lost it (restarted without persistence, flushed, purged: its client may
reconnect without any call failing) lost the queued, leased and seen
requests: the spider closes with ``finish_reason``
``cdp_pool_cluster_state_lost`` and one ERROR, instead of finishing quietly
with whatever is left.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

from redis.exceptions import RedisClusterException, RedisError

from scrapy_cdp_pool.cluster.bloom import Bloom
from scrapy_cdp_pool.cluster.feed import feed_key_for
from scrapy_cdp_pool.cluster.frontier import Frontier, redis_outage, worker_id
from scrapy_cdp_pool.cluster.redis_client import (
    CALL_TIMEOUT_S,
    connect,
    in_other_slot,
    is_cluster_url,
)
from scrapy_cdp_pool.cluster.shards import Buckets, SlotOwner, bucket_prefix, resolve_layout
from scrapy_cdp_pool.cluster.take_checks import TakeChecks
from scrapy_cdp_pool.core.exit_status import fail_exit_on
from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.errors import RedisUnavailable
from scrapy_cdp_pool.messages import redact_url, scrub_secrets
from scrapy_cdp_pool.settings.config import PoolConfig

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

T = TypeVar("T")
STATE_LOST = "cdp_pool_cluster_state_lost"
"""The ``finish_reason`` of a worker whose Redis lost the crawl (exit status 1)."""
REDIS_ERROR = "cdp_pool_cluster_redis_error"
"""The ``finish_reason`` of a worker stopped by a Redis error that is a bug
(:meth:`ClusterLink.stop`; exit status 1)."""
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0


class ClusterLink:
    def __init__(self, crawler: Crawler, config: PoolConfig) -> None:
        if config.cluster.redis_url is None:
            raise ValueError("ClusterLink needs CDP_POOL_CLUSTER_REDIS_URL")
        self.crawler = crawler
        self.url = config.cluster.redis_url
        self.name = config.cluster.name or str(getattr(crawler.spidercls, "name", "") or "")
        if not self.name:
            raise ValueError("CDP_POOL_CLUSTER_NAME: not set, and the spider has no name")
        #: the key whose items become requests (scrapy-redis's ``<spider>:start_urls``;
        #: :func:`~scrapy_cdp_pool.cluster.feed.feed_key_for`)
        self.feed_key = feed_key_for(crawler.spidercls, crawler.settings, config.cluster.feed_key)
        self.worker = worker_id()
        self.client = connect(self.url, CALL_TIMEOUT_S)
        bloom = (
            Bloom.sized(config.cluster.bloom_capacity, config.cluster.bloom_error_rate)
            if config.cluster.dupefilter == "bloom"
            else None
        )
        #: the crawl's buckets, bucket 0 first (:mod:`~scrapy_cdp_pool.cluster.shards`)
        self.shards = Buckets(
            [
                Frontier(
                    self.client,
                    self.name,
                    self.worker,
                    lease_s=config.cluster.lease_s,
                    host_concurrency=config.resilience.host_concurrency,
                    host_rate=config.resilience.host_rate,
                    max_deliveries=config.cluster.max_deliveries,
                    bloom=bloom,
                    prefix=bucket_prefix(self.name, tag),
                )
                for tag in self._layout(config.cluster.shards)
            ]
        )
        #: bucket 0: the crawl's own prefix (its epoch, the live workers, the feed)
        self.frontier = self.shards.home
        #: on a Redis Cluster, the feed key is in another hash slot than the
        #: crawl's keys: the worker moves its items to the crawl's own
        #: (:meth:`~scrapy_cdp_pool.cluster.frontier.Frontier.move_feed`)
        self.feed_moved = in_other_slot(self.url, self.frontier.prefix, self.feed_key)
        #: the key the take reads the feed from
        self.take_feed_key = self.frontier.feed_staging_key if self.feed_moved else self.feed_key
        self.lease_s = config.cluster.lease_s
        #: the hosts a take just found unpaused (:mod:`~scrapy_cdp_pool.cluster.take_checks`)
        self.take_checks = TakeChecks()
        #: stay open when the frontier is empty (``CDP_POOL_CLUSTER_KEEP_OPEN``)
        self.keep_open = config.cluster.keep_open
        self._retry_at = 0.0
        self._backoff_s = 0.0
        self._down_since: float | None = None
        self._cause: str | None = None  # the cause of the outage going on
        self._causes_logged: set[str] = set()  # causes of outages logged at ERROR
        self._ended_logged: set[str] = set()  # causes whose outage's end was logged at WARNING
        #: the crawl's ``<prefix>epoch`` as this worker first saw it
        self.epoch: bytes | str | None = None
        self._state_lost = False
        #: a Redis error that is a bug stopped this worker (:meth:`stop`)
        self.stopped = False
        #: the scheduler's ``open`` is over: :meth:`stop` closes the spider
        #: itself (before, the scheduler's ``open`` raises ``CloseSpider``)
        self.opened = False
        # a worker whose crawl was lost, or stopped by an error, exits 1
        fail_exit_on(crawler, [STATE_LOST, REDIS_ERROR], unasked_shutdown=True)

    def _layout(self, requested: int) -> list[str]:
        """The crawl's bucket tags (:func:`~scrapy_cdp_pool.cluster.shards.resolve_layout`).

        :raises ValueError: the stored layout disagrees with
            ``CDP_POOL_CLUSTER_SHARDS``, or Redis does not answer."""
        try:
            owner = SlotOwner(self.client) if is_cluster_url(self.url) else None
            return resolve_layout(self.client, self.name, requested, owner)
        except (RedisError, RedisClusterException, OSError) as e:
            raise ValueError(
                f"CDP_POOL_CLUSTER_REDIS_URL: Redis at {redact_url(self.url)} did not answer "
                f"the crawl's layout read: {scrub_secrets(e, self.url)}"
            ) from None

    @property
    def down(self) -> bool:
        """Redis failed and the backoff has not run out yet, or a bug
        stopped the worker (for good)."""
        return self.stopped or time.monotonic() < self._retry_at

    @property
    def retry_in_s(self) -> float:
        if self.stopped:
            return MAX_BACKOFF_S  # the spider is closing: nothing to retry
        return max(0.0, self._retry_at - time.monotonic())

    def call(self, what: str, fn: Callable[[], T], *, in_outage: bool = False) -> T:
        """``fn()``, a Redis call. ``in_outage``: tried within the backoff
        too (renewals: a Redis refusing writes for lack of memory still
        renews leases), and its success does not end the outage.

        :raises RedisUnavailable: Redis cannot serve now (an outage starts
            or goes on: :func:`~scrapy_cdp_pool.cluster.frontier.redis_outage`)
            or within the backoff (``fn`` is not called), or answered with
            an error that is a bug (the worker stops: :meth:`stop`), or
            did before."""
        if self.down and not in_outage:
            if self.stopped:
                raise RedisUnavailable("stopped by a Redis error (see the ERROR above)")
            raise RedisUnavailable(f"Redis cannot serve; retrying in {self.retry_in_s:.1f} s")
        try:
            result = fn()
        except Exception as e:
            cause = redis_outage(e)
            if cause is None:
                if not redis_bug(e):
                    raise
                self.stop(what, e)
                raise RedisUnavailable(
                    f"stopped by a Redis error: {scrub_secrets(e, self.url)}"
                ) from None
            self._failed(what, e, cause, backoff=not (in_outage and self._down_since))
            raise RedisUnavailable(f"{cause}: {scrub_secrets(e, self.url)}") from None
        if self._down_since is not None and not in_outage:
            level = logging.INFO if self._cause in self._ended_logged else logging.WARNING
            if self._cause is not None:
                self._ended_logged.add(self._cause)
            logger.log(
                level, "Redis %s reachable again after %.1f s; taking requests again",
                redact_url(self.url), time.monotonic() - self._down_since,
                extra={"crawler": self.crawler},
            )  # fmt: skip
            self._down_since = None
            self._backoff_s = 0.0
            self.crawl_is_there()  # closes the spider if Redis came back without it
        return result

    def stop(self, what: str, error: BaseException) -> None:
        """A call (``what``) failed with ``error``, a Redis error that is a
        bug (:func:`redis_bug`): the first time, one ERROR, and the spider
        closes with ``finish_reason`` :data:`REDIS_ERROR`; no call but
        renewals is made after it (see the module). Later ones are logged
        at INFO."""
        text = scrub_secrets(error, self.url)
        if self.stopped:
            logger.info(
                "Redis error after the worker stopped (%s: %s: %s)", what,
                type(error).__name__, text, extra={"crawler": self.crawler},
            )  # fmt: skip
            return
        self.stopped = True
        self.crawler.stats.set_value("cdp_pool/cluster/stopped_by_redis_error", 1)
        keys = ""
        if "WRONGTYPE" in str(error):
            try:
                wrong = self.frontier.wrong_types()
            except (RedisError, RedisClusterException, OSError) as e:  # the diagnosis only
                wrong = [f"the keys' types could not be read: {scrub_secrets(e, self.url)}"]
            keys = "; " + ("; ".join(wrong) if wrong else "no key of the crawl has a wrong type")
        logger.error(
            "Cluster crawl %r: Redis %s answered %s with an error that is not an outage but a "
            "bug, waiting does not mend it (a crawl key changed by hand, another program's "
            "key, an unknown command): %s: %s%s; stopping this worker (finish_reason %s)",
            self.name, redact_url(self.url), what, type(error).__name__, text, keys,
            REDIS_ERROR, extra={"crawler": self.crawler},
        )  # fmt: skip
        engine = self.crawler.engine
        if engine is not None and self.opened:
            asyncio.get_running_loop().create_task(
                engine.close_spider_async(reason=REDIS_ERROR),
                name="cdp-pool close spider: Redis error",
            )

    @property
    def epoch_key(self) -> str:
        return f"{self.frontier.prefix}epoch"

    def remember_crawl(self) -> None:
        """Write the crawl's epoch if no worker has (``SET NX``) and keep
        it; ``None`` when Redis cannot say now (then nothing is checked).
        On Redis 7 and later, renewals and settlements are made to run when
        Redis is out of memory (:meth:`Frontier.allow_oom`)."""
        try:
            version = str(self.client.info("server").get("redis_version", "0"))
            if int(version.split(".", 1)[0]) >= 7:
                self.frontier.allow_oom()
            self.client.set(self.epoch_key, secrets.token_hex(8), nx=True)
            self.epoch = self.client.get(self.epoch_key)
        except Exception as e:
            if redis_outage(e) is None:
                raise
            self.epoch = None

    def crawl_is_there(self) -> bool:
        """Whether Redis still holds the crawl this worker joined (its epoch);
        true when that cannot be told now. The first time it does not, the
        spider is closed (see the module)."""
        if self._state_lost:
            return False
        if self.epoch is None:
            return True
        try:
            now = self.client.get(self.epoch_key)
        except Exception as e:
            if redis_bug(e):
                self.stop("crawl check", e)
            elif redis_outage(e) is None:
                raise
            return True  # down: checked when it is back (stopped: closing)
        if now == self.epoch:
            return True
        self._state_lost = True
        self.crawler.stats.set_value("cdp_pool/cluster/state_lost", 1)
        logger.error(
            "Redis %s came back without cluster crawl %r (restarted without persistence, "
            "flushed or purged): its queued, leased and seen requests are gone; closing the "
            "spider (finish_reason cdp_pool_cluster_state_lost)",
            redact_url(self.url), self.name, extra={"crawler": self.crawler},
        )  # fmt: skip
        engine = self.crawler.engine
        if engine is not None:
            asyncio.get_running_loop().create_task(
                engine.close_spider_async(reason=STATE_LOST),
                name="cdp-pool close spider: cluster state lost",
            )
        return False

    def _failed(self, what: str, error: BaseException, cause: str, *, backoff: bool) -> None:
        self.crawler.stats.inc_value("cdp_pool/cluster/redis_errors")
        if backoff:
            self._backoff_s = min(MAX_BACKOFF_S, self._backoff_s * 2 or FIRST_BACKOFF_S)
            self._retry_at = time.monotonic() + self._backoff_s
        if self._down_since is None:
            self._down_since = time.monotonic()
            self._cause = cause
            self.crawler.stats.inc_value("cdp_pool/cluster/redis_outages")
            again = cause in self._causes_logged
            self._causes_logged.add(cause)
            logger.log(
                logging.INFO if again else logging.ERROR,
                "Redis %s cannot serve%s: %s (%s: %s: %s); not taking requests, finishing those "
                "held, keeping what is not stored, retrying with backoff", redact_url(self.url),
                " again" if again else "", cause, what, type(error).__name__,
                scrub_secrets(error, self.url), extra={"crawler": self.crawler},
            )  # fmt: skip
        else:
            logger.info(
                "Redis still cannot serve (%s; %s: %s); next try in %.1f s", cause, what,
                scrub_secrets(error, self.url), self.retry_in_s,
                extra={"crawler": self.crawler},
            )  # fmt: skip


def redis_bug(error: BaseException) -> bool:
    """Whether ``error``, raised by a redis-py call, is an error Redis (or
    redis-py) answered that is not an outage
    (:func:`~scrapy_cdp_pool.cluster.frontier.redis_outage` says ``None``):
    ``WRONGTYPE``, an unknown command, a script's error, a reply redis-py
    cannot read."""
    return isinstance(error, (RedisError, RedisClusterException)) and redis_outage(error) is None


def link_for(crawler: Crawler) -> ClusterLink:
    """The crawler's link, made on first use and kept on its runtime.

    :raises ValueError: ``CDP_POOL_CLUSTER_REDIS_URL`` is not set, or the
        add-on is not installed."""
    runtime = runtime_of(crawler)
    if runtime.cluster is None:
        runtime.cluster = ClusterLink(crawler, runtime.config)
    return cast(ClusterLink, runtime.cluster)
