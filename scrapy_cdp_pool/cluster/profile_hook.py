"""SharedProfilesMiddleware: the hook that puts the crawl's profiles on the
cluster's shared profiles (:mod:`scrapy_cdp_pool.cluster.profile_store`).

**The wiring, in one place.** With ``CDP_POOL_CLUSTER_REDIS_URL`` set, this
downloader middleware (order 965, just before
:class:`~scrapy_cdp_pool.profiles.middleware.ProfileMiddleware` at 970, which
is built after it) gives the crawler's
:class:`~scrapy_cdp_pool.profiles.registry.ProfileRegistry` a
:class:`~scrapy_cdp_pool.cluster.profile_store.SharedProfiles` as its store and
a :class:`~scrapy_cdp_pool.cluster.profile_health.FleetHealthBook` as its
health; nothing else in the profile code changes:

- at ``spider_opened``: seeds the store from ``CDP_POOL_PROFILES_DIR`` (each
  profile the cluster does not hold yet) and logs what it did;
- before each request of a profile: reads the fleet's latest copy of the
  profile, its retirement and its consecutive failures (read by the
  frontier's take with the request,
  :data:`~scrapy_cdp_pool.cluster.keys.PROFILE_COPY_META_KEY`; else one Redis
  round trip for the first two), validated in a thread, and
  remembers the request's fencing token (:data:`FENCING_TOKEN_META_KEY`, set
  by the frontier's take) for the save-back that follows its render;
- at ``spider_closed``: waits for the health writes still queued.

The frontier's take must put the profile lock's token in
``request.meta[FENCING_TOKEN_META_KEY]``; a request without one cannot save
its state back (refused, counted as a stale write).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError
from scrapy import Request, signals
from scrapy.exceptions import NotConfigured

from scrapy_cdp_pool.cluster.keys import PROFILE_COPY_META_KEY
from scrapy_cdp_pool.cluster.link import link_for
from scrapy_cdp_pool.cluster.ops_keys import cluster_prefix, worker_id
from scrapy_cdp_pool.cluster.profile_health import FleetHealthBook
from scrapy_cdp_pool.cluster.profile_store import (
    NOT_STORED,
    ProfileStoreUnreachable,
    SharedProfiles,
)
from scrapy_cdp_pool.cluster.redis_client import connect
from scrapy_cdp_pool.core.gates import profile_of
from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.errors import ProfileFileError
from scrapy_cdp_pool.profiles.registry import ProfileRegistry, profiles_of

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: what ``_read`` returns for a profile Redis does not hold
_NOT_STORED = "\0not stored"

PROFILE_CALL_TIMEOUT_S = 5.0
"""Socket timeout of the profile store's Redis calls (made in threads)."""

ORDER = 965
#: where the frontier's take leaves the profile lock's fencing token (an
#: int): the cluster scheduler's ``FENCE_META_KEY``
FENCING_TOKEN_META_KEY = "_cdp_cluster_fence"  # noqa: S105 - a meta key


def fencing_token(request: Request) -> int | None:
    """The fencing token ``request`` was taken with, if any."""
    value = request.meta.get(FENCING_TOKEN_META_KEY)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, (str, bytes)) and value.isdigit():
        return int(value)
    return None


def install_shared_profiles(
    profiles: ProfileRegistry, shared: SharedProfiles, health: FleetHealthBook
) -> None:
    """Make ``profiles`` read and write ``shared`` and count health in ``health``."""
    profiles.store = shared  # type: ignore[assignment]  # ProfileStore's interface
    profiles.health = health


class SharedProfilesMiddleware:
    """Downloader middleware (installed with the cluster; see the module)."""

    def __init__(self, crawler: Crawler, shared: SharedProfiles, health: FleetHealthBook) -> None:
        self.crawler = crawler
        self.shared = shared
        self.health = health
        self._unreachable = False
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = runtime_of(crawler)
        config = runtime.config
        if config.cluster.redis_url is None:
            raise NotConfigured
        prefix = cluster_prefix(config, crawler)
        shards = link_for(crawler).shards  # a profile lives in its bucket
        # read and written in threads: bounded, so a Redis that does not
        # answer fails a profile read or save-back by name, never hangs it
        client = connect(config.cluster.redis_url, PROFILE_CALL_TIMEOUT_S)
        shared = SharedProfiles(
            client,
            prefix,
            owner=worker_id(),
            directory=config.profiles.dir,
            stats=crawler.stats,
            crawler=crawler,
            prefix_of=shards.prefix_of_profile,
            prefixes=shards.prefixes,
        )
        health = FleetHealthBook(
            crawler.stats,
            config.profiles.max_failures,
            client,
            prefix,
            crawler=crawler,
            prefix_of=shards.prefix_of_profile,
        )
        install_shared_profiles(profiles_of(runtime), shared, health)
        return cls(crawler, shared, health)

    def spider_opened(self) -> None:
        """Seed the cluster from the profile files (blocks on Redis once, at
        start, before the profile middleware lists the profiles)."""
        report = self.shared.seed()
        for error in report.errors:
            logger.warning(
                "Profile %r not seeded into the cluster: %s",
                error.name,
                error.reason,
                extra={"crawler": self.crawler},
            )
        for name in report.differing:
            logger.warning(
                "Profile %r: its identity file differs from the cluster's copy, which is used "
                "(the store keeps the first one seeded; export, edit and purge to change it)",
                name,
                extra={"crawler": self.crawler},
            )
        logger.info(
            "Cluster profile store %s: %d seeded from files, %d already stored, %d in all",
            self.shared.names_key,
            len(report.seeded),
            len(report.kept),
            len(self.shared.names()),
            extra={"crawler": self.crawler},
        )

    def spider_closed(self) -> None:
        self.health.close()

    async def process_request(self, request: Request) -> None:
        name = profile_of(request)
        if not name:
            return
        self.shared.remember_token(name, fencing_token(request))
        taken = request.meta.pop(PROFILE_COPY_META_KEY, None)
        copy, failures = (taken[:3], taken[3]) if taken is not None else (None, None)
        retired = await asyncio.to_thread(self._read, name, copy)
        if retired is _NOT_STORED:
            # A Redis that lost the crawl (restarted without persistence,
            # flushed) lost its profiles too: named first, as the state loss
            # it is (before: requests failed as ProfileFileError "not
            # in the cluster's profile store" before the loss was named)
            link_for(self.crawler).crawl_is_there()
            retired = None
        self.health.adopt(name, retired)
        self.health.read_failures(name, failures if copy is not None else None)

    def _read(self, name: str, copy: Any = None) -> str | None:
        """The fleet's copy of the profile (kept for the profile middleware
        and the handler) and its retirement reason; in a thread. With Redis
        unreachable, the copy last read is used (a profile never read fails
        by name: :func:`~scrapy_cdp_pool.cluster.profile_store.unreachable`).
        ``copy``: the profile as the take read it (no round trip)."""
        try:
            _, retired = self.shared.fetch_and_read(
                name, self.health.retired_field(name), prefetched=copy
            )
            reason = None if retired is None else retired.decode(errors="replace")
        except (ProfileStoreUnreachable, RedisError, OSError) as e:
            if not self._unreachable:
                self._unreachable = True
                logger.warning(
                    "Cluster profile store: Redis did not answer (%s); profiles read before "
                    "are used, others fail by name, until it answers",
                    type(e).__name__,
                    extra={"crawler": self.crawler},
                )
            return None
        except ProfileFileError as e:
            # the profile middleware fails the request, naming the problem
            return _NOT_STORED if e.problem == NOT_STORED else None
        if self._unreachable:
            self._unreachable = False
            logger.info(
                "Cluster profile store: Redis answers again", extra={"crawler": self.crawler}
            )
        return reason
