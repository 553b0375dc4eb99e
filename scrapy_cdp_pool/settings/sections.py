"""The settings of each optional feature, one typed frozen section each of
:class:`~scrapy_cdp_pool.settings.config.PoolConfig` (``config.cluster.lease_s``,
``config.budget.min``...).

Each setting is still declared once, in :mod:`scrapy_cdp_pool.settings.table`,
whose attribute column names its section (``"cluster.lease_s"``). A section is
made from the table's parsed values of its own settings and checks how they go
together (its ``__post_init__``: :class:`ValueError` naming the settings), so a
section that exists is valid. The classes live here, not in their features:
the settings layer is below every feature (docs/architecture.md), and the core
reads some of them (``CDP_POOL_HOST_RATE``, ``CDP_POOL_RETRY_BACKOFF_MAX_SECONDS``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy_cdp_pool.settings.expectation import Expectation
from scrapy_cdp_pool.settings.signed_out import SignedOutRule

if TYPE_CHECKING:
    from scrapy_cdp_pool.settings.parse import SharedBudget


@dataclass(frozen=True)
class ResilienceConfig:
    """Retry backoff, per-host limits and the failures file (docs/resilience.md).
    Times are seconds.

    :raises ValueError: ``CDP_POOL_RETRY_BACKOFF_MAX_SECONDS`` below
        ``CDP_POOL_RETRY_BACKOFF_BASE_SECONDS``.
    """

    retry_backoff_base_s: float = 1.0
    retry_backoff_max_s: float = 60.0
    host_concurrency: int | None = None
    #: starts a second per host (the host pacing's, ``core/pacing/``)
    host_rate: float | None = None
    failures_file: str | None = None

    def __post_init__(self) -> None:
        if self.retry_backoff_max_s < self.retry_backoff_base_s:
            raise ValueError(
                "CDP_POOL_RETRY_BACKOFF_MAX_SECONDS: "
                f"{self.retry_backoff_max_s!r} is not a number of seconds >= "
                f"CDP_POOL_RETRY_BACKOFF_BASE_SECONDS ({self.retry_backoff_base_s!r})"
            )


@dataclass(frozen=True)
class ProfilesConfig:
    """Stored profiles (docs/profiles.md): their directory, whether a render's
    storage state is saved back, the signed-out rule, the sign-in callable and
    the failures before a profile is retired."""

    dir: str | None = None
    save_state: bool = False
    signed_out: SignedOutRule | None = None
    sign_in: str | Callable[..., Any] | None = None
    max_failures: int = 5


@dataclass(frozen=True)
class TelemetryConfig:
    """The status samples, the server memory guard and the Prometheus
    endpoint (docs/telemetry.md). ``metrics_port``: ``None`` off, ``0`` any
    free port."""

    status_interval_s: float = 30.0
    status_file: str | None = None
    server_memory_limit_mb: float | None = None
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"


@dataclass(frozen=True)
class BudgetConfig:
    """A concurrency budget shared by several crawlers and its autoscaling
    (docs/budget.md). ``shared``: ``CDP_POOL_BUDGET``, a budget object;
    ``max``: ``None`` for the pool's capacity.

    :raises ValueError: ``CDP_POOL_BUDGET_MAX`` below ``CDP_POOL_BUDGET_MIN``.
    """

    shared: SharedBudget | None = None
    autoscale: bool = False
    interval_s: float = 10.0
    min: int = 1
    max: int | None = None
    memory_share: float = 0.7
    cpu_ratio: float = 0.95
    loop_lag_s: float = 0.25
    overloaded_fraction: float = 0.4

    def __post_init__(self) -> None:
        if self.max is not None and self.max < self.min:
            raise ValueError(
                f"CDP_POOL_BUDGET_MAX: {self.max!r} is not an integer >= "
                f"CDP_POOL_BUDGET_MIN ({self.min!r}), or None for the pool's capacity"
            )


@dataclass(frozen=True)
class JobdirConfig:
    """The durable JOBDIR (docs/jobdir.md)."""

    durable: bool = True
    fsync: bool = False


@dataclass(frozen=True)
class LadderConfig:
    """The render ladder (``scrapy_cdp_pool/ladder/``): ``mode``
    (``CDP_POOL_RENDER``) "auto" puts plain HTTP first; ``fallback``
    "chromium" puts Chromium last; ``expect`` is the spider's default
    expectation; ``recheck_fraction`` the share of a kind's requests
    re-checked one rung lower; ``store`` a store class (or its import path)
    for what was learned (None: the JOBDIR's file)."""

    mode: str = "browser"
    fallback: str | None = None
    expect: Expectation | None = None
    recheck_fraction: float = 0.1
    store: str | Callable[..., Any] | None = None


@dataclass(frozen=True)
class ClusterConfig:
    """The cluster crawl (docs/cluster.md): Redis URL (None: one process),
    crawl name (None: the spider's), lease of a taken request (seconds), stay
    open when idle, the Redis list whose URLs join the crawl (None:
    ``<spider>:start_urls``), leases of one request that may run out before
    it fails as poisoned, the crawl's fingerprints ("set", or "bloom": a
    Bloom filter sized for a capacity, requests, at an error rate), and the
    pages in flight across all workers (None: no bound) with a worker's
    share's lease (seconds).

    :raises ValueError: ``CDP_POOL_CLUSTER_BUDGET_MAX`` without
        ``CDP_POOL_CLUSTER_REDIS_URL``; a Bloom error rate of 0.
    """

    redis_url: str | None = None
    name: str | None = None
    lease_s: float = 30.0
    keep_open: bool = False
    feed_key: str | None = None
    max_deliveries: int = 3
    dupefilter: str = "set"
    bloom_capacity: int = 100_000_000
    bloom_error_rate: float = 0.001
    #: buckets the crawl's state is split into, each its own hash tag (0: one
    #: on one Redis, two per primary on a Redis Cluster; docs/cluster.md)
    shards: int = 0
    budget_max: int | None = None
    budget_lease_s: float = 30.0

    def __post_init__(self) -> None:
        if self.budget_max is not None and self.redis_url is None:
            raise ValueError(
                f"CDP_POOL_CLUSTER_BUDGET_MAX = {self.budget_max!r} needs "
                "CDP_POOL_CLUSTER_REDIS_URL (a bound across workers lives in the cluster's Redis)"
            )
        if self.bloom_error_rate == 0:
            raise ValueError(
                "CDP_POOL_CLUSTER_BLOOM_ERROR_RATE: 0 is not a number > 0 and < 1 (a Bloom "
                'filter has false positives; CDP_POOL_CLUSTER_DUPEFILTER = "set" has none)'
            )


#: section name (the ``PoolConfig`` attribute, the table's prefix) -> its class
SECTIONS: dict[str, type[Any]] = {
    "resilience": ResilienceConfig,
    "profiles": ProfilesConfig,
    "telemetry": TelemetryConfig,
    "budget": BudgetConfig,
    "jobdir": JobdirConfig,
    "ladder": LadderConfig,
    "cluster": ClusterConfig,
}
