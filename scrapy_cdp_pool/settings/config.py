"""Every ``CDP_POOL_*`` setting, read once into one frozen dataclass: the core's
settings (the pool, the render) as its attributes, each optional feature's as
one typed section of its own (:mod:`scrapy_cdp_pool.settings.sections`:
``config.cluster.lease_s``, ``config.budget.min``...).

The settings are declared in :mod:`scrapy_cdp_pool.settings.table` (name,
attribute, kind, default, subsystem); :meth:`PoolConfig.from_settings` reads
them all from it, refuses an unknown ``CDP_POOL_*`` name, and raises
:class:`ValueError` naming the setting, the value and what is allowed, so a
bad setting stops the crawl at start-up instead of failing each request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings

from scrapy_cdp_pool.settings.parse import (
    BOOL,
    SECONDS,
    default_chromium_path,
    default_connections,
    integer,
)
from scrapy_cdp_pool.settings.sections import (
    SECTIONS,
    BudgetConfig,
    ClusterConfig,
    JobdirConfig,
    LadderConfig,
    ProfilesConfig,
    ResilienceConfig,
    TelemetryConfig,
)
from scrapy_cdp_pool.settings.table import (
    BROWSERS,
    DEFAULT_PAGE_HEAP_LIMIT_MB,
    DIALOG_ANSWERS,
    RESOURCE_TYPES,
    SETTINGS,
    SHADOW_ROOTS,
    WAIT_UNTIL,
    check_known,
)

__all__ = [
    "BROWSERS",
    "DEFAULT_PAGE_HEAP_LIMIT_MB",
    "DIALOG_ANSWERS",
    "RESOURCE_TYPES",
    "SHADOW_ROOTS",
    "WAIT_UNTIL",
    "PoolConfig",
    "default_connections",
]


@dataclass(frozen=True)
class PoolConfig:
    """The plugin's settings, validated. Times are seconds, sizes bytes."""

    render_all: bool = False
    endpoints: tuple[str, ...] = ()
    browser: str = "lightpanda"
    chromium_path: str = field(default_factory=default_chromium_path)
    chromium_args: tuple[str, ...] = ()
    lightpanda_path: str | None = None
    lightpanda_args: tuple[str, ...] = ()
    connections: int = field(default_factory=default_connections)
    contexts_per_connection: int = 1
    #: most dedicated Lightpanda servers running at once (profiles whose
    #: time zone Lightpanda takes only per server); 0: none
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
    shadow_roots: str = "open"
    dialogs: str = "dismiss"
    #: JavaScript heap ceiling of the embedded browsers, MB (None: V8's own,
    #: set with ``CDP_POOL_PAGE_HEAP_LIMIT_MB = 0``)
    page_heap_limit_mb: int | None = DEFAULT_PAGE_HEAP_LIMIT_MB
    block_resources: frozenset[str] = frozenset()
    #: URL patterns of requests aborted in the browser (``CDP_POOL_BLOCK_URLS``)
    block_urls: tuple[str, ...] = ()
    #: page-started requests to non-public addresses allowed (``CDP_POOL_ALLOW_PRIVATE_NETWORKS``)
    allow_private_networks: bool = False
    download_timeout_s: float = 180.0
    #: ``DOWNLOAD_TIMEOUT`` was set above Scrapy's default priority (by the
    #: project, the spider, the command line) and
    #: ``CDP_POOL_NAVIGATION_TIMEOUT_SECONDS`` was not: a longer
    #: ``DOWNLOAD_TIMEOUT`` decides how long a page's first byte may take
    #: (``RenderSpec.first_byte_timeout_s``)
    download_timeout_set: bool = False
    #: ``REDIRECT_MAX_TIMES``: also the most documents a page may navigate
    #: itself to during one render (:class:`~scrapy_cdp_pool.errors.NavigationLoop`)
    redirect_max_times: int = 20
    download_maxsize: int = 1024 * 1024 * 1024
    download_warnsize: int = 32 * 1024 * 1024
    #: Scrapy's ``DOWNLOAD_FAIL_ON_DATALOSS``: False hands back a body cut
    #: short as a response flagged ``dataloss``, where the backend can
    download_fail_on_dataloss: bool = True
    #: network capture (``meta["cdp_capture"]``): the largest body kept, and
    #: the most body bytes kept per request
    capture_max_body: int = 10 * 1024 * 1024
    #: most bytes kept of a download a page starts (``CDP_POOL_PAGE_DOWNLOAD_MAX_MB``)
    page_download_max_bytes: int = 10 * 1024 * 1024
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
    #: keep a clean page open for the next request of its profile on the same
    #: connection (None: on Chromium only)
    reuse_pages: bool | None = None
    #: load HTTPS pages whose certificate does not verify (self-signed, expired)
    ignore_https_errors: bool = False
    #: the browsers the plugin starts may negotiate HTTP/2 (False: HTTP/1.1
    #: only, ``CDP_POOL_HTTP2``; remote endpoints cannot be told)
    http2: bool = True
    #: ``CDP_POOL_NAME``: the pool (and budget) shared by crawlers of that name
    pool_name: str | None = None

    # One section per optional feature (settings/sections.py)
    resilience: ResilienceConfig = field(default_factory=ResilienceConfig)
    profiles: ProfilesConfig = field(default_factory=ProfilesConfig)
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    jobdir: JobdirConfig = field(default_factory=JobdirConfig)
    ladder: LadderConfig = field(default_factory=LadderConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)

    @property
    def max_message_bytes(self) -> int:
        """``max_message_mb`` in bytes, for the CDP client."""
        return int(self.max_message_mb * (1 << 20))

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> PoolConfig:
        """Read and validate every setting of the table, and Scrapy's
        ``DOWNLOAD_TIMEOUT``, ``DOWNLOAD_MAXSIZE`` and ``DOWNLOAD_WARNSIZE``.

        :raises ValueError: naming the setting, the value and what is allowed;
            or naming an unknown ``CDP_POOL_*`` setting and the closest known.
        """
        check_known(settings)
        values: dict[str, Any] = {}
        grouped: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
        for setting in SETTINGS:
            if setting.field is not None:
                value = setting.kind.parse(settings, setting.name, setting.default)
                section, _, name = setting.field.rpartition(".")
                (grouped[section] if section else values)[name] = value
        sections = {name: SECTIONS[name](**grouped[name]) for name in SECTIONS}
        ladder = sections["ladder"]
        if ladder.fallback == values["browser"] == "chromium" and not values["endpoints"]:
            raise ValueError(
                "CDP_POOL_FALLBACK: 'chromium' with CDP_POOL_BROWSER = 'chromium': the pool "
                "renders on Chromium already; use None, or CDP_POOL_BROWSER = 'lightpanda'"
            )
        if not values["http2"] and values["endpoints"]:
            raise ValueError(
                "CDP_POOL_HTTP2 = False: the plugin cannot turn HTTP/2 off on the servers of "
                "CDP_POOL_ENDPOINTS (it does not start them); start them with --disable-http2 "
                "(Chromium) or --http-version 1.1 (Lightpanda) and leave CDP_POOL_HTTP2 unset"
            )
        return cls(
            **values,
            **sections,
            download_timeout_s=SECONDS.parse(settings, "DOWNLOAD_TIMEOUT", 180.0),
            download_timeout_set=(settings.getpriority("DOWNLOAD_TIMEOUT") or 0)
            > SETTINGS_PRIORITIES["default"]
            and settings.getpriority("CDP_POOL_NAVIGATION_TIMEOUT_SECONDS") is None,
            download_maxsize=integer(0).parse(settings, "DOWNLOAD_MAXSIZE", 1 << 30),
            download_warnsize=integer(0).parse(settings, "DOWNLOAD_WARNSIZE", 32 * 1024 * 1024),
            redirect_max_times=integer(0).parse(settings, "REDIRECT_MAX_TIMES", 20),
            download_fail_on_dataloss=BOOL.parse(settings, "DOWNLOAD_FAIL_ON_DATALOSS", True),
        )
