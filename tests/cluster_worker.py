"""One cluster worker for the tests: a real Scrapy crawl (the add-on, embedded
Lightpanda) in its own process, of the URLs given, with the settings given.

``python -m tests.cluster_worker SETTINGS_JSON URL...``: prints one JSON line
at the end, ``{"stats": {...}, "failures": N}`` (stats whose values are
numbers or strings; times as ISO text).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess

from tests.crawl import BASE_SETTINGS, RecordingSpider


def main(argv: list[str]) -> None:
    settings = json.loads(argv[0])
    urls = argv[1:]
    process = CrawlerProcess({**BASE_SETTINGS, "LOG_LEVEL": "WARNING", **settings})
    crawler = process.create_crawler(RecordingSpider)
    process.crawl(crawler, requests=[scrapy.Request(u, meta={"cdp": True}) for u in urls])
    process.start()
    stats: dict[str, Any] = {}
    assert crawler.stats is not None
    for key, value in crawler.stats.get_stats().items():
        stats[key] = value if isinstance(value, (int, float, str)) else str(value)
    spider = crawler.spider
    failures = len(spider.failures) if isinstance(spider, RecordingSpider) else -1
    print(json.dumps({"stats": stats, "failures": failures}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
