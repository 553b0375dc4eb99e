"""``wait_until = "networkidle"``: Playwright's meaning, no network request
in flight for 500 ms after the load event.

Counted from the page's ``Network`` events (``requestWillBeSent`` opens a
request, ``loadingFinished`` / ``loadingFailed`` closes it), the same on
Chromium and Lightpanda. Lightpanda's own ``networkIdle`` lifecycle event fires
as soon as nothing is in flight, without the quiet period, so it is not used.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

#: Playwright's quiet period (``waitUntil: "networkidle"``), seconds
QUIET_S = 0.5


class NetworkActivity:
    """Requests in flight on one page, and when the last one started or
    ended (monotonic seconds)."""

    def __init__(self) -> None:
        self.in_flight: set[str] = set()
        self.last_change = time.monotonic()
        self.changed = asyncio.Event()

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        request_id = params.get("requestId")
        if not request_id:
            return
        if method == "Network.requestWillBeSent":
            # A redirect keeps its request id: still one request in flight.
            self.in_flight.add(request_id)
        elif method in ("Network.loadingFinished", "Network.loadingFailed"):
            self.in_flight.discard(request_id)
        else:
            return
        self.last_change = time.monotonic()
        self.changed.set()

    async def wait_idle(self, quiet_s: float = QUIET_S) -> None:
        """Return once no request has been in flight for ``quiet_s`` seconds
        (the caller bounds the wait)."""
        while True:
            if not self.in_flight:
                left = self.last_change + quiet_s - time.monotonic()
                if left <= 0:
                    return
            else:
                left = None
            self.changed.clear()
            try:
                async with asyncio.timeout(left):
                    await self.changed.wait()
            except TimeoutError:
                continue
