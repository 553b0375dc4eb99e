"""PoisonedRequestMiddleware: a request whose lease ran out too often fails by name.

A request whose workers all stop before finishing it (a page that crashes or
exhausts its worker every time it renders, an OOM kill) would go round the
fleet for ever: each lease that runs out puts it back. The take counts them
per request (``<prefix>expired``, forgotten when the request is acknowledged);
at ``CDP_POOL_CLUSTER_MAX_DELIVERIES`` the request is handed out once more,
marked (:data:`POISONED_META_KEY`), and fails here, before any download,
with :class:`~scrapy_cdp_pool.errors.RequestPoisoned`: through its errback,
counted in ``cdp_pool/cluster/poisoned`` (and, by the failure recorder, in
``cdp_pool/failures/RequestPoisoned`` and ``CDP_POOL_FAILURES_FILE``), logged
once (ERROR). It is not retried. Installed by the add-on in a cluster crawl,
at order 510 (before every other middleware of the plugin).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.errors import RequestPoisoned

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

POISONED_META_KEY = "_cdp_cluster_poisoned"
"""Set by the cluster scheduler on a poisoned request: its leases that ran out."""


class PoisonedRequestMiddleware:
    def __init__(self, crawler: Crawler, max_deliveries: int) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.max_deliveries = max_deliveries

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, runtime_of(crawler).config.cluster.max_deliveries)

    def process_request(self, request: Request) -> None:
        deliveries = request.meta.pop(POISONED_META_KEY, None)
        if deliveries is None:
            return
        self.stats.inc_value("cdp_pool/cluster/poisoned")
        message = (
            f"{request}: its lease ran out {deliveries} times (CDP_POOL_CLUSTER_MAX_DELIVERIES = "
            f"{self.max_deliveries}): every worker that took it stopped before finishing it "
            "(killed, out of memory, cut off from Redis); failed instead of handed to another"
        )
        logger.error("Cluster crawl: %s", message, extra={"crawler": self.crawler})
        raise RequestPoisoned(message, deliveries)
