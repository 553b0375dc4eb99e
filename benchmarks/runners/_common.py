"""What every runner shares: arguments, the page list, validation, and the BENCH lines.

A runner prints lines `BENCH {json}` on stdout, read by the harness:
  {"event": "start"}              the measured window opens (after one warm-up page)
  {"event": "end"}                the last measured page is done
  {"event": "progress", ...}      soak only: pages done and the crawler's RSS
  {"event": "error", "message"}   something went wrong (the first error is reported)
  {"event": "result", ...}        pages, valid, ok, seconds, pages_per_s, errors
Anything else a runner or its libraries print goes to stderr, which the harness logs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

MARKERS = {
    # kind: (path template, [(substring, minimum count), ...])
    "products": ("/products?page=%d", [('class="product"', 30), ('data-rendered="30"', 1)]),
    "spa": ("/spa?id=%d", [('class="row"', 100), ('data-ready="100"', 1)]),
    "static": ("/static?id=%d", [('class="product"', 30)]),
}
# Markers a page's raw HTML (no JavaScript run) can pass: only /static's.
RAW_HTML_KINDS = ("static",)

PAGE_TIMEOUT_S = 30.0


def parser(description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--base-url", required=True, help="the benchmark site, http://127.0.0.1:P")
    ap.add_argument("--kind", choices=sorted(MARKERS), default="products")
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--endpoint", default="", help="CDP server, http://127.0.0.1:P")
    ap.add_argument("--first-page", type=int, default=1)
    ap.add_argument(
        "--progress-every", type=int, default=0, help="soak: print RSS every N pages (0: never)"
    )
    ap.add_argument(
        "--concurrent-items",
        type=int,
        default=0,
        help="Scrapy runners: CONCURRENT_ITEMS (0: Scrapy's default, 100; Scrapy 2.19 starts that "
        "many asyncio tasks per response to process the callback's output)",
    )
    return ap


def page_urls(base_url: str, kind: str, n: int, first: int = 1) -> list[str]:
    tpl = MARKERS[kind][0]
    return [base_url + tpl % i for i in range(first, first + n)]


def warmup_url(base_url: str, kind: str, n: int, first: int = 1) -> str:
    """A page of the same kind outside the measured set."""
    return base_url + MARKERS[kind][0] % (first + n + 100_000)


def is_valid(kind: str, html: str) -> bool:
    return all(html.count(s) >= k for s, k in MARKERS[kind][1])


def emit(event: str, **data: object) -> None:
    sys.stdout.write("BENCH " + json.dumps({"event": event, **data}) + "\n")
    sys.stdout.flush()


def rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1048576
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Tally:
    """Counts pages; opens and closes the measured window."""

    def __init__(
        self, kind: str, pages: int, progress_every: int = 0, raw_html: bool = False
    ) -> None:
        self.kind = kind
        self.pages = pages
        self.progress_every = progress_every
        # raw_html: a client without a browser; markers only apply to RAW_HTML_KINDS
        self.markers_apply = not raw_html or kind in RAW_HTML_KINDS
        self.done = self.valid = self.ok = self.errors = 0
        self.first_error = ""
        self.t0 = self.t1 = 0.0
        self.cpu0 = self.cpu1 = 0.0

    def start(self) -> None:
        emit("start")
        self.t0 = time.perf_counter()
        self.cpu0 = time.process_time()

    def page(self, html: str, status: int = 200) -> None:
        self.ok += status == 200
        self.valid += status == 200 and self.markers_apply and is_valid(self.kind, html)
        self._count()

    def error(self, message: str) -> None:
        self.errors += 1
        if not self.first_error:
            self.first_error = message[:500]
            emit("error", message=self.first_error)
        self._count()

    def _count(self) -> None:
        self.done += 1
        if self.progress_every and self.done % self.progress_every == 0:
            emit("progress", pages=self.done, crawler_rss_mb=round(rss_mb(), 1))
        if self.done == self.pages:
            self.t1 = time.perf_counter()
            self.cpu1 = time.process_time()
            emit("end")

    def result(self) -> None:
        t1 = self.t1 or time.perf_counter()
        seconds = max(1e-9, t1 - self.t0) if self.t0 else 0.0
        emit(
            "result",
            pages=self.done,
            valid=self.valid if self.markers_apply else None,
            ok=self.ok,
            errors=self.errors,
            seconds=round(seconds, 4),
            pages_per_s=round(self.done / seconds, 2) if seconds else 0.0,
            crawler_cpu_s=round((self.cpu1 or time.process_time()) - self.cpu0, 4),
            first_error=self.first_error,
        )
