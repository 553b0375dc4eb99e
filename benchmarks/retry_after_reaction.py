"""The crawler's own reaction to a 429 with ``Retry-After`` (not run by the tests).

    python benchmarks/retry_after_reaction.py [--backends lightpanda,chromium]
        [--requests 80] [--every 4] [--load N] [--stage response|middleware] [--cluster]

A real crawl per backend (``CONCURRENT_REQUESTS = 16``, the add-on's defaults
otherwise; retries off, so that each request reaches the site once) of
``--requests`` pages of the test site's ``/storm`` (every ``--every``-th
request answered 429 with ``Retry-After: 1``), each crawl in its own process.
Measured, on one clock (``time.monotonic()``, system-wide on Linux):

- **reaction**: from the moment the render path received the 429 (the
  ``received_at`` of its main document, taken where the browser's response
  stage is handled, before anything else is done with it) to the moment
  the host's pause is set (``HostPauseMiddleware.pause`` returned), per 429;
- **site to crawler**: from the 429's arrival at the site to its receipt by
  the render path (the site's answer, the browser, CDP), per 429;
- **in before the pause**: arrivals of the host at the site after the 429's
  own arrival and before its pause was set (site's clock), per 429;
- **in after the pause**: arrivals inside the window the site announced after
  the pause was set, and of those the navigations that *started* (``Page.navigate``
  called) after the 429 was received: the invariant says none; the others
  were on their way already.

``--stage middleware``: the pause is set only where Scrapy's downloader
middleware sees the response (the handler's report is turned off), as before
the pause moved to the response stage: the "before" figures.

``--cluster``: the crawl is one worker of a cluster crawl on a real
``redis-server`` (on a Unix socket, started and stopped here): the pause is
written to Redis before it is set, and that round trip is in the reaction.

``--load N``: ``N`` CPU hog processes run meanwhile (started and stopped by
this script, by PID). Prints median, p95 and max per backend, in ms.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def child(backend: str, url: str, requests: int, stage: str, redis_url: str) -> None:
    """One crawl, instrumented; prints one JSON line of 429 records."""
    import scrapy
    from scrapy.crawler import CrawlerProcess

    from scrapy_cdp_pool.render._page.document import DocumentResponse, DocumentTracker
    from scrapy_cdp_pool.render._page.page import Page
    from scrapy_cdp_pool.resilience.host_pause import HostPauseMiddleware
    from tests.crawl import BASE_SETTINGS, RecordingSpider

    received: defaultdict[str, deque[tuple[float, str]]] = defaultdict(deque)
    records: list[dict[str, Any]] = []
    navigations: dict[str, float] = {}  # URL -> when its navigation started
    on_document = DocumentTracker.on_document
    navigate = Page.navigate

    async def spy_navigate(page: Page, timeout_s: float) -> None:
        navigations[page.spec.url] = time.monotonic()
        await navigate(page, timeout_s)

    pause = HostPauseMiddleware.pause

    def spy_document(tracker: DocumentTracker, document: DocumentResponse) -> None:
        if document.status == 429:
            host = document.url.split("/")[2].split(":")[0]
            received[host].append((document.received_at, document.url))
        on_document(tracker, document)

    def spy_pause(
        mw: HostPauseMiddleware, host: str, seconds: float, status: int, header: bytes | None
    ) -> None:
        pause(mw, host, seconds, status, header)
        paused_at = time.monotonic()
        if received[host]:
            received_at, from_url = received[host].popleft()
            records.append({"received": received_at, "paused": paused_at, "url": from_url})

    Page.navigate = spy_navigate  # type: ignore[method-assign]
    DocumentTracker.on_document = spy_document  # type: ignore[method-assign]
    HostPauseMiddleware.pause = spy_pause  # type: ignore[method-assign]
    if stage == "middleware":
        HostPauseMiddleware.observe = lambda *args, **kwargs: None  # type: ignore[method-assign]
    settings = {
        **BASE_SETTINGS,
        "LOG_LEVEL": "WARNING",
        "CDP_POOL_BROWSER": backend,
        "CONCURRENT_REQUESTS": 16,
        "DOWNLOAD_TIMEOUT": 60,
        "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 30,
    }
    settings.pop("CDP_POOL_CONNECTIONS")  # the default
    if redis_url:
        settings["CDP_POOL_CLUSTER_REDIS_URL"] = redis_url
        settings["CDP_POOL_CLUSTER_NAME"] = f"reaction-{uuid.uuid4().hex[:8]}"
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(RecordingSpider)
    pages = [scrapy.Request(f"{url}{i}", meta={"cdp": True}) for i in range(requests)]
    process.crawl(crawler, requests=pages)
    process.start()
    print(json.dumps({"pauses": records, "navigations": navigations}), flush=True)


def _figures(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered):.3f} / {p95:.3f} / {ordered[-1]:.3f}"


def run(backend: str, args: argparse.Namespace, base: str, redis_url: str) -> None:
    key = uuid.uuid4().hex[:10]
    url = f"{base}/storm?key={key}&every={args.every}&after=1&i="
    crawl = subprocess.run(
        [sys.executable, __file__, "--child", backend, url, str(args.requests), args.stage,
         redis_url],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    if crawl.returncode != 0:
        print(f"{backend}: crawl failed:\n{crawl.stderr[-3000:]}")
        return
    answer_json = json.loads(crawl.stdout.splitlines()[-1])
    pauses, navigations = answer_json["pauses"], answer_json["navigations"]
    with urllib.request.urlopen(f"{base}/fault-records?key={key}", timeout=10) as answer:
        seen = json.loads(answer.read())
    by_label = dict(zip(seen["labels"], seen["arrivals"], strict=True))
    sent_at = {label: navigations.get(f"{url}{label}") for label in seen["labels"]}
    windows = {start: end for start, end in seen["windows"]}
    reactions, to_crawler, before, after, started_paused = [], [], [], [], 0
    for record in pauses:
        label = record["url"].rsplit("i=", 1)[1]
        start = by_label.get(label)
        if start not in windows:
            continue
        end, paused = windows[start], record["paused"]
        reactions.append((paused - record["received"]) * 1000)
        to_crawler.append((record["received"] - start) * 1000)
        before.append(sum(1 for t in seen["arrivals"] if start < t < paused))
        after.append(sum(1 for t in seen["arrivals"] if paused <= t < end))
        received = record["received"]
        started_paused += sum(1 for t in sent_at.values() if t is not None and received < t < end)
    print(
        f"{backend:<10} stage={args.stage:<10} load={args.load} cluster={args.cluster}  "
        f"429s={len(reactions)}  "
        f"reaction ms (median / p95 / max): {_figures(reactions)}  "
        f"site to crawler ms: {_figures(to_crawler)}  "
        f"in before the pause: {sum(before)} (max {max(before, default=0)} per 429)  "
        f"in after the pause: {sum(after)} (navigations started after the 429 was "
        f"received, inside its window: {started_paused})"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="lightpanda,chromium")
    parser.add_argument("--requests", type=int, default=80)
    parser.add_argument("--every", type=int, default=4)
    parser.add_argument("--load", type=int, default=0, help="CPU hog processes meanwhile")
    parser.add_argument("--stage", choices=["response", "middleware"], default="response")
    parser.add_argument("--cluster", action="store_true", help="one worker of a cluster crawl")
    args = parser.parse_args()
    from tests.redis_server import RedisServer
    from tests.servers import SiteServer

    site = SiteServer()
    redis_server = RedisServer() if args.cluster else None
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    try:
        for backend in args.backends.split(","):
            run(backend, args, site.base, redis_server.url if redis_server else "")
    finally:
        for hog in hogs:
            os.kill(hog.pid, signal.SIGKILL)
            hog.wait()
        site.stop()
        if redis_server is not None:
            redis_server.stop()


if __name__ == "__main__":
    main()
