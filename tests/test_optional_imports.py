"""Optional features cost nothing when off: a crawl without the cluster, the
metrics endpoint, live pages or plots never imports redis-py,
prometheus_client, Playwright or matplotlib (issue 28). Run in a process of its
own, so that no other test has loaded them."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.servers import SiteServer

SCRIPT = """
import json, sys
import scrapy
from scrapy.crawler import CrawlerProcess

statuses = []

class Spider(scrapy.Spider):
    name = "optional_imports"

    async def start(self):
        yield scrapy.Request(sys.argv[1], meta={"cdp": True})

    def parse(self, response):
        statuses.append(response.status)

process = CrawlerProcess({
    "ADDONS": {"scrapy_cdp_pool.Addon": 0},
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "ERROR",
    "ROBOTSTXT_OBEY": False,
})
process.crawl(Spider)
process.start()
optional = ("redis", "prometheus_client", "playwright", "matplotlib")
print(json.dumps({
    "statuses": statuses,
    "loaded": [name for name in optional if name in sys.modules],
}))
"""


def test_a_crawl_without_optional_features_imports_none_of_their_libraries(
    site: SiteServer,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, site.url("/js?n=1")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["statuses"] == [200]  # the page was rendered
    assert result["loaded"] == []
