"""Helpers for the tests of the cluster's shared profiles, fleet budget and
metrics; ``python -m tests.cluster_ops save|load ...`` is a second worker
process.

:func:`take_identity` stands for the frontier's take (issue 16, item 2, built
beside this): it writes the identity lock the agreed way (hash
``P identity:{name}`` with ``owner`` and ``token`` from ``INCR P fence``, a
``PEXPIRE`` lease), which is all the save-back's fencing reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from redis import Redis

from scrapy_cdp_pool.cluster.held import LEASE_META_KEY, SURE_HELD
from scrapy_cdp_pool.cluster.ops_keys import key_prefix
from scrapy_cdp_pool.cluster.profile_store import SharedProfiles, StaleProfileWrite

ROOT = Path(__file__).resolve().parent.parent
PREFIX = key_prefix("test")


def take_identity(client: Redis, name: str, owner: str, lease_ms: int = 30_000) -> int:
    """Lock identity ``name`` for ``owner``; returns the fencing token."""
    token = int(client.incr(f"{PREFIX}fence"))
    key = f"{PREFIX}identity:{name}"
    client.hset(key, mapping={"owner": owner, "token": token})
    client.pexpire(key, lease_ms)
    return token


def run_worker(url: str, *args: str) -> dict[str, Any]:
    """Run ``python -m tests.cluster_ops ARGS`` (another process); its JSON answer."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.cluster_ops", url, *args],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def main(argv: list[str]) -> None:
    url, command, name = argv[:3]
    client = Redis.from_url(url)
    shared = SharedProfiles(client, PREFIX, owner=f"worker-{command}")
    if command == "save":  # save NAME TOKEN STATE_JSON
        try:
            shared.save_state(name, json.loads(argv[4]), token=int(argv[3]))
        except StaleProfileWrite as e:
            print(json.dumps({"refused": e.problem, "current": e.current}))
            return
        print(json.dumps({"saved": shared.stored_version(name)}))
    elif command == "load":  # load NAME
        profile = shared.load(name)
        print(json.dumps({"state": profile.storage_state, "identity": profile.identity}))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])


class StealIdentityMiddleware:
    """Test downloader middleware (order 968: after the cluster's take and the
    shared-profile hook, before the render): for a request with
    ``meta["steal_identity"]``, another worker takes its identity now, as if
    this worker's lease had run out while the request was in flight."""

    def __init__(self, url: str, crawler: Any = None) -> None:
        self.client = Redis.from_url(url)
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Any) -> StealIdentityMiddleware:
        return cls(crawler.settings["CDP_POOL_CLUSTER_REDIS_URL"], crawler)

    def process_request(self, request: Any) -> None:
        if request.meta.get("steal_identity"):
            held = self.crawler.engine.scheduler.held
            # the other worker's lock lasts a lease of this crawl's, as its own would
            lease_ms = int(held.link.lease_s * 1000)
            take_identity(self.client, request.meta["cdp_profile"], "another-worker", lease_ms)
            # a lease runs out only after its time: the worker's own clock says
            # its take is half a lease old at least (else it knows it holds
            # the lease without asking Redis: cluster/held.py SURE_HELD)
            lease = request.meta.get(LEASE_META_KEY)
            if lease in held._renewed:
                held._renewed[lease] -= held.link.lease_s * SURE_HELD
