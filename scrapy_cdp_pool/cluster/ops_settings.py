"""The settings of the cluster's shared profiles, fleet budget and metrics,
read and checked once.

``CDP_POOL_CLUSTER_REDIS_URL`` and ``CDP_POOL_CLUSTER_NAME`` are the cluster's
own (read the same way as the frontier reads them); the others are:

- ``CDP_POOL_CLUSTER_BUDGET_MAX`` (pages, default ``None``: off): pages in
  flight across every worker of the cluster;
- ``CDP_POOL_CLUSTER_BUDGET_LEASE_SECONDS`` (default 30): how long a dead
  worker's share of that budget stays taken;
- ``CDP_POOL_METRICS_PORT`` (default ``None``: off; 0: any free port) and
  ``CDP_POOL_METRICS_HOST`` (default ``127.0.0.1``): the Prometheus endpoint.
"""

from __future__ import annotations

import math
import os
import socket
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import Self

    from scrapy.settings import BaseSettings

REDIS_SCHEMES = ("redis", "rediss", "unix")
DEFAULT_BUDGET_LEASE_S = 30.0
DEFAULT_METRICS_HOST = "127.0.0.1"


@dataclass(frozen=True)
class ClusterOpsSettings:
    """``redis_url``: ``None`` when the cluster is off. ``name``: ``None``
    means the spider's name. Times in seconds."""

    redis_url: str | None = None
    name: str | None = None
    budget_max: int | None = None
    budget_lease_s: float = DEFAULT_BUDGET_LEASE_S
    metrics_port: int | None = None
    metrics_host: str = DEFAULT_METRICS_HOST

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Self:
        """:raises ValueError: a setting is invalid (naming it, the value and
        what is allowed)."""
        url = settings.get("CDP_POOL_CLUSTER_REDIS_URL")
        if url is not None and (
            not isinstance(url, str) or url.split("://", 1)[0] not in REDIS_SCHEMES
        ):
            raise ValueError(
                f"CDP_POOL_CLUSTER_REDIS_URL: {_shown(url)} is not a Redis URL; expected "
                "redis://host:port/db, rediss://... or unix:///path/to/redis.sock"
            )
        name = settings.get("CDP_POOL_CLUSTER_NAME")
        if name is not None and (not isinstance(name, str) or not name or "\n" in name):
            raise ValueError(
                f"CDP_POOL_CLUSTER_NAME: {name!r} is not a name; expected a non-empty string"
            )
        budget_max = _optional_int(settings, "CDP_POOL_CLUSTER_BUDGET_MAX", minimum=1)
        if budget_max is not None and url is None:
            raise ValueError(
                f"CDP_POOL_CLUSTER_BUDGET_MAX = {budget_max} needs CDP_POOL_CLUSTER_REDIS_URL "
                "(a budget across workers lives in the cluster's Redis)"
            )
        lease = settings.get("CDP_POOL_CLUSTER_BUDGET_LEASE_SECONDS", DEFAULT_BUDGET_LEASE_S)
        if (
            isinstance(lease, bool)
            or not isinstance(lease, (int, float))
            or not math.isfinite(lease)
            or not 1 <= lease <= 3600
        ):
            raise ValueError(
                f"CDP_POOL_CLUSTER_BUDGET_LEASE_SECONDS: {lease!r} is not allowed; expected a "
                "number of seconds from 1 to 3600"
            )
        port = _optional_int(settings, "CDP_POOL_METRICS_PORT", minimum=0, maximum=65535)
        host = settings.get("CDP_POOL_METRICS_HOST", DEFAULT_METRICS_HOST)
        if not isinstance(host, str) or not host or any(c.isspace() for c in host):
            raise ValueError(
                f"CDP_POOL_METRICS_HOST: {host!r} is not a host; expected an address to listen "
                "on, e.g. '127.0.0.1' (default) or '0.0.0.0' (every interface)"
            )
        return cls(url, name, budget_max, float(lease), port, host)


def _optional_int(
    settings: BaseSettings, name: str, *, minimum: int, maximum: int | None = None
) -> int | None:
    value: Any = settings.get(name)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():  # from -s NAME=N
        value = int(value)
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        allowed = f"an integer >= {minimum}" if maximum is None else f"{minimum} to {maximum}"
        raise ValueError(f"{name}: {value!r} is not allowed; expected {allowed}, or None (off)")
    return value


def _shown(url: Any) -> str:
    """A URL for a message, without its password."""
    if not isinstance(url, str):
        return repr(url)
    scheme, _, rest = url.partition("://")
    if "@" in rest:
        rest = "***@" + rest.split("@", 1)[1]
    return repr(f"{scheme}://{rest}" if _ else url)


def key_prefix(cluster_name: str) -> str:
    """Every key of the cluster starts with this: ``cdp_pool:{<name>}:`` (the
    braces are a Redis Cluster hash tag: one slot, so a script may touch any
    key of the crawl). The same as the frontier's ``cluster.keys.key_prefix``."""
    return f"cdp_pool:{{{cluster_name}}}:"


def worker_id() -> str:
    """This worker's id in the cluster's keys: host, process id and a random
    suffix (a restarted process with the same pid is another worker)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
