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


def _split_userinfo(rest: str) -> tuple[str | None, str]:
    """``(userinfo, remainder)`` of what follows ``scheme://``; ``(None, rest)``
    when there is no user part (``""``: an empty one, ``scheme://@host``).

    A password may hold an unencoded ``#``, ``/`` or ``?``
    (``redis://:pa#ss@host/0``): the user part then runs to the last ``@``
    when what precedes that ``@`` has a ``:`` before its first ``/``, ``?`` or
    ``#``. Otherwise an ``@`` after those marks is the path's or the query's
    (``http://host/p?mail=a@b``)."""
    at = rest.rfind("@")
    if at < 0:
        return None, rest
    candidate = rest[:at]
    first_mark = min((i for i in (candidate.find(c) for c in "/?#") if i >= 0), default=-1)
    if first_mark < 0:
        return candidate, rest[at + 1 :]
    colon = candidate.find(":")
    if 0 <= colon < first_mark:
        return candidate, rest[at + 1 :]
    if "@" in rest[:first_mark]:  # user@host/path?q=a@b: the first @ ends it
        user_at = rest.index("@")
        return rest[:user_at], rest[user_at + 1 :]
    return None, rest


def redact_url(url: str) -> str:
    """``url`` for logs, stats and errors: the password of its user part and
    every value of its query string (``?password=...`` is how redis-py, among
    others, takes a password; ``?token=`` how hosted CDP services take theirs)
    and its fragment replaced by ``***``; a password holding ``#``, ``/`` or
    ``?`` unencoded is masked whole (see :func:`_split_userinfo`). Never
    raises (a URL that does not parse is redacted as text)."""
    scheme, separator, rest = url.partition("://")
    userinfo, rest = _split_userinfo(rest)
    rest, hash_mark, fragment = rest.partition("#")
    rest, question, query = rest.partition("?")
    netloc, slash, path = rest.partition("/")
    if userinfo is not None:
        user, colon, _ = userinfo.partition(":")
        netloc = f"{user}:***@{netloc}" if colon else f"***@{netloc}"
    if query:
        query = "&".join(
            f"{part.partition('=')[0]}=***" if "=" in part else part for part in query.split("&")
        )
    fragment = "***" if fragment else ""
    return f"{scheme}{separator}{netloc}{slash}{path}{question}{query}{hash_mark}{fragment}"


def without_password(url: str) -> str:
    """``url`` with the password of its user part replaced by ``***`` (and
    nothing else changed): for records where the rest of the URL is what
    tells one request from another (the failures file)."""
    scheme, separator, rest = url.partition("://")
    userinfo, rest = _split_userinfo(rest)
    if userinfo is None:
        return url
    user, colon, _ = userinfo.partition(":")
    return f"{scheme}{separator}{user}:***@{rest}" if colon else f"{scheme}{separator}***@{rest}"


def url_secrets(url: str) -> list[str]:
    """The parts of ``url`` that :func:`redact_url` hides (the password, the
    query's values, the fragment), longest first: what :func:`scrub_secrets`
    removes from another library's message about ``url``."""
    _, _, rest = url.partition("://")
    userinfo, rest = _split_userinfo(rest)
    userinfo = userinfo or ""
    password = userinfo.partition(":")[2] if ":" in userinfo else userinfo
    # A parser that stopped at an unencoded mark quotes the piece before it.
    secrets = [password, *re.split(r"[#/?]", password)]
    rest, _, fragment = rest.partition("#")
    _, _, query = rest.partition("?")
    secrets.extend(part.partition("=")[2] for part in query.split("&") if "=" in part)
    secrets.append(fragment)
    return sorted({s for s in secrets if s}, key=len, reverse=True)


def scrub_secrets(text: object, url: str) -> str:
    """``str(text)`` with ``url`` redacted (:func:`redact_url`) and every
    secret of ``url`` (:func:`url_secrets`) replaced by ``***``: for a message
    composed by another library (redis-py, websockets, the OS) that may quote
    the URL or a part of it, such as "Port could not be cast to integer value
    as 'pa'" for ``redis://:pa#ss@host``."""
    message = str(text).replace(url, redact_url(url))
    for secret in url_secrets(url):
        message = message.replace(secret, "***")
    return message
