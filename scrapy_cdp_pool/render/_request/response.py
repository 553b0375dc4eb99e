"""A Scrapy response from what the browser saw."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address, ip_address
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from OpenSSL.crypto import FILETYPE_ASN1
from OpenSSL.crypto import Error as OpenSSLError
from scrapy import Request
from scrapy.http import Headers, HtmlResponse, Response
from scrapy.responsetypes import responsetypes
from twisted.internet.ssl import Certificate

from scrapy_cdp_pool.render._page.console import CONSOLE_MESSAGES_META_KEY
from scrapy_cdp_pool.render._request.redirects import record_browser_hops
from scrapy_cdp_pool.render._request.session import RenderResult

# Describe the bytes on the wire, not the rendered DOM we return.
_WIRE_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})


def build_response(request: Request, result: RenderResult) -> Response:
    """The response for ``request``.

    A rendered page is an :class:`~scrapy.http.HtmlResponse` of the DOM in UTF-8
    (``Content-Type`` says so); a raw document keeps its bytes and gets the
    class Scrapy picks from its headers and URL (``JsonResponse`` for JSON).
    A raw document's body is decoded, so ``Content-Encoding`` is dropped, as
    Scrapy's ``HttpCompressionMiddleware`` does. Redirects the browser followed
    are appended to ``meta["redirect_urls"]``, ``meta["redirect_reasons"]`` and
    ``meta["redirect_times"]`` (see :mod:`scrapy_cdp_pool.render._request.redirects`),
    action results go to ``meta["cdp_results"]``, the dialogs answered to
    ``meta["cdp_dialogs_seen"]``, navigations to other schemes not followed
    to ``meta["cdp_ignored_navigations"]``, captured responses to
    ``meta["cdp_network"]``.
    """
    headers = Headers()
    for name, value in result.headers:
        if result.rendered and name.lower() in _WIRE_HEADERS | {"content-type"}:
            continue
        if name.lower() == "content-encoding" and request.method != "HEAD":
            # The browser hands over the body decoded: as after Scrapy's
            # HttpCompressionMiddleware, which keeps Content-Length (and, for
            # HEAD, which it does not decode, Content-Encoding).
            continue
        headers.appendlist(name, value)
    record_browser_hops(request.meta, result.redirects)
    request.meta["cdp_results"] = result.results
    request.meta.update(result.meta)  # cdp_dialogs_seen, cdp_ignored_navigations
    request.meta["download_latency"] = result.latency_s
    if result.network is not None:
        request.meta["cdp_network"] = result.network
    if result.console is not None:
        request.meta[CONSOLE_MESSAGES_META_KEY] = result.console
    url = as_requested(request.url, result.url)
    connection = _connection(result)
    if result.dataloss:  # what Scrapy's handler flags a body cut short with
        connection["flags"] = ["dataloss"]
    if result.rendered:
        headers[b"Content-Type"] = b"text/html; charset=utf-8"
        return HtmlResponse(
            url=url,
            status=result.status,
            headers=headers,
            body=result.body,
            encoding="utf-8",
            request=request,
            **connection,
        )
    response_class = responsetypes.from_args(headers=headers, url=url, body=result.body)
    return response_class(
        url=url,
        status=result.status,
        headers=headers,
        body=result.body,
        request=request,
        **connection,
    )


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _as_browser_writes(url: str) -> str:
    """``url`` as a browser writes it: lower-case scheme and host, no default
    port, and ``/`` for an empty path."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    if parts.username is not None or parts.password is not None:
        return url  # refused before it gets here (docs/response.md); left alone
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, parts.fragment))


def as_requested(requested: str, final: str) -> str:
    """The response's URL: the request's own when the page is where it was
    asked for and only the browser's writing differs (``http://host:port``
    comes back ``http://host:port/``), as plain Scrapy's response keeps the
    request's URL; else the page's URL."""
    if final != requested and final == _as_browser_writes(requested):
        return requested
    return final


#: the browser's protocol names as Scrapy's handlers name them
_PROTOCOLS = {"http/1.1": "HTTP/1.1", "http/1.0": "HTTP/1.0", "http/0.9": "HTTP/0.9"}


def _connection(result: RenderResult) -> dict[str, Any]:
    """``ip_address``, ``protocol`` and ``certificate`` for the response, as
    Scrapy's HTTP handler fills them, from what the browser said (Chromium);
    ``None`` where it did not (Lightpanda: docs/response.md). The certificate
    is a ``twisted.internet.ssl.Certificate``, as Scrapy's."""
    ip: IPv4Address | IPv6Address | None = None
    if result.remote_ip:
        try:
            ip = ip_address(result.remote_ip.strip("[]"))
        except ValueError:
            ip = None
    protocol = _PROTOCOLS.get(result.protocol, result.protocol) if result.protocol else None
    certificate = None
    if result.certificate is not None:
        try:
            certificate = Certificate.load(result.certificate, FILETYPE_ASN1)
        except OpenSSLError:  # not a certificate: none, as for a plain http:// page
            certificate = None
    return {"ip_address": ip, "protocol": protocol, "certificate": certificate}
