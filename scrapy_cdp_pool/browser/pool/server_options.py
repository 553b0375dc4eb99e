"""ServerOptions: the parts of a profile a server may take only for all of
its pages, not per browser context.

Chromium takes a proxy per browser context (``Target.createBrowserContext``'s
``proxyServer``) and a time zone per page (``Emulation.setTimezoneOverride``).
Lightpanda 1.0.2 takes a proxy per context too (measured, with its
credentials in the proxy's URL) but ignores the time-zone override; a
``lightpanda serve`` process takes a time zone for all its pages
(``--timezone IANA``). So a profile with a time zone runs on a dedicated
Lightpanda server started with it; see :mod:`scrapy_cdp_pool.browser.pool.dedicated`.

A proxy is a server option only for a Playwright context on Lightpanda (a
sign-in: ``ContextOptions.server_options(proxy=True)``), since Playwright
keeps credentials out of a proxy's URL. It goes in the environment, with its
credentials, which libcurl reads as it does ``http_proxy``: Lightpanda then
sends them with every request, the page's scripts and styles included, and
they stay off the command line, which any local user can read in ``/proc``; a
process's environment only its user can. ``no_proxy`` is emptied, so that
nothing bypasses the proxy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit, urlunsplit

#: the capability names (see render/_request/context_options.py) a dedicated server covers
SERVER_LEVEL = frozenset({"proxy", "timezone"})


@dataclass(frozen=True)
class ServerOptions:
    """``proxy_server`` is a proxy URL without credentials
    (``http://host:port``, ``socks5://host:port``), ``proxy_username`` and
    ``proxy_password`` its credentials (never shown: not in ``repr`` nor
    :attr:`label`); ``timezone_id`` an IANA time zone (``Europe/Paris``).
    ProfileRegistry with the same proxy, credentials and time zone share a server."""

    proxy_server: str | None = None
    timezone_id: str | None = None
    proxy_username: str | None = field(default=None, repr=False)
    proxy_password: str | None = field(default=None, repr=False)

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
        """Arguments of ``lightpanda serve`` (the time zone)."""
        return ["--timezone", self.timezone_id] if self.timezone_id else []

    def lightpanda_env(self) -> dict[str, str]:
        """Environment variables of ``lightpanda serve`` (the proxy, with its
        credentials); empty without a proxy."""
        if not self.proxy_server:
            return {}
        url = with_credentials(self.proxy_server, self.proxy_username, self.proxy_password)
        env = {name: url for name in ("http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy")}
        return {**env, "ALL_PROXY": url, "no_proxy": "", "NO_PROXY": ""}

    @property
    def label(self) -> str:
        """For logs and stats: ``proxy http://host:port as alice, time zone
        Asia/Tokyo`` (the user name, never the password)."""
        parts = []
        if self.proxy_server:
            user = f" as {self.proxy_username}" if self.proxy_username else ""
            parts.append(f"proxy {without_credentials(self.proxy_server)}{user}")
        if self.timezone_id:
            parts.append(f"time zone {self.timezone_id}")
        return ", ".join(parts) or "no options"


def with_credentials(url: str, username: str | None, password: str | None) -> str:
    """``url`` (``scheme://host:port``) with ``username:password@``,
    percent-encoded; ``url`` itself without a username."""
    if not username:
        return url
    parts = urlsplit(url)
    userinfo = quote(username, safe="") + (":" + quote(password, safe="") if password else "")
    return urlunsplit((parts.scheme, f"{userinfo}@{parts.netloc}", parts.path, "", ""))


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
