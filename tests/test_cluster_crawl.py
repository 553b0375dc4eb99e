"""One crawl over three workers (``scrapy crawl`` subprocesses, embedded
Lightpanda) sharing a real ``redis-server``: the test site's ``/jobsite``
(300 rendered pages, a dozen identities, links back to page 0 and the hubs as
duplicates), compared as counts: what the site served, the items written, the
peak of requests in flight per identity as the site counts it.

Each test runs its own Redis and workers, so the tests spread over xdist
workers (``xdist_group`` by test)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.cluster_harness import (
    RedisServer,
    Worker,
    all_items,
    jobsite_job,
    lease_trail,
    wait_for_item,
)
from tests.fault_records import records, storm_violations
from tests.jobdir_project.harness import EXIT_DEADLINE_S, LINE_DEADLINE_S, Job
from tests.profiles import token
from tests.servers import SiteServer

pytestmark = pytest.mark.timeout(600)
IDENTITIES = 12
PAGES = 300
HUBS = 5


def once(pages: int) -> dict[int, int]:
    """Each page once; page 0 twice: the start request is sent with dont_filter by
    each worker and stored once; as in plain Scrapy a dont_filter request leaves no
    fingerprint, so the first link back to page 0 is fetched too."""
    return {0: 2, **{n: 1 for n in range(1, pages)}}


ONCE = once(PAGES)


@pytest.fixture
def job(site: SiteServer, tmp_path: Path) -> Job:
    return jobsite_job(site, tmp_path, pages=PAGES, identities=IDENTITIES, hubs=HUBS)


def start_workers(job: Job, redis_url: str, count: int = 3, **extra: str) -> list[Worker]:
    settings = {"JOBSITE_URL": job.url(), **job.settings, **extra}
    return [Worker(job.directory, i, redis_url, settings) for i in range(count)]


def check_identities(job: Job) -> None:
    """Each identity had one request in flight at a time, across the workers."""
    inflight_max = job.site.stats()["inflight_max"]
    for name in job.settings["PROFILES"].split(","):
        assert inflight_max[f"jobsite:{job.tag}:s-{name}"] == 1, name


@pytest.mark.xdist_group("cluster-once")
def test_three_workers_fetch_every_page_once(job: Job, durable_redis_server: RedisServer) -> None:
    workers = start_workers(job, durable_redis_server.url)
    for worker in workers:
        worker.finish()
    assert job.fetches() == ONCE
    assert all_items(workers) == ONCE
    check_identities(job)
    assert sum(worker.stat("cdp_pool/cluster/taken") for worker in workers) == PAGES + 1
    # links back: 2 per leaf, 1 per hub, but the first to page 0 (fetched), plus
    # the hubs again from page 0's second fetch, plus two workers' start requests
    duplicates = (PAGES - 1 - HUBS) * 2 + HUBS - 1 + HUBS + 2
    assert sum(worker.stat("dupefilter/filtered") for worker in workers) == duplicates
    assert sum(worker.stat("cdp_pool/cluster/requeued") for worker in workers) == 0
    assert all(worker.stat("cdp_pool/cluster/taken") > 0 for worker in workers)
    with durable_redis_server.client() as client:
        keys = client.keys("cdp_pool:*")
    leftover = {key.decode().split(":", 2)[2] for key in keys}
    assert not leftover & {"req", "leases", "ready", "timed"}, leftover


@pytest.mark.xdist_group("cluster-kill")
def test_a_worker_killed_mid_crawl_loses_nothing(
    job: Job, durable_redis_server: RedisServer
) -> None:
    """Hub 2's callback holds on the worker that got it (half its links
    yielded); that worker is SIGKILLed. After its leases expire, the others do
    its requests again: every page is fetched, items repeat only for pages the
    killed worker had done."""
    workers = start_workers(
        job, durable_redis_server.url, HOLD_HUB="2", HOLD_ONCE=str(job.directory / "held"),
        CDP_POOL_CLUSTER_LEASE_SECONDS="6",
    )  # fmt: skip
    held = wait_for_item(workers, key="hold")
    held.kill()
    survivors = [worker for worker in workers if worker is not held]
    for worker in survivors:
        worker.finish()
    counts = all_items(workers)
    assert set(counts) == set(range(PAGES))  # 0 lost
    # A survivor whose own lease ran out (a reactor stalled for a lease, on a
    # loaded machine) would explain a repeat: say so first.
    assert [worker.stat("cdp_pool/cluster/leases_lost") for worker in survivors] == [0, 0]
    repeated = {n for n, count in counts.items() if count > ONCE[n]}
    assert repeated <= {item["n"] for item in held.items()}, sorted(repeated)
    assert set(job.fetches()) == set(range(PAGES))
    assert sum(worker.stat("cdp_pool/cluster/requeued") for worker in survivors) >= 1
    check_identities(job)


@pytest.mark.xdist_group("cluster-stop")
def test_a_worker_stopped_cleanly_leaves_nothing_undone_or_done_twice(
    job: Job, durable_redis_server: RedisServer
) -> None:
    """Ctrl-C on one of two workers mid-crawl: it finishes what it holds and
    gives back what it took but did not start; the other does the rest. Every
    page once, nothing requeued by a lease's expiry."""
    workers = start_workers(job, durable_redis_server.url, count=2)
    stopped = wait_for_item(workers, count=60)
    stopped.interrupt()
    (other,) = [worker for worker in workers if worker is not stopped]
    other.finish()
    assert all_items(workers) == ONCE, lease_trail(workers)
    assert job.fetches() == ONCE, lease_trail(workers)
    assert other.stat("cdp_pool/cluster/requeued") == 0, lease_trail(workers)
    check_identities(job)


@pytest.mark.xdist_group("cluster-redis-restart")
def test_a_redis_restart_with_aof_loses_nothing(
    job: Job, durable_redis_server: RedisServer
) -> None:
    """Redis (AOF, ``appendfsync always``) is SIGKILLed after the first items
    and started again on its files once a worker has found it gone (a worker
    waiting for work no longer asks Redis every few ms, so a quick restart
    could otherwise fall between two calls): the workers stop taking, back
    off, go on; every page is crawled once."""
    workers = start_workers(job, durable_redis_server.url, count=2)
    wait_for_item(workers, count=40)
    durable_redis_server.kill()
    deadline = time.monotonic() + LINE_DEADLINE_S
    while not any("cannot serve" in worker.log_file.read_text() for worker in workers):
        assert time.monotonic() < deadline, "no worker found Redis gone"
        time.sleep(0.05)
    durable_redis_server.start()
    for worker in workers:
        worker.finish()
    assert all_items(workers) == ONCE
    assert job.fetches() == ONCE
    assert sum(worker.stat("cdp_pool/cluster/redis_errors") for worker in workers) >= 1
    check_identities(job)


def start_storm(
    site: SiteServer, redis_url: str, directory: Path, requests: int, key: str
) -> tuple[str, list[Worker]]:
    """Three workers of the storm spider (``requests`` rendered requests to
    ``/storm``, every third answered 429 with ``Retry-After`` 1 or 2 s), each
    spying on its navigations and pauses; the storm's URL and the workers."""
    url = site.url(f"/storm?key={key}&every=3&after=1,2,1&i=")
    settings = {
        "STORM_URL": url, "STORM_REQUESTS": str(requests), "CDP_POOL_CLUSTER_NAME": key,
        "CONCURRENT_REQUESTS": "4", "CDP_POOL_CONNECTIONS": "2",
    }  # fmt: skip
    workers = [
        Worker(directory, i, redis_url, {**settings, "SPY_FILE": str(directory / f"spy-{i}")},
               spider="storm")
        for i in range(3)
    ]  # fmt: skip
    return url, workers


def check_storm(
    site: SiteServer, url: str, key: str, directory: Path, workers: list[Worker], requests: int
) -> None:
    """Once the worker that received a window's 429 has written its pause to
    Redis, no navigation on any worker passed its last pause check until the
    window the site announced ended; every arrival inside a window came from a
    navigation checked before that pause was known (see the test below).

    Each window is checked against its own 429's pause (the spy names the
    response's URL): a pause of another window known earlier may end first,
    and a worker that receives its 429 late cannot announce it sooner. The
    storm spider does not retry its 429s: each URL is navigated once."""
    assert sorted(all_items(workers).elements()) == list(range(requests))
    spied = [
        json.loads(line)
        for i in range(len(workers))
        for line in (directory / f"spy-{i}").read_text(encoding="utf-8").splitlines()
    ]
    navigations = {r["navigate"]: r["checked"] for r in spied if "navigate" in r}
    paused = {r["url"]: r["t"] for r in spied if "pause" in r}  # 429's URL -> pause known
    assert len(navigations) == requests
    seen = records(site, key)
    assert len(seen["arrivals"]) == requests
    assert len(seen["windows"]) == len(paused) == requests // 3
    started_inside, unexplained = storm_violations(seen, url, navigations, paused)
    said = "\n".join(
        line
        for worker in workers
        for line in worker.log_file.read_text(encoding="utf-8", errors="replace").splitlines()
        if "Redis" in line
    )
    assert not started_inside, (started_inside, said)
    assert not unexplained, (unexplained, said)
    # a 429 whose pause ends before one already running does not start or extend
    # one (cdp_pool/host_pauses counts those), so under load a few are absorbed
    assert 1 <= sum(worker.stat("cdp_pool/host_pauses") for worker in workers) <= requests // 3


@pytest.mark.xdist_group("cluster-storm")
def test_no_worker_reaches_a_host_inside_a_pause_another_announced(
    site: SiteServer, unsynced_redis_server: RedisServer, tmp_path: Path
) -> None:
    """A rate-limit storm (every third request 429 with ``Retry-After`` 1 or
    2 s) on three workers. Checked as the one-process storm test does, on one
    clock (``time.monotonic()`` is system-wide): once any worker has written a
    pause to Redis, no navigation on any worker passes its last pause check
    until the window the site announced ends; every arrival inside a window
    comes from a navigation checked before the pause was known.

    A navigation's time is when its handler's check (``remaining(host)``, one
    Redis call, right before the navigation) began: a check that began after
    the pause was written sees it. (The navigation's own start, a little later
    in another process, can fall after another worker's write on a loaded
    machine: across processes nothing is atomic but the Redis call.)

    30 requests: 10 windows of 1, 2 and 1 s in turn (before, 60: 20 windows
    of the same kinds, one after the other)."""
    requests = 30
    key = token()
    url, workers = start_storm(site, unsynced_redis_server.url, tmp_path, requests, key)
    for worker in workers:
        worker.finish()
    check_storm(site, url, key, tmp_path, workers, requests)


@pytest.mark.xdist_group("cluster-oom")
def test_redis_out_of_memory_mid_crawl_loses_nothing_and_does_nothing_twice(
    job: Job, durable_redis_server: RedisServer
) -> None:
    """Two workers; after 40 items Redis refuses every write (``maxmemory``
    below its use, ``noeviction``) until the workers have said so, then
    accepts writes again. Before (issue 31): OutOfMemoryError tracebacks,
    workers closing with ``shutdown`` at exit 0, pages lost. Now: every page
    once, each identity in flight once at a time, exit status 0, one ERROR
    naming the cause per worker that met it."""
    workers = start_workers(job, durable_redis_server.url, count=2)
    wait_for_item(workers, count=40)
    with durable_redis_server.client() as client:
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("maxmemory", 1)
        try:
            deadline = time.monotonic() + LINE_DEADLINE_S
            while not any(
                "out of memory" in text or "OutOfMemoryError" in text
                for text in (w.log_file.read_text(errors="replace") for w in workers)
            ):  # until a worker met the refusal (its log says so)
                assert time.monotonic() < deadline, [w.log() for w in workers]
                time.sleep(0.1)
        finally:
            client.config_set("maxmemory", 0)
    for worker in workers:
        worker.proc.wait(timeout=EXIT_DEADLINE_S)
        worker._close()
    counts = all_items(workers)
    lost = set(range(PAGES)) - set(counts)
    twice = {n for n, count in counts.items() if count > ONCE[n]}
    statuses = [worker.proc.returncode for worker in workers]
    logs = [worker.log_file.read_text(errors="replace") for worker in workers]
    figures = f"lost {len(lost)}, done twice {len(twice)}, exit {statuses}"
    assert (lost, twice, statuses) == (set(), set(), [0, 0]), figures
    assert job.fetches() == ONCE, figures
    check_identities(job)
    assert not [log for log in logs if "Traceback" in log], figures
    assert sum("cannot serve: out of memory" in log for log in logs) >= 1
