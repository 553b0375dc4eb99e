"""One crawl across many processes and machines, on Redis (``CDP_POOL_CLUSTER_REDIS_URL``)."""
