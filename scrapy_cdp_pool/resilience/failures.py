"""FailureRecorderMiddleware: every request that finally fails, with its reason.

Installed by the add-on at order 540, just below the retry policy (550): in the
response direction it sees what is left once retries are decided, that is the
exception a request gave up with, or a final response with an error status
(``>= 400``). Reasons are the exception's class name
(``DownloadTimeoutError``) or ``http_<status>`` (``http_404``).
``IgnoreRequest`` (offsite, robots.txt, a dropped request) is not a failure.

Stats: ``cdp_pool/failures`` and ``cdp_pool/failures/<reason>``. With
``CDP_POOL_FAILURES_FILE`` set, one JSON object per line is appended to that
file for each failure: ``time`` (UTC, ISO 8601), ``spider``, ``url``,
``method``, ``reason``, ``status`` (``null`` for an exception), ``retry_times``
and ``message`` (cut to 2,000 characters, the original length said:
:func:`~scrapy_cdp_pool.messages.cap_message`); with ``meta["cdp_console"]``,
also ``console``: the page's console messages and errors.
"""

from __future__ import annotations

import contextlib
import json
import logging
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.response import response_status_message

from scrapy_cdp_pool.core.runtime import runtime_of
from scrapy_cdp_pool.messages import cap_message, without_password
from scrapy_cdp_pool.shared.disk_full import is_disk_full, stop_for_full_disk
from scrapy_cdp_pool.shared.paths import open_private_for_append

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class FailureRecorderMiddleware:
    def __init__(self, crawler: Crawler, path: str | None) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.path = path
        self._file: IO[str] | None = None
        if path is not None:
            try:
                # Line-buffered: each failure is on disk when it is recorded;
                # 0600: its lines name requests (URLs with their queries)
                self._file = open_private_for_append(
                    path, "CDP_POOL_FAILURES_FILE", line_buffered=True
                )
            except OSError as e:
                raise ValueError(f"CDP_POOL_FAILURES_FILE: cannot open {path!r}: {e}") from e
            crawler.signals.connect(self.close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, runtime_of(crawler).config.resilience.failures_file)

    def process_response(self, request: Request, response: Response) -> Response:
        if response.status >= 400:
            self.record(
                request,
                f"http_{response.status}",
                response_status_message(response.status),
                response.status,
            )
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        if not isinstance(exception, IgnoreRequest):
            self.record(request, type(exception).__name__, str(exception), None)

    def record(self, request: Request, reason: str, message: str, status: int | None) -> None:
        self.stats.inc_value("cdp_pool/failures")
        self.stats.inc_value(f"cdp_pool/failures/{reason}")
        if self._file is None:
            return
        spider = self.crawler.spider
        line: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "spider": spider.name if spider is not None else None,
            "url": without_password(request.url),  # a user part's password never written
            "method": request.method,
            "reason": reason,
            "status": status,
            "retry_times": request.meta.get("retry_times", 0),
            "message": cap_message(message),
        }
        console = request.meta.get("cdp_console_messages")  # meta["cdp_console"]
        if console is not None:
            line["console"] = console
        try:
            self._file.write(json.dumps(line, ensure_ascii=False) + "\n")
        except OSError as e:
            if not is_disk_full(e):
                raise
            self._abandon()  # the request's own failure is unchanged
            stop_for_full_disk(self.crawler, str(self.path), "a line of CDP_POOL_FAILURES_FILE", e)

    def _abandon(self) -> None:
        """Stop writing (the disk is full): what is buffered is dropped."""
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as e:
                if not is_disk_full(e):
                    raise
                stop_for_full_disk(self.crawler, str(self.path), "CDP_POOL_FAILURES_FILE", e)
            self._file = None
