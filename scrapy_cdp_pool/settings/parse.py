"""How one ``CDP_POOL_*`` setting is read and checked: the kinds of the
settings table (:mod:`scrapy_cdp_pool.settings.table`).

A :class:`Kind` reads ``settings[name]`` (its table default when unset) and
returns the value :class:`~scrapy_cdp_pool.settings.config.PoolConfig` keeps, or raises
:class:`ValueError` naming the setting, the value and what is allowed.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

from scrapy_cdp_pool.messages import redact_url
from scrapy_cdp_pool.settings.expectation import Expectation, parse_expectation
from scrapy_cdp_pool.settings.init_scripts import load_scripts
from scrapy_cdp_pool.settings.signed_out import SignedOutRule, parse_signed_out
from scrapy_cdp_pool.settings.url_patterns import check_pattern

#: ``(settings, name, default) -> value``
Parse = Callable[[BaseSettings, str, Any], Any]


@dataclass(frozen=True)
class Kind:
    """A setting's type as the docs say it (``allowed``), its unit (``""``:
    none) and its parser."""

    allowed: str
    unit: str
    parse: Parse


def _boolean(settings: BaseSettings, name: str, default: Any) -> bool:
    try:
        return settings.getbool(name, default)
    except ValueError as e:
        raise ValueError(
            f"{name}: {settings.get(name)!r} is not a boolean; use True or False"
        ) from e


def _optional_boolean(settings: BaseSettings, name: str, default: Any) -> bool | None:
    if settings.get(name, default) is None:
        return None
    return _boolean(settings, name, default)


def integer(minimum: int) -> Kind:
    """An integer >= ``minimum`` (a string of one, from the command line)."""

    def parse(settings: BaseSettings, name: str, default: Any) -> int:
        raw: Any = settings.get(name, default)
        message = f"{name}: {raw!r} is not an integer >= {minimum}"
        if isinstance(raw, bool) or not isinstance(raw, (int, str)):
            raise ValueError(message)
        try:
            value = int(raw)
        except ValueError as e:
            raise ValueError(message) from e
        if value < minimum:
            raise ValueError(message)
        return value

    return Kind(f"integer >= {minimum}", "", parse)


#: the most ``CDP_POOL_CONNECTIONS`` a crawl may ask of one endpoint: one
#: browser serves far fewer usefully (throughput peaks at 8 on Lightpanda,
#: 2-3 on Chromium, docs/performance.md), and the embedded Lightpanda is
#: started with twice as many client slots, which it caps at 65,535
MAX_CONNECTIONS = 1024


def _connections(settings: BaseSettings, name: str, default: Any) -> int:
    if settings.get(name) is None:
        embedded = not settings.getlist("CDP_POOL_ENDPOINTS")
        return default_connections(settings.get("CDP_POOL_BROWSER") or "lightpanda", embedded)
    value: int = integer(1).parse(settings, name, default)
    if value > MAX_CONNECTIONS:
        raise ValueError(
            f"{name}: {value!r} is more than {MAX_CONNECTIONS} connections per endpoint "
            "(one browser serves far fewer usefully; use more endpoints or servers)"
        )
    return value


#: connections per embedded Lightpanda server when CDP_POOL_CONNECTIONS is unset
#: (a sweep on /products, 2 cores, `benchmarks/run.py --only
#: 'cdp_pool_lightpanda_c*'`: 1 -> 54, 2 -> 82, 4 -> 98, 6 -> 106, 8 -> 115
#: pages/s; a page waits on the network as much as on the CPU). Scrapy's
#: CONCURRENT_REQUESTS_PER_DOMAIN default is 8 too.
LIGHTPANDA_DEFAULT_CONNECTIONS = 8


def default_connections(browser: str = "lightpanda", embedded: bool = True) -> int:
    """The default of ``CDP_POOL_CONNECTIONS``: 8 on the embedded Lightpanda
    (:data:`LIGHTPANDA_DEFAULT_CONNECTIONS`); else CPU cores, at least 2 (Chromium
    is bound by its renderer's CPU: 1 -> 5.2, 2 -> 5.7, 3 -> 4.8, 4 -> 4.6 pages/s
    on 2 cores, same sweep; remote endpoints: their machines are unknown)."""
    if embedded and browser == "lightpanda":
        return LIGHTPANDA_DEFAULT_CONNECTIONS
    return max(2, os.cpu_count() or 1)


def _number(raw: Any, message: str, cast: Callable[[Any], Any] = float) -> Any:
    """``raw`` as ``cast`` makes it (``float`` or ``int``); a bool, or what
    ``cast`` refuses, is a ``ValueError(message)``."""
    if isinstance(raw, bool):
        raise ValueError(message)
    try:
        return cast(raw)
    except (TypeError, ValueError) as e:
        raise ValueError(message) from e


def _seconds(settings: BaseSettings, name: str, default: Any) -> float:
    raw: Any = settings.get(name, default)
    message = f"{name}: {raw!r} is not a finite number of seconds > 0"
    value = float(_number(raw, message))
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(message)
    return value


def seconds_at_least(minimum: float, why: str) -> Kind:
    """A finite number of seconds >= ``minimum`` (``why``: the reason, said
    in the error)."""

    def parse(settings: BaseSettings, name: str, default: Any) -> float:
        raw: Any = settings.get(name, default)
        message = f"{name}: {raw!r} is not a finite number of seconds >= {minimum:g} ({why})"
        value = float(_number(raw, message))
        if not (value >= minimum and math.isfinite(value)):
            raise ValueError(message)
        return value

    return Kind(f"number >= {minimum:g}", "s", parse)


def _megabytes(
    settings: BaseSettings, name: str, default: Any, *, allow_zero: bool = False
) -> float:
    """A finite number of megabytes > 0 (>= 0 with ``allow_zero``)."""
    raw: Any = settings.get(name, default)
    message = f"{name}: {raw!r} is not a number of megabytes {'>=' if allow_zero else '>'} 0"
    value = float(_number(raw, message))
    if not (0 <= value if allow_zero else 0 < value) or value == float("inf"):
        raise ValueError(message)
    return value


def _megabytes_as_bytes(settings: BaseSettings, name: str, default: Any) -> int:
    """A number of megabytes >= 0 (MiB, as DOWNLOAD_MAXSIZE's bytes), in bytes."""
    return int(_megabytes(settings, name, default, allow_zero=True) * 1024 * 1024)


def _optional_megabytes(settings: BaseSettings, name: str, default: Any) -> float | None:
    """:func:`_megabytes`, or None (unset) for no limit."""
    raw: Any = settings.get(name, default)
    if raw is None or raw == "":
        return None
    try:
        return _megabytes(settings, name, default)
    except ValueError as e:
        raise ValueError(f"{e}, or None for no limit") from None


def _heap_limit(settings: BaseSettings, name: str, default: Any) -> int | None:
    """An integer of MB >= 16 (V8 clamps lower values), or 0 for V8's own
    limit (read as ``None``)."""
    raw: Any = settings.get(name, default)
    if raw is None or raw == 0:
        return None
    try:
        value = int(raw)
    except (TypeError, ValueError):
        value = -1
    if isinstance(raw, bool) or value < 16 or str(value) != str(raw).strip():
        raise ValueError(
            f"{name}: {raw!r} is not a heap size; use an integer of megabytes >= 16, "
            "or 0 for V8's own limit"
        )
    return value


def optional_limit(*, integer: bool) -> Kind:
    """An integer >= 1 (``integer``) or a number > 0, or None for no limit."""
    allowed = "an integer >= 1" if integer else "a number > 0"

    def parse_number(settings: BaseSettings, name: str, default: Any) -> Any:
        raw: Any = settings.get(name, default)
        if raw is None or raw == "":
            return None
        message = f"{name}: {raw!r} is not {allowed}, or None for no limit"
        value = _number(raw, message, int if integer else float)
        if integer and isinstance(raw, float) and raw != value:
            raise ValueError(message)
        if not value > 0 or value == float("inf"):
            raise ValueError(message)
        return value

    def parse_int(settings: BaseSettings, name: str, default: Any) -> int | None:
        value: int | None = parse_number(settings, name, default)
        return value

    def parse_float(settings: BaseSettings, name: str, default: Any) -> float | None:
        value: float | None = parse_number(settings, name, default)
        return value

    kind = f"{allowed.removeprefix('an ').removeprefix('a ')} or None"
    return Kind(kind, "", parse_int if integer else parse_float)


def ratio(*, below_one: bool = False, above_zero: bool = False) -> Kind:
    """A number in (0, 1], or in [0, 1) with ``below_one`` ((0, 1) with
    ``above_zero`` too)."""
    low = "> 0" if above_zero or not below_one else ">= 0"
    allowed = f"a number {low} and < 1" if below_one else "a number > 0 and <= 1"

    def parse(settings: BaseSettings, name: str, default: Any) -> float:
        raw: Any = settings.get(name, default)
        value = float(_number(raw, f"{name}: {raw!r} is not {allowed}"))
        low_ok = value >= 0 if below_one and not above_zero else value > 0
        high_ok = value < 1 if below_one else value <= 1
        if not (low_ok and high_ok):
            raise ValueError(f"{name}: {raw!r} is not {allowed}")
        return value

    return Kind(allowed.removeprefix("a "), "", parse)


def choice(allowed: tuple[str, ...]) -> Kind:
    """One of ``allowed``."""

    def parse(settings: BaseSettings, name: str, default: Any) -> str:
        raw = settings.get(name, default)
        if raw not in allowed:
            raise ValueError(f"{name}: {raw!r} is not allowed; use one of {', '.join(allowed)}")
        return str(raw)

    return Kind(f"one of {', '.join(allowed)}", "", parse)


def str_list(settings: BaseSettings, name: str, default: Any = None) -> list[str]:
    """A list of strings; a string is split on commas (``-s NAME=a,b``, as
    Scrapy's ``getlist()`` reads it), or read as JSON when it is a JSON list
    (``-s 'NAME=["--flag", "value"]'``: split on commas, it gave arguments
    such as ``["--flag"``)."""
    raw = settings.get(name, default)
    if raw is None or raw == "":
        return []
    if isinstance(raw, str) and raw.lstrip().startswith("["):
        try:
            raw = json.loads(raw)
        except ValueError as e:
            raise ValueError(
                f"{name}: {raw!r} starts like a JSON list but is not one ({e})"
            ) from None
    if isinstance(raw, str):
        return [part.strip() for part in raw.split(",") if part.strip()]
    if not isinstance(raw, (list, tuple)) or not all(isinstance(x, str) for x in raw):
        raise ValueError(f"{name}: {raw!r} is not a list of strings")
    return list(raw)


def _endpoints(settings: BaseSettings, name: str, default: Any) -> tuple[str, ...]:
    endpoints = tuple(str_list(settings, name, default))
    for endpoint in endpoints:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
            raise ValueError(
                f"{name}: {redact_url(endpoint)!r} is not a CDP endpoint; "
                "expected http://host:port or ws://host:port/..."
            )
    return endpoints


def resource_types(types: tuple[str, ...]) -> Kind:
    """A list of CDP resource types (lower-cased), never ``document``."""

    def parse(settings: BaseSettings, name: str, default: Any) -> frozenset[str]:
        blocked = frozenset(r.lower() for r in str_list(settings, name, default))
        unknown = sorted(blocked - set(types))
        if unknown:
            raise ValueError(
                f"{name}: {unknown!r} are not resource types; allowed: {', '.join(types)}"
            )
        if "document" in blocked:
            raise ValueError(f"{name}: 'document' cannot be blocked: it is the page itself")
        return blocked

    return Kind("list of resource types", "", parse)


def _url_patterns(settings: BaseSettings, name: str, default: Any) -> tuple[str, ...]:
    patterns = str_list(settings, name, default)
    for pattern in patterns:
        try:
            check_pattern(pattern)
        except ValueError as e:
            raise ValueError(f"{name}: {e}; use globs like '*/ads/*' or 're:<regex>'") from e
    return tuple(patterns)


def server_args(refused: tuple[str, ...]) -> Kind:
    """A server's extra arguments, without the flags that would expose it:
    the plugin owns the server's channel (a Unix socket, a pipe) so that no
    other local user can drive it."""

    # Chromium reads a switch after "--" or "-" (base::CommandLine's
    # prefixes on POSIX): both forms are refused, as are more dashes.
    refused_names = {flag.lstrip("-") for flag in refused}

    def parse(settings: BaseSettings, name: str, default: Any) -> tuple[str, ...]:
        args = str_list(settings, name, default)
        for arg in args:
            switch = arg.split("=", 1)[0]
            if switch.startswith("-") and switch.lstrip("-") in refused_names:
                raise ValueError(
                    f"{name}: {arg!r} is not allowed: the plugin serves CDP on a channel only "
                    f"this user can open (refused flags: {', '.join(refused)}); use "
                    "CDP_POOL_ENDPOINTS for a server of your own"
                )
        return tuple(args)

    return Kind("list of strings", "", parse)


#: the embedded Chromium's binary where ``CDP_POOL_CHROMIUM_PATH`` is unset,
#: the first that is installed: Debian's ``chromium-headless-shell`` (the same
#: engine without UI code, the headless mode Playwright uses: 3.5-4.7x less CPU
#: per page than ``/usr/bin/chromium``, measured in docs/performance.md), then
#: Debian's ``chromium``
CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium-headless-shell", "/usr/bin/chromium")


def default_chromium_path(candidates: tuple[str, ...] = CHROMIUM_CANDIDATES) -> str:
    """The first of ``candidates`` that is an executable file, else the last
    (the start then fails naming it and the packages to install)."""
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return candidates[-1]


def _chromium_path(settings: BaseSettings, name: str, default: Any) -> str:
    raw: Any = settings.get(name, default)
    if raw is None or raw == "":
        return default_chromium_path()
    if isinstance(raw, os.PathLike):
        raw = os.fspath(raw)
    if not isinstance(raw, str):
        raise ValueError(f"{name}: {raw!r} is not a path to a Chromium binary")
    return raw


#: ``CDP_POOL_CHROMIUM_PATH``: a path, or None for :func:`default_chromium_path`
CHROMIUM_PATH = Kind("path or None", "", _chromium_path)


def binary_path(what: str, *, optional: bool) -> Kind:
    """The path of a server binary (``optional``: None for the default)."""

    def parse_optional(settings: BaseSettings, name: str, default: Any) -> str | None:
        raw = settings.get(name, default)
        return None if raw is None else parse(settings, name, raw)

    def parse(settings: BaseSettings, name: str, default: Any) -> str:
        raw = settings.get(name, default) or default
        if not isinstance(raw, str):
            raise ValueError(f"{name}: {raw!r} is not a path to {what}")
        return raw

    return Kind("path or None", "", parse_optional) if optional else Kind("path", "", parse)


def _optional_path(settings: BaseSettings, name: str, default: Any) -> str | None:
    raw: Any = settings.get(name, default)
    if raw is None or raw == "":
        return None
    if isinstance(raw, os.PathLike):
        raw = os.fspath(raw)
    if not isinstance(raw, str):
        raise ValueError(f"{name}: {raw!r} is not a file path; use a string, or None for none")
    return raw


def _signed_out(settings: BaseSettings, name: str, default: Any) -> SignedOutRule | None:
    try:
        return parse_signed_out(settings.get(name, default))
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from e


def _callable(settings: BaseSettings, name: str, default: Any) -> str | Callable[..., Any] | None:
    """A callable, or the import path of one (checked by importing it)."""
    raw: Any = settings.get(name, default)
    if raw is None or raw == "":
        return None
    if callable(raw):
        function: Callable[..., Any] = raw
        return function
    allowed = "a callable or its import path ('package.module.name')"
    if not isinstance(raw, str):
        raise ValueError(f"{name}: {raw!r} is not {allowed}")
    try:
        obj = load_object(raw)
    except (ImportError, AttributeError, NameError, ValueError) as e:
        raise ValueError(f"{name}: {raw!r} cannot be imported ({e}); use {allowed}") from e
    if not callable(obj):
        raise ValueError(f"{name}: {raw!r} is not {allowed}")
    return raw


def optional_choice(allowed: tuple[str, ...]) -> Kind:
    """One of ``allowed``, or None."""

    def parse(settings: BaseSettings, name: str, default: Any) -> str | None:
        raw = settings.get(name, default)
        if raw is None or raw == "":
            return None
        if raw not in allowed:
            raise ValueError(
                f"{name}: {raw!r} is not allowed; use one of {', '.join(allowed)}, or None"
            )
        return str(raw)

    return Kind(f"one of {', '.join(allowed)}, or None", "", parse)


def _share(settings: BaseSettings, name: str, default: Any) -> float:
    raw: Any = settings.get(name, default)
    allowed = "a number >= 0 and <= 1 (0.1: one in ten)"
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = -1.0
    if isinstance(raw, bool) or not 0 <= value <= 1:
        raise ValueError(f"{name}: {raw!r} is not {allowed}")
    return value


def _expectation(settings: BaseSettings, name: str, default: Any) -> Expectation | None:
    """A string that is a JSON object or list (``-s CDP_POOL_EXPECT='{"css":
    "li", "min": 3}'`` on the command line) is read as JSON, as Scrapy's
    ``getdict``/``getlist`` read such settings; any other string is a CSS
    selector (``[data-id]`` is not JSON: a selector)."""
    raw: Any = settings.get(name, default)
    if isinstance(raw, str) and raw.lstrip()[:1] in ("{", "["):
        with suppress(ValueError):
            raw = json.loads(raw)
    if raw is None or raw == "" or raw == []:
        return None
    return parse_expectation(raw, name)


def _optional_name(settings: BaseSettings, name: str, default: Any) -> str | None:
    raw: Any = settings.get(name, default)
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError(f"{name}: {raw!r} is not a name; use a non-empty string, or None")
    return raw


REDIS_SCHEMES = ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster")


def _redis_url(settings: BaseSettings, name: str, default: Any) -> str | None:
    """A Redis URL (``redis://``, ``rediss://``, ``unix://``, or
    ``redis+cluster://``/``rediss+cluster://`` for a Redis Cluster), or None;
    the message never shows its password."""
    raw: Any = settings.get(name, default)
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str) or raw.partition("://")[0] not in REDIS_SCHEMES:
        shown = repr(raw) if not isinstance(raw, str) else repr(redact_url(raw))
        raise ValueError(
            f"{name}: {shown} is not a Redis URL; use redis://host:port/db, rediss://..., "
            "unix:///path/to/redis.sock, redis+cluster://node:port for a Redis Cluster, or None"
        )
    return raw


def _optional_port(settings: BaseSettings, name: str, default: Any) -> int | None:
    raw: Any = settings.get(name, default)
    if raw is None or raw == "":
        return None
    message = (
        f"{name}: {raw!r} is not a port; use an integer from 0 (any free port) to 65535, or None"
    )
    value = int(_number(raw, message, int))
    if (isinstance(raw, float) and raw != value) or not 0 <= value <= 65535:
        raise ValueError(message)
    return value


def _host(settings: BaseSettings, name: str, default: Any) -> str:
    raw: Any = settings.get(name, default)
    if not isinstance(raw, str) or not raw or any(c.isspace() for c in raw):
        raise ValueError(
            f"{name}: {raw!r} is not an address to listen on; use e.g. '127.0.0.1' or '0.0.0.0'"
        )
    return raw


class SharedBudget:
    """What ``CDP_POOL_BUDGET`` takes: the base of
    :class:`~scrapy_cdp_pool.ConcurrencyBudget` (the budget feature's class),
    so that the settings check the value's type without importing the
    feature."""


def _budget(settings: BaseSettings, name: str, default: Any) -> SharedBudget | None:
    """A :class:`~scrapy_cdp_pool.ConcurrencyBudget` instance, or None."""
    raw: Any = settings.get(name, default)
    if raw is None:
        return None
    if not isinstance(raw, SharedBudget):
        raise ValueError(
            f"{name}: {raw!r} is not a scrapy_cdp_pool.ConcurrencyBudget instance, or None"
        )
    return raw


def _init_scripts(settings: BaseSettings, name: str, default: Any) -> tuple[str, ...]:
    """Sources and ``.js`` paths; a string that is a JSON list of strings is
    that list (``-s 'NAME=["init.js"]'``, as :func:`str_list` reads the other
    list settings), not one script: run as JavaScript, such an array literal
    did nothing and the files were never read."""
    raw = settings.get(name, default)
    if isinstance(raw, str) and raw.lstrip().startswith("["):
        try:
            listed = json.loads(raw)
        except ValueError:
            listed = None  # JavaScript that starts with "[", kept as source
        if isinstance(listed, list) and all(isinstance(item, str) for item in listed):
            raw = listed
    return load_scripts(raw, name)


def _set_by_addon(settings: BaseSettings, name: str, default: Any) -> Any:
    """Not read into the config: the add-on sets it, its component reads it."""
    return settings.get(name, default)


BOOL = Kind("boolean", "", _boolean)
OPTIONAL_BOOL = Kind("boolean or None", "", _optional_boolean)
CONNECTIONS = Kind("integer from 1 to 1024", "", _connections)
SECONDS = Kind("number > 0", "s", _seconds)
MEGABYTES = Kind("number > 0", "MB", _megabytes)
OPTIONAL_MEGABYTES = Kind("number > 0 or None", "MB", _optional_megabytes)
MEGABYTES_AS_BYTES = Kind("number >= 0", "MiB", _megabytes_as_bytes)
HEAP_LIMIT = Kind("integer >= 16, or 0", "MB", _heap_limit)
ENDPOINTS = Kind("list of CDP URLs", "", _endpoints)
URL_PATTERNS = Kind("list of URL globs or re: patterns", "", _url_patterns)
OPTIONAL_PATH = Kind("path or None", "", _optional_path)
SIGNED_OUT = Kind("signed-out rule or None", "", _signed_out)
CALLABLE = Kind("callable, import path or None", "", _callable)
NAME = Kind("string or None", "", _optional_name)
BUDGET = Kind("ConcurrencyBudget or None", "", _budget)
INIT_SCRIPTS = Kind("list of sources or paths", "", _init_scripts)
SHARE = Kind("number >= 0 and <= 1", "", _share)
EXPECTATION = Kind("CSS selector, {css, min}, {predicate}, a list, or None", "", _expectation)
SET_BY_ADDON = Kind("set by the add-on", "", _set_by_addon)
REDIS_URL = Kind("Redis URL or None", "", _redis_url)
OPTIONAL_PORT = Kind("port (0: any free) or None", "", _optional_port)
HOST = Kind("address", "", _host)
