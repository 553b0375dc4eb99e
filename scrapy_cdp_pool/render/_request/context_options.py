"""ContextOptions: what makes a profile, applied to one fresh browser context.

Built from a stored profile (a Playwright ``storageState`` and a profile
sidecar) by :mod:`scrapy_cdp_pool.profiles`; applied here as plain CDP: cookies
with ``Storage.setCookies``, localStorage by a script run in each new document
of its origin, user agent and locale with ``Network.setUserAgentOverride``,
time zone, viewport and geolocation with ``Emulation``, extra headers with
``Network.setExtraHTTPHeaders``, a proxy as the context's ``proxyServer``.

Capability names (see :attr:`ServerInfo.unsupported
<scrapy_cdp_pool.browser.pool.capabilities.ServerInfo>`): ``"user_agent_mozilla"``,
``"timezone"``, ``"proxy"``, ``"geolocation"``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from scrapy_cdp_pool.browser.pool.server_options import ServerOptions, with_credentials

Cookie = dict[str, Any]
"""A cookie as Playwright's ``storageState`` writes it: name, value, domain,
path, expires (seconds since the epoch, -1 for a session cookie), httpOnly,
secure, sameSite."""


@dataclass(frozen=True)
class ContextOptions:
    """One profile's browser context. ``viewport`` is ``(width, height)`` in
    CSS pixels; ``geolocation`` is ``(latitude, longitude, accuracy_m)``;
    ``local_storage`` is ``((origin, ((name, value), ...)), ...)``."""

    #: the profile's name; ``""`` for a request without a profile (one
    #: with a ``meta["proxy"]``: see render/_request/request_proxy.py)
    name: str = ""
    cookies: tuple[Cookie, ...] = ()
    local_storage: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    user_agent: str | None = None
    locale: str | None = None
    timezone_id: str | None = None
    viewport: tuple[int, int] | None = None
    device_scale_factor: float | None = None
    is_mobile: bool = False
    geolocation: tuple[float, float, float] | None = None
    extra_http_headers: tuple[tuple[str, str], ...] = ()
    proxy_server: str | None = None
    proxy_username: str | None = None
    proxy_password: str | None = None
    save_state: bool = False

    def requirements(self) -> frozenset[str]:
        """The capabilities a server needs to honour these options."""
        needs = set()
        if self.user_agent and "mozilla" in self.user_agent.lower():
            needs.add("user_agent_mozilla")
        if self.timezone_id:
            needs.add("timezone")
        if self.proxy_server:
            needs.add("proxy")
        if self.geolocation:
            needs.add("geolocation")
        return frozenset(needs)

    @functools.cached_property
    def state_digest(self) -> str:
        """A digest of the cookies and localStorage: a page kept for reuse
        (``CDP_POOL_REUSE_PAGES``) serves only the same state, so a profile
        whose state changed on disk (signed in again) gets a fresh context."""
        state = json.dumps([self.cookies, self.local_storage], sort_keys=True, default=str)
        return hashlib.blake2b(state.encode(), digest_size=8).hexdigest()

    @functools.cached_property
    def proxy_key(self) -> str:
        """A digest of the proxy and its credentials (``""`` without one): a
        kept page goes on only through the proxy it was made with (a
        request's ``meta["proxy"]`` may differ between requests)."""
        if not self.proxy_server:
            return ""
        proxy = json.dumps([self.proxy_server, self.proxy_username, self.proxy_password])
        return "@" + hashlib.blake2b(proxy.encode(), digest_size=8).hexdigest()

    def server_options(self, *, proxy: bool = False) -> ServerOptions | None:
        """The time zone, for a server that takes it only for all its pages (a
        dedicated Lightpanda server); ``None`` without one. The proxy is one
        only with ``proxy``, for a Playwright context on Lightpanda (a sign-in):
        Playwright keeps a proxy's credentials out of its URL and answers the
        407 itself, which Lightpanda does not report for ``CONNECT``; a
        rendered page takes it per context on both backends
        (:meth:`context_params`)."""
        if not self.timezone_id and not (proxy and self.proxy_server):
            return None
        if not proxy or not self.proxy_server:
            return ServerOptions(timezone_id=self.timezone_id)
        return ServerOptions(
            proxy_server=self.proxy_server,
            timezone_id=self.timezone_id,
            proxy_username=self.proxy_username,
            proxy_password=self.proxy_password,
        )

    def context_params(
        self, unsupported: frozenset[str] = frozenset(), *, credentials_in_url: bool = False
    ) -> dict[str, Any]:
        """Parameters of ``Target.createBrowserContext``; no ``proxyServer``
        on a server that has ``"proxy"`` in ``unsupported`` (one started with
        the proxy for all its pages, :class:`ServerOptions`).
        ``credentials_in_url`` (Lightpanda's
        :attr:`~scrapy_cdp_pool.backends.Backend.proxy_credentials_in_url`):
        the proxy's credentials go in its URL; else they answer its challenge
        (``Fetch.authRequired``, render/_page/interception.py)."""
        if not self.proxy_server or "proxy" in unsupported:
            return {}
        server = self.proxy_server
        if credentials_in_url:
            server = with_credentials(server, self.proxy_username, self.proxy_password)
        # "<-loopback>": no implicit bypass of localhost, as plain Scrapy does.
        return {"proxyServer": server, "proxyBypassList": "<-loopback>"}

    def storage_cookies(self) -> list[dict[str, Any]]:
        """Cookies as ``Storage.setCookies`` takes them."""
        cookies = []
        for cookie in self.cookies:
            param: dict[str, Any] = {
                "name": cookie["name"],
                "value": cookie["value"],
                "domain": cookie.get("domain", ""),
                "path": cookie.get("path", "/"),
                "httpOnly": bool(cookie.get("httpOnly", False)),
                "secure": bool(cookie.get("secure", False)),
            }
            expires = cookie.get("expires", -1)
            if isinstance(expires, (int, float)) and expires > 0:
                param["expires"] = expires
            if cookie.get("sameSite") in ("Strict", "Lax", "None"):
                param["sameSite"] = cookie["sameSite"]
            cookies.append(param)
        return cookies

    def page_commands(
        self, default_user_agent: str, unsupported: frozenset[str] = frozenset()
    ) -> list[tuple[str, dict[str, Any]]]:
        """``(method, params)`` to send on the page's session before navigating;
        no time-zone override on a server that has ``"timezone"`` in
        ``unsupported`` (a dedicated server was started with it).

        ``default_user_agent`` is the server's own (``/json/version``): a locale
        alone is sent with it, since Lightpanda sends an empty User-Agent when
        given an accept-language without one.
        """
        commands: list[tuple[str, dict[str, Any]]] = []
        if self.user_agent or self.locale:
            params: dict[str, Any] = {"userAgent": self.user_agent or default_user_agent}
            if self.locale:
                params["acceptLanguage"] = self.locale
            commands.append(("Network.setUserAgentOverride", params))
        if self.locale:
            commands.append(("Emulation.setLocaleOverride", {"locale": self.locale}))
        if self.timezone_id and "timezone" not in unsupported:
            commands.append(("Emulation.setTimezoneOverride", {"timezoneId": self.timezone_id}))
        if self.viewport:
            width, height = self.viewport
            commands.append(
                (
                    "Emulation.setDeviceMetricsOverride",
                    {
                        "width": width,
                        "height": height,
                        "deviceScaleFactor": self.device_scale_factor or 1,
                        "mobile": self.is_mobile,
                    },
                )
            )
        if self.geolocation:
            latitude, longitude, accuracy = self.geolocation
            commands.append(
                (
                    "Emulation.setGeolocationOverride",
                    {"latitude": latitude, "longitude": longitude, "accuracy": accuracy},
                )
            )
        if self.extra_http_headers:
            commands.append(
                ("Network.setExtraHTTPHeaders", {"headers": dict(self.extra_http_headers)})
            )
        for origin, items in self.local_storage:
            if not items:
                continue
            source = (
                f"if (location.origin === {json.dumps(origin)}) {{ try {{"
                f" for (const [k, v] of {json.dumps([list(i) for i in items])})"
                " localStorage.setItem(k, v); } catch (e) {} }"
            )
            commands.append(("Page.addScriptToEvaluateOnNewDocument", {"source": source}))
        return commands

    @property
    def needs_network_domain(self) -> bool:
        return bool(self.extra_http_headers or self.user_agent or self.locale)


def playwright_cookie(cdp_cookie: dict[str, Any]) -> Cookie:
    """A CDP ``Network.Cookie`` in Playwright's ``storageState`` shape."""
    expires = cdp_cookie.get("expires", -1)
    if cdp_cookie.get("session") or not isinstance(expires, (int, float)) or expires <= 0:
        expires = -1
    return {
        "name": cdp_cookie["name"],
        "value": cdp_cookie["value"],
        "domain": cdp_cookie.get("domain", ""),
        "path": cdp_cookie.get("path", "/"),
        "expires": expires,
        "httpOnly": bool(cdp_cookie.get("httpOnly", False)),
        "secure": bool(cdp_cookie.get("secure", False)),
        "sameSite": cdp_cookie.get("sameSite") or "Lax",
    }
