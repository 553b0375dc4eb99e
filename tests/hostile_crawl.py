"""``python -m tests.hostile_crawl ENDPOINT URL [SETTINGS_JSON [N]]``: one
real Scrapy crawl in its own process (as ``scrapy crawl`` runs one), rendering
``URL`` (``N`` times, default 1) through the CDP endpoint ``ENDPOINT``.

Its last line on stdout is ``RESULT {json}``: the failures (exception class
and message), the responses' statuses, the ``cdp_pool/*`` stats and the
process's peak resident memory (``VmHWM`` of ``/proc/self/status``, MiB), read
by the kernel, not sampled: the peak of this program's own address space
(``ru_maxrss`` keeps, across ``exec``, the peak of the process it was forked
from: a pytest worker that had grown to 1 GB made every crawl "1049 MB").
The process's address space is capped (``RLIMIT_AS``, 4 GiB) so that
a leak ends in a ``MemoryError`` here rather than in the machine's swap.
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess
from twisted.python.failure import Failure

from tests.crawl import BASE_SETTINGS


class OneRender(scrapy.Spider):
    name = "hostile"

    def __init__(self, url: str, count: int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.url = url
        self.count = count
        self.failures: list[dict[str, str]] = []
        self.statuses: list[int] = []

    async def start(self) -> Any:
        for _ in range(self.count):
            yield scrapy.Request(self.url, meta={"cdp": True}, callback=self.parse,
                                 errback=self.on_error, dont_filter=True)  # fmt: skip

    def parse(self, response: scrapy.http.Response) -> None:
        self.statuses.append(response.status)

    def on_error(self, failure: Failure) -> None:
        self.failures.append({"type": type(failure.value).__name__, "message": str(failure.value)})


def main() -> None:
    limit = 4 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    endpoint, url = sys.argv[1], sys.argv[2]
    extra = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    settings = {**BASE_SETTINGS, "CDP_POOL_ENDPOINTS": [endpoint], "CDP_POOL_CONNECTIONS": 1}
    process = CrawlerProcess({**settings, **extra})
    crawler = process.create_crawler(OneRender)
    process.crawl(crawler, url=url, count=count)
    process.start()
    # a crawl that fails its exit status keeps its spider there (core/exit_status.py)
    spider = crawler.spider or getattr(crawler, "cdp_pool_closed_spider", None)
    assert isinstance(spider, OneRender)
    assert crawler.stats is not None
    stats = {k: v for k, v in crawler.stats.get_stats().items() if k.startswith("cdp_pool/")}
    result = {
        "failures": spider.failures,
        "statuses": spider.statuses,
        "stats": {k: v for k, v in stats.items() if isinstance(v, (int, float, str))},
        "peak_rss_mb": peak_rss_mb(),
    }
    print("RESULT " + json.dumps(result), flush=True)


def peak_rss_mb() -> float:
    """This program's peak resident memory, MiB (``VmHWM``: reset by ``exec``)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


if __name__ == "__main__":
    main()
