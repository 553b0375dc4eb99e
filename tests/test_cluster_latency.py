"""Workers on several machines, simulated: three ``scrapy crawl`` processes
(each with its own embedded Lightpanda) reach the real ``redis-server``
through :class:`~tests.latency_proxy.LatencyProxy`, which adds 2-5 ms each way
to every exchange. The crawl's guarantees hold as they do on one machine
(checked as ``tests/test_cluster_crawl.py`` checks them): each page fetched
once (the site's own count), one request in flight per identity at the site,
and no request started inside a host's announced pause (a 429 with
``Retry-After``, on the site's clock)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.cluster_harness import RedisServer, all_items, jobsite_job, kill_left
from tests.latency_proxy import LatencyProxy
from tests.profiles import token
from tests.servers import SiteServer
from tests.test_cluster_crawl import (
    check_identities,
    check_storm,
    once,
    start_storm,
    start_workers,
)

pytestmark = pytest.mark.timeout(600)
PAGES = 60


@pytest.fixture
def proxy() -> Iterator[LatencyProxy]:
    server = RedisServer(appendonly=True, appendfsync="no")  # as unsynced_redis_server
    latency = LatencyProxy(str(server.socket))
    yield latency
    kill_left()
    latency.stop()
    server.stop()


def check_latency(proxy: LatencyProxy) -> None:
    """The proxy was in the way: a round trip through it takes at least
    2 x 2 ms (the least delay it adds each way), and the workers' traffic
    went through it."""
    client = redis.Redis.from_url(proxy.url, socket_timeout=30)
    try:
        started = time.perf_counter()
        client.ping()
        assert time.perf_counter() - started >= 0.004
    finally:
        client.close()
    assert proxy.connections >= 3


@pytest.mark.xdist_group("cluster-latency")
def test_three_distant_workers_fetch_each_page_once_one_request_per_identity(
    site: SiteServer, proxy: LatencyProxy, tmp_path: Path
) -> None:
    job = jobsite_job(site, tmp_path, pages=PAGES, identities=6, hubs=3)
    workers = start_workers(job, proxy.url)
    for worker in workers:
        worker.finish()
    assert job.fetches() == once(PAGES)
    assert all_items(workers) == once(PAGES)
    check_identities(job)
    assert sum(worker.stat("cdp_pool/cluster/taken") for worker in workers) == PAGES + 1
    check_latency(proxy)


@pytest.mark.xdist_group("cluster-latency")
def test_no_distant_worker_reaches_a_host_inside_a_pause_another_announced(
    site: SiteServer, proxy: LatencyProxy, tmp_path: Path
) -> None:
    requests = 30
    key = token()
    url, workers = start_storm(site, proxy.url, tmp_path, requests, key)
    for worker in workers:
        worker.finish()
    check_storm(site, url, key, tmp_path, workers, requests)
    check_latency(proxy)
