"""The cluster's Redis clients, one way for every part of it.

``CDP_POOL_CLUSTER_REDIS_URL`` is ``redis://``, ``rediss://`` or ``unix://``
for one Redis (a primary, with or without replicas), or ``redis+cluster://``
/ ``rediss+cluster://`` for a Redis Cluster: the URL names any one node, and
redis-py's cluster client finds the others and follows ``MOVED``/``ASK``.

A crawl keeps each bucket's keys in one hash slot (the ``{<name>}`` hash tag
of :func:`~scrapy_cdp_pool.cluster.keys.key_prefix` for bucket 0; on a Redis
Cluster the crawl has several buckets spread over the shards:
:mod:`~scrapy_cdp_pool.cluster.shards`), and each script declares a key of its
bucket's slot first (:data:`route_key`), so the cluster client sends it to
that shard. The feed key may be in any slot (:func:`in_other_slot`).
"""

from __future__ import annotations

from typing import Any

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from redis.crc import key_slot

CALL_TIMEOUT_S = 1.0
"""Socket timeout of each Redis call of the frontier and of the cluster's
budget: a call blocks the reactor (the frontier's, made in it) or holds the
budget's take at most this long (a round trip takes ~0.1-1 ms; a Redis that
does not answer within this is an outage, tried again after a backoff)."""

#: URL schemes of a Redis Cluster, and the scheme redis-py reads for each
CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}


def is_cluster_url(url: str) -> bool:
    """Whether ``url`` names a Redis Cluster (``redis+cluster://``...)."""
    return url.partition("://")[0] in CLUSTER_SCHEMES


def _node_url(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    return f"{CLUSTER_SCHEMES[scheme]}{sep}{rest}"


def _options(timeout_s: float | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"socket_timeout": timeout_s, "socket_connect_timeout": timeout_s, **kwargs}


def connect(url: str, timeout_s: float | None, **kwargs: Any) -> Any:
    """A client of ``url``: redis-py's cluster client for a Redis Cluster,
    else its client of one Redis; calls time out after ``timeout_s`` seconds
    (``None``: never). No connection is made before the first call, except
    that a cluster client asks the node for the cluster's layout at once.

    :raises ValueError: redis-py cannot read the URL.
    :raises redis.exceptions.RedisError: a cluster node does not answer.
    """
    options = _options(timeout_s, kwargs)
    if is_cluster_url(url):
        return redis.cluster.RedisCluster.from_url(_node_url(url), **options)
    return redis.Redis.from_url(url, **options)


def connect_async(url: str, timeout_s: float | None, **kwargs: Any) -> Any:
    """The asyncio client of ``url``, its calls (connecting included) timing
    out after ``timeout_s`` seconds (``None``: never) with
    ``redis.exceptions.TimeoutError`` (see :func:`connect`). A pub/sub read
    given its own timeout (``get_message(timeout=...)``) keeps it."""
    options = _options(timeout_s, kwargs)
    if is_cluster_url(url):
        return redis.asyncio.cluster.RedisCluster.from_url(_node_url(url), **options)
    return redis.asyncio.Redis.from_url(url, **options)


def route_key(prefix: str) -> str:
    """A key of the crawl's hash slot, declared first by every script of the
    crawl so that a cluster client sends it to the slot's shard (on one
    Redis it changes nothing)."""
    return f"{prefix}seq"


def in_other_slot(url: str, prefix: str, key: str) -> bool:
    """Whether ``key`` is in another hash slot of a Redis Cluster (``url``)
    than the crawl's keys (``prefix``): a script of the crawl cannot touch
    it (the feed is then moved by the worker: ``Frontier.move_feed``)."""
    return is_cluster_url(url) and key_slot(prefix.encode()) != key_slot(key.encode())
