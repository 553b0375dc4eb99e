"""Checking what a CDP server sends: the fields a client reads must have the
types the protocol gives them (a hostile or broken server may send anything).
"""

from __future__ import annotations

from typing import Any, TypeVar

from scrapy_cdp_pool.errors import CDPPoolError


class Malformed(CDPPoolError):
    """A field of a server's message has the wrong type."""


_T = TypeVar("_T")


def optional(obj: dict[str, Any], key: str, kind: type[_T]) -> _T | None:
    """``obj[key]``, ``None`` when missing or null.

    :raises Malformed: it is there but not a ``kind``.
    """
    value = obj.get(key)
    if value is None or isinstance(value, kind):
        return value
    raise Malformed(f"a message whose {key!r} is not a {_JSON_NAMES.get(kind, kind.__name__)}")


_JSON_NAMES: dict[type, str] = {dict: "JSON object", str: "string", int: "integer"}


def excerpt(raw: bytes, limit: int = 80) -> str:
    """The start of a raw message, for a log line."""
    text = raw[:limit].decode("utf-8", "replace")
    return repr(text) + (f"... ({len(raw)} bytes)" if len(raw) > limit else "")
