"""One crawl across many processes and machines, on Redis (issue 16).

Set ``CDP_POOL_CLUSTER_REDIS_URL`` and run ``scrapy crawl`` on as many machines
as you like: the add-on installs :class:`ClusterScheduler` and
:class:`ClusterDupeFilter`, and the host pauses become fleet-wide
(:class:`~scrapy_cdp_pool.cluster.host_pause.ClusterHostPauseMiddleware`).

Redis keys. Every key starts with ``P = cdp_pool:{<CDP_POOL_CLUSTER_NAME>}:``
(:func:`~scrapy_cdp_pool.cluster.keys.key_prefix`; the braces are a Redis
Cluster hash tag). Times are Redis's clock, in ms.

=====================  ======  ============================================