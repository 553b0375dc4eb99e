"""The user agent a rendered request goes out with, as plain Scrapy's would.

Scrapy's ``UserAgentMiddleware`` sets each request's ``User-Agent`` header
(``USER_AGENT``, by default ``Scrapy/<version> (+https://scrapy.org)``); a
request may set its own. The rule, per page:

- a profile's user agent wins (it is part of the profile, and routes a
  "Mozilla" one to Chromium: ``pool/capabilities.py``); otherwise the
  request's ``User-Agent`` header;
- Chromium: that user agent (or, with none at all, the browser's own with
  "HeadlessChrome" made "Chrome") through ``Emulation.setUserAgentOverride``,
  so the server and ``navigator.userAgent`` see the same; for a Chrome user
  agent, client hints derived from it (``userAgentMetadata``: ``Sec-CH-UA*``
  headers and ``navigator.userAgentData`` agree with it); for any other, no
  metadata, and Chromium then sends no ``Sec-CH-UA*`` at all (measured on
  Chromium 156), so no Chrome hint contradicts it;
- Lightpanda: a user agent without "Mozilla" through
  ``Network.setUserAgentOverride``; one with "Mozilla" Lightpanda refuses
  (``lightpanda help serve``: "any value containing Mozilla is forbidden"): the
  page goes out with Lightpanda's own, and the crawl warns once
  (:class:`RefusedUserAgentWarning`). A request's header never makes a request
  need Chromium: only a profile's user agent does.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from scrapy_cdp_pool.browser.backends import Capability
from scrapy_cdp_pool.browser.pool.capabilities import ServerInfo
from scrapy_cdp_pool.render._request.spec import RenderSpec

# the name it logged under before render/ went private (log lines, LOG filters)
logger = logging.getLogger("scrapy_cdp_pool.render.user_agent")

_CHROME = re.compile(r"\b(?:Chrome|CriOS)/(\d+)((?:\.\d+){0,3})")
_PLATFORMS = (  # (substring of the user agent, Sec-CH-UA-Platform), first match wins
    ("Android", "Android"),
    ("Windows", "Windows"),
    ("CrOS", "Chrome OS"),
    ("Macintosh", "macOS"),
    ("Mac OS X", "macOS"),
    ("iPhone", "iOS"),
    ("iPad", "iOS"),
    ("Linux", "Linux"),
)


def wanted_user_agent(spec: RenderSpec) -> str | None:
    """The profile's user agent, else the request's ``User-Agent``."""
    context = spec.context
    if context is not None and context.user_agent:
        return context.user_agent
    return spec.user_agent


def refused_by(info: ServerInfo, user_agent: str | None) -> bool:
    """Whether ``info``'s server replaces ``user_agent`` by its own."""
    return (
        bool(user_agent)
        and "user_agent_mozilla" in info.unsupported
        and ("mozilla" in str(user_agent).lower())
    )


def client_hints(user_agent: str) -> dict[str, Any] | None:
    """``userAgentMetadata`` of ``Emulation.setUserAgentOverride`` for a
    Chrome user agent (``Chrome/124.0.6367.60``; brands as Chrome lists them:
    "Chromium", "Google Chrome" and a GREASE brand), ``None`` for any other
    (Edge and Opera add brands of their own that a user agent does not tell)."""
    match = _CHROME.search(user_agent)
    if match is None or re.search(r"\b(?:Edg|EdgA|OPR|SamsungBrowser)/", user_agent):
        return None
    major = match.group(1)
    full = major + (match.group(2) or ".0.0.0")
    platform = next((name for key, name in _PLATFORMS if key in user_agent), "")
    mobile = "Mobile" in user_agent
    brands = [("Chromium", major), ("Google Chrome", major), ("Not-A.Brand", "99")]
    full_brands = [("Chromium", full), ("Google Chrome", full), ("Not-A.Brand", "99.0.0.0")]
    architecture = "arm" if re.search(r"\b(?:arm|aarch64)", user_agent, re.IGNORECASE) else "x86"
    if platform in ("Android", "iOS"):
        architecture = ""
    return {
        "brands": [{"brand": b, "version": v} for b, v in brands],
        "fullVersionList": [{"brand": b, "version": v} for b, v in full_brands],
        "fullVersion": full,
        "platform": platform,
        "platformVersion": "",
        "architecture": architecture,
        "model": "",
        "mobile": mobile,
        "bitness": "" if architecture == "" else "64",
        "wow64": False,
    }


def user_agent_command(spec: RenderSpec, info: ServerInfo) -> tuple[str, dict[str, Any]] | None:
    """The command that sets this page's user agent on ``info``'s server, or
    ``None`` to leave the server's own (Lightpanda, with none wanted or a
    refused one)."""
    wanted = wanted_user_agent(spec)
    context = spec.context
    locale = context.locale if context is not None else None
    if not info.backend.can(Capability.USER_AGENT_MOZILLA):  # Lightpanda
        if not wanted or refused_by(info, wanted):
            return None
        params: dict[str, Any] = {"userAgent": wanted}
        if locale:
            params["acceptLanguage"] = locale
        return "Network.setUserAgentOverride", params
    user_agent = wanted or info.default_user_agent.replace("HeadlessChrome/", "Chrome/")
    if not user_agent:
        return None
    params = {"userAgent": user_agent}
    if locale:
        params["acceptLanguage"] = locale
    metadata = client_hints(user_agent)
    if metadata is not None:
        params["userAgentMetadata"] = metadata
    return "Emulation.setUserAgentOverride", params


class RefusedUserAgentWarning:
    """Warns once per crawl that a rendered request's "Mozilla" user agent
    was replaced by Lightpanda's own."""

    def __init__(self) -> None:
        self.warned = False

    def check(self, spec: RenderSpec, info: ServerInfo, extra: dict[str, Any]) -> None:
        wanted = wanted_user_agent(spec)
        if self.warned or not refused_by(info, wanted):
            return
        self.warned = True
        logger.warning(
            'Lightpanda refuses user agents containing "Mozilla": rendered requests with '
            "User-Agent %r go out with Lightpanda's own, %r (set USER_AGENT without "
            '"Mozilla", or CDP_POOL_BROWSER = "chromium", to send yours)',
            wanted,
            info.default_user_agent or "Lightpanda/<version>",
            extra=extra,
        )
