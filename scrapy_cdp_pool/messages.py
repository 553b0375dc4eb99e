"""Bounded error messages: the one helper every log line, failures-file line
and exception text that may carry a page's, a browser's or a server's words
goes through.

A page script can throw a message of any size (a 200 KB ``Error`` message was
seen written whole to the failures file and the log). :func:`cap_message`
keeps the first characters and says how long the message was::

    Error: xxxxxxxx ... [message cut: 204807 characters, 1950 shown]

A message composed around one that was cut already (``"<url>: action #0 ...:
" + str(error)``) is cut again without losing the first count: the total
still counts the characters cut the first time. This module imports nothing
from the package (a leaf: any layer may use it).
"""

from __future__ import annotations

import re

MESSAGE_LIMIT_CHARS = 2000
"""Longest message kept whole, in characters; a longer one is cut to at most
this length, the marker included."""

_MARK = " ... [message cut: {total} characters, {kept} shown]"
_MARK_RE = re.compile(r" \.\.\. \[message cut: (\d+) characters, (\d+) shown\]")


def cap_message(text: object, limit: int = MESSAGE_LIMIT_CHARS) -> str:
    """``str(text)`` when it has at most ``limit`` characters; otherwise its
    first characters and a marker naming the original length, ``limit``
    characters at most in all. Cutting a cut message again returns it
    unchanged.

    :raises ValueError: ``limit`` is too small to hold the marker (under 100).
    """
    if limit < 100:
        raise ValueError(f"cap_message: limit {limit} is under 100 characters")
    message = str(text)
    if len(message) <= limit:
        return message
    marks = list(_MARK_RE.finditer(message))
    # Characters of the original: those cut earlier count, the earlier marks do not.
    total = len(message) + sum(int(mark[1]) - int(mark[2]) - len(mark[0]) for mark in marks)
    kept = limit - len(_MARK.format(total=total, kept=limit))
    if marks and marks[0].start() < kept:
        kept = marks[0].start()  # what is shown is the original's first characters
    return message[:kept] + _MARK.format(total=total, kept=kept)


def redact_url(url: str) -> str:
    """``url`` for logs, stats and errors: the password of its user part and
    every value of its query string (``?password=...`` is how redis-py, among
    others, takes a password) replaced by ``***``. Never raises (a URL that
    does not parse is redacted as text)."""
    scheme, separator, rest = url.partition("://")
    rest, hash_mark, fragment = rest.partition("#")
    rest, question, query = rest.partition("?")
    netloc, slash, path = rest.partition("/")
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        netloc = f"{user}:***@{host}" if colon else f"***@{host}"
    if query:
        query = "&".join(
            f"{part.partition('=')[0]}=***" if "=" in part else part for part in query.split("&")
        )
    fragment = "***" if fragment else ""
    return f"{scheme}{separator}{netloc}{slash}{path}{question}{query}{hash_mark}{fragment}"
