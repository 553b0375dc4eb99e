"""The cluster's figures for this worker's Prometheus metrics.

:func:`read_figures` reads them from Redis in two pipelined round trips plus a
``SCAN`` of the profile locks and of the host pauses (their count bounds the
cost: profiles and paused hosts, never queued requests). Queued requests are
counted in all (``P queued``); per priority they are not: that needs a read of
every queued entry, which ``scrapy-cdp-pool cluster status`` does on demand.
A worker sends them with each lease renewal (every third of
``CDP_POOL_CLUSTER_LEASE_SECONDS``) when ``CDP_POOL_METRICS_PORT`` is set.
"""

from __future__ import annotations

from typing import Any

from scrapy_cdp_pool.cluster.keys import glob_escaped, redis_time_ms
from scrapy_cdp_pool.telemetry.cluster_figures import ClusterFigures


def read_all_figures(client: Any, prefixes: list[str], lease_s: float) -> ClusterFigures:
    """:func:`read_figures` of each bucket of the crawl (``prefixes``, bucket
    0's first: :mod:`~scrapy_cdp_pool.cluster.shards`), summed; the live
    workers are bucket 0's (where every worker's heartbeat is).

    :raises redis.exceptions.RedisError: Redis did not answer."""
    total = read_figures(client, prefixes[0], lease_s)
    for prefix in prefixes[1:]:
        more = read_figures(client, prefix, lease_s)
        owners = dict(total.leases_by_owner)
        for owner, count in more.leases_by_owner.items():
            owners[owner] = owners.get(owner, 0) + count
        paused = {**more.paused_hosts, **total.paused_hosts}
        total = ClusterFigures(
            queued_total=total.queued_total + more.queued_total,
            leased=total.leased + more.leased,
            leases_by_owner=owners,
            busy_identities=total.busy_identities + more.busy_identities,
            paused_hosts=paused,
            workers=total.workers,
            requeued=total.requeued + more.requeued,
        )
    return total


def read_figures(client: Any, prefix: str, lease_s: float) -> ClusterFigures:
    """The cluster under ``prefix`` now; ``lease_s``: how recent a worker's
    heartbeat must be (seconds) for it to count as alive.

    :raises redis.exceptions.RedisError: Redis did not answer.
    """
    with client.pipeline(transaction=False) as pipe:
        pipe.time()
        pipe.get(f"{prefix}queued")
        pipe.zrange(f"{prefix}leases", 0, -1)
        pipe.zrange(f"{prefix}workers", 0, -1, withscores=True)
        pipe.hget(f"{prefix}stats", "requeued")
        now, queued, leases, beats, requeued = pipe.execute()
    now_ms = redis_time_ms(now)
    with client.pipeline(transaction=False) as pipe:
        for lease in leases:
            pipe.hget(f"{prefix}lease:{lease.decode()}", "owner")
        owners = pipe.execute()
    by_owner: dict[str, int] = {}
    for owner in owners:
        if owner is not None:
            by_owner[owner.decode()] = by_owner.get(owner.decode(), 0) + 1
    profiles = sum(
        1 for _ in client.scan_iter(match=f"{glob_escaped(prefix)}identity:*", count=1000)
    )
    pause_prefix = f"{prefix}pause:"
    paused: dict[str, float] = {}
    for key in client.scan_iter(match=f"{glob_escaped(pause_prefix)}*", count=1000):
        left_ms = int(client.pttl(key))
        if left_ms > 0:
            paused[key.decode()[len(pause_prefix) :]] = round(left_ms / 1000, 1)
    live = sum(1 for _, beat in beats if now_ms - beat <= lease_s * 1000)
    return ClusterFigures(
        queued_total=int(queued or 0),
        leased=len(leases),
        leases_by_owner=by_owner,
        busy_identities=profiles,
        paused_hosts=paused,
        workers=live,
        requeued=int(requeued or 0),
    )
