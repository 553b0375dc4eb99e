"""FeedWatch: a cluster crawl's feed key (a scrapy-redis ``redis_key``) as
the scheduler watches it.

- Its type: the take script reads a list, a set or a sorted set; another type
  is named in one ERROR each time the key becomes unreadable (its items are
  left where they are).
- On a Redis Cluster, a feed key in another hash slot than the crawl's keys
  cannot be read by the take script: its items are moved to the crawl's own
  keys when fewer than a batch (:data:`~scrapy_cdp_pool.cluster.scripts.FEED_BATCH`)
  are queued (:meth:`~scrapy_cdp_pool.cluster.frontier.Frontier.move_feed`),
  and looked at again :data:`FEED_CHECK_S` after it was found empty.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from scrapy_cdp_pool.cluster.scripts import FEED_BATCH
from scrapy_cdp_pool.errors import RedisUnavailable

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_cdp_pool.cluster.link import ClusterLink

logger = logging.getLogger(__name__)

FEED_CHECK_S = 10.0
"""How long a feed key in another hash slot (a Redis Cluster), found empty,
is left unread, seconds (it is read again at a take after this long)."""


class FeedWatch:
    """The feed key of ``link``'s crawl, for the cluster scheduler of
    ``crawler`` (its ERRORs name the crawler)."""

    def __init__(self, crawler: Crawler, link: ClusterLink) -> None:
        self.crawler = crawler
        self.link = link
        self._type = ""  # the feed key's type when the last look could not read it
        self._next = 0.0  # when to look at a feed key in another slot again
        self._kept: list[bytes] = []  # popped from it, not stored yet

    def type_seen(self, kind: str) -> None:
        """The feed key's type when it cannot be read ('' when it can): one
        ERROR each time it becomes unreadable."""
        if kind != self._type:
            self._type = kind
            if kind:
                logger.error(
                    "Cluster crawl %r: the feed key %r is a Redis %s: only a list, a set or a "
                    "sorted set is read; its items are left where they are",
                    self.link.name, self.link.feed_key, kind, extra={"crawler": self.crawler},
                )  # fmt: skip

    def move(self, queued: int) -> None:
        """A feed key in another hash slot of a Redis Cluster, with ``queued``
        requests queued fleet-wide as last seen: its items moved to the
        crawl's own keys when fewer than a batch are queued (or items popped
        before are not stored yet), unless it was found empty less than
        :data:`FEED_CHECK_S` ago."""
        now = time.monotonic()
        if not self._kept and (queued >= FEED_BATCH or now < self._next):
            return
        frontier = self.link.frontier
        try:
            moved, kind = self.link.call(
                "feed", lambda: frontier.move_feed(self.link.feed_key, FEED_BATCH, self._kept)
            )
        except RedisUnavailable:
            return
        self.type_seen(kind)
        self._next = now if moved else now + FEED_CHECK_S
