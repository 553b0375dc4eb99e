"""The one place that reads Scrapy's engine internals: which requests the
engine still holds.

Scrapy 2.19 offers no signal for "the engine is done with a request" (its
callback output scheduled, its items through the pipelines). The engine keeps
those requests in ``engine._slot.inprogress`` from the start of the download to
the end of the scrape; this module only reads that set. :func:`check` runs when
the scheduler opens, so a Scrapy without it fails at start-up, loudly.
"""

from __future__ import annotations

from collections.abc import Container
from typing import TYPE_CHECKING, Any

from scrapy import Request

from scrapy_cdp_pool.errors import JobdirError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def in_progress(crawler: Crawler) -> Container[Request]:
    """Requests the engine holds; none once its spider slot is gone."""
    slot: Any = getattr(crawler.engine, "_slot", None)
    if slot is None:
        return frozenset()
    requests: Container[Request] = slot.inprogress
    return requests


def check(crawler: Crawler) -> None:
    """:raises JobdirError: this Scrapy's engine does not keep its requests
    where :func:`in_progress` reads them."""
    slot: Any = getattr(crawler.engine, "_slot", None)
    if slot is None or not isinstance(getattr(slot, "inprogress", None), set):
        raise JobdirError(
            "the durable JOBDIR needs Scrapy 2.19's engine (engine._slot.inprogress); "
            "set CDP_POOL_JOBDIR_DURABLE = False to use Scrapy's own JOBDIR"
        )
