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


def info_from_version(endpoint: str, version: dict[str, Any]) -> ServerInfo:
    """Build :class:`ServerInfo` from a ``/json/version`` document."""
    parts = urlsplit(endpoint)
    ws_url = version.get("webSocketDebuggerUrl") or ""
    if parts.scheme in ("ws", "wss"):
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

    :raises OSError: an ``http://`` endpoint is unreachable or answers garbage
        within ``timeout_s`` seconds.
    """
    url = _http_root(endpoint) + "/json/version"
    try:
        version = await asyncio.to_thread(_get_json, url, timeout_s)
    except (OSError, ValueError) as e:
        if urlsplit(endpoint).scheme in ("ws", "wss"):
            return ServerInfo("unknown", "", endpoint, None, False)
        raise OSError(f"{url}: {e}") from e
    return info_from_version(endpoint, version)
