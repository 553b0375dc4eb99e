"""Crawl every page of the test site's ``/jobsite``, rendered, leaves sent as
the identities of ``PROFILES`` (page n as ``PROFILES[n % len]``), every fourth
page with actions whose results the item shows.

With ``HOLD_HUB = h``, hub h's callback yields half its links, then an item
``{"hold": h}``, then waits forever: a test kills the crawl there, in the middle
of a burst of new requests. With ``HOLD_ONCE = <path>`` too, only the first
crawl to create that file holds (the cluster tests: another worker redoes the
hub). ``START_DONT_FILTER = True`` sends the start request with
``dont_filter`` (every cluster worker sends it; it is stored once).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator
from typing import Any

import scrapy
from scrapy.http import Response

ACTIONS = [["wait_for_selector", "#js"], ["evaluate", "document.getElementById('js').textContent"]]


class JobsiteSpider(scrapy.Spider):
    name = "jobsite"

    async def start(self) -> AsyncIterator[Any]:
        yield scrapy.Request(
            self.settings["JOBSITE_URL"],
            meta=self.meta_for(0),
            dont_filter=self.settings.getbool("START_DONT_FILTER"),
        )

    def meta_for(self, n: int) -> dict[str, Any]:
        meta: dict[str, Any] = {"cdp": True}
        profiles = self.settings.getlist("PROFILES")
        if profiles and n > self.settings.getint("JOBSITE_HUBS"):
            meta["cdp_profile"] = profiles[n % len(profiles)]
        if n % 4 == 0:
            meta["cdp_actions"] = ACTIONS
        return meta

    def first_to_hold(self) -> bool:
        path = self.settings.get("HOLD_ONCE")
        if not path:
            return True
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            return False
        return True

    async def parse(self, response: Response) -> AsyncIterator[Any]:
        n = int(response.css("#n::text").get(""))
        yield {
            "n": n,
            "session": response.css("#session::text").get(),
            "js": response.css("#js::text").get(),
            "profile": response.meta.get("cdp_profile"),
            "results": response.meta.get("cdp_results"),
        }
        links = response.css("a.page::attr(href)").getall()
        hold = n == self.settings.getint("HOLD_HUB", -1) and self.first_to_hold()
        for i, href in enumerate(links):
            if hold and i == len(links) // 2:
                yield {"hold": n}
                await asyncio.Event().wait()  # until the test kills the crawl
            match = re.search(r"/jobsite/(\d+)", href)
            if match:
                yield response.follow(href, meta=self.meta_for(int(match.group(1))))
