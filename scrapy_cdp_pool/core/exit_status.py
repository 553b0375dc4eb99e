"""ExitStatus: ``scrapy crawl`` exits non-zero when the crawl ended with work
lost or left undone that the user did not ask to leave.

Scrapy's ``scrapy crawl`` exits 0 whatever the ``finish_reason``. Features
name the reasons that are failures (:func:`fail_exit_on`): the pool's
``cdp_pool_unavailable``, the cluster's ``cdp_pool_cluster_state_lost`` and
``cdp_pool_cluster_redis_error``, a full disk's ``cdp_pool_disk_full``, and,
in a cluster worker, ``shutdown`` when no SIGINT or SIGTERM asked for it (an
error that stopped the engine). When the spider closes with one of them, one
WARNING says so (the feature logged the cause as an ERROR) and, once the
engine has stopped, the crawl is marked failed the one way Scrapy's crawler
process reads
(:func:`~scrapy_cdp_pool.scrapy_internals.mark_crawl_failed`): ``scrapy
crawl`` exits with status 1, as for a crawl that could not start.

A script that runs its crawls itself (``CrawlerProcess``,
``AsyncCrawlerProcess``, ``CrawlerRunner``) exits as it likes: it ends with
``sys.exit(scrapy_cdp_pool.exit_status(process))`` (:func:`exit_status`) to
follow the same rule (docs/resilience.md, Exit status).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.crawler import Crawler

from scrapy_cdp_pool import scrapy_internals
from scrapy_cdp_pool.core.parts import PartKey
from scrapy_cdp_pool.core.runtime import runtime_of

if TYPE_CHECKING:
    from scrapy import Spider

logger = logging.getLogger(__name__)

POOL_UNAVAILABLE_REASON = "cdp_pool_unavailable"
"""The ``finish_reason`` of a crawl whose pool could not serve at all (its
embedded server did not start after its attempts, no endpoint answers): exit
status 1."""

UNASKED_SHUTDOWN = "shutdown"
"""Scrapy's reason when the engine is stopped with the spider open: a failure
only when no shutdown signal asked for it (see :func:`fail_exit_on`)."""


class ExitStatus:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.reasons: set[str] = set()
        self.unasked_shutdown = False
        self.failed: str | None = None
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if reason == UNASKED_SHUTDOWN:
            if not self.unasked_shutdown or scrapy_internals.shutdown_signal_received():
                return
            why = "the engine was stopped by an error, not by SIGINT or SIGTERM"
        elif reason in self.reasons:
            why = "work was lost or left undone"
        else:
            return
        self.failed = reason
        logger.warning(
            "The crawl ended with finish_reason %r (%s): exit status 1", reason, why,
            extra={"crawler": self.crawler},
        )  # fmt: skip

    def engine_stopped(self) -> None:
        if self.failed is not None:
            scrapy_internals.mark_crawl_failed(self.crawler)


_EXIT_STATUS: PartKey[ExitStatus] = PartKey("exit status")


def fail_exit_on(
    crawler: Crawler, reasons: Iterable[str] = (), *, unasked_shutdown: bool = False
) -> None:
    """``scrapy crawl`` exits 1 when the spider closes with one of
    ``reasons`` (or, with ``unasked_shutdown``, with ``shutdown`` that no
    SIGINT or SIGTERM asked for)."""
    status = runtime_of(crawler).part(_EXIT_STATUS, lambda: ExitStatus(crawler))
    status.reasons.update(reasons)
    status.unasked_shutdown |= unasked_shutdown


def exit_status(ran: Any) -> int:
    """The exit status a process that ran ``ran`` should end with: 1 when a
    crawl did not finish its work, else 0 (the rule ``scrapy crawl`` follows).

    ``ran`` is the ``CrawlerProcess`` (``AsyncCrawlerProcess``,
    ``CrawlerRunner``) once its crawls ended: 1 when one of them ended with a
    failing ``finish_reason`` (:func:`fail_exit_on`) or could not start, as
    Scrapy's ``scrapy crawl`` reads it; or one ``Crawler``: 1 when it ended
    with a failing ``finish_reason`` or never opened its spider::

        process = CrawlerProcess(settings)
        process.crawl(MySpider)
        process.start()
        sys.exit(scrapy_cdp_pool.exit_status(process))
    """
    if isinstance(ran, Crawler):
        return 1 if scrapy_internals.crawl_failed(ran) else 0
    failed = scrapy_internals.crawls_failed(ran)
    if failed is None:
        raise TypeError(
            f"exit_status() takes a Crawler or the CrawlerProcess (CrawlerRunner) that ran "
            f"the crawls, not {type(ran).__name__}"
        )
    return 1 if failed else 0
