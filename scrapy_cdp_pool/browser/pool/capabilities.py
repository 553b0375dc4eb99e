"""Which backend a CDP server is, recognised from ``/json/version``, and where
its browser WebSocket is. What each backend honours is the
:class:`~scrapy_cdp_pool.browser.backends.Backend`'s.
"""

from __future__ import annotations

import asyncio
import http.client
import io
import json
import ssl
from dataclasses import dataclass
from email.message import Message
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from scrapy_cdp_pool.browser.backends import CHROMIUM, LIGHTPANDA, UNKNOWN, Backend, backend_named
from scrapy_cdp_pool.browser.cdp.transport import UNIX_SCHEME, split_unix_url
from scrapy_cdp_pool.messages import redact_url, scrub_secrets


@dataclass(frozen=True)
class ServerInfo:
    """One endpoint's profile and what it can do.

    ``ws_url`` is the browser WebSocket to connect to; ``max_contexts_per_connection``
    is ``None`` where the server sets no limit.
    """

    kind: str  # "lightpanda", "chromium" or "unknown" (a ws:// URL with no /json/version)
    version: str
    ws_url: str
    max_contexts_per_connection: int | None
    set_cookie_in_fetch_headers: bool
    #: capabilities it lacks (see render/_request/context_options.py for the names)
    unsupported: frozenset[str] = frozenset()
    #: the User-Agent it sends by default
    default_user_agent: str = ""
    #: it keeps an HTTP cache shared by its contexts that serves a response
    #: stored for one cookie to another (``Vary: Cookie`` is not honoured: the
    #: embedded Lightpanda with ``CDP_POOL_HTTP_CACHE``, which adds cookies
    #: below its cache): pages keep such responses out of it
    cache_ignores_cookies: bool = False

    @property
    def backend(self) -> Backend:
        """What this server is and can do (:mod:`scrapy_cdp_pool.browser.backends`)."""
        return backend_named(self.kind)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.version}".strip()


def _http_root(endpoint: str) -> str:
    parts = urlsplit(endpoint)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, "", "", ""))


MAX_VERSION_BYTES = 1 << 20
"""Largest ``/json/version`` answer read, headers and body (a real one is
under 1 KB)."""


async def _get_json(url: str, timeout_s: float) -> dict[str, Any]:
    """GET ``url`` and parse its JSON object, the whole request within
    ``timeout_s`` seconds (a server that sends one byte at a time does not
    keep it going). Asyncio, not a thread: a pool closed during it cancels
    it. Asked directly, never through a proxy from the environment
    (``http_proxy``): a CDP endpoint is reached like its WebSocket (a
    crawler's proxy cannot reach its own 127.0.0.1 servers).

    :raises OSError: unreachable, or no full answer within ``timeout_s``.
    :raises ValueError: not HTTP 200, over :data:`MAX_VERSION_BYTES`, or not
        a JSON object.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url} is not an http(s) URL")
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    hostname = parts.hostname

    def connect() -> Any:
        ssl_context = ssl.create_default_context() if secure else None
        return asyncio.open_connection(hostname, port, ssl=ssl_context)

    return await _get_json_over(connect, url, parts.path or "/", f"{host}:{port}", timeout_s)


async def _get_json_unix(endpoint: str, resource: str, timeout_s: float) -> dict[str, Any]:
    """GET ``resource`` over the Unix socket of a ``ws+unix://`` endpoint
    (our own Lightpanda's), as :func:`_get_json` does over TCP."""
    path = split_unix_url(endpoint)[0]
    return await _get_json_over(
        lambda: asyncio.open_unix_connection(path),
        endpoint + resource,
        resource,
        "localhost",
        timeout_s,
    )


async def _get_json_over(
    connect: Any, url: str, resource: str, host: str, timeout_s: float
) -> dict[str, Any]:
    """The GET of :func:`_get_json` on the stream ``connect()`` opens."""
    request = (
        f"GET {resource} HTTP/1.1\r\nHost: {host}\r\n"
        "Accept: application/json\r\nConnection: close\r\n\r\n"
    )
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await connect()
            try:
                writer.write(request.encode("ascii"))
                status, headers, body = await _read_answer(reader)
            finally:
                writer.transport.abort()
    except TimeoutError as e:
        raise TimeoutError(f"no full answer within {timeout_s:g} s") from e
    if status != 200:
        raise ValueError(f"answered HTTP {status}, not 200")
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        body = _unchunk(body)
    data = json.loads(body)
    if not isinstance(data, dict):
        raise ValueError(f"{url} did not answer a JSON object")
    return data


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, Message, bytes]:
    """Status, headers and body of an HTTP/1.1 answer whose body ends at its
    ``Content-Length`` or with the connection, at most
    :data:`MAX_VERSION_BYTES` in all.

    :raises ValueError: larger, or not HTTP.
    """
    raw = b""
    head_end = content_length = -1
    while len(raw) <= MAX_VERSION_BYTES:
        if head_end < 0 and b"\r\n\r\n" in raw:
            head_end = raw.index(b"\r\n\r\n") + 4
            status_line, _, header_text = raw[:head_end].partition(b"\r\n")
            fields = status_line.split(b" ", 2)
            if len(fields) < 2 or not fields[0].startswith(b"HTTP/") or not fields[1].isdigit():
                raise ValueError(f"did not answer HTTP ({status_line[:80]!r})")
            status = int(fields[1])
            headers = http.client.parse_headers(io.BytesIO(header_text))
            length = headers.get("Content-Length", "")
            content_length = int(length) if length.strip().isdigit() else -1
        if 0 <= content_length <= len(raw) - head_end:
            break
        chunk = await reader.read(MAX_VERSION_BYTES + 1 - len(raw))
        if not chunk:
            break
        raw += chunk
    if len(raw) > MAX_VERSION_BYTES:
        raise ValueError(f"answered more than {MAX_VERSION_BYTES} bytes")
    if head_end < 0:
        raise ValueError(f"did not answer HTTP ({raw[:80]!r})")
    end = head_end + content_length if content_length >= 0 else len(raw)
    return status, headers, raw[head_end:end]


def _unchunk(body: bytes) -> bytes:
    """Decode a chunked body (RFC 9112 7.1), trailers ignored."""
    out = bytearray()
    while body:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            break
        out += body[:size]
        body = body[size + 2 :]
    return bytes(out)


def info_from_browser_version(endpoint: str, version: dict[str, Any]) -> ServerInfo:
    """:class:`ServerInfo` of a Chromium reached over its pipe, from its
    ``Browser.getVersion`` answer (there is no ``/json/version``)."""
    return info_from_version(
        endpoint,
        {
            "Browser": str(version.get("product", "")),
            "User-Agent": str(version.get("userAgent", "")),
            "webSocketDebuggerUrl": endpoint,
        },
    )


def info_from_version(endpoint: str, version: dict[str, Any]) -> ServerInfo:
    """Build :class:`ServerInfo` from a ``/json/version`` document."""
    parts = urlsplit(endpoint)
    ws_url = version.get("webSocketDebuggerUrl") or ""
    if not parts.scheme.startswith(("http", "ws")) or parts.scheme == "ws+unix":
        ws_url = endpoint  # our own server's channel (a Unix socket, a pipe)
    elif parts.scheme in ("ws", "wss"):
        ws_url = endpoint
    elif ws_url:
        # A server advertises its own idea of its host; use the one we reached.
        ws_parts = urlsplit(ws_url)
        ws_scheme = "wss" if parts.scheme == "https" else "ws"
        ws_url = urlunsplit((ws_scheme, parts.netloc, ws_parts.path or "/", "", ""))
    if "Lightpanda-Version" in version or str(version.get("Browser", "")).startswith("Lightpanda"):
        return _info(
            LIGHTPANDA,
            str(version.get("Lightpanda-Version", version.get("Browser", ""))),
            ws_url,
            str(version.get("User-Agent", "")),
        )
    return _info(
        CHROMIUM, str(version.get("Browser", "")), ws_url, str(version.get("User-Agent", ""))
    )


def _info(backend: Backend, version: str, ws_url: str, user_agent: str = "") -> ServerInfo:
    """A server's :class:`ServerInfo`: what ``backend`` can do, where it is."""
    return ServerInfo(
        kind=backend.kind,
        version=version,
        ws_url=ws_url,
        max_contexts_per_connection=backend.max_contexts_per_connection,
        set_cookie_in_fetch_headers=backend.set_cookie_in_fetch_headers,
        unsupported=frozenset(backend.unsupported),
        default_user_agent=user_agent,
    )


async def discover(endpoint: str, timeout_s: float) -> ServerInfo:
    """Ask ``endpoint``'s ``/json/version`` what it is and where its browser
    WebSocket is.

    A ``ws://`` endpoint whose HTTP root does not answer is used as is, with
    kind ``"unknown"`` and Chromium's capabilities.

    A ``ws+unix://`` endpoint (the embedded Lightpanda's socket) is asked
    over that socket.

    :raises OSError: an ``http://`` or ``ws+unix://`` endpoint is unreachable,
        answers garbage, or does not answer in full within ``timeout_s``
        seconds (the whole request, not each read).
    """
    if endpoint.startswith(UNIX_SCHEME):
        try:
            return info_from_version(
                endpoint, await _get_json_unix(endpoint, "/json/version", timeout_s)
            )
        except (OSError, ValueError, TimeoutError, asyncio.IncompleteReadError) as e:
            raise OSError(f"{endpoint} /json/version: {e!r}") from e
    url = _http_root(endpoint) + "/json/version"
    try:
        version = await _get_json(url, timeout_s)
    except (OSError, ValueError) as e:
        if urlsplit(endpoint).scheme in ("ws", "wss"):
            return _info(UNKNOWN, "", endpoint)
        raise OSError(f"{redact_url(url)}: {scrub_secrets(e, endpoint)}") from None
    return info_from_version(endpoint, version)
