"""Send ``POISON_PAGES`` rendered pages of the test site's ``/jobsite``
(``JOBSITE_URL`` with ``{n}`` for the page) and one more, page
``POISON_PAGES``, that makes its worker exit (``os._exit(3)``, as an OOM kill
would end it) each time it is rendered, at the lowest priority (so it is
taken only once no other page is queued). Before it exits, the worker
acknowledges the pages it has done (as a worker between two pages would): a
killed worker's done but unacknowledged pages are done again by design, which
this test of poison requests leaves out. An item ``{"n": n}`` per page; the
errback writes ``{"failed": n, "error": <class>}``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import scrapy
from scrapy.http import Response
from twisted.python.failure import Failure


class PoisonSpider(scrapy.Spider):
    name = "poison"

    async def start(self) -> AsyncIterator[Any]:
        pages = self.settings.getint("POISON_PAGES")
        for n in range(pages + 1):
            yield scrapy.Request(
                self.settings["JOBSITE_URL"].format(n=n),
                meta={"cdp": True, "n": n},
                priority=-1 if n == pages else 0,
                errback=self.failed,
            )

    async def parse(self, response: Response) -> AsyncIterator[Any]:
        n = response.meta["n"]
        if n == self.settings.getint("POISON_PAGES"):
            engine = self.crawler.engine
            assert engine is not None
            scheduler: Any = engine.scheduler
            while len(scheduler.held) > 1:  # this page, and pages done but not acknowledged
                scheduler.has_pending_requests()  # acknowledges those done
                await asyncio.sleep(0.05)
            print("POISON", os.getpid(), flush=True)
            os._exit(3)
        yield {"n": n}

    def failed(self, failure: Failure) -> Any:
        yield {"failed": failure.request.meta["n"], "error": type(failure.value).__name__}
