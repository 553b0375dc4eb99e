"""Why Lightpanda closed a page's connection, from what it writes on stderr.

Lightpanda 1.0.2 closes a page's CDP connection (WebSocket close 1001, "going
away", the same as a server shutting down) in two cases that the WebSocket
alone does not tell apart, and says which on stderr, with the page's URL:

- ``$msg="JS heap limit script" ... page_url=URL``: the page's JavaScript heap
  reached ``--v8-max-heap-mb`` (``CDP_POOL_PAGE_HEAP_LIMIT_MB``; a bare
  ``"JS heap limit reached"`` line may come without the URL);
- ``$msg="watchdog stall script" ... stalled_ms=N ... page_url=URL``: its
  watchdog (``--watchdog-ms``) stopped a script that kept the browser busy N
  milliseconds without returning (``for(;;){}``, a loop waiting for layout
  that never comes).

Each embedded Lightpanda server keeps its own :class:`LightpandaReports`
(``server.reports``, reached from a lease through its connection) and feeds it
every stderr line; a render whose connection closed asks that server's
:meth:`LightpandaReports.reported` about its page's URLs.
Remote endpoints' stderr is not seen: their closes stay unexplained.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import deque
from dataclasses import dataclass

HEAP_LIMIT = "heap_limit"
SCRIPT_STALL = "script_stall"

_HEAP_ANY = (b"JS heap limit reached", b"JS heap limit script")
_STALL = b"watchdog stall script"
#: a logfmt value: quoted (when it holds spaces, quotes or ``=``, as a URL
#: with a query string does) or bare
_VALUE = rb'("(?:[^"\\]|\\.)*"|\S+)'
_PAGE_URL = re.compile(rb"\spage_url=" + _VALUE)
_STALLED_MS = re.compile(rb"\sstalled_ms=(\d+)")


@dataclass(frozen=True)
class Report:
    """One page's report: ``kind`` (:data:`HEAP_LIMIT` or :data:`SCRIPT_STALL`),
    its ``url`` (``""`` when the line has none), and for a stall how long the
    script had kept the browser busy (``stalled_ms``, ``None`` if not said)."""

    kind: str
    url: str
    stalled_ms: int | None = None


def _page_url(line: bytes) -> str:
    """The line's ``page_url`` value, unquoted; ``""`` when it has none."""
    match = _PAGE_URL.search(line)
    if match is None:
        return ""
    value = match.group(1)
    if value.startswith(b'"'):
        try:
            return str(json.loads(value))
        except ValueError:
            return value[1:-1].decode("utf-8", "replace")
    return value.decode("utf-8", "replace")


class LightpandaReports:
    """What one Lightpanda server said on stderr about pages it closed: its
    most recent reports (64), and the renders waiting for the next one."""

    def __init__(self) -> None:
        self._reports: deque[Report] = deque(maxlen=64)
        #: renders waiting for the next report (futures of the running loop)
        self._waiters: set[asyncio.Future[None]] = set()

    def note_stderr_line(self, line: bytes) -> None:
        """Feed one line of the server's stderr."""
        if any(text in line for text in _HEAP_ANY):
            report = Report(HEAP_LIMIT, _page_url(line))
        elif _STALL in line:
            stalled = _STALLED_MS.search(line)
            report = Report(
                SCRIPT_STALL, _page_url(line), int(stalled.group(1)) if stalled else None
            )
        else:
            return
        self._reports.append(report)
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _find(self, urls: set[str]) -> Report | None:
        return next((r for r in reversed(self._reports) if r.url in urls), None)

    async def reported(self, urls: set[str], wait_s: float = 1.0) -> Report | None:
        """The most recent report about one of ``urls``, waiting up to
        ``wait_s`` seconds for it (stderr and the closed WebSocket arrive in
        either order); ``None`` when none came."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            found = self._find(urls)
            if found is not None:
                return found
            left = deadline - loop.time()
            if left <= 0:
                return None
            waiter = loop.create_future()
            self._waiters.add(waiter)
            try:
                async with asyncio.timeout(left):
                    await waiter
            except TimeoutError:
                return self._find(urls)
            finally:
                self._waiters.discard(waiter)
