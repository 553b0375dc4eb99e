"""Poison requests: a request whose lease runs out
``CDP_POOL_CLUSTER_MAX_DELIVERIES`` times fails by name
(:class:`~scrapy_cdp_pool.errors.RequestPoisoned`) through its errback,
instead of going round the fleet for ever. The frontier's count on a real
``redis-server`` (leases made to expire by their score, not by waiting), then
three ``scrapy crawl`` workers and a page that makes its worker exit each time
it is rendered."""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from scrapy_cdp_pool.cluster.frontier import Frontier
from scrapy_cdp_pool.cluster.keys import gate_of
from scrapy_cdp_pool.cluster.redis_client import connect
from scrapy_cdp_pool.tools.cluster_cli import status
from tests.cluster_harness import RedisServer, Worker
from tests.jobdir_project.harness import EXIT_DEADLINE_S
from tests.profiles import token
from tests.servers import SiteServer

pytestmark = pytest.mark.timeout(600)


def expire(frontier: Frontier, lease: str) -> None:
    frontier.client.zadd(f"{frontier.prefix}leases", {lease: 0})


def test_the_leases_that_ran_out_are_counted_and_the_last_is_poisoned(
    durable_redis_server: RedisServer,
) -> None:
    client = connect(durable_redis_server.url, 5)
    name = token()
    one, two = (Frontier(client, name, f"w{i}", lease_s=30, max_deliveries=2) for i in (1, 2))
    assert one.push(b"bad", gate_of("h", "id-a"), 0)
    assert one.push(b"good", gate_of("h", ""), 0)
    first = one.take()
    assert (first.data, first.poisoned) == (b"bad", 0)
    expire(one, first.lease or "")
    client.delete(f"{one.prefix}identity:id-a")  # its identity lock ran out with it
    second = two.take()
    assert (second.data, second.requeued, second.poisoned) == (b"bad", 1, 0)
    expire(two, second.lease or "")
    client.delete(f"{one.prefix}identity:id-a")
    assert status(client, [one.prefix], 30, 0)["expired"] == 1
    third = one.take()
    # handed out at the open gate (no identity lock, no host slot), marked
    assert (third.data, third.requeued, third.poisoned, third.token) == (b"bad", 1, 2, None)
    assert one.settle([f"a:{third.lease}"]) == 1
    assert not client.exists(f"{one.prefix}expired")
    # a request whose lease never ran out is not counted; a clean give-back is not either
    good = one.take()
    assert (good.data, good.poisoned) == (b"good", 0)
    assert one.settle([f"g:{good.lease}"]) == 1
    assert one.take().poisoned == 0
    assert not client.exists(f"{one.prefix}expired")


@pytest.mark.xdist_group("cluster-poison")
def test_a_page_that_kills_every_worker_fails_by_name(
    site: SiteServer, durable_redis_server: RedisServer, tmp_path: Path
) -> None:
    """Three workers, ``CDP_POOL_CLUSTER_MAX_DELIVERIES = 2``: the poison page
    (lowest priority) ends the first two workers that render it; after its
    second lease runs out the third worker fails it through its errback with
    ``RequestPoisoned``, counted and written to the failures file, and ends
    the crawl. Every other page is done once and fetched once (the spider
    acknowledges what its worker has done before the exit: see
    ``spiders/poison.py``). Leases of 6 s, as the crawl tests' whose
    survivors must lose none (before, 8 s: the poison page waits two out)."""
    pages = 20
    tag = token()
    settings = {
        "JOBSITE_URL": site.url(f"/jobsite/{{n}}?tag={tag}&total={pages + 1}&hubs=1"),
        "POISON_PAGES": str(pages), "CDP_POOL_CLUSTER_NAME": f"poison-{tag}",
        "CDP_POOL_CLUSTER_MAX_DELIVERIES": "2", "CDP_POOL_CLUSTER_LEASE_SECONDS": "6",
        "CONCURRENT_REQUESTS": "2", "CDP_POOL_CONNECTIONS": "1",
    }  # fmt: skip
    workers = [
        Worker(tmp_path, i, durable_redis_server.url,
               {**settings, "CDP_POOL_FAILURES_FILE": str(tmp_path / f"failures-{i}.jsonl")},
               spider="poison")
        for i in range(3)
    ]  # fmt: skip
    for worker in workers:
        worker.proc.wait(timeout=EXIT_DEADLINE_S * 2)
        worker._close()
    codes = sorted(worker.proc.returncode for worker in workers)
    assert codes == [0, 3, 3], [worker.log() for worker in workers]
    (survivor,) = [worker for worker in workers if worker.proc.returncode == 0]
    items = [
        json.loads(line)
        for worker in workers
        if worker.items_file.exists()
        for line in worker.items_file.read_text(encoding="utf-8").splitlines()
    ]
    failed = [item for item in items if "failed" in item]
    assert failed == [{"failed": pages, "error": "RequestPoisoned"}]
    assert Counter(item["n"] for item in items if "n" in item) == {n: 1 for n in range(pages)}
    assert survivor.stat("cdp_pool/cluster/poisoned") == 1
    assert survivor.stat("cdp_pool/failures/RequestPoisoned") == 1
    (line,) = (tmp_path / f"failures-{survivor.number}.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["reason"] == "RequestPoisoned"
    assert record["url"] == settings["JOBSITE_URL"].format(n=pages)
    assert "ran out 2 times" in record["message"]
    log = survivor.log_file.read_text(encoding="utf-8", errors="replace")
    assert "'finish_reason': 'finished'" in log
    # rendered by the two workers it ended, never by the third
    with urllib.request.urlopen(site.url(f"/jobsite/fetches?tag={tag}")) as answer:
        fetched = json.loads(answer.read())
    assert fetched == {**{str(n): 1 for n in range(pages)}, str(pages): 2}
