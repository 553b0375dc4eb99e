"""SQLite disk queues for ``SCHEDULER_DISK_QUEUE`` and
``SCHEDULER_START_DISK_QUEUE`` (the add-on installs them with ``JOBDIR``).

Each instance is one queue of Scrapy's priority queues (a priority, or a gate key
and a priority under :class:`~scrapy_cdp_pool.ProfileAwarePriorityQueue`): a name
in the crawler's :class:`~scrapy_cdp_pool.jobdir.store.JobStore`, not a directory.
A request is stored as Scrapy stores it (``Request.to_dict()``, pickled); a pop
marks its row in flight and hands the request to
:class:`~scrapy_cdp_pool.jobdir.inflight.InFlight`, which keeps it until the
engine is done with it.
"""

from __future__ import annotations

import logging
import pickle
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy import Request
from scrapy.utils.request import request_from_dict

from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.jobdir.store import JobStore, job_store
from scrapy_cdp_pool.render import LIVE_PAGE_META_KEY

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def serialize(request: Request, spider: Spider | None) -> bytes:
    """``request`` as the bytes stored in the JOBDIR database.

    :raises ValueError: the request cannot be stored (a meta value pickle
        refuses, a callback the spider does not have), as Scrapy's own disk
        queues.
    """
    data = request.to_dict(spider=spider)
    if LIVE_PAGE_META_KEY in data["meta"]:
        # A live page is a handle to this process's browser, never stored: a
        # copy of a live-page request (a retry) is rendered again with a page
        # of its own (render/_live/live_page.py).
        data["meta"] = {k: v for k, v in data["meta"].items() if k != LIVE_PAGE_META_KEY}
    try:
        return pickle.dumps(data, protocol=4)
    except (pickle.PicklingError, AttributeError, TypeError) as e:
        raise ValueError(str(e)) from e


def deserialize(data: bytes, spider: Spider | None) -> Request:
    """The request stored as ``data``.

    :raises ValueError: the stored request cannot be rebuilt (e.g. its
        callback is no longer a method of the spider).
    """
    try:
        fields: dict[str, Any] = pickle.loads(data)  # noqa: S301 - our own JOBDIR
    except (pickle.UnpicklingError, AttributeError, ImportError, EOFError) as e:
        raise ValueError(f"cannot be unpickled: {e}") from e
    return request_from_dict(fields, spider=spider)


class _SqliteQueue:
    lifo: ClassVar[bool]

    def __init__(self, crawler: Crawler, key: str) -> None:
        self.crawler = crawler
        self.spider = crawler.spider
        self.store: JobStore = job_store(runtime_of(crawler))
        self.name = self.store.queue_name(key)
        self._pending = self.store.pending(self.name)

    @classmethod
    def from_crawler(cls, crawler: Crawler, key: str, *args: Any, **kwargs: Any) -> Self:
        return cls(crawler, key)

    def push(self, request: Request) -> None:
        self.store.push(self.name, serialize(request, self.spider))
        self._pending += 1

    def pop(self) -> Request | None:
        while True:
            row = self.store.pop(self.name, lifo=self.lifo)
            if row is None:
                self._pending = 0
                return None
            self._pending -= 1
            row_id, data = row
            try:
                request = deserialize(data, self.spider)
            except ValueError as e:
                # Left in flight: not handed out, never acknowledged, queued
                # again on the next resume (with the spider fixed).
                logger.error(
                    "JOBDIR request %d of queue %r cannot be loaded, skipped until the "
                    "next resume: %s",
                    row_id,
                    self.name,
                    e,
                    extra={"crawler": self.crawler},
                )
                self.crawler.stats.inc_value("cdp_pool/jobdir/unloadable")
                continue
            self.store.in_flight.add(request, row_id)
            return request

    def peek(self) -> Request | None:
        data = self.store.peek(self.name, lifo=self.lifo)
        return deserialize(data, self.spider) if data is not None else None

    def close(self) -> None:
        """Nothing to write: every push and pop is stored already."""

    def __len__(self) -> int:
        return self._pending


class SqliteLifoQueue(_SqliteQueue):
    """Last in, first out: Scrapy's default order (``PickleLifoDiskQueue``)."""

    lifo = True


class SqliteFifoQueue(_SqliteQueue):
    """First in, first out: start requests, and breadth-first crawls
    (``PickleFifoDiskQueue``)."""

    lifo = False
