"""How a cluster crawl's Redis capacity grows with a Redis Cluster's shards
(issue 38 item 2; not run by the tests).

    python benchmarks/cluster_shards.py --shards 1,2,3 [--seconds 20] [--procs 2] \
        [--workers 4] [--profiles 200] [--hosts 50] [--host-concurrency 8]
    python benchmarks/cluster_shards.py --shards 3 --procs 4 --workers 25 --seconds 60
    python benchmarks/cluster_shards.py --idle 45

``--idle S`` (instead): one real worker (``tests/cluster_worker.py``: the
add-on, embedded Lightpanda) with ``CDP_POOL_CLUSTER_KEEP_OPEN`` and nothing to
do, on a 3-node Redis Cluster (6 buckets): its round trips a second over S
seconds (every node's ``total_reads_processed``), 25 s after it started.

For each shard count it starts a real Redis Cluster of that many primaries
(``redis-server --cluster-enabled yes`` on loopback, slots split evenly, no
persistence) and runs simulated workers on the scheduler path only, no
browser: ``--procs`` processes of ``--workers`` simulated workers each (one
after the other in each process, each with its own worker id and leases).
A worker's turn: take from a bucket (its last lease's, whose release and
acknowledgement ride on the take; else the next bucket in turn), and push one
new request per request taken (its "link"), so the frontier stays at its seed
size. Requests carry a profile half the time (``--profiles``) and a host
(``--hosts``), with fleet-wide host slots (``--host-concurrency``): the
take's gates, profile locks and host slots all work. The crawl's buckets are
the add-on's default layout (:mod:`scrapy_cdp_pool.cluster.shards`: two per
primary).

Printed per shard count: pages/s (wall), each node's Redis CPU seconds
(``INFO cpu``, user + sys) and per page, and the capacity figure that scales
on a machine with fewer cores than shards: pages per CPU second of the
busiest shard (1 / the largest per-node Redis CPU per page), and its ratio to
one shard's; each also without the nodes' idle cost (their CPU per second
over the 3 s before the workers start, times the run: ``serverCron`` and the
cluster bus's gossip, which a 1-node cluster does not have).
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import redis  # noqa: E402
from redis.cluster import RedisCluster  # noqa: E402

from scrapy_cdp_pool.cluster.frontier import Frontier, worker_id  # noqa: E402
from scrapy_cdp_pool.cluster.keys import gate_of  # noqa: E402
from scrapy_cdp_pool.cluster.shards import (  # noqa: E402
    PER_PRIMARY,
    Buckets,
    SlotOwner,
    bucket_prefix,
    resolve_layout,
)
from tests.redis_cluster import REDIS_SERVER, _free_port_pair  # noqa: E402

SLOTS = 16384
DATA = b"x" * 300  # a stored request's size, about


class Cluster:
    """A Redis Cluster of ``nodes`` primaries (1 and 2 too: joined by hand,
    as ``redis-cli --cluster create`` wants 3)."""

    def __init__(self, nodes: int) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="cdp-shards-"))
        self.ports = [_free_port_pair() for _ in range(nodes)]
        self.procs = []
        for index, port in enumerate(self.ports):
            node_dir = self.directory / str(index)
            node_dir.mkdir()
            self.procs.append(subprocess.Popen([
                REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1",
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--dir", str(node_dir), "--save", "", "--appendonly", "no",
                "--logfile", "log.txt",
            ]))  # fmt: skip
        self.clients = [redis.Redis(host="127.0.0.1", port=port) for port in self.ports]
        self._wait(lambda: all(self._answers(c) for c in self.clients))
        per = SLOTS // nodes
        for index, client in enumerate(self.clients):
            last = SLOTS - 1 if index == nodes - 1 else (index + 1) * per - 1
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", index * per, last)
        for port in self.ports[1:]:
            self.clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", port)
        self._wait(
            lambda: all(
                b"cluster_state:ok" in c.execute_command("CLUSTER", "INFO") for c in self.clients
            )
        )
        self.url = f"redis://127.0.0.1:{self.ports[0]}"

    @staticmethod
    def _answers(client: redis.Redis) -> bool:
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False

    @staticmethod
    def _wait(ready: Any) -> None:
        deadline = time.monotonic() + 60
        while not ready():
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster did not come up")
            time.sleep(0.05)

    def client(self) -> RedisCluster:
        return RedisCluster(host="127.0.0.1", port=self.ports[0])

    def calls(self) -> int:
        """Script calls (``EVALSHA``) of every node so far."""
        return sum(
            int(client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))
            for client in self.clients
        )

    def cpu(self) -> list[float]:
        """Each node's CPU seconds so far (user + sys, main thread and all)."""
        found = []
        for client in self.clients:
            info = client.info("cpu")
            found.append(float(info["used_cpu_user"]) + float(info["used_cpu_sys"]))
        return found

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            proc.wait(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)


def buckets_for(client: Any, name: str, tags: list[str], args: argparse.Namespace) -> Buckets:
    worker = worker_id()
    return Buckets([
        Frontier(client, name, worker, lease_s=30.0, host_concurrency=args.host_concurrency,
                 prefix=bucket_prefix(name, tag), call_timeout_s=None)
        for tag in tags
    ])  # fmt: skip


def a_request(rng: random.Random, args: argparse.Namespace) -> tuple[str, str]:
    host = f"h{rng.randrange(args.hosts)}.test"
    profile = f"p{rng.randrange(args.profiles)}" if rng.random() < 0.5 else ""
    return host, profile


def push(buckets: Buckets, rng: random.Random, args: argparse.Namespace, n: int) -> None:
    host, profile = a_request(rng, args)
    frontier = buckets.of(host, profile)
    frontier.push(DATA, gate_of(host, profile), 0, "seen", f"fp-{n}".encode())


def simulate(
    url: str, name: str, tags: list[str], args: argparse.Namespace, seed: int,
    start_at: float, results: Any,
) -> None:  # fmt: skip
    """One process: ``args.workers`` simulated workers taking turns until
    ``args.seconds`` after ``start_at`` (wall clock); puts its pages counted."""
    client = RedisCluster.from_url(url)
    rng = random.Random(seed)
    workers = [buckets_for(client, name, tags, args) for _ in range(args.workers)]
    held: list[tuple[int, str] | None] = [None] * len(workers)
    turn = [rng.randrange(len(tags)) for _ in workers]
    pages = 0
    pushed = 0
    while time.time() < start_at:
        time.sleep(0.01)
    end = start_at + args.seconds
    while time.time() < end:
        for w, buckets in enumerate(workers):
            hold = held[w]
            bucket = hold[0] if hold else turn[w]
            acks = [hold[1]] if hold else []
            ops = [f"r:{hold[1]}"] if hold else []
            taken = buckets.frontiers[bucket].take(acks, "", ops)
            if hold:
                pages += 1
            held[w] = (bucket, taken.lease) if taken.lease else None
            if taken.lease:
                pushed += 1
                push(buckets, rng, args, seed * 10_000_000 + pushed)  # its "link"
            else:
                turn[w] = (turn[w] + 1) % len(tags)
    for w, hold in enumerate(held):
        if hold:
            workers[w].frontiers[hold[0]].settle([f"a:{hold[1]}"])
    results.put(pages)


def run(nodes: int, args: argparse.Namespace) -> dict[str, Any]:
    cluster = Cluster(nodes)
    try:
        client = cluster.client()
        name = f"bench-{nodes}"
        tags = resolve_layout(client, name, args.per_primary * nodes, SlotOwner(client))
        seeder = buckets_for(client, name, tags, args)
        rng = random.Random(0)
        for n in range(args.queued):
            push(seeder, rng, args, n)
        results: Any = multiprocessing.Queue()
        start_at = time.time() + 3.0
        procs = [
            multiprocessing.Process(
                target=simulate,
                args=(
                    f"redis://127.0.0.1:{cluster.ports[0]}",
                    name,
                    tags,
                    args,
                    p + 1,
                    start_at,
                    results,
                ),
            )
            for p in range(args.procs)
        ]
        for proc in procs:
            proc.start()
        idle = cluster.cpu()  # the nodes' own cost (cron, cluster bus), pages aside
        idle_s = max(0.5, start_at - time.time())
        time.sleep(idle_s)
        before = cluster.cpu()
        calls_before = cluster.calls()
        idle_rate = [(b - a) / idle_s for a, b in zip(idle, before, strict=True)]
        pages = sum(results.get(timeout=args.seconds + 120) for _ in procs)
        after = cluster.cpu()
        calls = cluster.calls() - calls_before
        for proc in procs:
            proc.join()
        cpu = [b - a for a, b in zip(before, after, strict=True)]
        # each node's CPU for the pages: its idle rate over the run taken out
        net = [max(1e-6, c - rate * args.seconds) for c, rate in zip(cpu, idle_rate, strict=True)]
        acked = [int(client.hget(bucket_prefix(name, tag) + "stats", "acked") or 0) for tag in tags]
        owners = SlotOwner(client)
        per_node = [0] * nodes
        for tag in tags:
            per_node[cluster.ports.index(int(owners(bucket_prefix(name, tag)).split(":")[1]))] += 1
        return {"shards": nodes, "buckets": len(tags), "buckets_per_node": per_node,
                "pages": pages, "pages_per_s": pages / args.seconds, "cpu_s": cpu,
                "cpu_us_per_page": [round(c / pages * 1e6, 1) for c in cpu],
                "capacity": pages / max(cpu), "idle_cpu_per_s": idle_rate,
                "calls_per_page": calls / pages, "acked_per_bucket": acked,
                "net_us_per_page": [round(c / pages * 1e6, 1) for c in net],
                "net_capacity": pages / max(net)}  # fmt: skip
    finally:
        cluster.stop()


def idle(seconds: float) -> None:
    import json

    from tests.redis_cluster import RedisClusterServers

    servers = RedisClusterServers()
    try:
        settings = {
            "CDP_POOL_CLUSTER_REDIS_URL": servers.url(0),
            "CDP_POOL_CLUSTER_NAME": "idle",
            "CDP_POOL_CLUSTER_KEEP_OPEN": True,
            "CLOSESPIDER_TIMEOUT": seconds + 30,
        }
        worker = subprocess.Popen(
            [sys.executable, "-m", "tests.cluster_worker", json.dumps(settings)],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        nodes = [redis.Redis(port=port) for port in servers.ports]

        def reads() -> int:
            return sum(int(node.info("stats")["total_reads_processed"]) for node in nodes)

        time.sleep(25)  # started, its first takes done
        first, started = reads(), time.monotonic()
        time.sleep(seconds)
        # this script's own INFO calls (one per node) left out
        rate = (reads() - first - len(nodes)) / (time.monotonic() - started)
        print(f"an idle worker, 6 buckets on 3 nodes: {rate:.2f} round trips a second")
        worker.wait(timeout=120)
    finally:
        servers.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", default="1,2,3")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4, help="simulated workers per process")
    parser.add_argument("--profiles", type=int, default=200)
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--host-concurrency", type=int, default=8)
    parser.add_argument("--queued", type=int, default=2000, help="requests seeded")
    parser.add_argument(
        "--per-primary", type=int, default=PER_PRIMARY, help="buckets per primary (the default's)"
    )
    parser.add_argument("--idle", type=float, default=0.0, metavar="SECONDS")
    args = parser.parse_args()
    if args.idle:
        idle(args.idle)
        return
    print(
        f"{args.procs} processes x {args.workers} simulated workers, {args.seconds:g} s, "
        f"{args.profiles} profiles, {args.hosts} hosts (slots {args.host_concurrency})"
    )
    first = first_net = None
    for nodes in (int(n) for n in args.shards.split(",")):
        row = run(nodes, args)
        first = first or row["capacity"]
        first_net = first_net or row["net_capacity"]
        print(
            f"shards {nodes} ({row['buckets']} buckets, {row['buckets_per_node']} per node): "
            f"{row['pages_per_s']:.0f} pages/s wall, {row['calls_per_page']:.2f} script calls "
            f"per page, pages per bucket {row['acked_per_bucket']}; Redis CPU s per node "
            f"{[round(c, 2) for c in row['cpu_s']]} (idle: "
            f"{[round(r * 1000, 1) for r in row['idle_cpu_per_s']]} ms/s), µs per page "
            f"{row['cpu_us_per_page']}, without the idle cost {row['net_us_per_page']}; "
            f"capacity {row['capacity']:.0f} pages per busiest-shard CPU second "
            f"({row['capacity'] / first:.2f}x one shard), without the idle cost "
            f"{row['net_capacity']:.0f} ({row['net_capacity'] / first_net:.2f}x)",
            flush=True,
        )


if __name__ == "__main__":
    main()
