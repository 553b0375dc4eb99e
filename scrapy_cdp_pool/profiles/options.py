"""A stored profile as browser-context options: :class:`ContextOptions` for the
pool's renders, keyword arguments of Playwright's ``Browser.new_context`` for
sign-in and ``profile create``."""

from __future__ import annotations

from typing import Any

from scrapy_cdp_pool.profiles.store import Profile
from scrapy_cdp_pool.render import ContextOptions

#: What the README calls each capability a profile may need.
REQUIREMENT_TEXT = {
    "user_agent_mozilla": 'a user agent containing "Mozilla"',
    "timezone": "a time zone",
    "proxy": "a proxy",
    "geolocation": "a geolocation",
}


def context_options(profile: Profile, *, save_state: bool = False) -> ContextOptions:
    """The pool's :class:`ContextOptions` for ``profile``."""
    identity = profile.identity
    state = profile.storage_state
    viewport = identity.get("viewport")
    geolocation = identity.get("geolocation")
    proxy = identity.get("proxy") or {}
    return ContextOptions(
        name=profile.name,
        cookies=tuple(dict(cookie) for cookie in state.get("cookies", [])),
        local_storage=tuple(
            (
                origin["origin"],
                tuple((i["name"], i["value"]) for i in origin.get("localStorage", [])),
            )
            for origin in state.get("origins", [])
        ),
        user_agent=identity.get("userAgent"),
        locale=identity.get("locale"),
        timezone_id=identity.get("timezoneId"),
        viewport=(viewport["width"], viewport["height"]) if viewport else None,
        device_scale_factor=identity.get("deviceScaleFactor"),
        is_mobile=bool(identity.get("isMobile", False)),
        geolocation=(
            (geolocation["latitude"], geolocation["longitude"], geolocation.get("accuracy", 0))
            if geolocation
            else None
        ),
        extra_http_headers=tuple((identity.get("extraHTTPHeaders") or {}).items()),
        proxy_server=proxy.get("server"),
        proxy_username=proxy.get("username"),
        proxy_password=proxy.get("password"),
        save_state=save_state,
    )


def playwright_context_args(profile: Profile, *, dedicated: bool = False) -> dict[str, Any]:
    """Keyword arguments of Playwright's ``Browser.new_context`` for
    ``profile`` (its storage state and profile).

    ``dedicated``: the context is on a dedicated Lightpanda server started
    with the profile's proxy (credentials included) and time zone: neither is
    passed (Playwright would answer each 407 of wrong credentials again, ten
    times on Lightpanda: measured)."""
    identity = profile.identity
    args: dict[str, Any] = {"storage_state": profile.storage_state}
    for key, arg in (
        ("userAgent", "user_agent"),
        ("viewport", "viewport"),
        ("locale", "locale"),
        ("timezoneId", "timezone_id"),
        ("extraHTTPHeaders", "extra_http_headers"),
        ("geolocation", "geolocation"),
        ("proxy", "proxy"),
        ("deviceScaleFactor", "device_scale_factor"),
        ("isMobile", "is_mobile"),
    ):
        if identity.get(key) is not None:
            args[arg] = identity[key]
    if dedicated:
        args.pop("timezone_id", None)
        args.pop("proxy", None)
    return args


def describe_requirements(requirements: frozenset[str]) -> str:
    """``requirements`` in words, for logs and error messages."""
    return ", ".join(REQUIREMENT_TEXT.get(r, r) for r in sorted(requirements))
