"""What one rendered request asks of the browser, taken from a Scrapy request.

Only plain data goes in: a :class:`RenderSpec` is built from ``request.url``,
method, headers, body and meta, so a request stays serializable for JOBDIR and
distributed queues.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from scrapy import Request

from scrapy_cdp_pool.messages import redact_url
from scrapy_cdp_pool.render._actions.action import Action
from scrapy_cdp_pool.render._page.capture_rule import CaptureRule
from scrapy_cdp_pool.render._request.context_options import ContextOptions
from scrapy_cdp_pool.settings.config import PoolConfig
from scrapy_cdp_pool.settings.signed_out import SignedOutRule

# Headers the browser owns: sent by it, or (Cookie) passed as context cookies;
# Proxy-Authorization goes to the proxy (see render/_request/request_proxy.py), never to the site.
_BROWSER_HEADERS = frozenset(
    {
        b"user-agent",
        b"cookie",
        b"accept-encoding",
        b"connection",
        b"host",
        b"content-length",
        b"proxy-authorization",
    }
)


class RenderValues(Protocol):
    """A request's render meta values, checked (implemented by
    :class:`~scrapy_cdp_pool.core.request_meta.RenderMeta`)."""

    @property
    def wait_until(self) -> str: ...
    @property
    def shadow_roots(self) -> str: ...
    @property
    def dialogs(self) -> str: ...
    @property
    def navigation_timeout_s(self) -> float: ...
    @property
    def first_byte_timeout_s(self) -> float: ...
    @property
    def actions(self) -> tuple[Action, ...]: ...
    @property
    def capture(self) -> CaptureRule | None: ...
    @property
    def console(self) -> bool: ...
    @property
    def include_page(self) -> bool: ...
    @property
    def downloads(self) -> bool: ...
    @property
    def init_scripts(self) -> tuple[str, ...]: ...
    @property
    def maxsize(self) -> int: ...
    @property
    def warnsize(self) -> int: ...
    @property
    def fail_on_dataloss(self) -> bool: ...


@dataclass(frozen=True)
class RenderSpec:
    """One navigation: the request to send and how to wait for the page.

    ``headers`` are the request headers to add to the navigation request (not
    to sub-resources); ``cookies`` are ``(name, value)`` pairs set in the fresh
    context for ``url`` before navigating. Times are seconds.
    """

    url: str
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    cookies: tuple[tuple[str, str], ...] = ()
    actions: tuple[Action, ...] = ()
    wait_until: str = "load"
    #: ``meta["cdp_shadow_roots"]``: ``"open"`` serializes open shadow roots
    #: into the HTML as ``<template shadowrootmode="open">``, ``"none"`` none
    shadow_roots: str = "open"
    navigation_timeout_s: float = 30.0
    #: how long the page's first byte may take when longer than
    #: ``navigation_timeout_s`` (a longer ``download_timeout`` the user set);
    #: ``None``: the navigation timeout
    first_byte_timeout_s: float | None = None
    action_timeout_s: float = 10.0
    block_resources: frozenset[str] = field(default_factory=frozenset)
    block_urls: tuple[str, ...] = ()
    maxsize: int = 0
    warnsize: int = 0
    #: ``DOWNLOAD_FAIL_ON_DATALOSS`` / ``meta["download_fail_on_dataloss"]``:
    #: False keeps a document whose body was cut short, flagged ``dataloss``
    fail_on_dataloss: bool = True
    #: documents the page may navigate itself to beyond its first (``REDIRECT_MAX_TIMES``)
    max_self_navigations: int = 20
    context: ContextOptions | None = None
    #: the request's ``User-Agent`` header (see render/_request/user_agent.py)
    user_agent: str | None = None
    #: how JavaScript dialogs are answered: "dismiss" or "accept"
    dialogs: str = "dismiss"
    #: the profile's signed-out rule, checked right after navigation: a
    #: signed-out page skips the actions (the profile middleware signs in)
    signed_out: SignedOutRule | None = None
    #: ``meta["cdp_capture"]``: which responses to return (see render/_page/capture.py)
    capture: CaptureRule | None = None
    #: sources run in every new document before the page's own (the setting's,
    #: then ``meta["cdp_init_scripts"]``)
    init_scripts: tuple[str, ...] = ()
    #: ``meta["cdp_console"]``: keep console messages and page errors
    console: bool = False
    #: ``meta["cdp_include_page"]``: hand the live page to the callback
    #: (render/_live/live_page.py)
    include_page: bool = False
    #: pause the main frame's document requests at the request stage, so that
    #: each navigation the page starts itself is asked about
    #: (``RenderHooks.allows_navigation``: robots.txt)
    pause_navigations: bool = False
    #: ``CDP_POOL_ALLOW_PRIVATE_NETWORKS``: when false, every request the page
    #: starts is paused and refused if it goes to a non-public address other
    #: than its own host's (render/_page/private_network.py)
    allow_private_networks: bool = False
    #: ``meta["cdp_downloads"]``: keep what the page downloads (render/_page/downloads.py)
    downloads: bool = False
    #: most bytes of one download kept (``CDP_POOL_PAGE_DOWNLOAD_MAX_MB``)
    download_max_bytes: int = 10 * 1024 * 1024

    @property
    def basic_credentials(self) -> tuple[str, str] | None:
        """The user name and password of the request's own ``Authorization:
        Basic`` header (Scrapy's ``HttpAuthMiddleware`` sets it where
        ``HTTPAUTH_DOMAIN`` allows), ``None`` without one: the page's
        same-origin calls are answered with them when challenged
        (:meth:`~scrapy_cdp_pool.render._page.interception.FetchInterceptor.on_auth`)."""
        for name, value in self.headers:
            scheme, _, token = value.partition(" ")
            if name.lower() != "authorization" or scheme.lower() != "basic":
                continue
            try:
                decoded = base64.b64decode(token.strip(), validate=True).decode("latin-1")
            except (binascii.Error, ValueError):
                return None
            user, colon, password = decoded.partition(":")
            return (user, password) if colon else None
        return None

    @property
    def overrides_request(self) -> bool:
        """Whether the navigation request must be intercepted and rewritten
        (method, body or headers a plain ``Page.navigate`` cannot send)."""
        return self.method != "GET" or bool(self.body) or bool(self.headers)


def is_rendered(request: Request, render_all: bool) -> bool:
    """Whether ``request`` goes to the browser: ``meta["cdp"]`` when set, else
    ``CDP_POOL_RENDER_ALL`` or a profile (``meta["cdp_profile"]``)."""
    flag = request.meta.get("cdp")
    if flag is not None:
        return bool(flag)
    return render_all or bool(request.meta.get("cdp_profile"))


def default_header_values(default_headers: dict[str, Any]) -> frozenset[tuple[bytes, bytes]]:
    """``DEFAULT_REQUEST_HEADERS`` as lower-cased ``(name, value)`` byte pairs:
    headers left at Scrapy's defaults are not forced on the browser."""
    pairs = set()
    for name, value in default_headers.items():
        raw_name = name.encode() if isinstance(name, str) else bytes(name)
        raw_value = value.encode() if isinstance(value, str) else bytes(value)
        pairs.add((raw_name.lower(), raw_value))
    return frozenset(pairs)


def build_spec(
    request: Request,
    config: PoolConfig,
    default_headers: frozenset[tuple[bytes, bytes]],
    values: RenderValues,
    context: ContextOptions | None = None,
    signed_out: SignedOutRule | None = None,
) -> RenderSpec:
    """The :class:`RenderSpec` for ``request``; ``values``: its render meta
    values, checked (:func:`~scrapy_cdp_pool.core.request_meta.read_render_meta`).

    :raises ValueError: the URL has a user part (``user:pw@host``),
        which plain Scrapy refuses ("invalid hostname") and the browsers
        treat each their own way (Lightpanda sends it as ``Authorization``,
        Chromium drops it).
    """
    if "@" in urlsplit(request.url).netloc:
        raise ValueError(
            f"<{request.method} {redact_url(request.url)}>: a URL with a user part "
            "(user:password@host) is refused, as plain Scrapy refuses it; send credentials "
            "with Scrapy's HttpAuthMiddleware (http_user, http_pass) or an Authorization header"
        )
    headers: list[tuple[str, str]] = []
    for raw_name, header_values in request.headers.items():
        name = bytes(raw_name)
        if name.lower() in _BROWSER_HEADERS:
            continue
        for value in header_values:
            if (name.lower(), bytes(value)) in default_headers:
                continue
            headers.append((name.decode("latin-1"), bytes(value).decode("latin-1")))
    return RenderSpec(
        url=request.url,
        method=request.method.upper(),
        headers=tuple(headers),
        body=request.body,
        cookies=_cookie_pairs(request),
        actions=values.actions,
        wait_until=values.wait_until,
        shadow_roots=values.shadow_roots,
        navigation_timeout_s=values.navigation_timeout_s,
        first_byte_timeout_s=values.first_byte_timeout_s,
        action_timeout_s=config.action_timeout_s,
        block_resources=config.block_resources,
        block_urls=config.block_urls,
        allow_private_networks=config.allow_private_networks,
        maxsize=values.maxsize,
        warnsize=values.warnsize,
        fail_on_dataloss=values.fail_on_dataloss,
        max_self_navigations=config.redirect_max_times,
        context=context,
        user_agent=_user_agent(request),
        dialogs=values.dialogs,
        signed_out=signed_out,
        capture=values.capture,
        init_scripts=values.init_scripts,
        console=values.console,
        include_page=values.include_page,
        downloads=values.downloads,
        download_max_bytes=config.page_download_max_bytes,
    )


def _user_agent(request: Request) -> str | None:
    value = request.headers.get(b"User-Agent")
    return bytes(value).decode("latin-1") if value else None


def _cookie_pairs(request: Request) -> tuple[tuple[str, str], ...]:
    """The ``Cookie`` header Scrapy's cookie middleware set, as ``(name, value)``
    pairs, values kept byte for byte."""
    pairs: list[tuple[str, str]] = []
    for raw in request.headers.getlist(b"Cookie"):
        for part in bytes(raw).decode("latin-1").split(";"):
            name, sep, value = part.strip().partition("=")
            if sep and name:
                pairs.append((name, value))
    return tuple(pairs)
