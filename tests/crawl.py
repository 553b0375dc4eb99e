"""Run a real Scrapy crawl in the test's reactor and keep what it saw."""

from __future__ import annotations

from typing import Any

import scrapy
from scrapy.crawler import Crawler, CrawlerRunner
from twisted.python.failure import Failure

BASE_SETTINGS: dict[str, Any] = {
    "ADDONS": {"scrapy_cdp_pool.Addon": 0},
    "TELNETCONSOLE_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
    "LOG_LEVEL": "INFO",
    "RETRY_ENABLED": False,
    "HTTPERROR_ALLOW_ALL": True,
    "DOWNLOAD_TIMEOUT": 30,
    "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 10,
    "CDP_POOL_CONNECTIONS": 2,
}


class RecordingSpider(scrapy.Spider):
    """Sends the requests it is given and keeps responses and failures.

    A request's ``meta["then"]``, a callable ``(spider, response) -> iterable``,
    yields follow-up requests.
    """

    name = "recording"

    def __init__(self, requests: list[scrapy.Request], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.to_send = requests
        self.responses: list[scrapy.http.Response] = []
        self.failures: list[Failure] = []

    async def start(self) -> Any:
        for request in self.to_send:
            yield self.prepare(request)

    def prepare(self, request: scrapy.Request) -> scrapy.Request:
        return request.replace(callback=self.parse, errback=self.on_error)

    def parse(self, response: scrapy.http.Response) -> Any:
        self.responses.append(response)
        then = response.meta.get("then")
        if then is not None:
            for request in then(self, response):
                yield self.prepare(request)

    def on_error(self, failure: Failure) -> None:
        self.failures.append(failure)

    def by_url(self, fragment: str) -> scrapy.http.Response:
        matches = [r for r in self.responses if fragment in r.url]
        assert len(matches) == 1, (fragment, [r.url for r in self.responses])
        return matches[0]


async def crawl(
    requests: list[scrapy.Request], settings: dict[str, Any] | None = None,
    spider_cls: type[RecordingSpider] = RecordingSpider,
) -> tuple[RecordingSpider, Crawler]:  # fmt: skip
    """Crawl ``requests`` with the add-on and ``settings`` on top of
    :data:`BASE_SETTINGS`; return the spider (responses, failures) and the
    crawler (stats)."""
    runner = CrawlerRunner({**BASE_SETTINGS, **(settings or {})})
    crawler = runner.create_crawler(spider_cls)
    await runner.crawl(crawler, requests=requests)
    # a crawl that fails its exit status (core/exit_status.py) keeps its spider there
    spider = crawler.spider or getattr(crawler, "cdp_pool_closed_spider", None)
    assert isinstance(spider, RecordingSpider)
    return spider, crawler
