"""Spy (an extension, only with ``SPY_FILE``): one JSON line per navigation
and per host pause this worker announced, written at once; the real methods
are called.

- ``{"navigate": url, "t": ..., "checked": ...}``: ``time.monotonic()`` when
  the navigation started, and when what the handler's last pause check
  before it (``remaining(host)``, in the same task, right before the
  navigation) answered was read (``checked_at``: that call, or the take that
  handed the request out just before): from then on a pause written to Redis
  is seen.
- ``{"pause": host, "t": ..., "url": ...}``: once the pause is set locally
  and written to Redis; the URL of the response that asked for it (its 429)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import IO, Any

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from scrapy_cdp_pool.cluster.host_pause import ClusterHostPauseMiddleware
from scrapy_cdp_pool.render._page.page import Page


class Spy:
    def __init__(self, path: str) -> None:
        self.file: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - for the process's life
        navigate = Page.navigate
        observe = ClusterHostPauseMiddleware.observe
        pause = ClusterHostPauseMiddleware.pause
        remaining = ClusterHostPauseMiddleware.remaining
        checks: dict[int, float] = {}  # id of the task -> when its last check began
        observed: list[str] = [""]  # the URL whose response is being read (in one call)
        spy = self

        async def spy_navigate(page: Page, timeout_s: float) -> None:
            now = time.monotonic()
            checked = checks.pop(id(asyncio.current_task()), now)
            spy.write({"navigate": page.spec.url, "t": now, "checked": checked})
            await navigate(page, timeout_s)

        def spy_remaining(middleware: ClusterHostPauseMiddleware, host: str) -> float:
            left = remaining(middleware, host)
            checks[id(asyncio.current_task())] = middleware.checked_at
            return left

        def spy_observe(middleware: ClusterHostPauseMiddleware, request: Any, url: str,
                        *args: Any) -> None:  # fmt: skip
            observed[0] = url
            try:
                observe(middleware, request, url, *args)
            finally:
                observed[0] = ""

        def spy_pause(middleware: ClusterHostPauseMiddleware, host: str, *args: Any) -> None:
            pause(middleware, host, *args)
            spy.write({"pause": host, "t": time.monotonic(), "url": observed[0]})

        Page.navigate = spy_navigate  # type: ignore[method-assign]
        ClusterHostPauseMiddleware.observe = spy_observe  # type: ignore[method-assign]
        ClusterHostPauseMiddleware.pause = spy_pause  # type: ignore[method-assign]
        ClusterHostPauseMiddleware.remaining = spy_remaining  # type: ignore[method-assign]

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Spy:
        path = crawler.settings.get("SPY_FILE")
        if not path:
            raise NotConfigured
        return cls(path)

    def write(self, record: dict[str, Any]) -> None:
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
