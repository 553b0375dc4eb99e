"""Why a page behind a proxy could not connect, asked of the proxy itself.

Lightpanda 1.0.2 turns a proxy's ``407 Proxy Authentication Required`` to the
page's ``CONNECT`` (an HTTPS site through a proxy whose credentials are wrong
or missing) into ``CouldntConnect``, which reads as a refused connection and
would be retried twice with the same credentials. After such a failure
through a proxy, :func:`proxy_refusal` sends the proxy one ``CONNECT`` of its
own for the same host, with the same credentials (``Proxy-Authorization:
Basic``), and reads its status line: a 407 becomes
:class:`~scrapy_cdp_pool.errors.ProxyAuthenticationRejected` (not retried),
anything else leaves the failure as it was. An HTTPS proxy is spoken to over
TLS without checking its certificate (the browser checked it, or was told not
to). The credentials are never in the message.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from urllib.parse import urlsplit

from scrapy_cdp_pool.browser.pool.server_options import without_credentials
from scrapy_cdp_pool.errors import NavigationFailed, ProxyAuthenticationRejected
from scrapy_cdp_pool.render import ContextOptions

#: how long the question to the proxy may take, seconds (a loopback or LAN
#: proxy answers in milliseconds; past this the failure stays as it was)
PROBE_TIMEOUT_S = 5.0
_REFUSED = "CouldntConnect"


async def connect_status(
    proxy_server: str,
    username: str | None,
    password: str | None,
    target: str,
    timeout_s: float = PROBE_TIMEOUT_S,
) -> int | None:
    """The status the proxy ``proxy_server`` (``http[s]://host:port``) answers
    to ``CONNECT target`` (``host:port``) with these credentials, or ``None``
    when it cannot be asked (unreachable, no HTTP status line within
    ``timeout_s`` seconds)."""
    parts = urlsplit(proxy_server)
    if not parts.hostname:
        return None
    context = None
    if parts.scheme == "https":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"]
    if username is not None:
        token = base64.b64encode(f"{username}:{password or ''}".encode()).decode()
        lines.append(f"Proxy-Authorization: Basic {token}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection(parts.hostname, port, ssl=context)
            try:
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
                await writer.drain()
                status_line = await reader.readline()
            finally:
                writer.close()
    except (OSError, TimeoutError):  # ssl.SSLError is an OSError
        return None
    fields = status_line.split()
    if len(fields) < 2 or not fields[0].startswith(b"HTTP/") or not fields[1].isdigit():
        return None
    return int(fields[1])


async def proxy_refusal(
    error: NavigationFailed, url: str, context: ContextOptions | None, where: str
) -> ProxyAuthenticationRejected | None:
    """The named error for ``error`` (the page of ``url`` failed with
    ``CouldntConnect`` through ``context``'s proxy) when the proxy answers
    407 to a ``CONNECT`` for the same host; ``None`` otherwise (no proxy,
    another failure, another answer). ``where``: the request (and its proxy,
    without credentials) for the message."""
    if context is None or not context.proxy_server or _REFUSED not in error.reason:
        return None
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    target = f"{host}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    status = await connect_status(
        context.proxy_server, context.proxy_username, context.proxy_password, target
    )
    if status != 407:
        return None
    given = "its credentials were refused" if context.proxy_username else "no credentials given"
    return ProxyAuthenticationRejected(
        f"{where}: the proxy {without_credentials(context.proxy_server)} answered 407 Proxy "
        f"Authentication Required to CONNECT {target} ({given}; the browser reported "
        f"{error.reason!r}); not retried: the same credentials get the same answer"
    )
