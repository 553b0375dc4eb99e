"""Shape and type checks of profile files, with problems that name the key and
never show a value (cookies, tokens and passwords stay out of messages).

``storage_state_problems`` checks a Playwright ``storageState`` (what
``BrowserContext.storage_state()`` writes); ``identity_problems`` checks an
identity file (``NAME.identity.json``), whose keys are :data:`IDENTITY_KEYS`.
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from scrapy_cdp_pool.settings.signed_out import parse_signed_out

SAME_SITE = ("Strict", "Lax", "None")
STATE_KEYS = ("cookies", "origins")
IDENTITY_KEYS = (
    "userAgent",
    "viewport",
    "locale",
    "timezoneId",
    "extraHTTPHeaders",
    "geolocation",
    "proxy",
    "deviceScaleFactor",
    "isMobile",
    "signedOut",
)


def _type(value: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }.get(type(value), f"a {type(value).__name__}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check(problems: list[str], where: str, value: Any, ok: bool, expected: str) -> bool:
    if not ok:
        problems.append(f"{where}: expected {expected}, got {_type(value)}")
    return ok


def _string(problems: list[str], where: str, value: Any, *, empty: bool = True) -> bool:
    if value == "" and not empty:
        problems.append(f"{where}: expected a non-empty string, got an empty one")
        return False
    expected = "a string" if empty else "a non-empty string"
    return _check(problems, where, value, isinstance(value, str), expected)


def storage_state_problems(state: Any) -> list[str]:
    """What is wrong with ``state`` as a Playwright ``storageState``."""
    problems: list[str] = []
    if not _check(problems, "storage state", state, isinstance(state, dict), "an object"):
        return problems
    unknown = sorted(k for k in state if k not in STATE_KEYS)
    if unknown:
        problems.append(f"unknown keys {unknown}; a storage state has {list(STATE_KEYS)}")
    cookies = state.get("cookies", [])
    if _check(problems, "cookies", cookies, isinstance(cookies, list), "a list"):
        for index, cookie in enumerate(cookies):
            _cookie_problems(problems, f"cookies[{index}]", cookie)
    origins = state.get("origins", [])
    if _check(problems, "origins", origins, isinstance(origins, list), "a list"):
        for index, origin in enumerate(origins):
            _origin_problems(problems, f"origins[{index}]", origin)
    return problems


def _cookie_problems(problems: list[str], where: str, cookie: Any) -> None:
    if not _check(problems, where, cookie, isinstance(cookie, dict), "an object"):
        return
    for key in ("name", "domain"):
        if key not in cookie:
            problems.append(f"{where}: missing {key!r}")
        else:
            _string(problems, f"{where}.{key}", cookie[key], empty=False)
    if "value" not in cookie:
        problems.append(f"{where}: missing 'value'")
    else:
        _string(problems, f"{where}.value", cookie["value"])
    if "path" in cookie:
        _string(problems, f"{where}.path", cookie["path"])
    if "expires" in cookie:
        value = cookie["expires"]
        _check(
            problems,
            f"{where}.expires",
            value,
            _is_number(value),
            "a number (seconds since the epoch, -1 for a session cookie)",
        )
    for key in ("httpOnly", "secure"):
        if key in cookie:
            value = cookie[key]
            _check(problems, f"{where}.{key}", value, isinstance(value, bool), "a boolean")
    if "sameSite" in cookie and cookie["sameSite"] not in SAME_SITE:
        problems.append(f"{where}.sameSite: expected one of {', '.join(SAME_SITE)}")


def _origin_problems(problems: list[str], where: str, origin: Any) -> None:
    if not _check(problems, where, origin, isinstance(origin, dict), "an object"):
        return
    value = origin.get("origin")
    if _string(problems, f"{where}.origin", value, empty=False) and not value.startswith(
        ("http://", "https://")
    ):
        problems.append(f"{where}.origin: expected an origin like https://example.com")
    items = origin.get("localStorage", [])
    if not _check(problems, f"{where}.localStorage", items, isinstance(items, list), "a list"):
        return
    for index, item in enumerate(items):
        at = f"{where}.localStorage[{index}]"
        if _check(problems, at, item, isinstance(item, dict), "an object"):
            _string(problems, f"{at}.name", item.get("name"))
            _string(problems, f"{at}.value", item.get("value"))


def identity_problems(identity: Any) -> list[str]:
    """What is wrong with ``identity`` as an identity file's content."""
    problems: list[str] = []
    if not _check(problems, "identity", identity, isinstance(identity, dict), "an object"):
        return problems
    for key, value in identity.items():
        check = _IDENTITY_CHECKS.get(key)
        if check is None:
            problems.append(f"unknown key {key!r}; allowed: {', '.join(IDENTITY_KEYS)}")
        elif value is not None:
            check(problems, key, value)
    return problems


def _dict_of(
    problems: list[str], where: str, value: Any, fields: dict[str, tuple[bool, str]]
) -> None:
    """``fields``: name -> (required, "number" | "int" | "string")."""
    if not _check(problems, where, value, isinstance(value, dict), "an object"):
        return
    unknown = sorted(str(k) for k in value if k not in fields)
    if unknown:
        problems.append(f"{where}: unknown keys {unknown}; allowed: {', '.join(fields)}")
    for name, (required, kind) in fields.items():
        if name not in value:
            if required:
                problems.append(f"{where}: missing {name!r}")
            continue
        item = value[name]
        ok = {
            "number": _is_number(item),
            "int": isinstance(item, int) and not isinstance(item, bool) and item > 0,
            "string": isinstance(item, str),
        }[kind]
        expected = {"number": "a number", "int": "an integer > 0", "string": "a string"}[kind]
        _check(problems, f"{where}.{name}", item, ok, expected)


def _headers(problems: list[str], where: str, value: Any) -> None:
    if _check(problems, where, value, isinstance(value, dict), "an object of name: value"):
        for name, item in value.items():
            _string(problems, f"{where}[{name!r}]", item)


def _geolocation(problems: list[str], where: str, value: Any) -> None:
    before = len(problems)
    fields = {
        "latitude": (True, "number"),
        "longitude": (True, "number"),
        "accuracy": (False, "number"),
    }
    _dict_of(problems, where, value, fields)
    if len(problems) == before:
        if not -90 <= value["latitude"] <= 90:
            problems.append(f"{where}.latitude: expected a number from -90 to 90")
        if not -180 <= value["longitude"] <= 180:
            problems.append(f"{where}.longitude: expected a number from -180 to 180")
        if value.get("accuracy", 0) < 0:
            problems.append(f"{where}.accuracy: expected metres >= 0")


PROXY_SCHEMES = ("http", "https", "socks4", "socks5")
# a name (underscores too: container names have them), IPv4, IPv6
_HOSTNAME = re.compile(r"[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?|[0-9a-f:.]+")


def proxy_server_problem(server: str, where: str = "proxy") -> str | None:
    """What is wrong with ``server`` as a proxy URL, or ``None``.

    Only ``scheme://host:port`` is taken: Chromium reads anything after the
    port its own way (a ``?a=b`` is a proxy rule, and the page then loads
    without the proxy), and credentials belong in ``username`` and
    ``password`` (a URL is shown in logs and command lines). The message never
    echoes a URL that holds credentials."""
    expected = (
        f"expected scheme://host:port with scheme {', '.join(PROXY_SCHEMES)} and nothing "
        "after the port"
    )
    try:
        parts = urlsplit(server)
        port = parts.port
    except ValueError:
        return f"{server!r} is not a proxy URL; {expected}"
    if parts.username is not None or parts.password is not None:
        return f"credentials in the URL; put them in {where}.username and {where}.password"
    if (
        parts.scheme not in PROXY_SCHEMES
        or server != f"{parts.scheme}://{parts.netloc}"
        or not port
        or not _HOSTNAME.fullmatch(parts.hostname or "")
    ):
        return f"{server!r} is not a proxy URL; {expected}"
    return None


def _proxy(problems: list[str], where: str, value: Any) -> None:
    fields = {
        "server": (True, "string"),
        "username": (False, "string"),
        "password": (False, "string"),
    }
    _dict_of(problems, where, value, fields)
    if not isinstance(value, dict):
        return
    server = value.get("server")
    if isinstance(server, str):
        problem = proxy_server_problem(server, where)
        if problem:
            problems.append(f"{where}.server: {problem}")
    if "password" in value and "username" not in value:
        problems.append(f"{where}.password: given without {where}.username")
    for key in ("username", "password"):  # never echoed: a secret
        item = value.get(key)
        if isinstance(item, str) and any(ord(c) < 32 or ord(c) == 127 for c in item):
            problems.append(f"{where}.{key}: holds a control character (a newline?)")


@functools.cache
def _time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def _timezone(problems: list[str], where: str, value: Any) -> None:
    before = len(problems)
    _string(problems, where, value, empty=False)
    zones = _time_zones()  # empty where the system has no time-zone database
    # Files of the database that are not zones: the host's own, POSIX rules.
    not_zones = value in ("localtime", "posixrules", "Factory") if isinstance(value, str) else False
    if len(problems) == before and zones and (value not in zones or not_zones):
        problems.append(f"{where}: {value!r} is not an IANA time zone (e.g. 'Europe/Paris')")


def _signed_out(problems: list[str], where: str, value: Any) -> None:
    try:
        parse_signed_out(value)
    except ValueError as e:
        problems.append(f"{where}: {e}")


def _scale(problems: list[str], where: str, value: Any) -> None:
    _check(problems, where, value, _is_number(value) and value > 0, "a number > 0")


_IDENTITY_CHECKS: dict[str, Callable[[list[str], str, Any], Any]] = {
    "userAgent": lambda p, w, v: _string(p, w, v, empty=False),
    "locale": lambda p, w, v: _string(p, w, v, empty=False),
    "timezoneId": _timezone,
    "viewport": lambda p, w, v: _dict_of(
        p, w, v, {"width": (True, "int"), "height": (True, "int")}
    ),
    "extraHTTPHeaders": _headers,
    "geolocation": _geolocation,
    "proxy": _proxy,
    "deviceScaleFactor": _scale,
    "isMobile": lambda p, w, v: _check(p, w, v, isinstance(v, bool), "a boolean"),
    "signedOut": _signed_out,
}
