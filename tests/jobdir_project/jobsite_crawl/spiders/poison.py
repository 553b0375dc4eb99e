"""Send ``POISON_PAGES`` rendered pages of the test site's ``/jobsite``
(``JOBSITE_URL`` with ``{n}`` for the page) and one more, page
``POISON_PAGES``, that makes its worker exit (``os._exit(3)``, as an OOM kill
would end it) each time it is rendered, at the lowest priority. An item
``{"n": n}`` per page; the errback writes ``{"failed": n, "error": <class>}``."""

from __future__ import annotations

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

    def parse(self, response: Response) -> Any:
        n = response.meta["n"]
        if n == self.settings.getint("POISON_PAGES"):
            print("POISON", os.getpid(), flush=True)
            os._exit(3)
        yield {"n": n}

    def failed(self, failure: Failure) -> Any:
        yield {"failed": failure.request.meta["n"], "error": type(failure.value).__name__}
