"""How the cluster frontier's Redis cost grows with the crawl (``benchmarks/cluster.py --scale``).

For each dimension and size N (10, 1,000, 100,000 by default):

- ``queued``: N requests queued, over 10 identities and 10 hosts;
- ``identities``: max(N, 1,000) requests queued, over N identities (10 hosts);
- ``hosts``: max(N, 1,000) requests queued, over N hosts (10 identities).

The queue is filled through the push script (pipelined, not measured), then
one worker's :class:`~scrapy_cdp_pool.cluster.frontier.Frontier` runs a steady
state as a worker with ``IN_FLIGHT`` requests at once does: each take carries
the release and acknowledgement of its oldest request in flight, and one new
request is pushed per request taken (so the queue stays at N). Printed per
request taken: round trips (counted by the client), Redis commands run and
Redis CPU µs (``INFO commandstats``, ``INFO cpu``). A cost that grows with N
is a scan per take.
"""

from __future__ import annotations

import random
import time
from collections import deque
from typing import Any

from scrapy_cdp_pool.cluster.frontier import Frontier
from scrapy_cdp_pool.cluster.keys import gate_of, key_prefix
from scrapy_cdp_pool.cluster.redis_client import connect
from scrapy_cdp_pool.cluster.scripts import push_keys

SIZES = (10, 1_000, 100_000)
IN_FLIGHT = 8
DATA = b"x" * 400  # about a pickled Request.to_dict() with the benchmark's meta


def spread(dimension: str, size: int) -> tuple[int, int, int]:
    """``(queued, identities, hosts)`` of one point."""
    if dimension == "queued":
        return size, 10, 10
    if dimension == "identities":
        return max(size, 1_000), size, 10
    return max(size, 1_000), 10, size


def gate(n: int, identities: int, hosts: int) -> str:
    """Request ``n``'s gate: its identity and host drawn at random (seeded by ``n``)."""
    draw = random.Random(n)
    return gate_of(f"host-{draw.randrange(hosts)}.test", f"id-{draw.randrange(identities)}")


def fill(frontier: Frontier, start: int, count: int, identities: int, hosts: int) -> None:
    with frontier.client.pipeline(transaction=False) as pipe:
        for n in range(start, start + count):
            frontier._push(  # the push script, pipelined: one round trip per 1,000
                keys=push_keys(frontier.prefix, "", gate(n, identities, hosts)),
                args=[frontier.prefix, "", b"", gate(n, identities, hosts), 0, DATA],
                client=pipe,
            )
            if n % 1000 == 999:
                pipe.execute()
        pipe.execute()


def info(client: Any) -> tuple[int, float]:
    stats = client.info("all")
    calls = sum(v["calls"] for k, v in stats.items() if k.startswith("cmdstat_"))
    return calls, stats["used_cpu_user"] + stats["used_cpu_sys"]


def point(url: str, dimension: str, size: int, takes: int) -> dict[str, float]:
    queued, identities, hosts = spread(dimension, size)
    client = connect(url, 30)
    name = f"scale-{dimension}-{size}-{time.time_ns()}"
    frontier = Frontier(client, name, "w", lease_s=60)
    fill(frontier, 0, queued, identities, hosts)
    held: deque[str] = deque()
    pushed = queued

    def drive(count: int) -> int:
        nonlocal pushed
        got, idle = 0, False
        for _ in range(count):
            # the oldest in flight ends when the worker is full, or when
            # nothing could start (all its identities busy)
            done = [held.popleft()] if held and (len(held) >= IN_FLIGHT or idle) else []
            taken = frontier.take(done, releases=[f"r:{lease}" for lease in done])
            idle = taken.lease is None
            if taken.lease:
                held.append(taken.lease)
                got += 1
                frontier.push(DATA, gate(pushed, identities, hosts), 0)
                pushed += 1
        return got

    drive(IN_FLIGHT * 4)  # warm up: the steady number in flight
    frontier.calls = 0
    calls, cpu = info(client)
    got = drive(takes)
    round_trips = frontier.calls
    calls_after, cpu_after = info(client)
    client.delete(*client.keys(f"{key_prefix(name)}*"))
    client.close()
    got = max(got, 1)
    return {
        "taken": got,
        "round_trips": round_trips / got,
        "redis_calls": (calls_after - calls - 1) / got,  # INFO itself counted once
        "redis_cpu_us": (cpu_after - cpu) / got * 1e6,
    }


def run(url: str, sizes: tuple[int, ...] = SIZES, takes: int = 2_000) -> None:
    print(f"\nScaling: one worker, {IN_FLIGHT} requests in flight, {takes} takes per point:")
    print(f"  {'dimension':<11} {'N':>7} {'queued':>7} {'taken':>6} {'round trips':>11} "
          f"{'Redis cmds':>10} {'Redis CPU µs':>12}")  # fmt: skip
    for dimension in ("queued", "identities", "hosts"):
        for size in sizes:
            r = point(url, dimension, size, takes)
            print(f"  {dimension:<11} {size:>7} {spread(dimension, size)[0]:>7} "
                  f"{int(r['taken']):>6} {r['round_trips']:>11.2f} {r['redis_calls']:>10.1f} "
                  f"{r['redis_cpu_us']:>12.1f}")  # fmt: skip
