"""A crawl the plugin refuses to start (an invalid ``CDP_POOL_*`` value, an
embedded server that cannot run here, a JOBDIR another crawl holds...) is
reported as one ERROR line naming the setting or the cause.

The add-on raises its refusals from ``update_settings``, which Scrapy runs in
the task that starts the crawl; ``scrapy crawl`` then exits 1, but Scrapy
re-raises the error so that asyncio reports it, at the task's end, as "Task
exception was never retrieved" with a 20-line traceback. :func:`refusals_reported`
logs the error's message once and marks it, and an exception handler on the
running event loop drops asyncio's report of a marked error (every other
report goes to the handler that was there before). The traceback is logged
at DEBUG level.

Without a running asyncio loop (a ``CrawlerProcess`` on Twisted's reactor,
``FORCE_CRAWLER_PROCESS = True``), Twisted reports the error its own way
("Unhandled error in Deferred") and nothing is added here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from scrapy_cdp_pool.errors import CDPPoolError

logger = logging.getLogger(__name__)

#: what a start-up refusal is: the checks raise ValueError naming the setting,
#: or one of the plugin's own errors (JobdirLocked, ScrapyInternalsError...)
REFUSALS = (ValueError, CDPPoolError)
_REPORTED = "_cdp_pool_start_refusal"
#: asyncio's message for a task's exception nobody awaited (asyncio/tasks.py)
_UNRETRIEVED = "Task exception was never retrieved"


@contextmanager
def refusals_reported(crawler: Any) -> Iterator[None]:
    """Report a refusal raised inside the block (:data:`REFUSALS`) as one
    ERROR line, then re-raise it: Scrapy marks the crawl failed (``scrapy
    crawl`` exits 1). Anything else passes through untouched."""
    try:
        yield
    except REFUSALS as e:
        loop = _running_loop()
        if loop is not None:  # else reported by whoever runs the crawl, as it does
            extra = {"crawler": crawler} if crawler is not None else None
            logger.error("The crawl cannot start: %s", e, extra=extra)
            logger.debug("The refusal's traceback", exc_info=e, extra=extra)
            setattr(e, _REPORTED, True)
            _drop_reports_of_refusals(loop)
        raise


class _RefusalReportFilter:
    """A loop exception handler: asyncio's report of a refused start (already
    logged) is dropped; every other goes to ``previous`` (or asyncio's own)."""

    def __init__(self, previous: Any) -> None:
        self.previous = previous

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exception = context.get("exception")
        if context.get("message") == _UNRETRIEVED and getattr(exception, _REPORTED, False):
            return
        if self.previous is None:
            loop.default_exception_handler(context)
        else:
            self.previous(loop, context)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _drop_reports_of_refusals(loop: asyncio.AbstractEventLoop) -> None:
    current = loop.get_exception_handler()
    if not isinstance(current, _RefusalReportFilter):
        loop.set_exception_handler(_RefusalReportFilter(current))
