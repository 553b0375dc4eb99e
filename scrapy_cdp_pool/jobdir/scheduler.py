"""DurableScheduler: Scrapy's ``Scheduler`` whose JOBDIR survives a hard kill.

The add-on installs it (``SCHEDULER``) with the SQLite disk queues and
:class:`~scrapy_cdp_pool.jobdir.DurableDupeFilter` whenever ``JOBDIR`` is set.
Without ``JOBDIR`` it is Scrapy's scheduler, unchanged. With it:

- each call is one transaction of the JOBDIR database: ``enqueue_request`` (the
  fingerprint and the push together), ``next_request`` (the pop, marked in
  flight), committed before the call returns;
- a request handed out stays stored until the engine is done with it (callback
  output scheduled, items through the pipelines); its row is then deleted, in
  the next call (:mod:`scrapy_cdp_pool.jobdir.inflight`);
- on open, rows left in flight by the previous run are queued again, and the
  priority queue's state comes from the rows themselves
  (:mod:`scrapy_cdp_pool.jobdir.recovery`), not from ``active.json``, which is
  neither read nor written.

Stats: ``cdp_pool/jobdir/requeued`` (requests in flight when the previous run
stopped, queued again), ``cdp_pool/jobdir/acked`` (requests finished and
forgotten), ``cdp_pool/jobdir/commits`` (transactions written),
``cdp_pool/jobdir/unloadable`` (stored requests that could not be rebuilt).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.core.scheduler import Scheduler
from scrapy.dupefilters import RFPDupeFilter
from scrapy.exceptions import CloseSpider
from scrapy.extensions.spiderstate import SpiderState
from scrapy.pqueues import ScrapyPriorityQueue

from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.errors import JobdirError, JobdirFull
from scrapy_cdp_pool.jobdir.dupefilter import DurableDupeFilter
from scrapy_cdp_pool.jobdir.queues import _SqliteQueue
from scrapy_cdp_pool.jobdir.recovery import recover_state
from scrapy_cdp_pool.jobdir.store import JobStore, job_store
from scrapy_cdp_pool.scrapy_internals import (
    open_memory_only,
    requests_in_progress,
    start_disk_queue_class,
)
from scrapy_cdp_pool.shared.disk_full import stop_for_full_disk

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)

REFUSED_REASON = "cdp_pool_jobdir_refused"
"""The finish reason of a crawl whose JOBDIR was refused when the scheduler
opened (taken by another crawl after the add-on's check)."""
DISK_QUEUES = "scrapy_cdp_pool.jobdir.SqliteLifoQueue or scrapy_cdp_pool.jobdir.SqliteFifoQueue"


@dataclass(frozen=True)
class _Job:
    crawler: Crawler
    store: JobStore


class DurableScheduler(Scheduler):
    _job: _Job | None = None  # set by open() with JOBDIR

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        scheduler = super().from_crawler(crawler)
        if scheduler.dqdir:
            for name, queue_cls in (
                ("SCHEDULER_DISK_QUEUE", scheduler.dqclass),
                ("SCHEDULER_START_DISK_QUEUE", start_disk_queue_class(scheduler)),
            ):
                if queue_cls is not None and not issubclass(queue_cls, _SqliteQueue):
                    raise JobdirError(
                        f"{name}: {queue_cls.__module__}.{queue_cls.__qualname__} does not "
                        f"survive a hard kill; with JOBDIR use {DISK_QUEUES}, or set "
                        "CDP_POOL_JOBDIR_DURABLE = False"
                    )
            if isinstance(scheduler.df, RFPDupeFilter) and not isinstance(
                scheduler.df, DurableDupeFilter
            ):
                logger.warning(
                    "DUPEFILTER_CLASS %s.%s keeps its fingerprints in a buffered file: after "
                    "a hard kill, finished pages may be fetched again; use "
                    "scrapy_cdp_pool.jobdir.DurableDupeFilter",
                    type(scheduler.df).__module__,
                    type(scheduler.df).__qualname__,
                    extra={"crawler": crawler},
                )
        return scheduler

    @property
    def store(self) -> JobStore | None:
        """The JOBDIR database, once open; ``None`` without ``JOBDIR``."""
        return self._job.store if self._job is not None else None

    def open(self, spider: Spider) -> Deferred[None] | None:
        if self.dqdir:
            if self.crawler is None:
                raise JobdirError("DurableScheduler needs a crawler: build it with from_crawler()")
            try:
                store = job_store(runtime_of(self.crawler))
            except JobdirError as e:
                self._refuse(self.crawler, spider, e)
                return None
            self._job = _Job(self.crawler, store)
            _private_spider_state(self.crawler, self._job.store.path.parent)
            try:
                return super().open(spider)
            except BaseException:
                self._job.store.close()
                raise
        return super().open(spider)

    def _refuse(self, crawler: Crawler, spider: Spider, error: JobdirError) -> None:
        """The JOBDIR was refused as the scheduler opened (another crawl took
        it after the add-on's check): say so once, open with nothing stored
        (memory queues, no disk queue, the dupefilter not opened), and close
        the spider when it has opened, as a component that cannot start does
        (Scrapy's engine does not close cleanly after a failed open)."""
        logger.error("%s", error, extra={"crawler": crawler})
        self.spider = spider
        open_memory_only(self)
        crawler.signals.connect(self._close_refused, signal=signals.spider_opened)

    def _close_refused(self) -> None:
        raise CloseSpider(REFUSED_REASON)

    def _read_dqs_state(self, dqdir: str) -> Any:
        if self._job is None:
            raise JobdirError("DurableScheduler: the disk queue is built by open()")
        store = self._job.store
        _refuse_scrapy_queue(Path(dqdir))
        requeued = store.requeue_in_flight()
        state = recover_state(store, self.pqclass or ScrapyPriorityQueue)
        self._job.crawler.stats.set_value("cdp_pool/jobdir/requeued", requeued)
        if not store.created:
            logger.info(
                "JOBDIR %s: resuming; %d requests that were in flight when the crawl stopped "
                "are queued again; %d fingerprints seen",
                store.path.parent,
                requeued,
                store.fingerprints(),
                extra={"crawler": self.crawler},
            )
        return state

    def _write_dqs_state(self, dqdir: str, state: Any) -> None:
        """Nothing: the state is rebuilt from the database on resume."""

    def enqueue_request(self, request: Request) -> bool:
        """With the disk full the request is not stored (dropped: the
        request that yielded it is not acknowledged, so the resumed crawl
        does it again and yields it again)."""
        if self._job is None:
            return super().enqueue_request(request)
        if self._job.store.full is not None:
            return False
        try:
            with self._job.store.transaction():
                self._ack_finished(self._job)
                return super().enqueue_request(request)
        except JobdirFull as e:
            self._disk_full(self._job, e)
            return False

    def next_request(self) -> Request | None:
        if self._job is None:
            return super().next_request()
        if self._job.store.full is not None:
            return None  # stopping: nothing more is handed out
        try:
            with self._job.store.transaction():
                self._ack_finished(self._job)
                return super().next_request()
        except JobdirFull as e:
            self._disk_full(self._job, e)
            return None

    def has_pending_requests(self) -> bool:
        if self._job is not None:
            if self._job.store.full is not None:
                return False
            try:
                self._ack_finished(self._job)
            except JobdirFull as e:
                self._disk_full(self._job, e)
                return False
        return super().has_pending_requests()

    @staticmethod
    def _disk_full(job: _Job, error: JobdirFull) -> None:
        """Stop the crawl as Ctrl-C would (shared/disk_full.py); from now on
        nothing is written, so nothing is acknowledged."""
        stop_for_full_disk(
            job.crawler, job.store.path, "the JOBDIR database (requests, acknowledgements)",
            error.__cause__ or error,
        )  # fmt: skip

    def close(self, reason: str) -> Deferred[None] | None:
        job = self._job
        if job is None:
            return super().close(reason)
        if job.store.full is None:
            try:
                self._ack_finished(job)
            except JobdirFull as e:
                self._disk_full(job, e)
        queued, left = len(self), len(job.store.in_flight)
        try:
            return super().close(reason)
        finally:
            job.crawler.stats.set_value("cdp_pool/jobdir/commits", job.store.commits)
            job.store.close()
            logger.info(
                "JOBDIR %s: %d requests queued, %d in flight (queued again on resume)",
                job.store.path.parent,
                queued,
                left,
                extra={"crawler": job.crawler},
            )

    @staticmethod
    def _ack_finished(job: _Job) -> None:
        rows = job.store.in_flight.finished(requests_in_progress(job.crawler))
        if rows:
            job.store.ack(rows)
            job.crawler.stats.inc_value("cdp_pool/jobdir/acked", len(rows))


def _private_spider_state(crawler: Crawler, directory: Path) -> None:
    """Scrapy's ``SpiderState`` extension pickles ``spider.state`` (where a
    spider may keep tokens) to ``JOBDIR/spider.state`` when the spider closes,
    with the process's umask (0644). An existing file is made 0600, which a
    rewrite keeps; a missing one is created 0600 holding the empty state
    Scrapy starts from (``{}``), before the extension reads it."""
    extensions = getattr(crawler.extensions, "middlewares", ())
    if not any(isinstance(extension, SpiderState) for extension in extensions):
        return
    path = directory / "spider.state"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        return
    with os.fdopen(fd, "wb") as file:
        pickle.dump({}, file, protocol=pickle.HIGHEST_PROTOCOL)


def _refuse_scrapy_queue(dqdir: Path) -> None:
    """Requests queued by Scrapy's own scheduler (this one never writes
    ``active.json``) would be ignored silently."""
    path = dqdir / "active.json"
    if not path.exists():
        return
    with path.open(encoding="utf-8") as f:
        state = json.load(f)
    if state:
        raise JobdirError(
            f"{dqdir.parent} holds requests queued by Scrapy's own JOBDIR ({path}); resume it "
            "with CDP_POOL_JOBDIR_DURABLE = False, or start a new JOBDIR"
        )
