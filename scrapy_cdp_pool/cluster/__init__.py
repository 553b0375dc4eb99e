"""One crawl across many processes and machines, on Redis (docs/cluster.md).

Set ``CDP_POOL_CLUSTER_REDIS_URL`` and run ``scrapy crawl`` on as many machines
as you like: the add-on installs :class:`ClusterScheduler` and
:class:`ClusterDupeFilter`, and the host pauses become fleet-wide
(:class:`~scrapy_cdp_pool.cluster.host_pause.ClusterHostPauseMiddleware`).

Redis keys. Every key starts with ``P = cdp_pool:{<CDP_POOL_CLUSTER_NAME>}:``
(:func:`~scrapy_cdp_pool.cluster.keys.key_prefix`; the braces are a Redis
Cluster hash tag), or, in a crawl split into buckets across a Redis
Cluster's shards, with another bucket's ``cdp_pool:shard:{<name>|<i>}:``,
which holds the same keys for the requests routed to it
(:mod:`~scrapy_cdp_pool.cluster.shards`; ``P shards``, in bucket 0 only,
lists the buckets' hash tags as JSON). Times are Redis's clock, in ms.

=======================  ======  ===================================================
key                      type    holds
=======================  ======  ===================================================
``P seq``                string  last request id (``INCR``)
``P req``                hash    request id -> the request, pickled
                                 ``Request.to_dict()`` (as the durable JOBDIR)
``P q:<gate>``           zset    request ids of one gate, score
                                 ``-priority * 2**33 + id`` (best first, FIFO
                                 within a priority)
``P ready``              zset    gates that may start, scored by their best request
``P timed``              zset    parked gates -> when to look at them again
``P wait_id:<ident>``    set     gates parked until profile ``ident`` is released
``P wait_host:<host>``   set     gates parked until a slot of ``host`` frees
``P queued``             string  requests queued (not leased)
``P leases``             zset    leased request id -> lease expiry
``P lease:<id>``         hash    ``owner`` (worker id), ``gate``, ``score``,
                                 ``identity``, ``host``, ``token``, ``released``,
                                 ``taken`` (when, ms)
``P identity:<ident>``   hash    the profile lock: ``owner`` (worker id),
                                 ``token`` (fencing token), ``lease`` (request
                                 id); PEXPIRE: the lease
``P fence``              string  last fencing token (``INCR``)
``P slots:<host>``       zset    leases holding a slot of ``host`` -> expiry
                                 (``CDP_POOL_HOST_CONCURRENCY``)
``P last:<host>``        string  when the last request to ``host`` started
                                 (``CDP_POOL_HOST_RATE``); PEXPIRE: the interval
``P pause:<host>``       string  when ``host``'s pause ends; PEXPIRE: then
``P pauses``             zset    paused hosts -> when their pause ends (read by a
                                 worker when it subscribes to ``P hosts``, the
                                 channel each new pause is published on:
                                 :mod:`~scrapy_cdp_pool.cluster.host_events`)
``P navigated:<host>``   string  the last navigation to ``host`` a worker
                                 claimed (``CDP_POOL_HOST_RATE``): its token;
                                 PEXPIRE: a lease until its answer, then the
                                 interval; its answer is published on the
                                 channel ``P answered:<host>``
``P seen``               set     fingerprints the dupefilter let through
``P start_seen``         set     fingerprints of ``dont_filter`` start requests
                                 (stored once per crawl)
``P seen_bloom:<part>``  string  with ``CDP_POOL_CLUSTER_DUPEFILTER = "bloom"``:
                                 the Bloom filter's bitmaps, instead of ``P seen``
                                 (:mod:`~scrapy_cdp_pool.cluster.bloom`); ``P
                                 seen_bloom_count``: fingerprints added; ``P
                                 seen_bloom_params``: its size
``P workers``            zset    worker id -> last heartbeat (take or renewal)
``P stats``              hash    ``requeued``: expired leases put back;
                                 ``acked``: requests done
``P paused``             string  set by ``scrapy-cdp-pool cluster pause``: nothing
                                 is taken while it exists
``P wake``               list    wake tokens (at most 8): a gate became ready;
                                 popped (``BLPOP``) by a waiting worker
``P feed``               list    feed items moved from a feed key in another
                                 hash slot of a Redis Cluster
``P unloadable``         hash    request id -> stored request no worker could rebuild
``P expired``            hash    request id -> its leases that ran out (poisoned
                                 at ``CDP_POOL_CLUSTER_MAX_DELIVERIES``)
``P poisoned``           hash    request id -> JSON ``at`` (ms), ``deliveries``,
                                 ``gate``, ``score``: poisoned requests, kept
                                 (with ``P req``) when acknowledged, not counted
                                 as ``acked``, until requeued or dropped
=======================  ======  ===================================================

A gate is ``<host>|<not before ms or "">|<profile>``
(:func:`~scrapy_cdp_pool.cluster.keys.gate_of`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FENCE_META_KEY", "ClusterDupeFilter", "ClusterScheduler", "key_prefix"]

_EXPORTS = {
    "ClusterDupeFilter": "scrapy_cdp_pool.cluster.dupefilter",
    "ClusterScheduler": "scrapy_cdp_pool.cluster.scheduler",
    "FENCE_META_KEY": "scrapy_cdp_pool.cluster.scheduler",
    "key_prefix": "scrapy_cdp_pool.cluster.keys",
}


def __getattr__(name: str) -> Any:
    """The exports, imported on first use: the add-on imports
    :mod:`scrapy_cdp_pool.cluster.install` at start, which must not pull in
    the scheduler (and with it the runtime) while the package loads."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
