"""Ordinary page behaviours (issue 14), written once and run against each
embedded backend: dialogs, content fetched after ``load``, navigations to
other schemes, a page that allocates without end. Real crawls of the real
test site (``tests/site/behaviour.py``)."""

from __future__ import annotations

from typing import Any

import pytest_twisted
import scrapy

from scrapy_cdp_pool.errors import PageMemoryExceeded
from tests.contract import token
from tests.crawl import crawl
from tests.profiles import hits
from tests.servers import SiteServer

DISMISSED = [
    {"type": "alert", "message": "x", "accepted": False},
    {"type": "confirm", "message": "y", "accepted": False},
    {"type": "prompt", "message": "z", "accepted": False},
    {"type": "alert", "message": "loaded", "accepted": False},
]


class BehaviourContract:
    def backend_settings(self) -> dict[str, Any]:
        raise NotImplementedError

    async def crawl(self, requests: list[scrapy.Request], **settings: Any) -> Any:
        return await crawl(requests, {**self.backend_settings(), **settings})

    @pytest_twisted.ensureDeferred
    async def test_dialogs_are_dismissed_at_once_and_listed(self, site: SiteServer) -> None:
        """Inline alert/confirm and prompt/alert in a load handler: the page
        loads, the dialogs are listed, and a page queued behind it on the
        only slot is served (before: a timeout for both)."""
        key = token()
        spider, _crawler = await self.crawl(
            [scrapy.Request(site.url(f"/behaviour/dialogs?{key}"), meta={"cdp": True}),
             scrapy.Request(site.url(f"/js?after-dialogs={key}"), meta={"cdp": True})],
            CDP_POOL_CONNECTIONS=1, CDP_POOL_NAVIGATION_TIMEOUT_SECONDS=30, DOWNLOAD_TIMEOUT=15,
        )  # fmt: skip
        assert not spider.failures, spider.failures
        page = spider.by_url("/behaviour/dialogs")
        assert page.css("#after::text").get() == "after"
        assert page.css("#confirm::text").get() == "false"
        assert page.css("#prompt::text").get() == "null"
        assert page.meta["cdp_dialogs_seen"] == DISMISSED
        assert spider.by_url("/js?after-dialogs").meta["cdp_dialogs_seen"] == []

    @pytest_twisted.ensureDeferred
    async def test_networkidle_waits_for_content_fetched_after_load(self, site: SiteServer) -> None:
        """The list arrives by fetch() 50 ms after load, answered 300 ms
        later: with networkidle (setting or meta) every item is there."""
        key = token()
        spider, _ = await self.crawl(
            [scrapy.Request(site.url(f"/behaviour/late?setting={key}"), meta={"cdp": True}),
             scrapy.Request(site.url(f"/behaviour/late?meta={key}"),
                            meta={"cdp": True, "cdp_wait_until": "networkidle"})],
            CDP_POOL_WAIT_UNTIL="networkidle",
        )  # fmt: skip
        assert not spider.failures, spider.failures
        for response in spider.responses:
            assert response.css("li.late::text").getall() == [f"late-{i}" for i in range(1, 6)]
        assert hits(site, "/behaviour/late-data?ms=300") >= 2

    @pytest_twisted.ensureDeferred
    async def test_navigations_to_other_schemes_do_not_hold_the_page(
        self, site: SiteServer
    ) -> None:
        """mailto: and an application scheme, from a load handler and inline:
        the page is returned as it is, well within a download timeout far
        below the navigation timeout (before, Chromium waited for a document
        that never came)."""
        targets = ["mailto:a@example.com", "myapp://open"]
        requests = [
            scrapy.Request(site.url(f"/behaviour/scheme?to={to}&when={when}"), meta={"cdp": True})
            for to in targets
            for when in ("load", "inline")
        ]
        spider, _ = await self.crawl(
            requests, CDP_POOL_NAVIGATION_TIMEOUT_SECONDS=60, DOWNLOAD_TIMEOUT=10
        )
        assert not spider.failures, spider.failures
        assert len(spider.responses) == 4
        for response in spider.responses:
            assert response.css("#here::text").get() == "here"
            ignored = response.meta.get("cdp_ignored_navigations", [])
            assert set(ignored) <= set(targets)
        self.check_ignored(spider.responses)

    def check_ignored(self, responses: list[scrapy.http.Response]) -> None:
        """What each backend reports of the navigations it did not follow."""

    @pytest_twisted.ensureDeferred
    async def test_memory_hog_fails_by_name_and_the_rest_of_the_crawl_goes_on(
        self, site: SiteServer
    ) -> None:
        key = token()
        requests = [scrapy.Request(site.url(f"/behaviour/memory-hog?{key}"), meta={"cdp": True})]
        requests += [
            scrapy.Request(site.url(f"/js?n=2&beside-hog={key}&i={i}"), meta={"cdp": True})
            for i in range(3)
        ]
        spider, crawler = await self.crawl(
            requests, CDP_POOL_PAGE_HEAP_LIMIT_MB=128, RETRY_ENABLED=True, DOWNLOAD_TIMEOUT=60,
            CDP_POOL_NAVIGATION_TIMEOUT_SECONDS=30,
        )  # fmt: skip
        assert len(spider.responses) == 3
        assert all(r.css("p.item::text").getall() == ["item-1", "item-2"] for r in spider.responses)
        [failure] = spider.failures
        assert isinstance(failure.value, PageMemoryExceeded), failure.value
        assert "CDP_POOL_PAGE_HEAP_LIMIT_MB = 128" in str(failure.value)
        assert hits(site, f"/behaviour/memory-hog?{key}") == 1  # not retried
        assert crawler.stats.get_value("cdp_pool/errors/PageMemoryExceeded") == 1
