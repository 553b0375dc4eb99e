"""DurableDupeFilter: ``DUPEFILTER_CLASS`` whose fingerprints are in the JOBDIR
database, written in the same transaction as the request they let through.

Scrapy's ``RFPDupeFilter`` appends to ``requests.seen`` through a buffer, so a
killed crawl forgets what it had seen and fetches finished pages again. Here a
fingerprint is committed with the push of its request (the scheduler's
transaction): after a crash either both are stored or neither is, so a request
is never "seen" without being queued, and a finished one is never fetched again.
Lookups go to the database (its primary key), so memory does not grow with the
crawl. Without ``JOBDIR`` it is Scrapy's ``RFPDupeFilter``, in memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.dupefilters import RFPDupeFilter
from scrapy.utils.job import job_dir

from scrapy_cdp_pool.jobdir.store import JobStore, store_for

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.utils.request import RequestFingerprinterProtocol


class DurableDupeFilter(RFPDupeFilter):
    def __init__(
        self,
        store: JobStore | None = None,
        debug: bool = False,
        *,
        fingerprinter: RequestFingerprinterProtocol | None = None,
    ) -> None:
        super().__init__(None, debug, fingerprinter=fingerprinter)
        self.store = store

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(
            store_for(crawler) if job_dir(crawler.settings) else None,
            crawler.settings.getbool("DUPEFILTER_DEBUG"),
            fingerprinter=crawler.request_fingerprinter,
        )

    def request_seen(self, request: Request) -> bool:
        if self.store is None:
            return super().request_seen(request)
        return not self.store.add_fingerprint(self.fingerprinter.fingerprint(request))
