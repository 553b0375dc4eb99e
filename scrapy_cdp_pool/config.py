"""Every ``CDP_POOL_*`` setting, read once into one frozen dataclass.

:meth:`PoolConfig.from_settings` validates each value and raises
:class:`ValueError` naming the setting, the value and what is allowed, so a bad
setting stops the crawl at start-up instead of failing each request.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

from scrapy_cdp_pool.identity.signed_out import SignedOutRule, parse_signed_out
from scrapy_cdp_pool.render.init_scripts import load_scripts
from scrapy_cdp_pool.render.url_patterns import check_pattern

if TYPE_CHECKING:
    from scrapy_cdp_pool.budget.budget import ConcurrencyBudget

BROWSERS = ("lightpanda", "chromium")
WAIT_UNTIL = ("load", "domcontentloaded", "networkidle")
#: how JavaScript dialogs (alert, confirm, prompt, beforeunload) are answered
DIALOG_ANSWERS = ("dismiss", "accept")
#: default of ``CDP_POOL_PAGE_HEAP_LIMIT_MB``: a JavaScript heap ceiling well
#: above ordinary pages (tens of MB) and far below what fills a machine
DEFAULT_PAGE_HEAP_LIMIT_MB = 512
# CDP ``Network.ResourceType`` values, lower-cased as users write them.
RESOURCE_TYPES = (
    "document", "stylesheet", "image", "media", "font", "script", "texttrack", "xhr",
    "fetch", "prefetch", "eventsource", "websocket", "manifest", "signedexchange",
    "ping", "cspviolationreport", "preflight", "other",
)  # fmt: skip


def default_connections() -> int:
    """CPU cores, at least 2: the default of ``CDP_POOL_CONNECTIONS``."""
    return max(2, os.cpu_count() or 1)


@dataclass(frozen=True)
class PoolConfig:
    """The plugin's settings, validated. Times are seconds, sizes bytes."""

    render_all: bool = False
    endpoints: tuple[str, ...] = ()
    browser: str = "lightpanda"
    chromium_path: str = "/usr/bin/chromium"
    chromium_args: tuple[str, ...] = ()
    lightpanda_path: str | None = None
    lightpanda_args: tuple[str, ...] = ()
    connections: int = field(default_factory=default_connections)
    contexts_per_connection: int = 1
    #: most dedicated Lightpanda servers running at once (identities whose
    #: proxy or time zone Lightpanda takes only per server); 0: none
    dedicated_servers: int = 4
    server_start_timeout_s: float = 30.0
    connect_timeout_s: float = 10.0
    command_timeout_s: float = 30.0
    #: largest CDP message accepted from a server (MB): a DOM, a screenshot;
    #: also the largest an embedded Lightpanda server takes from us
    #: (``--cdp-max-message-size``: a request body is sent base64-encoded in one)
    max_message_mb: float = 256.0
    navigation_timeout_s: float = 30.0
    action_timeout_s: float = 10.0
    context_close_timeout_s: float = 5.0
    wait_until: str = "load"
    dialogs: str = "dismiss"
    #: JavaScript heap ceiling of the embedded browsers, MB (None: V8's own,
    #: set with ``CDP_POOL_PAGE_HEAP_LIMIT_MB = 0``)
    page_heap_limit_mb: int | None = DEFAULT_PAGE_HEAP_LIMIT_MB
    block_resources: frozenset[str] = frozenset()
    #: URL patterns of requests aborted in the browser (``CDP_POOL_BLOCK_URLS``)
    block_urls: tuple[str, ...] = ()
    download_timeout_s: float = 180.0
    download_maxsize: int = 1024 * 1024 * 1024
    download_warnsize: int = 32 * 1024 * 1024
    status_interval_s: float = 30.0
    status_file: str | None = None
    server_memory_limit_mb: float | None = None
    retry_backoff_base_s: float = 1.0
    retry_backoff_max_s: float = 60.0
    host_concurrency: int | None = None
    host_rate: float | None = None
    failures_file: str | None = None
    profiles_dir: str | None = None
    profile_save_state: bool = False
    signed_out: SignedOutRule | None = None
    sign_in: str | Callable[..., Any] | None = None
    profile_max_failures: int = 5
    pool_name: str | None = None
    budget: ConcurrencyBudget | None = None
    autoscale: bool = False
    autoscale_interval_s: float = 10.0
    budget_min: int = 1
    budget_max: int | None = None
    autoscale_memory_share: float = 0.7
    autoscale_cpu_ratio: float = 0.95
    autoscale_loop_lag_s: float = 0.25
    autoscale_overloaded_fraction: float = 0.4
    jobdir_durable: bool = True
    jobdir_fsync: bool = False
    #: the cluster crawl (issue 16): Redis URL (None: one process), crawl name
    #: (None: the spider's), lease of a taken request, stay open when idle
    cluster_redis_url: str | None = None
    cluster_name: str | None = None
    cluster_lease_s: float = 30.0
    cluster_keep_open: bool = False
    #: the Redis list whose URLs join the cluster crawl (None: ``<spider>:start_urls``)
    cluster_feed_key: str | None = None
    #: network capture (``meta["cdp_capture"]``): the largest body kept, and
    #: the most body bytes kept per request
    capture_max_body: int = 10 * 1024 * 1024
    capture_max_total: int = 50 * 1024 * 1024
    #: JavaScript sources run in every new document before the page's own
    #: (``CDP_POOL_INIT_SCRIPTS``, files read at start)
    init_scripts: tuple[str, ...] = ()
    #: failure snapshots: the directory (None: none), most per crawl, most
    #: bytes per snapshot
    snapshot_dir: str | None = None
    snapshot_max_count: int = 20
    snapshot_max_bytes: int = 10 * 1024 * 1024

    #: the embedded and dedicated Lightpanda servers keep an HTTP cache of
    #: subresources in their private directory (``CDP_POOL_HTTP_CACHE``)
    http_cache: bool = True
    #: keep a clean page open for the next request of its identity on the same
    #: connection (None: on Chromium only)
    reuse_pages: bool | None = None
    #: load HTTPS pages whose certificate does not verify (self-signed, expired)
    ignore_https_errors: bool = False

    @property
    def max_message_bytes(self) -> int:
        """``max_message_mb`` in bytes, for the CDP client."""
        return int(self.max_message_mb * (1 << 20))

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> PoolConfig:
        """Read and validate every setting.

        :raises ValueError: naming the setting, the value and what is allowed.
        """
        endpoints = tuple(_str_list(settings, "CDP_POOL_ENDPOINTS"))
        for endpoint in endpoints:
            parts = urlsplit(endpoint)
            if parts.scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
                raise ValueError(
                    f"CDP_POOL_ENDPOINTS: {endpoint!r} is not a CDP endpoint; "
                    "expected http://host:port or ws://host:port/..."
                )
        browser = _choice(settings, "CDP_POOL_BROWSER", BROWSERS, "lightpanda")
        connections_raw = settings.get("CDP_POOL_CONNECTIONS")
        connections = (
            default_connections()
            if connections_raw is None
            else _int(settings, "CDP_POOL_CONNECTIONS", minimum=1)
        )
        blocked = frozenset(r.lower() for r in _str_list(settings, "CDP_POOL_BLOCK_RESOURCES"))
        unknown = sorted(blocked - set(RESOURCE_TYPES))
        if unknown:
            raise ValueError(
                f"CDP_POOL_BLOCK_RESOURCES: {unknown!r} are not resource types; "
                f"allowed: {', '.join(RESOURCE_TYPES)}"
            )
        if "document" in blocked:
            raise ValueError(
                "CDP_POOL_BLOCK_RESOURCES: 'document' cannot be blocked: it is the page itself"
            )
        chromium_path = settings.get("CDP_POOL_CHROMIUM_PATH") or "/usr/bin/chromium"
        if not isinstance(chromium_path, str):
            raise ValueError(
                f"CDP_POOL_CHROMIUM_PATH: {chromium_path!r} is not a path to a Chromium binary"
            )
        lightpanda_path = settings.get("CDP_POOL_LIGHTPANDA_PATH")
        if lightpanda_path is not None and not isinstance(lightpanda_path, str):
            raise ValueError(
                f"CDP_POOL_LIGHTPANDA_PATH: {lightpanda_path!r} is not a path to a "
                "lightpanda binary"
            )
        backoff_base = _seconds(settings, "CDP_POOL_RETRY_BACKOFF_BASE_SECONDS", 1.0)
        backoff_max = _seconds(settings, "CDP_POOL_RETRY_BACKOFF_MAX_SECONDS", 60.0)
        if backoff_max < backoff_base:
            raise ValueError(
                f"CDP_POOL_RETRY_BACKOFF_MAX_SECONDS: {backoff_max!r} is not a number of "
                f"seconds >= CDP_POOL_RETRY_BACKOFF_BASE_SECONDS ({backoff_base!r})"
            )
        budget_min = _int(settings, "CDP_POOL_BUDGET_MIN", minimum=1, default=1)
        budget_max = _optional_limit(settings, "CDP_POOL_BUDGET_MAX", integer=True)
        if budget_max is not None and budget_max < budget_min:
            raise ValueError(
                f"CDP_POOL_BUDGET_MAX: {budget_max!r} is not an integer >= "
                f"CDP_POOL_BUDGET_MIN ({budget_min!r}), or None for the pool's capacity"
            )
        return cls(
            render_all=_bool(settings, "CDP_POOL_RENDER_ALL"),
            reuse_pages=(
                None
                if settings.get("CDP_POOL_REUSE_PAGES") is None
                else _bool(settings, "CDP_POOL_REUSE_PAGES")
            ),
            endpoints=endpoints,
            browser=browser,
            chromium_path=chromium_path,
            chromium_args=_server_args(settings, "CDP_POOL_CHROMIUM_ARGS", _CHROMIUM_EXPOSING),
            lightpanda_path=lightpanda_path,
            lightpanda_args=_server_args(
                settings, "CDP_POOL_LIGHTPANDA_ARGS", _LIGHTPANDA_EXPOSING
            ),
            connections=connections,
            contexts_per_connection=_int(
                settings, "CDP_POOL_CONTEXTS_PER_CONNECTION", minimum=1, default=1
            ),
            dedicated_servers=_int(settings, "CDP_POOL_DEDICATED_SERVERS", minimum=0, default=4),
            server_start_timeout_s=_seconds(
                settings, "CDP_POOL_SERVER_START_TIMEOUT_SECONDS", 30.0
            ),
            connect_timeout_s=_seconds(settings, "CDP_POOL_CONNECT_TIMEOUT_SECONDS", 10.0),
            command_timeout_s=_seconds(settings, "CDP_POOL_COMMAND_TIMEOUT_SECONDS", 30.0),
            max_message_mb=_megabytes(settings, "CDP_POOL_MAX_MESSAGE_MB", 256.0),
            navigation_timeout_s=_seconds(settings, "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS", 30.0),
            action_timeout_s=_seconds(settings, "CDP_POOL_ACTION_TIMEOUT_SECONDS", 10.0),
            context_close_timeout_s=_seconds(
                settings, "CDP_POOL_CONTEXT_CLOSE_TIMEOUT_SECONDS", 5.0
            ),
            wait_until=_choice(settings, "CDP_POOL_WAIT_UNTIL", WAIT_UNTIL, "load"),
            dialogs=_choice(settings, "CDP_POOL_DIALOGS", DIALOG_ANSWERS, "dismiss"),
            page_heap_limit_mb=_heap_limit(settings, "CDP_POOL_PAGE_HEAP_LIMIT_MB"),
            block_resources=blocked,
            block_urls=_url_patterns(settings, "CDP_POOL_BLOCK_URLS"),
            download_timeout_s=_seconds(settings, "DOWNLOAD_TIMEOUT", 180.0),
            download_maxsize=_int(settings, "DOWNLOAD_MAXSIZE", minimum=0, default=1 << 30),
            download_warnsize=_int(
                settings, "DOWNLOAD_WARNSIZE", minimum=0, default=32 * 1024 * 1024
            ),
            status_interval_s=_seconds(settings, "CDP_POOL_STATUS_INTERVAL_SECONDS", 30.0),
            status_file=_optional_path(settings, "CDP_POOL_STATUS_FILE"),
            server_memory_limit_mb=_optional_megabytes(settings, "CDP_POOL_SERVER_MEMORY_LIMIT_MB"),
            retry_backoff_base_s=backoff_base,
            retry_backoff_max_s=backoff_max,
            host_concurrency=_optional_limit(settings, "CDP_POOL_HOST_CONCURRENCY", integer=True),
            host_rate=_optional_limit(settings, "CDP_POOL_HOST_RATE", integer=False),
            failures_file=_optional_path(settings, "CDP_POOL_FAILURES_FILE"),
            profiles_dir=_optional_path(settings, "CDP_POOL_PROFILES_DIR"),
            profile_save_state=_bool(settings, "CDP_POOL_PROFILE_SAVE_STATE"),
            signed_out=_signed_out(settings, "CDP_POOL_SIGNED_OUT"),
            sign_in=_callable(settings, "CDP_POOL_SIGN_IN"),
            profile_max_failures=_int(
                settings, "CDP_POOL_PROFILE_MAX_FAILURES", minimum=1, default=5
            ),
            pool_name=_optional_name(settings, "CDP_POOL_NAME"),
            budget=_budget(settings, "CDP_POOL_BUDGET"),
            autoscale=_bool(settings, "CDP_POOL_AUTOSCALE"),
            autoscale_interval_s=_seconds(settings, "CDP_POOL_AUTOSCALE_INTERVAL_SECONDS", 10.0),
            budget_min=budget_min,
            budget_max=budget_max,
            autoscale_memory_share=_ratio(settings, "CDP_POOL_AUTOSCALE_MEMORY_SHARE", 0.7),
            autoscale_cpu_ratio=_ratio(settings, "CDP_POOL_AUTOSCALE_CPU_RATIO", 0.95),
            autoscale_loop_lag_s=_seconds(settings, "CDP_POOL_AUTOSCALE_LOOP_LAG_SECONDS", 0.25),
            autoscale_overloaded_fraction=_ratio(
                settings, "CDP_POOL_AUTOSCALE_OVERLOADED_FRACTION", 0.4, below_one=True
            ),
            jobdir_durable=_bool(settings, "CDP_POOL_JOBDIR_DURABLE", default=True),
            jobdir_fsync=_bool(settings, "CDP_POOL_JOBDIR_FSYNC"),
            cluster_redis_url=_redis_url(settings, "CDP_POOL_CLUSTER_REDIS_URL"),
            cluster_name=_optional_name(settings, "CDP_POOL_CLUSTER_NAME"),
            cluster_lease_s=_seconds(settings, "CDP_POOL_CLUSTER_LEASE_SECONDS", 30.0),
            cluster_keep_open=_bool(settings, "CDP_POOL_CLUSTER_KEEP_OPEN"),
            cluster_feed_key=_optional_name(settings, "CDP_POOL_CLUSTER_FEED_KEY"),
            ignore_https_errors=_bool(settings, "CDP_POOL_IGNORE_HTTPS_ERRORS"),
            capture_max_body=_megabytes_as_bytes(settings, "CDP_POOL_CAPTURE_MAX_BODY_MB", 10),
            capture_max_total=_megabytes_as_bytes(settings, "CDP_POOL_CAPTURE_MAX_TOTAL_MB", 50),
            snapshot_dir=_optional_path(settings, "CDP_POOL_SNAPSHOT_DIR"),
            snapshot_max_count=_int(settings, "CDP_POOL_SNAPSHOT_MAX_COUNT", minimum=1, default=20),
            snapshot_max_bytes=_megabytes_as_bytes(settings, "CDP_POOL_SNAPSHOT_MAX_MB", 10),
            init_scripts=load_scripts(
                settings.get("CDP_POOL_INIT_SCRIPTS"), "CDP_POOL_INIT_SCRIPTS"
            ),
            http_cache=_bool(settings, "CDP_POOL_HTTP_CACHE", default=True),
        )


def _bool(settings: BaseSettings, name: str, *, default: bool = False) -> bool:
    try:
        return settings.getbool(name, default)
    except ValueError as e:
        raise ValueError(
            f"{name}: {settings.get(name)!r} is not a boolean; use True or False"
        ) from e


def _int(settings: BaseSettings, name: str, *, minimum: int, default: int = 0) -> int:
    raw: Any = settings.get(name, default)
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise ValueError(f"{name}: {raw!r} is not an integer >= {minimum}")
    try:
        value = int(raw)
    except ValueError as e:
        raise ValueError(f"{name}: {raw!r} is not an integer >= {minimum}") from e
    if value < minimum:
        raise ValueError(f"{name}: {raw!r} is not an integer >= {minimum}")
    return value


def _seconds(settings: BaseSettings, name: str, default: float) -> float:
    raw: Any = settings.get(name, default)
    if isinstance(raw, bool):
        raise ValueError(f"{name}: {raw!r} is not a number of seconds > 0")
    try:
        value = float(raw)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: {raw!r} is not a number of seconds > 0") from e
    if not value > 0:
        raise ValueError(f"{name}: {raw!r} is not a number of seconds > 0")
    return value


def _optional_path(settings: BaseSettings, name: str) -> str | None:
    raw: Any = settings.get(name)
    if raw is None or raw == "":
        return None
    if isinstance(raw, os.PathLike):
        raw = os.fspath(raw)
    if not isinstance(raw, str):
        raise ValueError(f"{name}: {raw!r} is not a file path; use a string, or None for none")
    return raw


def _url_patterns(settings: BaseSettings, name: str) -> tuple[str, ...]:
    patterns = _str_list(settings, name)
    for pattern in patterns:
        try:
            check_pattern(pattern)
        except ValueError as e:
            raise ValueError(f"{name}: {e}; use globs like '*/ads/*' or 're:<regex>'") from e
    return tuple(patterns)


def _megabytes(
    settings: BaseSettings, name: str, default: float, *, allow_zero: bool = False
) -> float:
    """A finite number of megabytes > 0 (>= 0 with ``allow_zero``)."""
    raw: Any = settings.get(name, default)
    message = f"{name}: {raw!r} is not a number of megabytes {'>=' if allow_zero else '>'} 0"
    if isinstance(raw, bool):
        raise ValueError(message)
    try:
        value = float(raw)
    except (TypeError, ValueError) as e:
        raise ValueError(message) from e
    if not (0 <= value if allow_zero else 0 < value) or value == float("inf"):
        raise ValueError(message)
    return value


def _megabytes_as_bytes(settings: BaseSettings, name: str, default: float) -> int:
    """A number of megabytes >= 0 (MiB, as DOWNLOAD_MAXSIZE's bytes), in bytes."""
    return int(_megabytes(settings, name, default, allow_zero=True) * 1024 * 1024)


def _optional_megabytes(settings: BaseSettings, name: str) -> float | None:
    """:func:`_megabytes`, or None (unset) for no limit."""
    raw: Any = settings.get(name)
    if raw is None or raw == "":
        return None
    try:
        return _megabytes(settings, name, 0.0)
    except ValueError as e:
        raise ValueError(f"{e}, or None for no limit") from None


def _heap_limit(settings: BaseSettings, name: str) -> int | None:
    """An integer of MB >= 16 (V8 clamps lower values), or 0 for V8's own
    limit (read as ``None``); unset: :data:`DEFAULT_PAGE_HEAP_LIMIT_MB`."""
    raw: Any = settings.get(name, DEFAULT_PAGE_HEAP_LIMIT_MB)
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


def _optional_limit(settings: BaseSettings, name: str, *, integer: bool) -> Any:
    """An integer >= 1 (``integer``) or a number > 0, or None for no limit."""
    raw: Any = settings.get(name)
    if raw is None or raw == "":
        return None
    allowed = "an integer >= 1" if integer else "a number > 0"
    message = f"{name}: {raw!r} is not {allowed}, or None for no limit"
    if isinstance(raw, bool):
        raise ValueError(message)
    try:
        value = int(raw) if integer else float(raw)
    except (TypeError, ValueError) as e:
        raise ValueError(message) from e
    if integer and isinstance(raw, float) and raw != value:
        raise ValueError(message)
    if not value > 0 or value == float("inf"):
        raise ValueError(message)
    return value


def _signed_out(settings: BaseSettings, name: str) -> SignedOutRule | None:
    try:
        return parse_signed_out(settings.get(name))
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from e


def _callable(settings: BaseSettings, name: str) -> str | Callable[..., Any] | None:
    """A callable, or the import path of one (checked by importing it)."""
    raw: Any = settings.get(name)
    if raw is None or raw == "":
        return None
    if callable(raw):
        return raw  # type: ignore[no-any-return]
    allowed = "a callable or its import path, like 'myproject.auth.sign_in'"
    if not isinstance(raw, str):
        raise ValueError(f"{name}: {raw!r} is not {allowed}")
    try:
        obj = load_object(raw)
    except (ImportError, AttributeError, NameError, ValueError) as e:
        raise ValueError(f"{name}: {raw!r} cannot be imported ({e}); use {allowed}") from e
    if not callable(obj):
        raise ValueError(f"{name}: {raw!r} is not {allowed}")
    return raw


def _choice(settings: BaseSettings, name: str, allowed: tuple[str, ...], default: str) -> str:
    raw = settings.get(name, default)
    if raw not in allowed:
        raise ValueError(f"{name}: {raw!r} is not allowed; use one of {', '.join(allowed)}")
    return str(raw)


def _str_list(settings: BaseSettings, name: str) -> list[str]:
    raw = settings.get(name)
    if raw is None or raw == "":
        return []
    if isinstance(raw, str):
        # From the command line (-s NAME=a,b), as Scrapy's getlist() reads it.
        return [part.strip() for part in raw.split(",") if part.strip()]
    if not isinstance(raw, (list, tuple)) or not all(isinstance(x, str) for x in raw):
        raise ValueError(f"{name}: {raw!r} is not a list of strings")
    return list(raw)


#: flags that would open a server to other users (or take its channel from
#: the plugin): refused by name, whatever their value
_LIGHTPANDA_EXPOSING = ("--host", "--port", "--advertise-host", "--unix-socket")
_CHROMIUM_EXPOSING = (
    "--remote-debugging-address",
    "--remote-debugging-port",
    "--remote-debugging-pipe",
    "--remote-debugging-io-pipes",
)


def _server_args(settings: BaseSettings, name: str, refused: tuple[str, ...]) -> tuple[str, ...]:
    """A server's extra arguments, without the flags that would expose it:
    the plugin owns the server's channel (a Unix socket, a pipe) so that no
    other local user can drive it."""
    args = _str_list(settings, name)
    for arg in args:
        flag = arg.split("=", 1)[0]
        if flag in refused:
            raise ValueError(
                f"{name}: {arg!r} is not allowed: the plugin serves CDP on a channel only "
                f"this user can open (refused flags: {', '.join(refused)}); use "
                "CDP_POOL_ENDPOINTS for a server of your own"
            )
    return tuple(args)


def _optional_name(settings: BaseSettings, name: str) -> str | None:
    raw: Any = settings.get(name)
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError(f"{name}: {raw!r} is not a name; use a non-empty string, or None")
    return raw


def _redis_url(settings: BaseSettings, name: str) -> str | None:
    """A ``redis://``, ``rediss://`` or ``unix://`` URL, or None. The value is
    not repeated in the error: it may hold a password."""
    raw: Any = settings.get(name)
    if raw is None or raw == "":
        return None
    scheme = urlsplit(raw).scheme if isinstance(raw, str) else ""
    if scheme not in ("redis", "rediss", "unix"):
        raise ValueError(
            f"{name}: not a Redis URL (scheme {scheme!r}); use redis://host:6379/0, "
            "rediss://host:6380/0 or unix:///path/to/redis.sock, or None"
        )
    return str(raw)


def _budget(settings: BaseSettings, name: str) -> ConcurrencyBudget | None:
    """A :class:`~scrapy_cdp_pool.ConcurrencyBudget` instance, or None."""
    # Imported here: the budget package imports this module.
    from scrapy_cdp_pool.budget.budget import ConcurrencyBudget

    raw: Any = settings.get(name)
    if raw is None:
        return None
    if not isinstance(raw, ConcurrencyBudget):
        raise ValueError(
            f"{name}: {raw!r} is not a scrapy_cdp_pool.ConcurrencyBudget instance, or None"
        )
    return raw


def _ratio(settings: BaseSettings, name: str, default: float, *, below_one: bool = False) -> float:
    """A number in (0, 1], or in [0, 1) with ``below_one``."""
    raw: Any = settings.get(name, default)
    allowed = "a number >= 0 and < 1" if below_one else "a number > 0 and <= 1"
    if isinstance(raw, bool):
        raise ValueError(f"{name}: {raw!r} is not {allowed}")
    try:
        value = float(raw)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: {raw!r} is not {allowed}") from e
    if not (0 <= value < 1 if below_one else 0 < value <= 1):
        raise ValueError(f"{name}: {raw!r} is not {allowed}")
    return value
