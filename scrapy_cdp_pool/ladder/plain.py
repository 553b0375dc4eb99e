"""The plain HTTP rung's response, made checkable.

Scrapy's HTTP handler returns the body as the server sent it; its
``HttpCompressionMiddleware`` decodes ``Content-Encoding`` later, on the way
back through the downloader middlewares. An expectation is checked in the
download handler, before that: the rung's response is decoded here by the
crawler's own running ``HttpCompressionMiddleware`` (same limits, same
stats, same errors as plain Scrapy), which then leaves it alone on the way
back (it has no ``Content-Encoding`` left). Without that middleware the body
is checked as it came.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.http import Response

from scrapy_cdp_pool.scrapy_internals import running_downloader_middleware

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def compression_middleware(crawler: Crawler) -> HttpCompressionMiddleware | None:
    """The crawler's running ``HttpCompressionMiddleware``, or ``None``."""
    return running_downloader_middleware(crawler, HttpCompressionMiddleware)


def decoded(crawler: Crawler, request: Request, response: Response) -> Response:
    """``response`` with its ``Content-Encoding`` decoded as Scrapy would.

    :raises IgnoreRequest: decoded, it is over ``DOWNLOAD_MAXSIZE`` (Scrapy's).
    """
    if not response.headers.get(b"Content-Encoding"):
        return response
    middleware = compression_middleware(crawler)
    if middleware is None:
        return response
    result = middleware.process_response(request, response)
    return result if isinstance(result, Response) else response
