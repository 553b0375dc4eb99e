"""RetryPolicyMiddleware: Scrapy's retry settings, with exponential backoff and
jitter that blocks nothing.

It replaces :class:`scrapy.downloadermiddlewares.retry.RetryMiddleware` (the
add-on swaps them, same order 550) and reads the same settings and meta keys:
``RETRY_ENABLED``, ``RETRY_TIMES``, ``RETRY_HTTP_CODES``, ``RETRY_EXCEPTIONS``,
``RETRY_PRIORITY_ADJUST``, ``RETRY_GIVE_UP_LOG_LEVEL``; ``dont_retry``,
``max_retry_times``, ``priority_adjust``, ``give_up_log_level``. The retry
request is built by Scrapy's own
:func:`~scrapy.downloadermiddlewares.retry.get_retry_request` (same stats, same
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
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.downloadermiddlewares.retry import get_retry_request
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.utils.misc import load_object
from scrapy.utils.response import response_status_message

from scrapy_cdp_pool.resilience.backoff import backoff_delay, parse_retry_after
from scrapy_cdp_pool.runtime import runtime_of
from scrapy_cdp_pool.scheduling.gates import NOT_BEFORE_META_KEY

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


def retry_http_codes(settings: BaseSettings) -> frozenset[int]:
    """``RETRY_HTTP_CODES``; at Scrapy's default, without its 4xx but 429."""
    codes = {int(code) for code in settings.getlist("RETRY_HTTP_CODES")}
    if (settings.getpriority("RETRY_HTTP_CODES") or 0) <= SETTINGS_PRIORITIES["default"]:
        codes = {code for code in codes if code >= 500 or code == 429}
    return frozenset(codes)


class RetryPolicyMiddleware:
    """Stat: ``cdp_pool/retry_delay_seconds_max``, the longest wait before a
    retry; Scrapy's ``retry/count``, ``retry/reason_count/<reason>`` and
    ``retry/max_reached`` as usual."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("RETRY_ENABLED"):
            raise NotConfigured
        config = runtime_of(crawler).config
        self.crawler = crawler
        self.max_retry_times = settings.getint("RETRY_TIMES")
        self.retry_http_codes = retry_http_codes(settings)
        self.priority_adjust = settings.getint("RETRY_PRIORITY_ADJUST")
        self.give_up_log_level = settings["RETRY_GIVE_UP_LOG_LEVEL"]
        self.exceptions_to_retry = tuple(
            load_object(path) if isinstance(path, str) else path
            for path in settings.getlist("RETRY_EXCEPTIONS")
        )
        self.backoff_base_s = config.retry_backoff_base_s
        self.backoff_max_s = config.retry_backoff_max_s

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if request.meta.get("dont_retry", False) or response.status not in self.retry_http_codes:
            return response
        wait_s = 0.0
        if response.status in (429, 503):
            wait_s = parse_retry_after(response.headers.get(b"Retry-After")) or 0.0
        reason = response_status_message(response.status)
        return self._retry(request, reason, wait_s) or response

    def process_exception(self, request: Request, exception: Exception) -> Request | None:
        if isinstance(exception, self.exceptions_to_retry) and not request.meta.get(
            "dont_retry", False
        ):
            return self._retry(request, exception, 0.0)
        return None

    def _retry(self, request: Request, reason: str | Exception, wait_s: float) -> Request | None:
        meta: dict[str, Any] = request.meta
        spider = self.crawler.spider
        assert spider is not None  # noqa: S101 - downloads run with an open spider
        retry = get_retry_request(
            request,
            spider=spider,
            reason=reason,
            max_retry_times=meta.get("max_retry_times", self.max_retry_times),
            priority_adjust=meta.get("priority_adjust", self.priority_adjust),
            give_up_log_level=meta.get("give_up_log_level", self.give_up_log_level),
        )
        if retry is None:
            return None
        delay_s = backoff_delay(retry.meta["retry_times"], self.backoff_base_s, self.backoff_max_s)
        delay_s = max(delay_s, min(wait_s, self.backoff_max_s))
        # Epoch seconds, not the monotonic clock: the meta is stored (JOBDIR,
        # a shared queue) and read by another process.
        retry.meta[NOT_BEFORE_META_KEY] = time.time() + delay_s
        self.crawler.stats.max_value("cdp_pool/retry_delay_seconds_max", round(delay_s, 3))
        return retry
