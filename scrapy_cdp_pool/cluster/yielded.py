"""YieldedRequests: the requests a worker's callbacks yield, stored in Redis
in one round trip per bucket and event-loop turn, not one per request.

The scheduler's ``enqueue_request`` keeps each request here (its push
prepared: :meth:`~scrapy_cdp_pool.cluster.frontier.Frontier.prepare_push`)
and answers at once; the requests are stored, in order, with the scheduler's
next take (pipelined before it, in its round trip: with one bucket) or on
their own within :data:`STORE_FLUSH_S`, or before an acknowledgement or the
close (an acknowledgement never goes out before the requests its callback
yielded are stored: a worker killed in between leaves its parent to be done
again, as before). Each bucket's requests go in one pipelined round trip of
push scripts (:data:`STORE_BATCH` at most); a page that yields 120 new links
cost 120 round trips before, none of its own now.

What Scrapy sees: ``enqueue_request`` answers ``True`` for a request kept
here, ``False`` at once for a duplicate this worker knows (its own pushes,
and fingerprints Redis said were stored); a duplicate only Redis knew
(another worker stored it) is found when the batch is stored: it is logged
as Scrapy's dupefilter logs one (``dupefilter/filtered``) and
``request_dropped`` is sent then, as the engine sends it for a ``False``;
not for a request whose earlier round trip failed (Redis may have run that
push: its own request, stored), which is only logged so.

While Redis cannot answer, requests are kept here, in order, and stored once
it answers (the scheduler's outage handling); with an error answer for some
requests of a batch (out of memory), those are kept and the others stored.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn

from scrapy import signals
from scrapy.utils.asyncio import call_later

from scrapy_cdp_pool.errors import RedisUnavailable

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.dupefilters import BaseDupeFilter

    from scrapy_cdp_pool.cluster.link import ClusterLink

logger = logging.getLogger(__name__)

#: push scripts sent in one round trip at most (a bigger batch goes in several)
STORE_BATCH = 200
STORE_FLUSH_S = 0.01
"""How long the requests of a turn wait to ride on the scheduler's next take
(the engine asks for its next request right after it schedules one) before
they are stored on their own, seconds (as a release waits:
:data:`~scrapy_cdp_pool.cluster.held.RELEASE_FLUSH_S`)."""


@dataclass(slots=True)
class _Yielded:
    request: Request
    bucket: int
    #: its push script's keys and arguments (Frontier.prepare_push)
    call: tuple[list[str], list[object]]
    seq: int  # its place among the requests yielded (YieldedRequests.yielded)
    #: a round trip carrying it failed: Redis may have run its push
    tried: bool = False


class YieldedRequests:
    """Requests yielded and not stored in Redis yet, in order."""

    def __init__(
        self,
        crawler: Crawler,
        link: ClusterLink,
        dupefilter: BaseDupeFilter,
        readied: Callable[[int], None],
    ) -> None:
        self.crawler = crawler
        self.link = link
        self.df = dupefilter
        #: called with a bucket whose gate became ready with a request stored
        self.readied = readied
        self.spider: Spider | None = None
        self._items: deque[_Yielded] = deque()
        self._timer: Any = None
        #: requests kept so far, in all (each one's ``seq`` is the count before it)
        self.yielded = 0

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def add(self, request: Request, bucket: int, call: tuple[list[str], list[object]]) -> None:
        """Keep ``request`` (its push script's keys and arguments ``call``,
        for ``bucket``), stored at the end of this turn at the latest."""
        self._items.append(_Yielded(request, bucket, call, self.yielded))
        self.yielded += 1
        if self._timer is None and not self.link.down:
            self._timer = call_later(STORE_FLUSH_S, self._flush_late)

    @property
    def stored_before(self) -> int:
        """Every request kept before this count (:attr:`yielded` then) is
        stored (requests are kept in order, and leave in order or not)."""
        return self._items[0].seq if self._items else self.yielded

    def _flush_late(self) -> None:
        self._timer = None
        self.flush()

    def to_carry(self, bucket: int) -> list[_Yielded]:
        """The requests a take on ``bucket`` carries, when they are all the
        requests kept and no more than :data:`STORE_BATCH` (else none: the
        others must be stored before its acknowledgements)."""
        items = self._items
        if not items or len(items) > STORE_BATCH or any(i.bucket != bucket for i in items):
            return []
        return list(items)

    def carried(self, items: list[_Yielded], answers: list[int | Exception] | None) -> None:
        """What Redis answered for ``items``, carried by a take (``None``:
        the round trip failed; they are all kept)."""
        self._answered(items, answers)

    def _answered(
        self, items: list[_Yielded], answers: list[int | Exception] | None
    ) -> Exception | None:
        """Take what Redis answered for ``items`` (``None``: the round trip
        failed): the stored ones and the duplicates leave, those it answered
        an error for stay; the first such error."""
        if answers is None:
            for item in items:
                item.tried = True
            return None
        error: Exception | None = None
        done: set[int] = set()
        for item, answer in zip(items, answers, strict=True):
            if isinstance(answer, Exception):
                error = error or answer
            else:
                done.add(id(item))
                self._outcome(item, answer)
        self._items = deque(item for item in self._items if id(item) not in done)
        return error

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def flush(self) -> bool:
        """Store every request kept, a bucket's in one round trip
        (:data:`STORE_BATCH` at most); whether all are stored (else Redis
        could not answer: what is left is kept, in order).

        :raises Exception: what :meth:`ClusterLink.call
            <scrapy_cdp_pool.cluster.link.ClusterLink.call>` raises for an
            error that is neither an outage nor a Redis bug."""
        while self._items:
            bucket = self._items[0].bucket
            batch = [item for item in self._items if item.bucket == bucket][:STORE_BATCH]
            frontier = self.link.shards.frontiers[bucket]
            calls = [item.call for item in batch]
            try:
                answers = self.link.call("store", partial(frontier.push_many, calls))
            except RedisUnavailable:
                self._answered(batch, None)
                return False
            error = self._answered(batch, answers)
            if error is not None:  # what Redis said of the others: an outage, or a bug
                try:
                    self.link.call("store", partial(_raise, error))
                except RedisUnavailable:
                    return False
        return True

    def _outcome(self, item: _Yielded, answer: int) -> None:
        """A push's answer: stored (its gate readied when > 0), or a
        duplicate only Redis knew (0)."""
        stats: Any = self.crawler.stats
        if answer != 0:
            stats.inc_value("cdp_pool/cluster/stored")
            if answer > 0:
                self.readied(item.bucket)
            return
        if self.spider is not None:
            self.df.log(item.request, self.spider)
        if not item.tried:  # else its own earlier push may have stored it
            self.crawler.signals.send_catch_log(
                signals.request_dropped, request=item.request, spider=self.spider
            )


def _raise(error: Exception) -> NoReturn:
    raise error
