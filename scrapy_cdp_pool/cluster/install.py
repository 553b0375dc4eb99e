"""Which settings the add-on sets for a cluster crawl (``CDP_POOL_CLUSTER_REDIS_URL``).

``SCHEDULER`` and ``DUPEFILTER_CLASS`` become the cluster's when they are
Scrapy's defaults; a scheduler the project chose itself is refused by name (it
would keep the requests in this process, each worker crawling alone). The
host-pause middleware becomes the fleet-wide one. Redis is asked once
(``PING``) before the crawl starts, so a wrong URL fails at start, by name.
"""

from __future__ import annotations

from typing import Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings

from scrapy_cdp_pool.cluster.feed import READABLE_TYPES
from scrapy_cdp_pool.messages import redact_url, scrub_secrets

SCHEDULER = "scrapy_cdp_pool.cluster.ClusterScheduler"
DUPEFILTER = "scrapy_cdp_pool.cluster.ClusterDupeFilter"
HOST_PAUSE_MIDDLEWARE = "scrapy_cdp_pool.cluster.host_pause.ClusterHostPauseMiddleware"
LOCAL_HOST_PAUSE_MIDDLEWARE = "scrapy_cdp_pool.resilience.HostPauseMiddleware"
_SCRAPY_SCHEDULERS = ("scrapy.core.scheduler.Scheduler", SCHEDULER)
_SCRAPY_DUPEFILTERS = ("scrapy.dupefilters.RFPDupeFilter", DUPEFILTER)


def cluster_settings(settings: BaseSettings) -> list[tuple[str, str, int]]:
    """``(name, value, priority)`` to set.

    :raises ValueError: ``JOBDIR`` is set too, ``SCHEDULER`` is not Scrapy's, or
        ``SCHEDULER`` or ``DUPEFILTER_CLASS`` is scrapy-redis's."""
    if settings.get("JOBDIR"):
        raise ValueError(
            "JOBDIR and CDP_POOL_CLUSTER_REDIS_URL are both set: a cluster crawl keeps its "
            "requests in Redis (resumed by starting the workers again); unset JOBDIR"
        )
    scheduler = _path(settings.get("SCHEDULER"))
    dupefilter = _path(settings.get("DUPEFILTER_CLASS"))
    for name, path in (("SCHEDULER", scheduler), ("DUPEFILTER_CLASS", dupefilter)):
        if path.startswith("scrapy_redis."):
            raise ValueError(
                f"CDP_POOL_CLUSTER_REDIS_URL is set and {name} is scrapy-redis's {path}: the "
                f"cluster's own scheduler and dupefilter replace scrapy-redis's; remove {name} "
                "(docs/migrating-from-scrapy-redis.md maps every scrapy-redis setting)"
            )
    if scheduler not in _SCRAPY_SCHEDULERS:
        raise ValueError(
            f"CDP_POOL_CLUSTER_REDIS_URL is set but SCHEDULER is {scheduler}: each worker "
            f"would crawl alone; remove SCHEDULER (the add-on sets {SCHEDULER})"
        )
    addon = SETTINGS_PRIORITIES["addon"]
    changes = [("SCHEDULER", SCHEDULER, addon)]
    if dupefilter in _SCRAPY_DUPEFILTERS:
        changes.append(("DUPEFILTER_CLASS", DUPEFILTER, addon))
    return changes


def check_redis(url: str, feed_key: str | None = None, prefix: str | None = None) -> None:
    """Ask Redis at ``url`` once (``PING``) before the crawl starts, whether
    a ``redis://`` URL names a node of a Redis Cluster, and the type of
    ``feed_key`` (:func:`~scrapy_cdp_pool.cluster.feed.feed_key_for`; on a
    Redis Cluster it may be in any hash slot: see
    :meth:`~scrapy_cdp_pool.cluster.frontier.Frontier.move_feed`).

    :raises ValueError: Redis does not answer (the message names the setting
        and the URL without its password), or a ``redis://`` (``rediss://``,
        ``unix://``) URL names a Redis Cluster node (the message says to use
        ``redis+cluster://``), or the feed key holds what the feed cannot
        read (not a list, a set or a sorted set: the message names the key
        and its type).
    """
    # Imported here, with a cluster configured: without one, a crawl never
    # loads redis-py (the add-on imports this module in every crawl).
    from scrapy_cdp_pool.cluster.frontier import REDIS_ERRORS
    from scrapy_cdp_pool.cluster.redis_client import connect, is_cluster_url

    try:
        client = connect(url, 5.0)
    except ValueError as e:  # redis-py's parse of the URL (a port that is no number...)
        raise ValueError(
            f"CDP_POOL_CLUSTER_REDIS_URL: {redact_url(url)} is not a Redis URL redis-py can "
            f"use: {scrub_secrets(e, url)}"
        ) from None  # redis-py's own message, chained, would show the password
    try:
        client.ping()
        if not is_cluster_url(url) and _cluster_enabled(client):
            raise ValueError(
                f"CDP_POOL_CLUSTER_REDIS_URL: {redact_url(url)} is a node of a Redis Cluster: "
                f"use {redact_url(_as_cluster_url(url))} (redis+cluster:// or rediss+cluster://, "
                "naming any node), so that the client follows the cluster's slots"
            )
        answer = client.type(feed_key) if feed_key else b"none"
    except REDIS_ERRORS as e:
        raise ValueError(
            f"CDP_POOL_CLUSTER_REDIS_URL: Redis at {redact_url(url)} does not answer: "
            f"{scrub_secrets(e, url)}"
        ) from None
    finally:
        client.close()
    kind = answer.decode() if isinstance(answer, bytes) else str(answer)
    if kind != "none" and kind not in READABLE_TYPES:
        raise ValueError(
            f"the cluster's feed key {feed_key!r} is a Redis {kind}: the feed is read from a "
            "list (LPUSH/RPUSH), a set (SADD) or a sorted set (ZADD), as scrapy-redis reads "
            "start URLs; delete or rename that key, or set CDP_POOL_CLUSTER_FEED_KEY to another"
        )


def _cluster_enabled(client: Any) -> bool:
    """Whether the one Redis ``client`` talks to is a Redis Cluster node
    (``INFO cluster``: ``cluster_enabled:1``)."""
    try:
        info = client.info("cluster")
    except Exception as e:  # a server without the section: not a cluster node
        from scrapy_cdp_pool.cluster.frontier import REDIS_ERRORS

        if isinstance(e, REDIS_ERRORS):
            raise
        return False
    return bool(int(info.get("cluster_enabled", 0) or 0))


def _as_cluster_url(url: str) -> str:
    """``url`` with the Redis Cluster scheme (``redis+cluster://``)."""
    scheme, sep, rest = url.partition("://")
    if scheme == "rediss":
        return f"rediss+cluster{sep}{rest}"
    if scheme == "redis":
        return f"redis+cluster{sep}{rest}"
    return "redis+cluster://host:port"


def _path(value: Any) -> str:
    if isinstance(value, str):
        return value
    return f"{value.__module__}.{value.__qualname__}"
