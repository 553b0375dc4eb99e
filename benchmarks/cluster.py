"""What the cluster crawl on Redis costs, and what it gives (not run by the tests).

    python benchmarks/cluster.py [--requests 3000] [--repeat 3] [--crawl 300] [--workers 1,2,3]
    python benchmarks/cluster.py --crawl-only --crawl 600 --workers 3 --repeat 1 \
        [--page-ms 300] [--concurrency 16] [--save-back] [--budget 40] [--host-concurrency 32] \
        [--idle 10]
    python benchmarks/cluster.py --scale [--sizes 10,1000,100000]

It starts its own ``redis-server`` (AOF, ``appendfsync everysec``, on a Unix
socket; ``--fsync-always`` for ``appendfsync always``) and, with ``--crawl``,
the test site.

1. The scheduler path alone, in this process: the add-on's
   ``ClusterScheduler`` driven as a crawl drives it (each request handed out,
   held by the engine, finished; its callback schedules one new request and two
   duplicates; requests spread over three identities, with ``cdp`` and
   ``cdp_actions`` meta), against the durable JOBDIR's scheduler on the same
   drive. Printed: the worker's CPU and wall µs per request, Redis round trips
   per request (counted by the client), Redis commands run per request and
   Redis's own CPU µs per request (``INFO commandstats``, ``INFO cpu``).
2. Memory in Redis: per queued request (those of step 1, pickled
   ``Request.to_dict()`` with their sub-queue and index entries) and per
   fingerprint of the dupefilter (``INFO memory`` ``used_memory``, before and
   after ``--requests`` of each).
3. Time to reclaim a dead worker's leases: a worker takes 20 requests with a
   2 s lease and stops (as if SIGKILLed); another polls every 10 ms: seconds
   from the last renewal until it has taken all 20 again (the lease, plus the
   lag of the reclaim, which runs in the take).
4. With ``--crawl N``: ``scrapy crawl jobsite`` of N pages of the test site
   (tests/jobdir_project, embedded Lightpanda, 12 identities) with 1, 2, 3
   workers on one Redis, against one process with the durable JOBDIR; modes
   interleaved, ``--repeat`` times, medians. Printed: pages/s from the first
   item to the last (start-up left out) and over the whole run, CPU ms per
   page of every process (workers, their Lightpanda, Redis), and Redis's
   commands and CPU µs per page (every call of the workers: the scheduler's,
   the download handler's pause and lease checks, profile reads, renewals,
   polls). ``--crawl-only`` runs this step alone, the cluster only; with
   ``--page-ms`` each page with a profile is held that long by the site (the
   12 profiles then contend: each worker's ``--concurrency`` requests wait for
   them), ``--save-back`` saves each profile's state back after its page,
   ``--budget`` / ``--host-concurrency`` turn on the fleet budget and the
   fleet-wide host slots. Printed too, over the whole crawl, waiting and
   start-up included: script calls per page (``EVALSHA``/``EVAL``), round
   trips per page (Redis's ``total_reads_processed``: one per request or
   pipeline a client sends, whichever client) and the commands that cost most.
   With ``--idle S``: then one worker with ``CDP_POOL_CLUSTER_KEEP_OPEN`` and
   nothing to do: its Redis calls (round trips) per second over S seconds.
5. With ``--scale`` (instead of 1-4): how the Redis cost per request grows
   with the requests queued, the identities and the hosts, at each of
   ``--sizes`` (``benchmarks/cluster_scale.py`` says how).

On a 2-core machine the CPU bounds it: each worker's Scrapy, each worker's
Lightpanda and Redis share 2 cores, so more workers add CPU per page (each
has its own engine, browser and reactor), not pages/s; the figure to read
there is CPU per page and where it goes. The machine is shared: rerun in a
quiet window, read these as orders of magnitude.
"""

from __future__ import annotations

import argparse
import os
import queue
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
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
from scrapy_cdp_pool.cluster.frontier import Frontier  # noqa: E402
from scrapy_cdp_pool.cluster.keys import gate_of, key_prefix  # noqa: E402
from scrapy_cdp_pool.cluster.redis_client import connect  # noqa: E402
from scrapy_cdp_pool.core.runtime import runtime_of  # noqa: E402
from tests.cluster_harness import RedisServer  # noqa: E402

ACTIONS = [["wait_for_selector", "#js"], ["evaluate", "document.title"]]
PROJECT = REPO / "tests/jobdir_project"
SCRAPY = Path(sys.executable).parent / "scrapy"
IDENTITIES = 12


class BenchSpider(scrapy.Spider):
    name = "bench"

    def parse(self, response: Any) -> None:
        pass


def request(spider: BenchSpider, n: int) -> scrapy.Request:
    meta: dict[str, Any] = {"cdp": True, "cdp_profile": f"identity-{n % 3}"}
    if n % 4 == 0:
        meta["cdp_actions"] = ACTIONS
    return scrapy.Request(f"http://127.0.0.1:8000/jobsite/{n}?tag=bench", spider.parse, meta=meta)


SCRIPT_COMMANDS = ("cmdstat_evalsha", "cmdstat_eval", "cmdstat_evalsha_ro", "cmdstat_eval_ro")


def redis_info(server: RedisServer) -> dict[str, float]:
    """Redis's counters: commands run (those inside scripts too), script
    calls, reads (round trips: one per request or pipeline received), CPU s,
    memory; ``cmd:<name>`` the calls of each command."""
    with server.client() as client:
        info = client.info("all")
    commands = {k: v for k, v in info.items() if k.startswith("cmdstat_")}
    counts: dict[str, float] = {
        "calls": sum(v["calls"] for v in commands.values()),
        "scripts": sum(commands[k]["calls"] for k in SCRIPT_COMMANDS if k in commands),
        "reads": info["total_reads_processed"],
        "cpu": info["used_cpu_user"] + info["used_cpu_sys"],
        "memory": info["used_memory"],
    }
    counts.update({f"cmd:{k[len('cmdstat_') :]}": v["calls"] for k, v in commands.items()})
    counts.update({f"usec:{k[len('cmdstat_') :]}": v["usec"] for k, v in commands.items()})
    return counts


def scheduler_path(
    settings: dict[str, Any], total: int, server: RedisServer | None
) -> dict[str, float]:
    values: dict[str, Any] = {"ADDONS": {Addon: 0}, "LOG_LEVEL": "ERROR", **settings}
    crawler = get_crawler(BenchSpider, values)
    spider = crawler._create_spider()
    crawler.spider = spider
    in_progress: set[scrapy.Request] = set()
    nextcall = SimpleNamespace(schedule=lambda: None)  # the engine loop: nothing to wake
    slot = SimpleNamespace(inprogress=in_progress, nextcall=nextcall)
    crawler.engine = SimpleNamespace(_slot=slot)  # type: ignore[assignment]
    gates = runtime_of(crawler).gates
    scheduler = load_object(crawler.settings["SCHEDULER"]).from_crawler(crawler)
    scheduler.open(spider)
    before = redis_info(server) if server else None
    cpu, wall = time.process_time(), time.perf_counter()
    scheduler.enqueue_request(request(spider, 0))
    scheduled, done = 1, 0
    while done < total:
        r = scheduler.next_request()
        if r is None:
            raise RuntimeError("the scheduler handed nothing out")
        in_progress.add(r)  # the engine downloads it, then runs its callback:
        if scheduled < total:
            scheduler.enqueue_request(request(spider, scheduled))
            scheduled += 1
        for duplicate in (0, max(0, scheduled - 2)):
            scheduler.enqueue_request(request(spider, duplicate))
        gates.on_finished(r)  # the download is over
        in_progress.discard(r)  # ...and the engine is done with it
        done += 1
    scheduler.has_pending_requests()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    result = {"cpu_us": cpu / total * 1e6, "wall_us": wall / total * 1e6}
    if server is not None and before is not None:
        after = redis_info(server)
        result["round_trips"] = scheduler.frontier.calls / total
        result["redis_calls"] = (after["calls"] - before["calls"]) / total
        result["redis_cpu_us"] = (after["cpu"] - before["cpu"]) / total * 1e6
    scheduler.close("finished")
    return result


def memory(server: RedisServer, total: int) -> tuple[float, float]:
    """Bytes in Redis per queued request, per fingerprint."""
    crawler = get_crawler(BenchSpider, {"LOG_LEVEL": "ERROR"})
    spider = crawler._create_spider()
    from scrapy_cdp_pool.jobdir.queues import serialize

    client = connect(server.url, 10)
    frontier = Frontier(client, "memory-bench", "w", lease_s=30)
    start = redis_info(server)["memory"]
    for n in range(total):
        r = request(spider, n)
        frontier.push(serialize(r, spider), gate_of("127.0.0.1", r.meta["cdp_profile"]), 0)
    queued = redis_info(server)["memory"]
    client.delete(*client.keys(f"{key_prefix('memory-bench')}*"))
    start_fp = redis_info(server)["memory"]
    fingerprinter = crawler.request_fingerprinter
    with client.pipeline(transaction=False) as pipe:
        for n in range(total):
            pipe.sadd(
                f"{key_prefix('memory-bench')}seen", fingerprinter.fingerprint(request(spider, n))
            )
        pipe.execute()
    fingerprints = redis_info(server)["memory"]
    client.delete(*client.keys(f"{key_prefix('memory-bench')}*"))
    client.close()
    return (queued - start) / total, (fingerprints - start_fp) / total


def reclaim(server: RedisServer, lease_s: float = 2.0, count: int = 20) -> float:
    """Seconds from a dead worker's last renewal until its requests are all taken again."""
    client = connect(server.url, 10)
    name = f"reclaim-{time.time_ns()}"
    dead = Frontier(client, name, "dead", lease_s=lease_s)
    alive = Frontier(client, name, "alive", lease_s=lease_s)
    for n in range(count):
        dead.push(b"r%d" % n, gate_of("h", f"i{n}"), 0)
    held = [dead.take().lease for _ in range(count)]
    died = time.monotonic()
    dead.renew([lease for lease in held if lease])  # its last renewal
    retaken = 0
    while retaken < count:
        taken = alive.take()
        if taken.lease is None:
            time.sleep(0.01)
        else:
            retaken += 1
    elapsed = time.monotonic() - died
    client.delete(*client.keys(f"{key_prefix(name)}*"))
    client.close()
    return elapsed


def write_profiles(directory: Path, tag: str) -> list[str]:
    from tests.profiles import write_profile

    names = [f"id{i}-{tag}" for i in range(IDENTITIES)]
    for name in names:
        write_profile(directory, name, session=f"s-{name}")
    return names


def crawl(mode: str, workers: int, pages: int, workdir: Path, site: Any, server: RedisServer,
          options: dict[str, str] | None = None, page_ms: int = 0) -> dict[str, float]:  # fmt: skip
    """One crawl of ``pages``: pages/s (steady, whole run), CPU ms per page;
    Redis's commands, script calls, round trips and CPU per page. ``options``:
    more settings of every worker; ``page_ms``: the site holds each page with
    a profile that long."""
    run = Path(tempfile.mkdtemp(dir=workdir))
    profiles = run / "profiles"
    profiles.mkdir()
    names = write_profiles(profiles, run.name)
    held = f"&ms={page_ms}" if page_ms else ""
    url = site.url(f"/jobsite/0?tag={run.name}&total={pages}&hubs=5{held}")
    settings = {
        "LOG_LEVEL": "ERROR", "JOBSITE_URL": url, "JOBSITE_HUBS": "5",
        "PROFILES": ",".join(names), "CDP_POOL_PROFILES_DIR": str(profiles), **(options or {}),
    }  # fmt: skip
    if mode == "cluster":
        settings.update(CDP_POOL_CLUSTER_REDIS_URL=server.url, CDP_POOL_CLUSTER_NAME=run.name)
    else:
        settings["JOBDIR"] = str(run / "job")
    lines: queue.Queue[float] = queue.Queue()
    procs = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    redis_before = redis_info(server)
    started = time.perf_counter()
    for i in range(workers):
        argv = [str(SCRAPY), "crawl", "jobsite", "-s", f"ITEMS_FILE={run / f'items-{i}.jsonl'}"]
        for name, value in settings.items():
            argv += ["-s", f"{name}={value}"]
        proc = subprocess.Popen(argv, cwd=PROJECT, stdout=subprocess.PIPE, text=True)
        procs.append(proc)

        def read(proc: subprocess.Popen[str] = proc) -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith("ITEM "):
                    lines.put(time.perf_counter())

        threading.Thread(target=read, daemon=True).start()
    for proc in procs:
        if proc.wait() != 0:
            raise RuntimeError(f"a worker exited with {proc.returncode}")
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    redis_after = redis_info(server)
    redis_cpu = redis_after["cpu"] - redis_before["cpu"]
    cpu += redis_cpu if mode == "cluster" else 0.0
    times = sorted(lines.queue)
    items = sum(len((run / f"items-{i}.jsonl").read_text().splitlines()) for i in range(workers))
    if items < pages:
        raise RuntimeError(f"{items} items of {pages} pages")
    per_page = {
        f"{key}_page": (redis_after[key] - redis_before.get(key, 0)) / pages
        for key in redis_after
        if key.startswith(("cmd:", "usec:"))
    }
    return {
        "steady_pages_s": (len(times) - 1) / (times[-1] - times[0]),
        "pages_s": pages / wall,
        "wall_s": wall,
        "cpu_ms_page": cpu / pages * 1e3,
        "redis_calls_page": (redis_after["calls"] - redis_before["calls"]) / pages,
        "redis_scripts_page": (redis_after["scripts"] - redis_before["scripts"]) / pages,
        "redis_round_trips_page": (redis_after["reads"] - redis_before["reads"]) / pages,
        "redis_cpu_us_page": redis_cpu / pages * 1e6,
        **per_page,
    }


def idle_worker(workdir: Path, site: Any, server: RedisServer, seconds: float,
                options: dict[str, str]) -> dict[str, float]:  # fmt: skip
    """One worker with ``CDP_POOL_CLUSTER_KEEP_OPEN`` whose crawl has nothing
    left (one page, done): Redis round trips and commands per second over
    ``seconds``, from 3 s after its page."""
    run = Path(tempfile.mkdtemp(dir=workdir))
    url = site.url(f"/jobsite/0?tag={run.name}&total=1&hubs=1")
    settings = {
        "LOG_LEVEL": "ERROR", "JOBSITE_URL": url, "JOBSITE_HUBS": "1",
        "CDP_POOL_CLUSTER_REDIS_URL": server.url, "CDP_POOL_CLUSTER_NAME": run.name,
        "CDP_POOL_CLUSTER_KEEP_OPEN": "True", **options,
    }  # fmt: skip
    argv = [str(SCRAPY), "crawl", "jobsite", "-s", f"ITEMS_FILE={run / 'items.jsonl'}"]
    for name, value in settings.items():
        argv += ["-s", f"{name}={value}"]
    proc = subprocess.Popen(argv, cwd=PROJECT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("ITEM "):
                break
        time.sleep(3.0)  # its last page's follow-ups (a 404) and acknowledgement
        before = redis_info(server)
        time.sleep(seconds)
        after = redis_info(server)
    finally:
        proc.send_signal(2)
        proc.wait(timeout=60)
    return {
        "round_trips_s": (after["reads"] - before["reads"] - 1) / seconds,  # less our INFO
        "commands_s": (after["calls"] - before["calls"] - 1) / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--crawl", type=int, default=0, metavar="PAGES")
    parser.add_argument("--workers", default="1,2,3")
    parser.add_argument("--fsync-always", action="store_true")
    parser.add_argument("--scale", action="store_true")
    parser.add_argument("--sizes", default="10,1000,100000")
    parser.add_argument("--crawl-only", action="store_true")
    parser.add_argument("--page-ms", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=0)
    parser.add_argument("--save-back", action="store_true")
    parser.add_argument("--budget", type=int, default=0)
    parser.add_argument("--host-concurrency", type=int, default=0)
    parser.add_argument("--idle", type=float, default=0.0, metavar="SECONDS")
    args = parser.parse_args()
    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    server = RedisServer(appendfsync="always" if args.fsync_always else "everysec")
    if args.scale:
        from benchmarks.cluster_scale import run

        try:
            run(server.url, tuple(int(n) for n in args.sizes.split(",")))
        finally:
            server.stop()
        return
    if args.crawl_only:
        try:
            crawl_only(args, server)
        finally:
            server.stop()
        return
    try:
        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
            workdir = Path(tmp)
            modes: dict[str, tuple[dict[str, Any], RedisServer | None]] = {
                "cluster (Redis)": (
                    {"CDP_POOL_CLUSTER_REDIS_URL": server.url, "CDP_POOL_CLUSTER_NAME": "bench"},
                    server,
                ),
                "durable JOBDIR": ({"JOBDIR": str(workdir / "job")}, None),
            }
            print(f"Scheduler path, {args.requests} requests, best of {args.repeat} "
                  f"(appendfsync {'always' if args.fsync_always else 'everysec'}):")  # fmt: skip
            print(f"  {'mode':<18} {'CPU µs/req':>10} {'wall µs/req':>11} {'round trips':>11} "
                  f"{'Redis cmds':>10} {'Redis CPU µs':>12}")  # fmt: skip
            for name, (settings, redis_server) in modes.items():
                runs = []
                for i in range(args.repeat):
                    run_settings = dict(settings)
                    if "JOBDIR" in run_settings:
                        run_settings["JOBDIR"] = tempfile.mkdtemp(dir=workdir)
                    else:
                        run_settings["CDP_POOL_CLUSTER_NAME"] = f"bench-{i}-{time.time_ns()}"
                    runs.append(scheduler_path(run_settings, args.requests, redis_server))
                best = {key: min(r[key] for r in runs) for key in runs[0]}
                extra = (
                    f"{best['round_trips']:>11.2f} {best['redis_calls']:>10.1f} "
                    f"{best['redis_cpu_us']:>12.1f}"
                    if "round_trips" in best
                    else ""
                )
                print(f"  {name:<18} {best['cpu_us']:>10.1f} {best['wall_us']:>11.1f} {extra}")
            per_request, per_fingerprint = memory(server, args.requests)
            print(f"\nRedis memory: {per_request:.0f} bytes per queued request, "
                  f"{per_fingerprint:.0f} bytes per fingerprint")  # fmt: skip
            times = [reclaim(server) for _ in range(args.repeat)]
            print(f"Reclaim of a dead worker's 20 leases (lease 2 s): "
                  f"{statistics.median(times):.2f} s median of {args.repeat}")  # fmt: skip
            if args.crawl:
                from tests.servers import SiteServer

                site = SiteServer()
                counts = [int(n) for n in args.workers.split(",")]
                configs = [("cluster", n) for n in counts] + [("jobdir", 1)]
                results: dict[tuple[str, int], list[dict[str, float]]] = {c: [] for c in configs}
                try:
                    for _ in range(args.repeat):  # interleaved: the load varies
                        for mode, workers in configs:
                            results[(mode, workers)].append(
                                crawl(mode, workers, args.crawl, workdir, site, server)
                            )
                finally:
                    site.stop()
                print(f"\nscrapy crawl jobsite, {args.crawl} pages, {IDENTITIES} identities, "
                      f"embedded Lightpanda, median of {args.repeat}:")  # fmt: skip
                print(f"  {'mode':<26} {'pages/s steady':>14} {'pages/s run':>12} "
                      f"{'CPU ms/page':>12} {'Redis cmds/page':>15} "
                      f"{'Redis CPU µs/page':>17}")  # fmt: skip
                for (mode, workers), runs in results.items():
                    label = (
                        f"cluster, {workers} worker(s)" if mode == "cluster" else "durable JOBDIR"
                    )
                    med = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
                    redis = (
                        f"{med['redis_calls_page']:>15.1f} {med['redis_cpu_us_page']:>17.1f}"
                        if mode == "cluster"
                        else ""
                    )
                    print(f"  {label:<26} {med['steady_pages_s']:>14.1f} {med['pages_s']:>12.1f} "
                          f"{med['cpu_ms_page']:>12.2f} {redis}")  # fmt: skip
    finally:
        server.stop()


def crawl_only(args: argparse.Namespace, server: RedisServer) -> None:
    """``--crawl-only``: the cluster's whole crawl, ``--workers`` at once."""
    from tests.servers import SiteServer

    options: dict[str, str] = {}
    if args.concurrency:
        options.update(CONCURRENT_REQUESTS=str(args.concurrency),
                       CONCURRENT_REQUESTS_PER_DOMAIN=str(args.concurrency))  # fmt: skip
    if args.save_back:
        options["CDP_POOL_PROFILE_SAVE_STATE"] = "True"
    if args.budget:
        options["CDP_POOL_CLUSTER_BUDGET_MAX"] = str(args.budget)
    if args.host_concurrency:
        options["CDP_POOL_HOST_CONCURRENCY"] = str(args.host_concurrency)
    site = SiteServer()
    try:
        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
            workdir = Path(tmp)
            for workers in (int(n) for n in args.workers.split(",") if args.crawl):
                runs = [
                    crawl(
                        "cluster", workers, args.crawl, workdir, site, server, options, args.page_ms
                    )
                    for _ in range(args.repeat)
                ]
                med = {key: statistics.median(r.get(key, 0.0) for r in runs) for key in runs[0]}
                print(f"cluster, {workers} worker(s), {args.crawl} pages, {IDENTITIES} profiles, "
                      f"{options or 'defaults'}, pages held {args.page_ms} ms, median of "
                      f"{args.repeat}: {med['wall_s']:.1f} s, "
                      f"{med['pages_s']:.1f} pages/s")  # fmt: skip
                print(f"  per page: Redis CPU {med['redis_cpu_us_page']:.0f} µs, round trips "
                      f"{med['redis_round_trips_page']:.2f}, script calls "
                      f"{med['redis_scripts_page']:.2f}, commands (inside scripts too) "
                      f"{med['redis_calls_page']:.1f}; CPU of every process "
                      f"{med['cpu_ms_page']:.1f} ms")  # fmt: skip
                top = sorted(
                    ((k[4:-5], v) for k, v in med.items() if k.startswith("cmd:")),
                    key=lambda kv: -kv[1],
                )[:10]
                print("  commands per page: " + ", ".join(f"{k} {v:.2f}" for k, v in top))
                top = sorted(
                    ((k[5:-5], v) for k, v in med.items() if k.startswith("usec:")),
                    key=lambda kv: -kv[1],
                )[:6]
                print("  Redis µs per page in commands (scripts: with the commands they run): "
                      + ", ".join(f"{k} {v:.0f}" for k, v in top))  # fmt: skip
            if args.idle:
                idle = idle_worker(workdir, site, server, args.idle, options)
                print(f"an idle worker (KEEP_OPEN, nothing queued) over {args.idle:g} s: "
                      f"{idle['round_trips_s']:.2f} round trips/s, "
                      f"{idle['commands_s']:.1f} commands/s")  # fmt: skip
    finally:
        site.stop()


if __name__ == "__main__":
    main()
