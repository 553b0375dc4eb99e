"""The kind of page a request is: its host, its URL path with numbers and
ids generalized, and its callback. Pages of one kind are expected to need
the same rung of the ladder.

``https://shop.example/product/1234/reviews?page=2`` with callback
``parse_reviews`` is ``shop.example/product/{n}/reviews parse_reviews``: the
query string is dropped; a path segment that is an id (a UUID, 8 or more hex
digits with at least one digit, or 16 or more letters, digits, ``-`` and
``_`` mixing letters and digits) becomes ``{id}``; every other run of digits
becomes ``{n}`` (``item-12.html`` → ``item-{n}.html``).
"""

from __future__ import annotations

import re

from scrapy import Request
from scrapy.utils.httpobj import urlparse_cached

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
_HEX = re.compile(r"^(?=[^/]*\d)[0-9a-f]{8,}$", re.IGNORECASE)
_TOKEN = re.compile(r"^(?=[^/]*\d)(?=[^/]*[A-Za-z])[A-Za-z0-9_-]{16,}$")
_DIGITS = re.compile(r"\d+")


def generalize_path(path: str) -> str:
    """``path`` with ids as ``{id}`` and numbers as ``{n}``."""
    segments = []
    for segment in path.split("/"):
        if _UUID.match(segment) or _HEX.match(segment) or _TOKEN.match(segment):
            segments.append("{id}")
        else:
            segments.append(_DIGITS.sub("{n}", segment))
    return "/".join(segments) or "/"


def callback_name(request: Request) -> str:
    """The callback's name (``parse`` when none is set, as Scrapy calls)."""
    callback = request.callback
    if callback is None:
        return "parse"
    return str(getattr(callback, "__name__", None) or callback)


def page_kind(request: Request) -> str:
    """``"<host[:port]><generalized path> <callback>"``."""
    parts = urlparse_cached(request)
    return f"{(parts.netloc or '').lower()}{generalize_path(parts.path)} {callback_name(request)}"
