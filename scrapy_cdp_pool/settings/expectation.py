"""What "right" means for one response: ``meta["cdp_expect"]`` (or the
spider's default, ``CDP_POOL_EXPECT``).

Forms accepted (all of a list must hold):

- ``"css selector"``: at least one element matches;
- ``{"css": "css selector", "min": 3}``: at least 3 elements match;
- ``{"predicate": "package.module.function"}``: the function, called with the
  response, returns true.

A selector is compiled and a predicate imported when the expectation is
read, so a bad one fails the request (or the crawl, for the setting) by name,
before anything is fetched. Parsed expectations are cached by value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cssselect import SelectorError
from parsel.csstranslator import css2xpath
from scrapy.http import Response, TextResponse
from scrapy.utils.misc import load_object

from scrapy_cdp_pool.messages import cap_message

_FORMS = (
    "a CSS selector, {'css': selector, 'min': count}, "
    "{'predicate': 'package.module.function'}, or a list of them"
)


@dataclass(frozen=True)
class Check:
    """One condition: ``css`` matching at least ``min_count`` elements, or
    ``predicate`` (imported from ``predicate_path``) returning true."""

    css: str | None = None
    min_count: int = 1
    predicate_path: str | None = None
    predicate: Callable[[Response], Any] | None = None

    def describe(self) -> str:
        if self.css is not None:
            return repr(self.css) if self.min_count == 1 else f"{self.css!r} x{self.min_count}"
        return f"predicate {self.predicate_path}"

    def unmet(self, response: Response) -> str | None:
        """``None`` when ``response`` meets it, else what was missing."""
        if self.predicate is not None:
            try:
                ok = self.predicate(response)
            except Exception as e:  # noqa: BLE001 - the user's code: reported as an unmet check
                return f"{self.describe()} raised {type(e).__name__}: {cap_message(e, 200)}"
            return None if ok else f"{self.describe()} returned {ok!r}"
        if not isinstance(response, TextResponse):
            return f"{self.describe()}: not a text response ({type(response).__name__})"
        found = len(response.css(self.css or ""))
        if found >= self.min_count:
            return None
        return f"{self.describe()} matched {found}"


@dataclass(frozen=True)
class Expectation:
    """Every check must hold."""

    checks: tuple[Check, ...]

    def unmet(self, response: Response) -> str | None:
        """``None`` when ``response`` meets every check, else the first
        missing one (e.g. ``"'#items li' x3 matched 0"``)."""
        for check in self.checks:
            missing = check.unmet(response)
            if missing is not None:
                return missing
        return None

    def describe(self) -> str:
        return " and ".join(check.describe() for check in self.checks)


def parse_expectation(value: Any, where: str) -> Expectation:
    """The :class:`Expectation` ``value`` states.

    :param where: what to name in an error (``"CDP_POOL_EXPECT"``,
        ``"<GET url>: meta['cdp_expect']"``).
    :raises ValueError: naming ``where``, the value and the forms allowed: an
        unknown form, an invalid selector, a count under 1, a predicate that
        does not import or is not callable.
    """
    try:
        key = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        raise ValueError(f"{where} = {value!r}: not an expectation; allowed: {_FORMS}") from None
    try:
        return _parse_cached(key)
    except ValueError as e:
        raise ValueError(f"{where} = {value!r}: {e}; allowed: {_FORMS}") from None


@lru_cache(maxsize=256)
def _parse_cached(key: str) -> Expectation:
    value = json.loads(key)
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ValueError("an empty list")
    return Expectation(tuple(_check(item) for item in items))


def _check(item: Any) -> Check:
    if isinstance(item, str):
        return Check(css=_selector(item))
    if isinstance(item, dict) and set(item) <= {"css", "min"} and "css" in item:
        count = item.get("min", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"'min' = {count!r} is not a count >= 1")
        return Check(css=_selector(item["css"]), min_count=count)
    if isinstance(item, dict) and set(item) == {"predicate"}:
        path = item["predicate"]
        if not isinstance(path, str):
            raise ValueError(f"'predicate' = {path!r} is not an import path")
        try:
            predicate = load_object(path)
        except (ImportError, NameError, ValueError, AttributeError) as e:
            raise ValueError(f"predicate {path!r} does not import ({e})") from None
        if not callable(predicate):
            raise ValueError(f"predicate {path!r} is not callable")
        return Check(predicate_path=path, predicate=predicate)
    raise ValueError(f"{item!r} is not a check")


def _selector(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{text!r} is not a CSS selector")
    try:
        css2xpath(text)
    except SelectorError as e:
        raise ValueError(f"{text!r} is not a valid CSS selector ({e})") from None
    return text
