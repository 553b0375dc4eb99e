"""DurableSpiderState: Scrapy's ``SpiderState`` (``JOBDIR/spider.state``),
written whole or not at all, and a disk that refuses it reported as the
crawl's other files are.

Scrapy's own writes the file in place at ``spider_closed``: a disk full
midway leaves it cut short, and a read-only or failing disk (the crawl
already stopped for it, shared/disk_full.py) adds an ERROR with a traceback
from the signal handler. This one writes a temporary file beside it and
renames it over the old one; a write its disk refuses is counted like any
other (:func:`~scrapy_cdp_pool.shared.disk_full.stop_for_full_disk`: one ERROR
per crawl, naming the file) and the previous ``spider.state`` stays. The
add-on puts it in Scrapy's ``SpiderState``'s place with the durable JOBDIR.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.extensions.spiderstate import SpiderState

from scrapy_cdp_pool.shared.disk_full import is_disk_full, stop_for_full_disk

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class DurableSpiderState(SpiderState):
    crawler: Crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        state = super().from_crawler(crawler)
        state.crawler = crawler
        return state

    def spider_opened(self, spider: Spider) -> None:
        """Scrapy's, except that a ``spider.state`` cut short (written by
        Scrapy's own on a full disk, or left empty by a file system that
        failed) is named in a WARNING and the spider starts with an empty
        state, instead of an ``EOFError`` traceback and no state at all."""
        try:
            super().spider_opened(spider)
        except (EOFError, pickle.UnpicklingError) as e:
            logger.warning(
                "%s cannot be read (%s: %s): the spider starts with an empty state",
                self.statefn, type(e).__name__, e, extra={"crawler": self.crawler},
            )  # fmt: skip
            spider.state = {}  # type: ignore[attr-defined]

    def spider_closed(self, spider: Spider) -> None:
        if not self.jobdir:
            return
        path = Path(self.statefn)
        partial = path.with_name(path.name + ".partial")
        try:
            # 0600 as the file it replaces (a spider may keep tokens there:
            # jobdir/scheduler.py's _private_spider_state)
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as file:
                pickle.dump(spider.state, file, protocol=4)  # type: ignore[attr-defined]
            os.replace(partial, path)
        except OSError as e:
            with contextlib.suppress(OSError):
                partial.unlink()
            if not is_disk_full(e):
                raise
            stop_for_full_disk(self.crawler, path, "the spider's state (spider.state)", e)
