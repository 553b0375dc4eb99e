"""URL patterns, as ``meta["cdp_capture"]`` and ``CDP_POOL_BLOCK_URLS`` take them.

A pattern is a glob (:mod:`fnmatch`: ``*`` any characters, ``/`` included,
``?`` one character, ``[...]`` a set) matched against the whole URL,
case-sensitively, or ``re:<regex>``, a regular expression searched in the URL.
This module imports nothing from the package (a leaf).
"""

from __future__ import annotations

import fnmatch
import re

_cache: dict[str, re.Pattern[str]] = {}
_CACHE_MAX = 1024


def compiled(pattern: str) -> re.Pattern[str]:
    """The regex of ``pattern``.

    :raises ValueError: ``re:`` followed by an invalid regex.
    """
    regex = _cache.get(pattern)
    if regex is None:
        if pattern.startswith("re:"):
            try:
                regex = re.compile(pattern[3:])
            except re.error as e:
                raise ValueError(f"{pattern!r} is not a valid regex ({e})") from e
        else:
            regex = re.compile(fnmatch.translate(pattern))
        if len(_cache) < _CACHE_MAX:
            _cache[pattern] = regex
    return regex


def check_pattern(pattern: object) -> None:
    """:raises ValueError: ``pattern`` is not a non-empty string, or an invalid regex."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"{pattern!r} is not a URL pattern (a non-empty string)")
    compiled(pattern)


def matches_any(patterns: tuple[str, ...], url: str) -> bool:
    return any(compiled(p).search(url) for p in patterns)


def fetch_url_pattern(pattern: str) -> str:
    """The CDP ``Fetch.RequestPattern.urlPattern`` that pauses at least the
    URLs ``pattern`` matches (its ``*`` and ``?`` are those of a glob); ``"*"``
    for a regex or a glob with a ``[...]`` set or a backslash, which it
    cannot say. Each paused request is then checked with :func:`matches_any`."""
    if pattern.startswith("re:") or any(c in pattern for c in "[]\\"):
        return "*"
    return pattern
