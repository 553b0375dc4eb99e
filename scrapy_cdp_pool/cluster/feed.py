"""Requests from the items of the feed list (scrapy-redis's ``<spider>:start_urls``)."""

from __future__ import annotations

from typing import Any

from scrapy import Request


def request_from_feed(spider: Any, data: bytes) -> Request:
    """The spider's ``make_request_from_data(data)`` (scrapy-redis's hook),
    else ``Request(url, dont_filter=True)`` for a URL, as scrapy-redis's
    ``RedisSpider`` makes.

    :raises Exception: whatever the spider's hook raises; ``ValueError`` for
        an item that is not a URL."""
    make = getattr(spider, "make_request_from_data", None)
    if make is not None:
        request: Request = make(data)
        return request
    return Request(data.decode("utf-8").strip(), dont_filter=True)
