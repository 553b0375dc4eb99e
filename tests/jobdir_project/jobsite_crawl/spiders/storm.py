"""Send ``STORM_REQUESTS`` rendered requests to ``STORM_URL`` + i (the test
site's ``/storm``, a host answering a share of them with 429 and
``Retry-After``); an item ``{"n": i}`` per response, whatever its status."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import scrapy
from scrapy.http import Response


class StormSpider(scrapy.Spider):
    name = "storm"
    custom_settings = {"RETRY_ENABLED": False, "HTTPERROR_ALLOW_ALL": True}

    async def start(self) -> AsyncIterator[Any]:
        url = self.settings["STORM_URL"]
        for i in range(self.settings.getint("STORM_REQUESTS")):
            yield scrapy.Request(f"{url}{i}", meta={"cdp": True, "i": i})

    def parse(self, response: Response) -> Any:
        yield {"n": response.meta["i"], "status": response.status}
