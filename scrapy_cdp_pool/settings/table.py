"""Every ``CDP_POOL_*`` setting, declared once.

How to add a setting: add one :class:`Setting` line to :data:`SETTINGS`
(name, ``PoolConfig`` attribute: ``"section.name"`` for a feature's section of
:mod:`~scrapy_cdp_pool.settings.sections`, kind from :mod:`~scrapy_cdp_pool.settings.parse`,
default as the user writes it, subsystem, ``shared=True`` if crawlers sharing a
pool through ``CDP_POOL_NAME`` must agree on it), the typed attribute with the
same default to :class:`~scrapy_cdp_pool.settings.config.PoolConfig` (or its section), and its row to the
README's settings tables; ``tests/unit/test_settings_table.py`` fails until all three agree.

The table drives :meth:`PoolConfig.from_settings` (parsing and validation),
:data:`SHARED_POOL_SETTINGS` (the agreement check of a shared pool),
:func:`check_known` (a misspelt name is refused, with the closest known one)
and the docs check.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from scrapy.settings import BaseSettings

from scrapy_cdp_pool.settings import parse as k

BROWSERS = ("lightpanda", "chromium")
WAIT_UNTIL = ("load", "domcontentloaded", "networkidle")
#: ``CDP_POOL_SHADOW_ROOTS``: which shadow roots the rendered HTML holds, as
#: ``<template shadowrootmode>`` (docs/response.md)
SHADOW_ROOTS = ("open", "none")
#: how JavaScript dialogs (alert, confirm, prompt, beforeunload) are answered
DIALOG_ANSWERS = ("dismiss", "accept")
#: default of ``CDP_POOL_PAGE_HEAP_LIMIT_MB``: a JavaScript heap ceiling well
#: above ordinary pages (tens of MB) and far below what fills a machine
DEFAULT_PAGE_HEAP_LIMIT_MB = 512
# CDP ``Network.ResourceType`` values, lower-cased as users write them
# (fmt: skip: a word list reads better wrapped by hand than one word a line).
RESOURCE_TYPES = (
    "document", "stylesheet", "image", "media", "font", "script", "texttrack", "xhr",
    "fetch", "prefetch", "eventsource", "websocket", "manifest", "signedexchange",
    "ping", "cspviolationreport", "preflight", "other",
)  # fmt: skip
#: ``CDP_POOL_CLUSTER_DUPEFILTER``: the crawl's fingerprints in a Redis set, or
#: a Bloom filter (docs/cluster.md)
DUPEFILTERS = ("set", "bloom")
#: ``CDP_POOL_RENDER``: "browser" (a rendered request goes to the browser),
#: "auto" (plain HTTP first, then up the render ladder)
RENDER_MODES = ("browser", "auto")
#: ``CDP_POOL_FALLBACK``: the fuller browser of the render ladder's top rung
FALLBACKS = ("chromium",)
#: flags that would open a server to other users (or take its channel from
#: the plugin): refused by name, whatever their value
#: the cluster's leases (a taken request's, a fleet budget share's): at least
#: the cluster's Redis call timeout (1 s, ``cluster/redis_client.py``'s
#: ``CALL_TIMEOUT_S``): renewed every third of it, a shorter lease runs out
#: during one slow call (a trial with 0.01 s: 221 of 300 requests poisoned, exit 0)
LEASE = k.seconds_at_least(1.0, "a lease shorter than the 1 s Redis call timeout runs out")
LIGHTPANDA_EXPOSING = ("--host", "--port", "--advertise-host", "--unix-socket")
CHROMIUM_EXPOSING = (
    "--remote-debugging-address",
    "--remote-debugging-port",
    "--remote-debugging-pipe",
    "--remote-debugging-io-pipes",
)


@dataclass(frozen=True)
class Setting:
    """One ``CDP_POOL_*`` setting.

    ``field``: the :class:`~scrapy_cdp_pool.settings.config.PoolConfig` attribute it is
    read into, ``"section.name"`` in a feature's section (None: not read into the config). ``default``: the value when
    unset, as a user would write it (in the setting's unit). ``doc_default``:
    how the README shows a default that is not a literal (None: the literal).
    ``shared``: crawlers sharing a pool (``CDP_POOL_NAME``) must agree on it.
    """

    name: str
    field: str | None
    kind: k.Kind
    default: Any
    subsystem: str
    shared: bool = False
    doc_default: str | None = None

    @property
    def documented_default(self) -> str:
        """The default as the README's settings tables write it."""
        if self.doc_default is not None:
            return self.doc_default
        value = self.default
        if isinstance(value, tuple):
            value = list(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return f"`{value!r}`".replace("'", '"')


S = Setting
# One line a setting, aligned: the table is read across (name, attribute,
# kind, default, subsystem, shared), which ruff's wrapping would break up.
SETTINGS: tuple[Setting, ...] = (
    S("CDP_POOL_RENDER_ALL",                     "render_all",                       k.BOOL,               False,              "handler"),
    S("CDP_POOL_ENDPOINTS",                      "endpoints",                        k.ENDPOINTS,          (),                 "pool", shared=True),
    S("CDP_POOL_BROWSER",                        "browser",                          k.choice(BROWSERS),   "lightpanda",       "pool", shared=True),
    S("CDP_POOL_LIGHTPANDA_PATH",                "lightpanda_path",                  k.binary_path("a lightpanda binary", optional=True), None, "pool", shared=True, doc_default="the `lightpanda` package's binary"),
    S("CDP_POOL_LIGHTPANDA_ARGS",                "lightpanda_args",                  k.server_args(LIGHTPANDA_EXPOSING), (), "pool", shared=True),
    S("CDP_POOL_CHROMIUM_PATH",                  "chromium_path",                    k.CHROMIUM_PATH, None, "pool", shared=True, doc_default="`chromium-headless-shell` if installed, else `/usr/bin/chromium`"),
    S("CDP_POOL_CHROMIUM_ARGS",                  "chromium_args",                    k.server_args(CHROMIUM_EXPOSING), (), "pool", shared=True),
    S("CDP_POOL_CONNECTIONS",                    "connections",                      k.CONNECTIONS,        None,               "pool", shared=True, doc_default="8 (embedded Lightpanda); else CPU cores, at least 2"),
    S("CDP_POOL_CONTEXTS_PER_CONNECTION",        "contexts_per_connection",          k.integer(1),         1,                  "pool", shared=True),
    S("CDP_POOL_DEDICATED_SERVERS",              "dedicated_servers",                k.integer(0),         4,                  "pool", shared=True),
    S("CDP_POOL_BLOCK_RESOURCES",                "block_resources",                  k.resource_types(RESOURCE_TYPES), (), "render"),
    S("CDP_POOL_BLOCK_URLS",                     "block_urls",                       k.URL_PATTERNS,       (),                 "render"),
    S("CDP_POOL_ALLOW_PRIVATE_NETWORKS",         "allow_private_networks",           k.BOOL,               False,              "render"),
    S("CDP_POOL_WAIT_UNTIL",                     "wait_until",                       k.choice(WAIT_UNTIL), "load",             "render"),
    S("CDP_POOL_SHADOW_ROOTS",                   "shadow_roots",                     k.choice(SHADOW_ROOTS), "open",           "render"),
    S("CDP_POOL_DIALOGS",                        "dialogs",                          k.choice(DIALOG_ANSWERS), "dismiss",      "render"),
    S("CDP_POOL_PAGE_HEAP_LIMIT_MB",             "page_heap_limit_mb",               k.HEAP_LIMIT,         DEFAULT_PAGE_HEAP_LIMIT_MB, "pool"),
    S("CDP_POOL_NAVIGATION_TIMEOUT_SECONDS",     "navigation_timeout_s",             k.SECONDS,            30.0,               "render"),
    S("CDP_POOL_ACTION_TIMEOUT_SECONDS",         "action_timeout_s",                 k.SECONDS,            10.0,               "render"),
    S("CDP_POOL_SERVER_START_TIMEOUT_SECONDS",   "server_start_timeout_s",           k.SECONDS,            30.0,               "pool", shared=True),
    S("CDP_POOL_CONNECT_TIMEOUT_SECONDS",        "connect_timeout_s",                k.SECONDS,            10.0,               "pool", shared=True),
    S("CDP_POOL_COMMAND_TIMEOUT_SECONDS",        "command_timeout_s",                k.SECONDS,            30.0,               "pool", shared=True),
    S("CDP_POOL_MAX_MESSAGE_MB",                 "max_message_mb",                   k.MEGABYTES,          256.0,              "pool"),
    S("CDP_POOL_CONTEXT_CLOSE_TIMEOUT_SECONDS",  "context_close_timeout_s",          k.SECONDS,            5.0,                "pool", shared=True),
    S("CDP_POOL_REUSE_PAGES",                    "reuse_pages",                      k.OPTIONAL_BOOL,      None,               "pool", doc_default="`None` (Chromium: yes, Lightpanda: no)"),
    S("CDP_POOL_IGNORE_HTTPS_ERRORS",            "ignore_https_errors",              k.BOOL,               False,              "render"),
    S("CDP_POOL_HTTP2",                          "http2",                            k.BOOL,               True,               "pool", shared=True),
    S("CDP_POOL_CAPTURE_MAX_BODY_MB",            "capture_max_body",                 k.MEGABYTES_AS_BYTES, 10,                 "render"),
    S("CDP_POOL_PAGE_DOWNLOAD_MAX_MB",           "page_download_max_bytes",          k.MEGABYTES_AS_BYTES, 10,                 "render"),
    S("CDP_POOL_CAPTURE_MAX_TOTAL_MB",           "capture_max_total",                k.MEGABYTES_AS_BYTES, 50,                 "render"),
    S("CDP_POOL_INIT_SCRIPTS",                   "init_scripts",                     k.INIT_SCRIPTS,       (),                 "render"),
    S("CDP_POOL_SNAPSHOT_DIR",                   "snapshot_dir",                     k.OPTIONAL_PATH,      None,               "render"),
    S("CDP_POOL_SNAPSHOT_MAX_COUNT",             "snapshot_max_count",               k.integer(1),         20,                 "render"),
    S("CDP_POOL_SNAPSHOT_MAX_MB",                "snapshot_max_bytes",               k.MEGABYTES_AS_BYTES, 10,                 "render"),
    S("CDP_POOL_HTTP_CACHE",                     "http_cache",                       k.BOOL,               True,               "pool"),
    S("CDP_POOL_FALLBACK_HANDLERS",              None,                               k.SET_BY_ADDON,       None,               "handler", doc_default="set by the add-on"),
    S("CDP_POOL_HTTPCACHE_STORAGE",              None,                               k.SET_BY_ADDON,       None,               "cache", doc_default="set by the add-on"),
    S("CDP_POOL_RETRY_BACKOFF_BASE_SECONDS",     "resilience.retry_backoff_base_s",  k.SECONDS,            1.0,                "resilience"),
    S("CDP_POOL_RETRY_BACKOFF_MAX_SECONDS",      "resilience.retry_backoff_max_s",   k.SECONDS,            60.0,               "resilience"),
    S("CDP_POOL_HOST_CONCURRENCY",               "resilience.host_concurrency",      k.optional_limit(integer=True), None, "resilience"),
    S("CDP_POOL_HOST_RATE",                      "resilience.host_rate",             k.optional_limit(integer=False), None, "resilience"),
    S("CDP_POOL_FAILURES_FILE",                  "resilience.failures_file",         k.OPTIONAL_PATH,      None,               "resilience"),
    S("CDP_POOL_PROFILES_DIR",                   "profiles.dir",                     k.OPTIONAL_PATH,      None,               "profiles"),
    S("CDP_POOL_PROFILE_SAVE_STATE",             "profiles.save_state",              k.BOOL,               False,              "profiles"),
    S("CDP_POOL_SIGNED_OUT",                     "profiles.signed_out",              k.SIGNED_OUT,         None,               "profiles"),
    S("CDP_POOL_SIGN_IN",                        "profiles.sign_in",                 k.CALLABLE,           None,               "profiles"),
    S("CDP_POOL_PROFILE_MAX_FAILURES",           "profiles.max_failures",            k.integer(1),         5,                  "profiles"),
    S("CDP_POOL_STATUS_INTERVAL_SECONDS",        "telemetry.status_interval_s",      k.SECONDS,            30.0,               "telemetry"),
    S("CDP_POOL_STATUS_FILE",                    "telemetry.status_file",            k.OPTIONAL_PATH,      None,               "telemetry"),
    S("CDP_POOL_SERVER_MEMORY_LIMIT_MB",         "telemetry.server_memory_limit_mb", k.OPTIONAL_MEGABYTES, None,               "telemetry", shared=True),
    S("CDP_POOL_NAME",                           "pool_name",                        k.NAME,               None,               "budget"),
    S("CDP_POOL_BUDGET",                         "budget.shared",                    k.BUDGET,             None,               "budget"),
    S("CDP_POOL_AUTOSCALE",                      "budget.autoscale",                 k.BOOL,               False,              "budget", shared=True),
    S("CDP_POOL_AUTOSCALE_INTERVAL_SECONDS",     "budget.interval_s",                k.SECONDS,            10.0,               "budget"),
    S("CDP_POOL_BUDGET_MIN",                     "budget.min",                       k.integer(1),         1,                  "budget"),
    S("CDP_POOL_BUDGET_MAX",                     "budget.max",                       k.optional_limit(integer=True), None, "budget", doc_default="the pool's capacity"),
    S("CDP_POOL_AUTOSCALE_MEMORY_SHARE",         "budget.memory_share",              k.ratio(),            0.7,                "budget"),
    S("CDP_POOL_AUTOSCALE_CPU_RATIO",            "budget.cpu_ratio",                 k.ratio(),            0.95,               "budget"),
    S("CDP_POOL_AUTOSCALE_LOOP_LAG_SECONDS",     "budget.loop_lag_s",                k.SECONDS,            0.25,               "budget"),
    S("CDP_POOL_AUTOSCALE_OVERLOADED_FRACTION",  "budget.overloaded_fraction",       k.ratio(below_one=True), 0.4, "budget"),
    S("CDP_POOL_JOBDIR_DURABLE",                 "jobdir.durable",                   k.BOOL,               True,               "jobdir"),
    S("CDP_POOL_RENDER",                         "ladder.mode",                      k.choice(RENDER_MODES), "browser",        "ladder"),
    S("CDP_POOL_FALLBACK",                       "ladder.fallback",                  k.optional_choice(FALLBACKS), None,       "ladder"),
    S("CDP_POOL_EXPECT",                         "ladder.expect",                    k.EXPECTATION,        None,               "ladder"),
    S("CDP_POOL_RECHECK_FRACTION",               "ladder.recheck_fraction",          k.SHARE,              0.1,                "ladder"),
    S("CDP_POOL_LADDER_STORE",                   "ladder.store",                     k.CALLABLE,           None,               "ladder", doc_default="`None` (JOBDIR's file)"),
    S("CDP_POOL_JOBDIR_FSYNC",                   "jobdir.fsync",                     k.BOOL,               False,              "jobdir"),
    S("CDP_POOL_CLUSTER_REDIS_URL",              "cluster.redis_url",                k.REDIS_URL,          None,               "cluster"),
    S("CDP_POOL_CLUSTER_NAME",                   "cluster.name",                     k.NAME,               None,               "cluster", doc_default="the spider's name"),
    S("CDP_POOL_CLUSTER_LEASE_SECONDS",          "cluster.lease_s",                  LEASE,            30.0,               "cluster"),
    S("CDP_POOL_CLUSTER_KEEP_OPEN",              "cluster.keep_open",                k.BOOL,               False,              "cluster"),
    S("CDP_POOL_CLUSTER_MAX_DELIVERIES",         "cluster.max_deliveries",           k.integer(1),         3,                  "cluster"),
    S("CDP_POOL_CLUSTER_FEED_KEY",               "cluster.feed_key",                 k.NAME,               None,               "cluster", doc_default='`"<spider name>:start_urls"`'),
    S("CDP_POOL_CLUSTER_DUPEFILTER",             "cluster.dupefilter",               k.choice(DUPEFILTERS), "set",             "cluster"),
    S("CDP_POOL_CLUSTER_BLOOM_CAPACITY",         "cluster.bloom_capacity",           k.integer(1),         100_000_000,        "cluster"),
    S("CDP_POOL_CLUSTER_BLOOM_ERROR_RATE",       "cluster.bloom_error_rate",         k.ratio(below_one=True, above_zero=True), 0.001,       "cluster"),
    S("CDP_POOL_CLUSTER_SHARDS",                 "cluster.shards",                   k.integer(0),         0,                  "cluster", doc_default="`0` (auto)"),
    S("CDP_POOL_CLUSTER_BUDGET_MAX",             "cluster.budget_max",               k.optional_limit(integer=True), None, "cluster"),
    S("CDP_POOL_CLUSTER_BUDGET_LEASE_SECONDS",   "cluster.budget_lease_s",           LEASE,            30.0,               "cluster"),
    S("CDP_POOL_METRICS_PORT",                   "telemetry.metrics_port",           k.OPTIONAL_PORT,      None,               "telemetry"),
    S("CDP_POOL_METRICS_HOST",                   "telemetry.metrics_host",           k.HOST,               "127.0.0.1",        "telemetry"),
)  # fmt: skip

BY_NAME: dict[str, Setting] = {setting.name: setting for setting in SETTINGS}

#: ``(PoolConfig attribute, dotted for a section's, setting)``: what crawlers
#: sharing a pool (``CDP_POOL_NAME``) must agree on, in table order.
SHARED_POOL_SETTINGS: tuple[tuple[str, str], ...] = tuple(
    (setting.field, setting.name)
    for setting in SETTINGS
    if setting.shared and setting.field is not None
)


def check_known(settings: BaseSettings) -> None:
    """Refuse a ``CDP_POOL_*`` name the table does not declare, whatever its
    priority (a misspelt setting would otherwise be ignored silently).

    :raises ValueError: naming the setting and the closest known name.
    """
    for name in settings:
        if not isinstance(name, str) or not name.startswith("CDP_POOL_") or name in BY_NAME:
            continue
        close = difflib.get_close_matches(name, BY_NAME, n=1)
        hint = f"did you mean {close[0]}?" if close else "see the README's Settings tables"
        raise ValueError(f"{name} is not a scrapy_cdp_pool setting; {hint}")
