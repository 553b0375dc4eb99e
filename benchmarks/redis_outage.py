"""A Redis outage longer than the lease, over a whole multi-worker crawl (issue 39 item 3).

    python benchmarks/redis_outage.py [--stop 30] [--lease 10] [--workers 3] [--pages 300]

``--workers`` ``scrapy crawl jobsite`` cluster workers (tests/jobdir_project: embedded Lightpanda,
every page rendered, leaves sent as 12 stored profiles) share a crawl of ``--pages`` pages of the
test site on a real ``redis-server`` (AOF, ``appendfsync always``). Once the workers have written
40 items, Redis is stopped (SIGSTOP by its PID: its socket open, nothing answered) for ``--stop``
seconds, then continued; the workers finish by themselves.

Printed per run: pages lost (never served by the site), pages the site served twice (page 0, the
start request every worker sends with ``dont_filter``, is expected twice and not counted), the
``RequestPoisoned`` failures (``cdp_pool/cluster/poisoned``) with the pages they name that the site
served (a poisoned page that was fetched is the fault the issue names), leases lost and requests
requeued, each worker's exit status, and how long the crawl took. The issue's figures before its
fix: 1-2 pages per run failed as ``RequestPoisoned`` though fetched once, 9-11 fetched twice
(30 s stop, 10 s lease, 3 runs).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.cluster_harness import Worker, jobsite_job, wait_for_item  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402
from tests.servers import SiteServer  # noqa: E402

PROFILES = 12
HUBS = 5


def one_run(site: SiteServer, args: argparse.Namespace) -> dict[str, object]:
    directory = Path(tempfile.mkdtemp(prefix="redis-outage-"))
    job = jobsite_job(site, directory, pages=args.pages, identities=PROFILES, hubs=HUBS)
    (directory / "redis").mkdir()
    server = RedisServer(directory / "redis", appendonly=True)
    assert server.proc is not None
    settings = {
        **job.settings, "JOBSITE_URL": job.url(), "CDP_POOL_CLUSTER_NAME": f"outage-{job.tag}",
        "CDP_POOL_CLUSTER_LEASE_SECONDS": str(args.lease), "LOG_LEVEL": "INFO",
    }  # fmt: skip
    started = time.monotonic()
    workers = [Worker(directory, i, server.url, settings) for i in range(args.workers)]
    try:
        wait_for_item(workers, count=40)
        os.kill(server.proc.pid, signal.SIGSTOP)
        time.sleep(args.stop)  # the fault's length: nothing here waits on a condition
        os.kill(server.proc.pid, signal.SIGCONT)
        for worker in workers:
            worker.proc.wait(timeout=600)
            worker._close()
        took = time.monotonic() - started
        fetches = job.fetches()
        twice = sorted(n for n, count in fetches.items() if count > (2 if n == 0 else 1))
        return {
            "lost": sorted(set(range(args.pages)) - set(fetches)),
            "served twice": len(twice),
            "poisoned": sum(w.stat("cdp_pool/cluster/poisoned") for w in workers),
            "leases lost": sum(w.stat("cdp_pool/cluster/leases_lost") for w in workers),
            "requeued": sum(w.stat("cdp_pool/cluster/requeued") for w in workers),
            "exit statuses": [w.proc.returncode for w in workers],
            "tracebacks": sum(
                "Traceback" in w.log_file.read_text(errors="replace") for w in workers
            ),
            "seconds": round(took, 1),
        }
    finally:
        for worker in workers:
            if worker.proc.poll() is None:
                worker.kill()
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stop", type=float, default=30.0, help="seconds Redis is stopped")
    parser.add_argument("--lease", type=float, default=10.0, help="CDP_POOL_CLUSTER_LEASE_SECONDS")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    site = SiteServer()
    try:
        for run in range(args.runs):
            print(f"run {run + 1}: {one_run(site, args)}", flush=True)
    finally:
        site.stop()


if __name__ == "__main__":
    main()
