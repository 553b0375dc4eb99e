"""Every ``CDP_POOL_*`` setting, read once into one frozen dataclass.

The settings are declared in :mod:`scrapy_cdp_pool.settings.table` (name,
kind, default, subsystem); :meth:`PoolConfig.from_settings` reads them all
from it, refuses an unknown ``CDP_POOL_*`` name, and raises
:class:`ValueError` naming the setting, the value and what is allowed, so a
bad setting stops the crawl at start-up instead of failing each request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings

from scrapy_cdp_pool.settings.expectation import Expectation
from scrapy_cdp_pool.settings.parse import (
    BOOL,
    SECONDS,
    default_chromium_path,
    default_connections,
    integer,
)
from scrapy_cdp_pool.settings.signed_out import SignedOutRule
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

if TYPE_CHECKING:
    from scrapy_cdp_pool.settings.parse import SharedBudget

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
    budget: SharedBudget | None = None
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
    #: the cluster crawl (docs/cluster.md): Redis URL (None: one process), crawl name
    #: (None: the spider's), lease of a taken request, stay open when idle, the
    #: Redis list whose URLs join the crawl (None: ``<spider>:start_urls``)
    cluster_redis_url: str | None = None
    cluster_name: str | None = None
    cluster_lease_s: float = 30.0
    cluster_keep_open: bool = False
    cluster_feed_key: str | None = None
    #: leases of one request that may run out before it fails as poisoned
    cluster_max_deliveries: int = 3
    #: the crawl's fingerprints: "set" (a Redis set) or "bloom" (a Bloom
    #: filter sized for a capacity, requests, at an error rate)
    cluster_dupefilter: str = "set"
    cluster_bloom_capacity: int = 100_000_000
    cluster_bloom_error_rate: float = 0.001
    #: buckets the crawl's state is split into, each its own hash tag (0: one
    #: on one Redis, two per primary on a Redis Cluster; docs/cluster.md)
    cluster_shards: int = 0
    #: pages in flight across all workers of the cluster (None: no bound), and
    #: a worker's share's lease, seconds
    cluster_budget_max: int | None = None
    cluster_budget_lease_s: float = 30.0
    #: the Prometheus endpoint (None: off; 0: any free port) and its address
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
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
    #: the render ladder (``scrapy_cdp_pool/ladder/``): "auto" puts plain HTTP
    #: first; ``fallback`` "chromium" puts Chromium last; ``expect`` is the
    #: spider's default expectation; ``recheck_fraction`` the share of a kind's
    #: requests re-checked one rung lower; ``ladder_store`` a store class (or
    #: its import path) for what was learned (None: the JOBDIR's file)
    render: str = "browser"
    fallback: str | None = None
    expect: Expectation | None = None
    recheck_fraction: float = 0.1
    ladder_store: str | Callable[..., Any] | None = None

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
        values: dict[str, Any] = {
            setting.field: setting.kind.parse(settings, setting.name, setting.default)
            for setting in SETTINGS
            if setting.field is not None
        }
        if values["retry_backoff_max_s"] < values["retry_backoff_base_s"]:
            raise ValueError(
                "CDP_POOL_RETRY_BACKOFF_MAX_SECONDS: "
                f"{values['retry_backoff_max_s']!r} is not a number of seconds >= "
                f"CDP_POOL_RETRY_BACKOFF_BASE_SECONDS ({values['retry_backoff_base_s']!r})"
            )
        if values["fallback"] == values["browser"] == "chromium" and not values["endpoints"]:
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
        budget_min, budget_max = values["budget_min"], values["budget_max"]
        if budget_max is not None and budget_max < budget_min:
            raise ValueError(
                f"CDP_POOL_BUDGET_MAX: {budget_max!r} is not an integer >= "
                f"CDP_POOL_BUDGET_MIN ({budget_min!r}), or None for the pool's capacity"
            )
        if values["cluster_budget_max"] is not None and values["cluster_redis_url"] is None:
            raise ValueError(
                f"CDP_POOL_CLUSTER_BUDGET_MAX = {values['cluster_budget_max']!r} needs "
                "CDP_POOL_CLUSTER_REDIS_URL (a bound across workers lives in the cluster's Redis)"
            )
        if values["cluster_bloom_error_rate"] == 0:
            raise ValueError(
                "CDP_POOL_CLUSTER_BLOOM_ERROR_RATE: 0 is not a number > 0 and < 1 (a Bloom "
                'filter has false positives; CDP_POOL_CLUSTER_DUPEFILTER = "set" has none)'
            )
        return cls(
            **values,
            download_timeout_s=SECONDS.parse(settings, "DOWNLOAD_TIMEOUT", 180.0),
            download_timeout_set=(settings.getpriority("DOWNLOAD_TIMEOUT") or 0)
            > SETTINGS_PRIORITIES["default"]
            and settings.getpriority("CDP_POOL_NAVIGATION_TIMEOUT_SECONDS") is None,
            download_maxsize=integer(0).parse(settings, "DOWNLOAD_MAXSIZE", 1 << 30),
            download_warnsize=integer(0).parse(settings, "DOWNLOAD_WARNSIZE", 32 * 1024 * 1024),
            redirect_max_times=integer(0).parse(settings, "REDIRECT_MAX_TIMES", 20),
            download_fail_on_dataloss=BOOL.parse(settings, "DOWNLOAD_FAIL_ON_DATALOSS", True),
        )
