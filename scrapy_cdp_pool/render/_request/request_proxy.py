"""A rendered request's proxy, from ``meta["proxy"]`` as Scrapy's
``HttpProxyMiddleware`` leaves it, folded into the request's context options.

``HttpProxyMiddleware`` (Scrapy 2.19) sets ``meta["proxy"]`` from the
environment (``http_proxy``, ``https_proxy``, ``no_proxy`` honoured) unless the
request has one, and moves credentials in the proxy URL into a
``Proxy-Authorization: Basic`` header, leaving ``meta["proxy"]`` without them.
Plain Scrapy then sends the request through that proxy; a rendered request
does the same: the browser context's ``proxyServer``, with the credentials
answered to the proxy's challenge on Chromium and in the proxy's URL on
Lightpanda (:attr:`~scrapy_cdp_pool.browser.backends.Backend.proxy_credentials_in_url`),
exactly as for a profile's proxy.

What cannot be honoured fails by name (:class:`ProxyUnsupported`), never goes
direct: a scheme other than ``http``/``https`` (Scrapy's HTTP handler takes
no other), a ``Proxy-Authorization`` that is not ``Basic``, credentials with
control characters, a pool whose endpoints cannot take a proxy.

A profile's own proxy wins over one from the environment; an explicit
``meta["proxy"]`` that is not the profile's fails (:class:`ProxyConflict`):
a signed-in profile sent from another address is what a profile's proxy is
there to prevent.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from scrapy import Request

from scrapy_cdp_pool.browser.pool.server_options import without_credentials
from scrapy_cdp_pool.errors import ProxyConflict, ProxyUnsupported
from scrapy_cdp_pool.render._request.context_options import ContextOptions


@dataclass(frozen=True)
class RequestProxy:
    """``server`` is ``scheme://host:port`` without credentials;
    ``username``/``password`` are never shown (not in ``repr``)."""

    server: str
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    #: set by HttpProxyMiddleware from the environment, not by the request
    from_environment: bool = False


def request_proxy(request: Request) -> RequestProxy | None:
    """The proxy ``request`` is to be sent through, or ``None``.

    :raises ProxyUnsupported: see the module's docstring.
    """
    raw = request.meta.get("proxy")
    if not raw:
        return None
    raw = str(raw)
    url = raw if "://" in raw else f"http://{raw}"
    parts = urlsplit(url)
    shown = without_credentials(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProxyUnsupported(
            f"{request}: meta['proxy'] = {shown!r}: rendered requests take http:// and "
            "https:// proxies (as Scrapy's HTTP handler does)"
        )
    username, password = _credentials(request, parts.username, parts.password, shown)
    return RequestProxy(
        server=_server(url),
        username=username or None,
        password=password if username else None,
        from_environment=bool(request.meta.get("_scheme_proxy")),
    )


def _credentials(
    request: Request, url_username: str | None, url_password: str | None, shown: str
) -> tuple[str | None, str | None]:
    """The proxy's user name and password: from its URL, else from the
    request's ``Proxy-Authorization`` header (Basic), else none.

    :raises ProxyUnsupported: a header that is not Basic credentials, or
        credentials holding a control character."""
    username = unquote(url_username) if url_username else None
    password = unquote(url_password) if url_password is not None else None
    header = request.headers.get(b"Proxy-Authorization")
    if username is None and header:
        username, password = _basic_credentials(request, bytes(header), shown)
    for value in (username, password):
        if value is not None and any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise ProxyUnsupported(
                f"{request}: the credentials of proxy {shown} hold a control character"
            )
    return username, password


def _server(url: str) -> str:
    """``scheme://host:port`` of a proxy URL, the port made explicit."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{host}:{port}"


def _basic_credentials(request: Request, header: bytes, shown: str) -> tuple[str, str]:
    scheme, _, token = header.strip().partition(b" ")
    if scheme.lower() != b"basic":
        raise ProxyUnsupported(
            f"{request}: a Proxy-Authorization header for {shown} that is not Basic: a browser "
            "answers a proxy's challenge with a user name and password only"
        )
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("latin-1")
    except (binascii.Error, ValueError) as e:
        raise ProxyUnsupported(
            f"{request}: the Proxy-Authorization header for {shown} is not valid Basic credentials"
        ) from e
    username, _, password = decoded.partition(":")
    return username, password


def with_request_proxy(
    request: Request, context: ContextOptions | None, proxy: RequestProxy | None
) -> ContextOptions | None:
    """``context`` (a profile's, or ``None``) with ``proxy`` as its proxy.

    :raises ProxyConflict: the profile has another proxy and ``proxy`` was set
        by the request itself (not from the environment).
    """
    if proxy is None:
        return context
    if context is not None and context.proxy_server:
        mine = _server(context.proxy_server)
        same = mine == proxy.server and proxy.username in (None, context.proxy_username)
        if same or proxy.from_environment:
            return context  # the profile's proxy wins over the environment's
        raise ProxyConflict(
            f"{request}: meta['proxy'] = {proxy.server!r}, but its profile "
            f"{context.name!r} goes through {without_credentials(context.proxy_server)}: "
            "drop one of them"
        )
    return dataclasses.replace(
        context or ContextOptions(),
        proxy_server=proxy.server,
        proxy_username=proxy.username,
        proxy_password=proxy.password,
    )
