"""Durable JOBDIR: pause and resume a crawl with nothing lost or done twice, even
after SIGKILL. The add-on installs these when ``JOBDIR`` is set (unless
``CDP_POOL_JOBDIR_DURABLE = False``): one SQLite database per JOBDIR holds the
queued requests and the fingerprints; a request handed out is forgotten only
once the engine is done with it."""

from scrapy_cdp_pool.jobdir.dupefilter import DurableDupeFilter
from scrapy_cdp_pool.jobdir.queues import SqliteFifoQueue, SqliteLifoQueue
from scrapy_cdp_pool.jobdir.scheduler import DurableScheduler
from scrapy_cdp_pool.jobdir.store import JobStore, StoredRequest, open_jobdir

__all__ = [
    "DurableDupeFilter",
    "DurableScheduler",
    "JobStore",
    "SqliteFifoQueue",
    "SqliteLifoQueue",
    "StoredRequest",
    "open_jobdir",
]
