"""DurableDupeFilter: ``DUPEFILTER_CLASS`` whose fingerprints are in the JOBDIR
database, written in the same transaction as the request they let through.

Scrapy's ``RFPDupeFilter`` appends to ``requests.seen`` through a buffer, so a
killed crawl forgets what it had seen and fetches finished pages again. Here a
fingerprint is committed with the push of its request (the scheduler's
transaction): after a crash either both are stored or neither is, so a request
is never "seen" without being queued, and a finished one is never fetched again.
Lookups go to the database (its primary key), so memory does not grow with the
crawl. Without ``JOBDIR`` it is Scrapy's ``RFPDupeFilter``, in memory.

The store is opened when the scheduler opens (``open()``), not when the
dupefilter is built: a JOBDIR refused then (locked, damaged) stops the crawl
through the engine's start, which closes what it opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.dupefilters import RFPDupeFilter
from scrapy.utils.job import job_dir

from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.jobdir.store import JobStore, job_store

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.utils.request import RequestFingerprinterProtocol
    from twisted.internet.defer import Deferred


class DurableDupeFilter(RFPDupeFilter):
    def __init__(
        self,
        store: JobStore | None = None,
        debug: bool = False,
        *,
        fingerprinter: RequestFingerprinterProtocol | None = None,
        crawler: Crawler | None = None,
    ) -> None:
        """``store``, or ``crawler`` whose JOBDIR store :meth:`open` opens;
        neither: in memory."""
        super().__init__(None, debug, fingerprinter=fingerprinter)
        self.store = store
        self._crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(
            None,
            crawler.settings.getbool("DUPEFILTER_DEBUG"),
            fingerprinter=crawler.request_fingerprinter,
            crawler=crawler if job_dir(crawler.settings) else None,
        )

    def _store(self) -> JobStore | None:
        if self.store is None and self._crawler is not None:
            self.store = job_store(runtime_of(self._crawler))
        return self.store

    def open(self) -> Deferred[None] | None:
        self._store()
        return super().open()

    def request_seen(self, request: Request) -> bool:
        store = self._store()
        if store is None:
            return super().request_seen(request)
        return not store.add_fingerprint(self.fingerprinter.fingerprint(request))
