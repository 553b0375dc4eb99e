"""Which responses a render captures (``meta["cdp_capture"]``) as a
:class:`CaptureRule`: parsed and checked before the render, with no page
(the capture itself is :class:`~scrapy_cdp_pool.render._page.capture.NetworkCapture`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scrapy_cdp_pool.settings.config import RESOURCE_TYPES
from scrapy_cdp_pool.settings.url_patterns import check_pattern, matches_any


@dataclass(frozen=True)
class CaptureRule:
    """Which responses to capture, and how many body bytes to keep.

    A response matches when its URL matches one of ``patterns`` (any URL when
    there are none) and its resource type is one of ``resource_types`` (any
    type when there are none). ``max_body`` and ``max_total`` are bytes: the
    largest body kept, and the most body bytes kept over the whole render.
    """

    patterns: tuple[str, ...] = ()
    resource_types: frozenset[str] = frozenset()
    max_body: int = 10 * 1024 * 1024
    max_total: int = 50 * 1024 * 1024

    def matches(self, url: str, resource_type: str) -> bool:
        if self.resource_types and resource_type.lower() not in self.resource_types:
            return False
        if not self.patterns:
            return True
        return matches_any(self.patterns, url)


def parse_capture(raw: Any, max_body: int, max_total: int) -> CaptureRule | None:
    """``meta["cdp_capture"]`` as a :class:`CaptureRule`, or ``None`` when unset
    or false.

    Accepted: ``True`` (every response), a URL pattern string, a list of them,
    or a dict ``{"urls": [patterns], "resource_types": ["xhr", "fetch", ...]}``
    (either key may be left out). Patterns: see
    :mod:`scrapy_cdp_pool.settings.url_patterns`.

    :raises ValueError: any other value (the message says what is allowed).
    """
    if raw is None or raw is False:
        return None
    if raw is True:
        return CaptureRule(max_body=max_body, max_total=max_total)
    urls, types = _capture_parts(raw)
    if not isinstance(urls, (list, tuple)) or not all(isinstance(u, str) and u for u in urls):
        raise ValueError(f"{raw!r}: URL patterns must be non-empty strings; {_ALLOWED}")
    if not isinstance(types, (list, tuple)) or not all(isinstance(t, str) for t in types):
        raise ValueError(f"{raw!r}: resource types must be strings; {_ALLOWED}")
    lowered = frozenset(t.lower() for t in types)
    unknown_types = sorted(lowered - set(RESOURCE_TYPES))
    if unknown_types:
        raise ValueError(
            f"{unknown_types!r} are not resource types; allowed: {', '.join(RESOURCE_TYPES)}"
        )
    for pattern in urls:
        check_pattern(pattern)
    return CaptureRule(
        patterns=tuple(urls), resource_types=lowered, max_body=max_body, max_total=max_total
    )


_ALLOWED = (
    "expected True, a URL pattern, a list of them, or "
    "{'urls': [patterns], 'resource_types': [types]}"
)


def _capture_parts(raw: Any) -> tuple[Any, Any]:
    """``meta["cdp_capture"]``'s URL patterns and resource types, each as
    given (checked by the caller); a lone string is a list of one.

    :raises ValueError: neither a string, a list nor a dict of known keys."""
    if isinstance(raw, str):
        return [raw], ()
    if isinstance(raw, (list, tuple)):
        return raw, ()
    if not isinstance(raw, dict):
        raise ValueError(f"{raw!r}: {_ALLOWED}")
    unknown = sorted(str(k) for k in raw if k not in ("urls", "resource_types"))
    if unknown:
        raise ValueError(f"{raw!r}: unknown keys {unknown}; {_ALLOWED}")
    urls = raw.get("urls") or ()
    types = raw.get("resource_types") or ()
    return ([urls] if isinstance(urls, str) else urls), (
        [types] if isinstance(types, str) else types
    )
