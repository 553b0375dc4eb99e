"""What the durable JOBDIR costs per request (not run by the tests).

    python benchmarks/jobdir_cost.py [--requests 3000] [--repeat 3] [--crawl 300]

1. The scheduler path alone, in this process: Scrapy's scheduler with the
   add-on's ``IdentityAwarePriorityQueue``, driven as a crawl drives it (each
   request handed out, held by the engine, finished; its callback schedules one
   new request and two duplicates; requests spread over three identities and
   carry ``cdp`` and ``cdp_actions`` meta). Compared: no JOBDIR (memory),
   Scrapy's own JOBDIR (pickle files, buffered ``requests.seen``), the durable
   JOBDIR (SQLite, ``synchronous=NORMAL``) and with ``CDP_POOL_JOBDIR_FSYNC``
   (an fsync per commit). Printed: CPU and wall microseconds per request
   (best of ``--repeat``), commits per request.
2. With ``--crawl N``: ``scrapy crawl jobsite`` of N pages of the test site on
   the embedded Lightpanda (tests/jobdir_project), ``--repeat`` times per mode,
   interleaved, printing the median wall milliseconds per page and CPU
   milliseconds per page of the crawl's process tree (crawler and Lightpanda).
   The machine is shared: read these as orders of magnitude.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import scrapy  # noqa: E402
from scrapy.utils.misc import load_object  # noqa: E402
from scrapy.utils.reactor import install_reactor  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

from scrapy_cdp_pool import Addon  # noqa: E402
from scrapy_cdp_pool.core.runtime import runtime_of  # noqa: E402

MODES: dict[str, dict[str, Any]] = {
    "memory (no JOBDIR)": {},
    "Scrapy's JOBDIR": {"JOBDIR": True, "CDP_POOL_JOBDIR_DURABLE": False},
    "durable JOBDIR": {"JOBDIR": True},
    "durable JOBDIR + fsync": {"JOBDIR": True, "CDP_POOL_JOBDIR_FSYNC": True},
}
ACTIONS = [["wait_for_selector", "#js"], ["evaluate", "document.title"]]


class BenchSpider(scrapy.Spider):
    name = "bench"

    def parse(self, response: Any) -> None:
        pass


def request(spider: BenchSpider, n: int) -> scrapy.Request:
    meta: dict[str, Any] = {"cdp": True, "cdp_profile": f"identity-{n % 3}"}
    if n % 4 == 0:
        meta["cdp_actions"] = ACTIONS
    return scrapy.Request(f"http://127.0.0.1:8000/jobsite/{n}?tag=bench", spider.parse, meta=meta)


def scheduler_path(mode: dict[str, Any], total: int, workdir: Path) -> tuple[float, float, float]:
    """(CPU µs, wall µs, commits) per request."""
    values: dict[str, Any] = {"ADDONS": {Addon: 0}, "LOG_LEVEL": "ERROR"}
    values.update({k: v for k, v in mode.items() if k != "JOBDIR"})
    if mode.get("JOBDIR"):
        values["JOBDIR"] = tempfile.mkdtemp(dir=workdir)
    crawler = get_crawler(BenchSpider, values)
    spider = crawler._create_spider()
    crawler.spider = spider
    in_progress: set[scrapy.Request] = set()
    # The engine's slot as the plugin reads it: the requests in progress, and
    # its loop's call (a request finished wakes the engine: nothing to run here).
    nextcall = SimpleNamespace(schedule=lambda delay=0: None)
    engine_slot = SimpleNamespace(inprogress=in_progress, nextcall=nextcall)
    crawler.engine = SimpleNamespace(_slot=engine_slot)  # type: ignore[assignment]
    gates = runtime_of(crawler).gates
    scheduler = load_object(crawler.settings["SCHEDULER"]).from_crawler(crawler)
    scheduler.open(spider)
    cpu, wall = time.process_time(), time.perf_counter()
    scheduler.enqueue_request(request(spider, 0))
    scheduled, done = 1, 0
    while done < total:
        r = scheduler.next_request()
        if r is None:
            raise RuntimeError("the queue handed nothing out")
        in_progress.add(r)  # the engine downloads it, then runs its callback:
        if scheduled < total:
            scheduler.enqueue_request(request(spider, scheduled))
            scheduled += 1
        for duplicate in (0, max(0, scheduled - 2)):
            scheduler.enqueue_request(request(spider, duplicate))
        in_progress.discard(r)  # ...and is done with it
        gates.on_finished(r)
        done += 1
    scheduler.has_pending_requests()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    store = getattr(scheduler, "store", None)
    commits = store.commits if store is not None else 0
    scheduler.close("finished")
    return cpu / total * 1e6, wall / total * 1e6, commits / total


def crawl(mode: dict[str, Any], pages: int, workdir: Path, site: Any) -> tuple[float, float]:
    """(wall s, CPU s) per page of ``scrapy crawl jobsite``."""
    run = Path(tempfile.mkdtemp(dir=workdir))
    url = site.url(f"/jobsite/0?tag={run.name}&total={pages}&hubs=5")
    argv = [str(Path(sys.executable).parent / "scrapy"), "crawl", "jobsite",
            "-s", "LOG_LEVEL=ERROR", "-s", f"JOBSITE_URL={url}", "-s", "JOBSITE_HUBS=5",
            "-s", f"ITEMS_FILE={run / 'items.jsonl'}"]  # fmt: skip
    for name, value in mode.items():
        argv += ["-s", f"{name}={run / 'job' if name == 'JOBDIR' else value}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, cwd=REPO / "tests/jobdir_project", check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    items = len((run / "items.jsonl").read_text().splitlines())
    if items != pages:
        raise RuntimeError(f"{items} items of {pages} pages")
    return wall / pages, cpu / pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--crawl", type=int, default=0, metavar="PAGES")
    args = parser.parse_args()
    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        workdir = Path(tmp)
        print(f"Scheduler path, {args.requests} requests, best of {args.repeat}:")
        print(f"  {'mode':<26} {'CPU µs/req':>11} {'wall µs/req':>12} {'commits/req':>12}")
        for name, mode in MODES.items():
            runs = [scheduler_path(mode, args.requests, workdir) for _ in range(args.repeat)]
            cpu, wall, commits = min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2]
            print(f"  {name:<26} {cpu:>11.1f} {wall:>12.1f} {commits:>12.2f}")
        if args.crawl:
            from tests.servers import SiteServer

            site = SiteServer()
            try:
                results: dict[str, list[tuple[float, float]]] = {name: [] for name in MODES}
                for _ in range(args.repeat):  # modes interleaved: the load varies
                    for name, mode in MODES.items():
                        results[name].append(crawl(mode, args.crawl, workdir, site))
                print(f"\nscrapy crawl jobsite, {args.crawl} pages, embedded Lightpanda, "
                      f"median of {args.repeat}:")  # fmt: skip
                print(f"  {'mode':<26} {'wall ms/page':>13} {'CPU ms/page':>12}")
                for name, runs in results.items():
                    wall = statistics.median(r[0] for r in runs)
                    cpu = statistics.median(r[1] for r in runs)
                    print(f"  {name:<26} {wall * 1e3:>13.2f} {cpu * 1e3:>12.2f}")
            finally:
                site.stop()


if __name__ == "__main__":
    main()
