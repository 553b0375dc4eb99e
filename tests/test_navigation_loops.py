"""A page that keeps navigating itself fails by name, at the bound plain
Scrapy puts on a redirect chain (``REDIRECT_MAX_TIMES``), and is not retried.

Found by a fresh-user trial: ``location.href`` set to the next page on every
page, or a ``location.reload()`` loop, held its browser slot until
``download_timeout`` and failed as a retried ``DownloadTimeoutError``: three
times ``download_timeout`` for a page that can never settle.
"""

from __future__ import annotations

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import NavigationLoop
from tests.crawl import crawl
from tests.profiles import hits
from tests.servers import SiteServer

#: crawls of the same settings share one embedded server (tests/conftest.py)
SHARED_BROWSERS = True


@pytest.mark.parametrize(
    ("browser", "how"),
    [("lightpanda", "script"), ("chromium", "script"), ("chromium", "refresh")],
)
@pytest_twisted.ensureDeferred
async def test_a_page_navigating_itself_without_end_fails_by_name(
    site: SiteServer, browser: str, how: str
) -> None:
    key = f"{browser}-{how}"
    loop = scrapy.Request(site.url(f"/nav-loop?n=0&how={how}&key={key}"), meta={"cdp": True})
    normal = scrapy.Request(site.url("/js?n=2"), meta={"cdp": True})
    spider, crawler = await crawl(
        [loop, normal],
        {
            "CDP_POOL_BROWSER": browser,
            "REDIRECT_MAX_TIMES": 5,
            "RETRY_ENABLED": True,
            "DOWNLOAD_TIMEOUT": 60,
        },
    )
    assert len(spider.failures) == 1, [f.value for f in spider.failures]
    failure = spider.failures[0]
    assert failure.check(NavigationLoop), failure.value
    message = str(failure.value)
    assert "navigated itself 6 times in a row" in message, message
    assert "REDIRECT_MAX_TIMES = 5" in message, message
    # each page of the loop loaded once: no retry went round it again
    assert hits(site, f"/nav-loop?n=0&how={how}&key={key}") == 1
    assert hits(site, f"/nav-loop?n=6&how={how}&key={key}") == 1
    stats = crawler.stats.get_stats()
    assert "retry/count" not in stats
    assert stats["cdp_pool/errors/NavigationLoop"] == 1
    [response] = spider.responses
    assert response.css("p.item::text").getall() == ["item-1", "item-2"]


@pytest_twisted.ensureDeferred
async def test_navigations_the_requests_actions_make_are_not_a_loop(site: SiteServer) -> None:
    pages = [site.url(f"/js?n={n}") for n in (1, 2, 3)]
    request = scrapy.Request(
        site.url("/js?n=4"),
        meta={"cdp": True, "cdp_actions": [["goto", url] for url in pages]},
    )
    spider, _ = await crawl([request], {"REDIRECT_MAX_TIMES": 1})
    assert not spider.failures, [f.value for f in spider.failures]
    [response] = spider.responses
    assert response.css("p.item::text").getall() == ["item-1", "item-2", "item-3"]
