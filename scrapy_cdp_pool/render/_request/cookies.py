"""Cookies a render leaves in its browser context, handed to Scrapy's jar.

A rendered request without a profile gets Scrapy's cookies in a fresh context
(:attr:`RenderSpec.cookies`); whatever the page then adds (its document's
``Set-Cookie``, ``document.cookie``, an XHR's ``Set-Cookie``) is read from the
context at the end (:func:`browser_cookies`) and set in the request's jar of
Scrapy's ``CookiesMiddleware`` (:func:`merge_into_jar`) as
:class:`http.cookiejar.Cookie` objects, domain, path, expiry, ``Secure`` and
``HttpOnly`` intact, so the next request sends what a browser would.

Set straight into the jar rather than as synthetic ``Set-Cookie`` headers: a
header is parsed against the response's URL, so a host-only cookie of another
host (an XHR's, a redirect hop's) would be refused, and the response's headers
would no longer be the server's.

What the page deleted leaves the jar too: a cookie the request sent into the
context (``sent``) that the context no longer holds for the request's host at
the end (a ``fetch()`` answered ``Max-Age=0``, ``document.cookie`` with a past
expiry) is cleared from the jar, for the request's host and path, as the
browser's own jar dropped it (before, the jar kept sending it: signed out in
the browser, signed in for the next request).

Capped as a browser caps its store (Chromium's ``kMaxCookiesPerDomain`` and
RFC 6265bis's size limit): at most :data:`MAX_COOKIES_PER_DOMAIN` cookies per
cookie domain in the jar, the ones it holds first (a server's session cookie
is not pushed out by a page's script), and no cookie whose name and value
together pass :data:`MAX_COOKIE_BYTES` bytes. A page writing 500 cookies
otherwise made every later request to its host carry them all: a ``Cookie``
header past the server's limit, answered 400. The caps do not bound a
header's size (180 cookies of 60 bytes pass 8 KiB): a rendered request sends
at most :data:`MAX_COOKIE_HEADER_BYTES` of them (:func:`cap_cookie_header`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.cookiejar import Cookie
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.downloadermiddlewares.cookies import CookiesMiddleware

from scrapy_cdp_pool.scrapy_internals import running_downloader_middleware

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from scrapy_cdp_pool.render._page.page import Page

# the name it logged under before render/ went private (log lines, LOG filters)
logger = logging.getLogger("scrapy_cdp_pool.render.cookies")

#: most cookies of one cookie domain kept in a jar (Chromium's kMaxCookiesPerDomain)
MAX_COOKIES_PER_DOMAIN = 180
#: largest name plus value of a cookie kept, bytes (RFC 6265bis 5.6, Chromium)
MAX_COOKIE_BYTES = 4096
#: largest ``Cookie`` header a rendered request sends, bytes of its value: a
#: header line within 8 KiB, what common servers accept for one header (Apache's
#: ``LimitRequestFieldSize`` and aiohttp's ``max_field_size``: 8190, nginx's
#: ``large_client_header_buffers``: 8 KiB a line), with room for the ``Cookie:`` name
MAX_COOKIE_HEADER_BYTES = 8000


def cap_cookie_header(
    pairs: tuple[tuple[str, str], ...], max_bytes: int = MAX_COOKIE_HEADER_BYTES
) -> tuple[tuple[str, str], ...]:
    """The first of ``pairs`` (``(name, value)``, in the order of the
    request's ``Cookie`` header) whose header, ``name=value`` joined by
    ``"; "``, stays within ``max_bytes`` bytes; the rest are left out. Scrapy's
    jar orders a header by path, most specific first, then by age, oldest
    first: the cookies left out are the newest of the least specific paths,
    so a server's session cookie is not pushed out by a page's script (as the
    jar's caps keep what it held first). Past the cap a server answers 400
    to every later request of the host (a page writing 10,000
    cookies; 180 of 60 bytes already pass 8 KiB)."""
    size = 0
    for index, (name, value) in enumerate(pairs):
        size += len(name.encode()) + 1 + len(value.encode()) + (2 if index else 0)
        if size > max_bytes:
            return pairs[:index]
    return pairs


def cap_stored_cookies(
    profile: str, cookies: list[dict[str, Any]], held: set[tuple[str, str, str]]
) -> list[dict[str, Any]]:
    """``cookies`` (a profile's ``storageState`` cookies, read back from its
    context) within the caps a browser's store keeps, so that the profile's
    later requests carry a ``Cookie`` header its servers accept: none whose
    name and value pass :data:`MAX_COOKIE_BYTES`; per cookie domain at most
    :data:`MAX_COOKIES_PER_DOMAIN`, and no more than
    :data:`MAX_COOKIE_HEADER_BYTES` of ``name=value; `` pairs. The cookies
    the profile held before (``held``: ``(domain, path, name)``) are kept
    first, the others in the browser's order: a server's session cookie is
    not pushed out by a page's script. Returns the cookies kept; a WARNING
    names ``profile`` and how many were left out. Lightpanda caps nothing: a
    page writing 500 cookies was saved whole and every later request of the
    profile was answered 400."""
    first = sorted(
        range(len(cookies)),
        key=lambda i: _stored_key(cookies[i]) not in held,  # stable: browser order kept
    )
    counts: dict[str, int] = {}
    sizes: dict[str, int] = {}
    kept: list[int] = []
    for index in first:
        cookie = cookies[index]
        pair = len(str(cookie.get("name", "")).encode()) + len(
            str(cookie.get("value", "")).encode()
        )
        domain = _domain_key(str(cookie.get("domain", "")))
        size = sizes.get(domain, 0) + pair + 3  # "=" and "; "
        if (
            pair > MAX_COOKIE_BYTES
            or counts.get(domain, 0) >= MAX_COOKIES_PER_DOMAIN
            or size > MAX_COOKIE_HEADER_BYTES
        ):
            continue
        counts[domain] = counts.get(domain, 0) + 1
        sizes[domain] = size
        kept.append(index)
    if len(kept) < len(cookies):
        logger.warning(
            "Profile %r: %d cookies are not saved (past a browser's caps: %d a domain, %d bytes "
            "a cookie, a %d-byte Cookie header)", profile, len(cookies) - len(kept),
            MAX_COOKIES_PER_DOMAIN, MAX_COOKIE_BYTES, MAX_COOKIE_HEADER_BYTES,
        )  # fmt: skip
    kept.sort()
    return [cookies[i] for i in kept]


def _stored_key(cookie: dict[str, Any]) -> tuple[str, str, str]:
    return (
        _domain_key(str(cookie.get("domain", ""))),
        str(cookie.get("path") or "/"),
        str(cookie.get("name", "")),
    )


def stored_keys(cookies: Iterable[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """``(domain, path, name)`` of a profile's stored cookies, for
    :func:`cap_stored_cookies`'s ``held``."""
    return {_stored_key(cookie) for cookie in cookies}


async def browser_cookies(page: Page, timeout_s: float) -> list[dict[str, Any]]:
    """Every cookie of ``page``'s browser context, as CDP ``Network.Cookie``
    objects (``name``, ``value``, ``domain`` with a leading dot for a domain
    cookie, ``path``, ``expires`` in seconds since the epoch or -1,
    ``secure``, ``httpOnly``, ``sameSite``)."""
    result = await page.command("Network.getAllCookies", None, timeout_s)
    return list(result.get("cookies", []))


def jar_cookie(cdp_cookie: dict[str, Any]) -> Cookie:
    """A :class:`http.cookiejar.Cookie` as the standard library builds it
    from the equivalent ``Set-Cookie`` header."""
    domain = str(cdp_cookie["domain"])
    expires = cdp_cookie.get("expires", -1)
    session = bool(cdp_cookie.get("session")) or expires is None or float(expires) < 0
    rest: dict[str, Any] = {}
    if cdp_cookie.get("httpOnly"):
        rest["HttpOnly"] = None  # as http.cookiejar records a flag attribute
    same_site = cdp_cookie.get("sameSite")
    if same_site:
        rest["SameSite"] = str(same_site)
    return Cookie(
        version=0,
        name=str(cdp_cookie["name"]),
        value=str(cdp_cookie["value"]),
        port=None,
        port_specified=False,
        domain=domain,
        domain_specified=domain.startswith("."),
        domain_initial_dot=domain.startswith("."),
        path=str(cdp_cookie.get("path") or "/"),
        path_specified=True,
        secure=bool(cdp_cookie.get("secure")),
        expires=None if session else int(float(expires)),
        discard=session,
        comment=None,
        comment_url=None,
        rest=rest,
    )


def cookies_middleware(crawler: Crawler) -> CookiesMiddleware | None:
    """The crawler's running ``CookiesMiddleware`` (or a subclass), ``None``
    when cookies are disabled (``COOKIES_ENABLED = False``) or the engine is
    not running."""
    return running_downloader_middleware(crawler, CookiesMiddleware)


@dataclass
class Merged:
    """What :func:`merge_into_jar` did: cookies set; cookies left out by the
    caps, by cookie domain (``too_many``: past :data:`MAX_COOKIES_PER_DOMAIN`;
    ``too_large``: past :data:`MAX_COOKIE_BYTES`)."""

    count: int = 0
    #: cookies cleared from the jar: the page deleted them
    deleted: int = 0
    too_many: dict[str, int] = field(default_factory=dict)
    too_large: dict[str, int] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        return sum(self.too_many.values()) + sum(self.too_large.values())


def _domain_key(domain: str) -> str:
    return domain.lstrip(".").lower()


def merge_into_jar(
    middleware: CookiesMiddleware,
    request: Request,
    cookies: list[dict[str, Any]],
    sent: tuple[tuple[str, str], ...],
) -> Merged:
    """Set ``cookies`` in the jar ``middleware`` (the crawler's
    :func:`cookies_middleware`) keeps for ``request`` (``meta["cookiejar"]``),
    except those the request sent itself unchanged (``sent``: the
    ``(name, value)`` pairs set in the context before the navigation, whose
    attributes the context does not know), and those past the caps (see the
    module's docstring). The caller leaves out requests with
    ``meta["dont_merge_cookies"]``, as Scrapy does."""
    jar = middleware.jars[request.meta.get("cookiejar")]
    sent_pairs = set(sent)
    merged = Merged()
    held: dict[str, set[tuple[str, str]]] = {}  # cookie domain: (path, name) in the jar
    for cookie in jar:
        held.setdefault(_domain_key(cookie.domain), set()).add((cookie.path, cookie.name))
    for cdp_cookie in cookies:
        name, value = cdp_cookie.get("name"), cdp_cookie.get("value")
        if (name, value) in sent_pairs:
            continue
        try:
            cookie = jar_cookie(cdp_cookie)
        except (KeyError, TypeError, ValueError) as e:
            logger.debug("%s: cookie %r not merged: %r", request, name, e)
            continue
        key = _domain_key(cookie.domain)
        if len(cookie.name.encode()) + len((cookie.value or "").encode()) > MAX_COOKIE_BYTES:
            merged.too_large[key] = merged.too_large.get(key, 0) + 1
            continue
        domain_held = held.setdefault(key, set())
        slot = (cookie.path, cookie.name)
        if slot not in domain_held and len(domain_held) >= MAX_COOKIES_PER_DOMAIN:
            merged.too_many[key] = merged.too_many.get(key, 0) + 1
            continue
        jar.set_cookie(cookie)
        domain_held.add(slot)
        merged.count += 1
    merged.deleted = _forget_deleted(jar, request, cookies, sent)
    return merged


def _forget_deleted(
    jar: Any, request: Request, cookies: list[dict[str, Any]], sent: tuple[tuple[str, str], ...]
) -> int:
    """Clear from ``jar`` the cookies the request sent (``sent``) that the
    browser's context no longer holds for the request's host (``cookies``):
    the page deleted them. Only the jar's cookies the request could have
    sent (its host's domain, a path the request's path is under)."""
    parts = urlsplit(request.url)
    host = (parts.hostname or "").lower()
    path = parts.path or "/"
    held = {str(c.get("name")) for c in cookies if _domain_matches(host, str(c.get("domain", "")))}
    gone = {name for name, _ in sent} - held
    if not gone:
        return 0
    doomed = [
        cookie
        for cookie in jar
        if cookie.name in gone
        and _domain_matches(host, cookie.domain)
        and (path == cookie.path or path.startswith(cookie.path.rstrip("/") + "/"))
    ]
    for cookie in doomed:
        jar.clear(cookie.domain, cookie.path, cookie.name)
    return len(doomed)


def _domain_matches(host: str, domain: str) -> bool:
    """Whether a cookie of ``domain`` (a leading dot for a domain cookie) is
    sent to ``host`` (RFC 6265 5.1.3)."""
    domain = _domain_key(domain)
    return host == domain or host.endswith("." + domain)
