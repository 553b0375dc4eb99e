"""HostPauseMiddleware: a 429 (or a 503 with ``Retry-After``) pauses the whole
host, so that no request to it starts until the time the server asked for.

The middleware keeps the pauses; the crawler's host pacing
(:class:`~scrapy_cdp_pool.core.pacing.HostPacing`, which it plugs into as its
:data:`~scrapy_cdp_pool.core.pacing.HOST_PAUSES`) holds requests to them: in
the scheduler queue (:meth:`is_open`), so that every request to the host waits
there, whichever callback produced it, and nothing else waits; and the
requests already past the queue when the pause starts (waiting for a browser
slot, or for one of Scrapy's downloader slots): the download handler reports
each response as soon as its status and headers arrive (:meth:`observe`),
before the request's browser slot is released; it checks the host when a
request gets its slot and right before it navigates, giving the slot back while
the host is paused (:meth:`remaining`), and waits for the pause's end outside
any deadline (:meth:`wait_open`).

``Retry-After`` is read as seconds or an HTTP-date; a 429 without it pauses the
host for ``CDP_POOL_RETRY_BACKOFF_BASE_SECONDS``, doubled for each 429 in a
row, up to ``CDP_POOL_RETRY_BACKOFF_MAX_SECONDS`` (which also caps a longer
``Retry-After``).

Installed by the add-on at order 960: its ``process_response`` sees the raw
response before the request's gates are released (950) and before the retry
policy (550) schedules the retry; it reads responses the handler did not
report already (another handler's).

The host is that of the response's URL (after the browser followed redirects).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.http import Response

from scrapy_cdp_pool.core.gates import RequestGates, url_host
from scrapy_cdp_pool.core.pacing import HOST_PAUSES, HostPacing
from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.resilience.backoff import parse_retry_after, pause_delay
from scrapy_cdp_pool.settings.config import PoolConfig

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

_OBSERVED_META_KEY = "_cdp_pause_observed"
"""Set by :meth:`HostPauseMiddleware.observe`: the response was read already."""


class HostPauseMiddleware:
    """Stats: ``cdp_pool/host_pauses`` (pauses started or extended) and
    ``cdp_pool/host_pause_seconds_max`` (longest pause asked for)."""

    def __init__(
        self, crawler: Crawler, gates: RequestGates, config: PoolConfig, pacing: HostPacing
    ) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.gates = gates
        self.base_s = config.resilience.retry_backoff_base_s
        self.max_s = config.resilience.retry_backoff_max_s
        self._until: dict[str, float] = {}  # host -> time.monotonic() the pause ends
        self._strikes: dict[str, int] = {}  # host -> 429s in a row without Retry-After
        pacing.plug(HOST_PAUSES, self)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = runtime_of(crawler)
        return cls(crawler, runtime.gates, runtime.config, runtime.pacing)

    def process_response(self, request: Request, response: Response) -> Response:
        if request.meta.pop(_OBSERVED_META_KEY, False) or "cached" in response.flags:
            return response
        self._read(url_host(response.url), response.status, response.headers.get(b"Retry-After"))
        return response

    def observe(self, request: Request, url: str, status: int, retry_after: bytes | None) -> None:
        """The download handler received a response for ``request`` from
        ``url``, with ``status`` and a ``Retry-After`` header value (or
        ``None``): pause its host now, before the request's browser slot is
        released (:meth:`process_response` then leaves that response alone)."""
        self._read(url_host(url), status, retry_after)
        request.meta[_OBSERVED_META_KEY] = True

    def _read(self, host: str, status: int, header: bytes | None) -> None:
        if status == 429 or (status == 503 and header is not None):
            seconds = parse_retry_after(header)
            if seconds is None and status == 429:
                strikes = self._strikes[host] = self._strikes.get(host, 0) + 1
                seconds = pause_delay(strikes, self.base_s, self.max_s)
            if seconds is not None:
                self.pause(host, seconds, status, header)
        elif status < 500:
            self._strikes.pop(host, None)

    def pause(self, host: str, seconds: float, status: int, header: bytes | None) -> None:
        """No request to ``host`` starts in the next ``seconds`` (capped at
        ``CDP_POOL_RETRY_BACKOFF_MAX_SECONDS``)."""
        if seconds > self.max_s:
            logger.warning(
                "%s asked for a %.1f s pause (Retry-After: %r); pausing %.1f s, "
                "CDP_POOL_RETRY_BACKOFF_MAX_SECONDS",
                host,
                seconds,
                header,
                self.max_s,
                extra={"crawler": self.crawler},
            )
            seconds = self.max_s
        if seconds <= 0:
            return
        until = time.monotonic() + seconds
        if until <= self._until.get(host, 0.0):
            return
        self._until[host] = until
        self.stats.inc_value("cdp_pool/host_pauses")
        self.stats.max_value("cdp_pool/host_pause_seconds_max", round(seconds, 3))
        logger.info(
            "Pausing requests to %s for %.1f s (HTTP %d, Retry-After: %s)",
            host,
            seconds,
            status,
            header.decode("latin-1") if header else "none",
            extra={"crawler": self.crawler},
        )
        self.gates.wake(seconds)

    def remaining(self, host: str) -> float:
        """Seconds until ``host``'s pause ends; ``0.0`` when it is not paused."""
        until = self._until.get(host)
        return max(0.0, until - time.monotonic()) if until is not None else 0.0

    def known_remaining(self, host: str) -> float:
        """:meth:`remaining` (this process's pauses are all it knows)."""
        return self.remaining(host)

    async def wait_open(self, host: str) -> float:
        """Wait until ``host`` is not paused (a pause extended meanwhile is
        waited for too); return the seconds waited."""
        waited = 0.0
        while (remaining := self.remaining(host)) > 0:
            await asyncio.sleep(remaining)
            waited += remaining
        return waited

    def is_open(self, host: str) -> bool:
        """Whether the queue may hand out a request to ``host``: ``False``
        while it is paused here (the engine woken at the pause's end)."""
        until = self._until.get(host)
        if until is None:
            return True
        remaining = until - time.monotonic()
        if remaining <= 0:
            del self._until[host]
            return True
        self.gates.wake(remaining)
        return False
