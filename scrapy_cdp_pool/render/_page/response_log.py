"""The responses a page received whose URL a ``wait_for_response`` action of
the request names, for that action to find (docs/page-control.md).

Playwright's ``page.wait_for_response`` sees only responses that arrive after
it is called, and its users wrap the step that causes the response in
``expect_response``. A plain-data action list cannot wrap a step: here
``wait_for_response`` takes the first matching response received since the
previous action began (since the page was opened, for the first action),
which one earlier ``wait_for_response`` did not already return; or waits for
the next one. Only responses matching a pattern of the request's actions are
kept, so the log stays as small as what is waited for.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from scrapy_cdp_pool.settings.url_patterns import matches_any


@dataclass
class SeenResponse:
    request_id: str
    received_at: float  # time.monotonic()
    data: dict[str, Any]


class ResponseLog:
    """Fed the page's ``Network`` events; ``patterns`` are the URL patterns
    of the request's ``wait_for_response`` actions (see
    :mod:`~scrapy_cdp_pool.settings.url_patterns`)."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        self.patterns = patterns
        self.seen: list[SeenResponse] = []
        self.returned: set[str] = set()
        self.changed = asyncio.Event()
        self._methods: dict[str, str] = {}
        #: when each action began, in order (see :meth:`mark`)
        self.action_starts: list[float] = []

    def mark(self) -> None:
        """An action begins now."""
        self.action_starts.append(time.monotonic())

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Network.requestWillBeSent":
            url = str(params.get("request", {}).get("url", ""))
            if matches_any(self.patterns, url):
                self._methods[str(params.get("requestId"))] = str(
                    params.get("request", {}).get("method", "GET")
                )
        elif method == "Network.responseReceived":
            response = params.get("response") or {}
            url = str(response.get("url", ""))
            if not matches_any(self.patterns, url):
                return
            request_id = str(params.get("requestId"))
            data = {
                "url": url,
                "status": int(response.get("status") or 0),
                "method": self._methods.pop(request_id, "GET"),
                "resource_type": str(params.get("type", "Other")).lower(),
                "headers": dict(response.get("headers") or {}),
            }
            self.seen.append(SeenResponse(request_id, time.monotonic(), data))
            self.changed.set()

    async def wait_for(self, pattern: str) -> dict[str, Any]:
        """The first response matching ``pattern`` received since the
        previous action began and not returned before (see the module),
        waiting for one as long as the caller lets it.

        :returns: ``{"url", "status", "method", "resource_type", "headers"}``.
        """
        since = self.action_starts[-2] if len(self.action_starts) > 1 else 0.0
        while True:
            self.changed.clear()
            for seen in self.seen:
                if (
                    seen.received_at >= since
                    and seen.request_id not in self.returned
                    and matches_any((pattern,), seen.data["url"])
                ):
                    self.returned.add(seen.request_id)
                    return dict(seen.data)
            await self.changed.wait()
