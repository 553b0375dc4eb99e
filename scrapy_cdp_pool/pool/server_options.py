"""ServerOptions: the parts of an identity a server may take only for all of
its pages, not per browser context.

Chromium takes a proxy per browser context (``Target.createBrowserContext``'s
``proxyServer``) and a time zone per page (``Emulation.setTimezoneOverride``).
Lightpanda 1.0.2 does neither (measured: it has one context per connection, no
``proxyServer``, and ignores the override), but its ``serve`` command takes
both for the whole server: ``--http-proxy URL`` and ``--timezone IANA``
(``lightpanda serve --help``). So an identity with a proxy or a time zone runs
on a dedicated Lightpanda server started with them; see
:mod:`scrapy_cdp_pool.pool.dedicated`.

Proxy credentials are not part of the options: they stay off the server's
command line (which any local user can read in ``/proc``) and are answered on
the proxy's challenge (``Fetch.authRequired``, which Lightpanda sends for a
proxy's 407), so identities with different credentials for one proxy share a
server.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

#: the capability names (see render/context_options.py) a dedicated server covers
SERVER_LEVEL = frozenset({"proxy", "timezone"})


@dataclass(frozen=True)
class ServerOptions:
    """``proxy_server`` is a proxy URL without credentials
    (``http://host:port``, ``socks5://host:port``); ``timezone_id`` an IANA
    time zone (``Europe/Paris``)."""

    proxy_server: str | None = None
    timezone_id: str | None = None

    @property
    def covers(self) -> frozenset[str]:
        """The capabilities a server started with these options honours."""
        covered = set()
        if self.proxy_server:
            covered.add("proxy")
        if self.timezone_id:
            covered.add("timezone")
        return frozenset(covered)

    def lightpanda_args(self) -> list[str]:
        """Arguments of ``lightpanda serve``."""
        args = []
        if self.proxy_server:
            args += ["--http-proxy", without_credentials(self.proxy_server)]
        if self.timezone_id:
            args += ["--timezone", self.timezone_id]
        return args

    @property
    def label(self) -> str:
        """For logs and stats: ``proxy http://host:port, time zone Asia/Tokyo``."""
        parts = []
        if self.proxy_server:
            parts.append(f"proxy {without_credentials(self.proxy_server)}")
        if self.timezone_id:
            parts.append(f"time zone {self.timezone_id}")
        return ", ".join(parts) or "no options"


def without_credentials(url: str) -> str:
    """``url`` with any ``user:password@`` removed."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
