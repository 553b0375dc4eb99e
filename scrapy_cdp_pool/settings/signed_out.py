"""SignedOutRule: how a response shows that a profile is signed out.

Written as ``{"url": REGEX, "selector": CSS}`` (either key, or both: either
matching is enough), or as a string ``"url:REGEX"`` or ``"css:SELECTOR"``. Used
by ``CDP_POOL_SIGNED_OUT`` and by a profile's ``signedOut``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cssselect import SelectorError
from parsel.csstranslator import css2xpath
from scrapy.http import Response, TextResponse

ALLOWED = (
    '{"url": REGEX, "selector": CSS} (either key or both), '
    'or a string "url:REGEX" or "css:SELECTOR"'
)


@dataclass(frozen=True)
class SignedOutRule:
    """``url``: a regular expression searched in the final URL; ``selector``:
    a CSS selector that matches something on a signed-out page."""

    url: str | None = None
    selector: str | None = None

    def matches_url(self, url: str) -> bool:
        """Whether the URL part of the rule matches ``url``."""
        return self.url is not None and re.search(self.url, url) is not None

    def matches(self, response: Response) -> bool:
        if self.matches_url(response.url):
            return True
        if self.selector is not None and isinstance(response, TextResponse):
            return bool(response.css(self.selector))
        return False

    def describe(self) -> str:
        parts = []
        if self.url is not None:
            parts.append(f"URL matches {self.url!r}")
        if self.selector is not None:
            parts.append(f"page has {self.selector!r}")
        return " or ".join(parts)


def parse_signed_out(value: Any) -> SignedOutRule | None:
    """The rule ``value`` describes (``None`` for none).

    :raises ValueError: the problem, without the setting's name (the caller
        adds it).
    """
    if value is None or value == "" or value == {}:
        return None
    if isinstance(value, SignedOutRule):
        return value
    url, selector = _url_and_selector(value)
    _check(url, selector)
    if url is None and selector is None:
        return None
    return SignedOutRule(url=url, selector=selector)


def _url_and_selector(value: Any) -> tuple[Any, Any]:
    """The URL pattern and CSS selector ``value`` gives (``"url:..."``,
    ``"css:..."`` or a dict of them), each ``None`` when not given.

    :raises ValueError: neither form, or a value that is not a string.
    """
    if isinstance(value, str):
        kind, sep, text = value.partition(":")
        if not sep or kind not in ("url", "css") or not text:
            raise ValueError(f"{value!r} is not a signed-out rule; expected {ALLOWED}")
        return (text, None) if kind == "url" else (None, text)
    if isinstance(value, dict):
        unknown = sorted(str(k) for k in value if k not in ("url", "selector"))
        if unknown:
            raise ValueError(f"unknown keys {unknown}; expected {ALLOWED}")
        url, selector = value.get("url"), value.get("selector")
        if not isinstance(url, (str, type(None))) or not isinstance(selector, (str, type(None))):
            raise ValueError(f"'url' and 'selector' must be strings; expected {ALLOWED}")
        return url, selector
    raise ValueError(f"a {type(value).__name__} is not a signed-out rule; expected {ALLOWED}")


def _check(url: str | None, selector: str | None) -> None:
    """:raises ValueError: ``url`` is not a regular expression, or
    ``selector`` not a CSS selector."""
    if url is not None:
        try:
            re.compile(url)
        except re.error as e:
            raise ValueError(f"{url!r} is not a regular expression: {e}") from e
    if selector is not None:
        try:
            css2xpath(selector)
        except SelectorError as e:
            raise ValueError(f"{selector!r} is not a CSS selector: {e}") from e
