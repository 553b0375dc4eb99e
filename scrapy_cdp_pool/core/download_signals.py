"""Scrapy's download signals for a rendered response: ``headers_received``,
then ``bytes_received``, as Scrapy's HTTP handlers send them, so that a
handler raising :exc:`~scrapy.exceptions.StopDownload` stops a rendered
request as it stops a plain one.

The browser hands the document over whole, so the signals are sent once it
has: ``headers_received`` with the response's headers and ``body_length``
(its ``Content-Length``, ``None`` when it has none), then
``bytes_received`` for each :data:`CHUNK_BYTES` of the body in turn (none
for an empty body, as Scrapy's handlers send none). ``StopDownload`` then
cuts the response (no body after ``headers_received``), flags it
``download_stopped`` and, with
``fail=True``, raises it with the response attached (the request's errback
gets it), as Scrapy does; the browser's transfer is already over, so it saves
no bandwidth (docs/response.md).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import StopDownload
from twisted.python.failure import Failure

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: the body is handed to ``bytes_received`` in pieces of this many bytes: what
#: one read of Twisted's TCP transport takes (``FileDescriptor.bufferSize``,
#: 64 KiB), the most one ``bytes_received`` of Scrapy's HTTP/1.1 handler holds
CHUNK_BYTES = 65536


def send_download_signals(crawler: Crawler, request: Request, response: Response) -> Response:
    """``response``, or what remains of it when a signal handler stopped it.

    :raises StopDownload: a handler raised it with ``fail=True`` (its
        ``response`` attribute is the stopped response).
    """
    length = response.headers.get(b"Content-Length")
    body_length = int(length) if length is not None and length.isdigit() else None
    stop = _stop_download(
        crawler, request, signals.headers_received, headers=response.headers,
        body_length=body_length,
    )  # fmt: skip
    if stop is not None:
        return _stopped(response.replace(body=b""), stop)
    body = response.body
    for end in range(CHUNK_BYTES, len(body) + CHUNK_BYTES, CHUNK_BYTES):
        data = body[end - CHUNK_BYTES : end]
        stop = _stop_download(crawler, request, signals.bytes_received, data=data)
        if stop is not None:
            return _stopped(response.replace(body=body[:end]), stop)
    return response


def _stop_download(
    crawler: Crawler, request: Request, signal: object, **kwargs: Any
) -> StopDownload | None:
    """Send ``signal``; the ``StopDownload`` a handler raised, if one did."""
    outcomes = crawler.signals.send_catch_log(
        signal=signal, request=request, spider=crawler.spider, **kwargs
    )
    for handler, outcome in outcomes:
        if isinstance(outcome, Failure) and isinstance(outcome.value, StopDownload):
            logger.debug(
                "Download stopped for %s from signal handler %s",
                request,
                getattr(handler, "__qualname__", handler),
                extra={"crawler": crawler},
            )
            return outcome.value
    return None


def _stopped(response: Response, stop: StopDownload) -> Response:
    response.flags.append("download_stopped")
    if stop.fail:
        stop.response = response
        raise stop
    return response
