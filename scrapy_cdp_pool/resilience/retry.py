"""RetryPolicyMiddleware: Scrapy's retry settings, with exponential backoff and
jitter that blocks nothing.

It replaces :class:`scrapy.downloadermiddlewares.retry.RetryMiddleware` (the
add-on swaps them, same order 550) and reads the same settings and meta keys:
``RETRY_ENABLED``, ``RETRY_TIMES``, ``RETRY_HTTP_CODES``, ``RETRY_EXCEPTIONS``,
``RETRY_PRIORITY_ADJUST``, ``RETRY_GIVE_UP_LOG_LEVEL``; ``dont_retry``,
``max_retry_times``, ``priority_adjust``, ``give_up_log_level``. It is a
subclass of Scrapy's, so the retry request is Scrapy's own (same stats, same
logs). Two differences:

- 4xx are not retried, except 429: when ``RETRY_HTTP_CODES`` is left at Scrapy's
  default, its 408 is dropped. A value the project sets is used as it is.
- The retry request carries ``meta["cdp_not_before"]`` (epoch seconds): the
  scheduler queue holds it until then while every other request goes on. The
  delay is ``CDP_POOL_RETRY_BACKOFF_BASE_SECONDS * 2 ** (retry - 1)``, capped at
  ``CDP_POOL_RETRY_BACKOFF_MAX_SECONDS``, with jitter, and at least the
  response's ``Retry-After`` on a 429 or 503.

Each retry is a new request, so it is rendered in a fresh browser context.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from scrapy import Request, Spider
from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.http import Response
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.utils.response import response_status_message

from scrapy_cdp_pool.core.gates import NOT_BEFORE_META_KEY
from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.resilience.backoff import backoff_delay, parse_retry_after

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


def retry_http_codes(settings: BaseSettings) -> frozenset[int]:
    """``RETRY_HTTP_CODES``; at Scrapy's default, without its 4xx but 429."""
    codes = {int(code) for code in settings.getlist("RETRY_HTTP_CODES")}
    if (settings.getpriority("RETRY_HTTP_CODES") or 0) <= SETTINGS_PRIORITIES["default"]:
        codes = {code for code in codes if code >= 500 or code == 429}
    return frozenset(codes)


class RetryPolicyMiddleware(RetryMiddleware):
    """Scrapy's :class:`~scrapy.downloadermiddlewares.retry.RetryMiddleware`
    (its settings, meta keys and retry request), with the retry codes of
    :func:`retry_http_codes` and the backoff above.

    Stat: ``cdp_pool/retry_delay_seconds_max``, the longest wait before a
    retry; Scrapy's ``retry/count``, ``retry/reason_count/<reason>`` and
    ``retry/max_reached`` as usual."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler.settings)  # NotConfigured without RETRY_ENABLED
        config = runtime_of(crawler).config
        self.crawler = crawler
        self.retry_http_codes = set(retry_http_codes(crawler.settings))
        self.backoff_base_s = config.resilience.retry_backoff_base_s
        self.backoff_max_s = config.resilience.retry_backoff_max_s

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Request | Response:
        if request.meta.get("dont_retry", False) or response.status not in self.retry_http_codes:
            return response
        wait_s = 0.0
        if response.status in (429, 503):
            wait_s = parse_retry_after(response.headers.get(b"Retry-After")) or 0.0
        reason = response_status_message(response.status)
        return self._retry(request, reason, wait_s) or response

    def _retry(
        self, request: Request, reason: str | Exception | type[Exception], wait_s: float = 0.0
    ) -> Request | None:
        """Scrapy's retry request (None: no retries left), held in the queue
        until its backoff (at least ``wait_s``, the response's
        ``Retry-After``) is over."""
        retry = super()._retry(request, reason)
        if retry is None:
            return None
        delay_s = backoff_delay(retry.meta["retry_times"], self.backoff_base_s, self.backoff_max_s)
        delay_s = max(delay_s, min(wait_s, self.backoff_max_s))
        # Epoch seconds, not the monotonic clock: the meta is stored (JOBDIR,
        # a shared queue) and read by another process.
        retry.meta[NOT_BEFORE_META_KEY] = time.time() + delay_s
        self.crawler.stats.max_value("cdp_pool/retry_delay_seconds_max", round(delay_s, 3))
        return retry
