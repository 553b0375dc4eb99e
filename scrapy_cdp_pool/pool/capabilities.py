"""What each kind of CDP server honours, recognised from ``/json/version``.

Measured on Lightpanda 1.0.2 (``../shared/DESIGN.md``): one browser context per
connection and one page per context; ``Set-Cookie`` headers are visible in
``Fetch.requestPaused``. Chromium hides ``Set-Cookie`` there and reports it only
in ``Network.responseReceivedExtraInfo``.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from scrapy_cdp_pool.cdp.transport import UNIX_SCHEME, split_unix_url

#: the most a ``/json/version`` answer over a Unix socket may hold
_MAX_VERSION_BYTES = 1 << 20


@dataclass(frozen=True)
class ServerInfo:
    """One endpoint's identity and what it can do.

    ``ws_url`` is the browser WebSocket to connect to; ``max_contexts_per_connection``
    is ``None`` where the server sets no limit.
    """

    kind: str  # "lightpanda", "chromium" or "unknown" (a ws:// URL with no /json/version)
    version: str
    ws_url: str
    max_contexts_per_connection: int | None
    set_cookie_in_fetch_headers: bool
    #: capabilities it lacks (see render/context_options.py for the names)
    unsupported: frozenset[str] = frozenset()
    #: the User-Agent it sends by default
    default_user_agent: str = ""
    #: it keeps an HTTP cache shared by its contexts that serves a response
    #: stored for one cookie to another (``Vary: Cookie`` is not honoured: the
    #: embedded Lightpanda with ``CDP_POOL_HTTP_CACHE``, which adds cookies
    #: below its cache): pages keep such responses out of it
    cache_ignores_cookies: bool = False

    @property
    def label(self) -> str:
        return f"{self.kind} {self.version}".strip()


def _http_root(endpoint: str) -> str:
    parts = urlsplit(endpoint)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, "", "", ""))


#: no proxy from the environment (``http_proxy``): a CDP endpoint is asked
#: directly, like its WebSocket (a crawler's proxy cannot reach its own
#: 127.0.0.1 servers)
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _get_json(url: str, timeout_s: float) -> dict[str, Any]:
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"{url} is not an http(s) URL")
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310
    with _DIRECT.open(request, timeout=timeout_s) as response:
        data = json.loads(response.read())
    if not isinstance(data, dict):
        raise ValueError(f"{url} did not answer a JSON object")
    return data


async def _get_json_unix(endpoint: str, resource: str, timeout_s: float) -> dict[str, Any]:
    """GET ``resource`` over the Unix socket of a ``ws+unix://`` endpoint
    (our own Lightpanda's), within ``timeout_s`` seconds in all."""
    path = split_unix_url(endpoint)[0]
    async with asyncio.timeout(timeout_s):
        reader, writer = await asyncio.open_unix_connection(path)
        try:
            writer.write(
                f"GET {resource} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
                "Connection: close\r\n\r\n".encode()
            )
            head = await reader.readuntil(b"\r\n\r\n")
            status = head.split(b"\r\n", 1)[0].split(b" ")
            if len(status) < 2 or status[1] != b"200":
                raise ValueError(f"answered {head[:80]!r}")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.lower().split(b"\r\n")
                    if line.startswith(b"content-length:")
                ),
                None,
            )
            if length is None or not 0 <= length <= _MAX_VERSION_BYTES:
                raise ValueError(f"answered no usable Content-Length: {head[:200]!r}")
            body = await reader.readexactly(length)
        finally:
            writer.close()
    data = json.loads(body)
    if not isinstance(data, dict):
        raise ValueError(f"{endpoint}{resource} did not answer a JSON object")
    return data


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
        return ServerInfo(
            kind="lightpanda",
            version=str(version.get("Lightpanda-Version", version.get("Browser", ""))),
            ws_url=ws_url,
            max_contexts_per_connection=1,
            set_cookie_in_fetch_headers=True,
            # Measured on 1.0.2: a user agent containing "Mozilla" is replaced by
            # its own, time-zone overrides do nothing, one context per connection
            # (no per-context proxy).
            unsupported=frozenset({"user_agent_mozilla", "timezone", "proxy"}),
            default_user_agent=str(version.get("User-Agent", "")),
        )
    return ServerInfo(
        kind="chromium",
        version=str(version.get("Browser", "")),
        ws_url=ws_url,
        max_contexts_per_connection=None,
        set_cookie_in_fetch_headers=False,
        default_user_agent=str(version.get("User-Agent", "")),
    )


async def discover(endpoint: str, timeout_s: float) -> ServerInfo:
    """Ask ``endpoint``'s ``/json/version`` what it is and where its browser
    WebSocket is.

    A ``ws://`` endpoint whose HTTP root does not answer is used as is, with
    kind ``"unknown"`` and Chromium's capabilities.

    A ``ws+unix://`` endpoint (the embedded Lightpanda's socket) is asked
    over that socket.

    :raises OSError: an ``http://`` or ``ws+unix://`` endpoint is unreachable
        or answers garbage within ``timeout_s`` seconds.
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
        version = await asyncio.to_thread(_get_json, url, timeout_s)
    except (OSError, ValueError) as e:
        if urlsplit(endpoint).scheme in ("ws", "wss"):
            return ServerInfo("unknown", "", endpoint, None, False)
        raise OSError(f"{url}: {e}") from e
    return info_from_version(endpoint, version)
