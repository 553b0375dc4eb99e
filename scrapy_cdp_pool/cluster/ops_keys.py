"""The cluster's key prefix and this worker's id, for the shared profiles and
the fleet budget (the same rules as the cluster core's ``cluster.keys``)."""

from __future__ import annotations

import os
import socket
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_cdp_pool.settings.config import PoolConfig


def key_prefix(cluster_name: str) -> str:
    """Every key of the cluster starts with this: ``cdp_pool:{<name>}:`` (the
    braces are a Redis Cluster hash tag: one slot, so a script may touch any
    key of the crawl)."""
    return f"cdp_pool:{{{cluster_name}}}:"


def cluster_prefix(config: PoolConfig, crawler: Crawler) -> str:
    """The crawl's prefix: ``CDP_POOL_CLUSTER_NAME``, else the spider's name."""
    name = config.cluster.name or getattr(crawler.spidercls, "name", None)
    return key_prefix(str(name or crawler.spidercls.__name__))


def worker_id() -> str:
    """This worker's id in the cluster's keys: host, process id and a random
    suffix (a restarted process with the same pid is another worker)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
