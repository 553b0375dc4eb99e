"""Bad input fails by name, alone: a request JOBDIR cannot store, a bad
``cdp_not_before``; the rest of the crawl goes on."""

from __future__ import annotations

from pathlib import Path

import pytest_twisted
import scrapy

from scrapy_cdp_pool.resilience import UnserializableRequestError
from tests.crawl import crawl
from tests.servers import SiteServer


@pytest_twisted.ensureDeferred
async def test_request_jobdir_cannot_store_fails_naming_the_meta_key(
    site: SiteServer, tmp_path: Path
) -> None:
    spider, crawler = await crawl(
        [
            scrapy.Request(site.url("/js?n=1&bad"), meta={"cdp": True, "parser": lambda x: x}),
            scrapy.Request(site.url("/js?n=1&good"), meta={"cdp": True, "note": "fine"}),
        ],
        {"JOBDIR": str(tmp_path / "job")},
    )
    assert [r.url for r in spider.responses] == [site.url("/js?n=1&good")]
    assert len(spider.failures) == 1
    error = spider.failures[0].value
    assert isinstance(error, UnserializableRequestError)
    assert "meta['parser']" in str(error)
    assert "JOBDIR" in str(error)
    assert "/js?n=1&bad" in str(error)
    stats = crawler.stats.get_stats()
    assert stats["cdp_pool/failures/UnserializableRequestError"] == 1
    assert stats["cdp_pool/pages"] == 1  # the bad one never reached the browser


@pytest_twisted.ensureDeferred
async def test_without_jobdir_the_same_request_is_fine(site: SiteServer) -> None:
    spider, _ = await crawl(
        [scrapy.Request(site.url("/js?n=1&memory"), meta={"cdp": True, "parser": lambda x: x})]
    )
    assert not spider.failures
    assert len(spider.responses) == 1


@pytest_twisted.ensureDeferred
async def test_bad_not_before_fails_its_request_by_name(site: SiteServer) -> None:
    spider, _ = await crawl(
        [
            scrapy.Request(site.url("/js?n=1&when"), meta={"cdp_not_before": "tomorrow"}),
            scrapy.Request(site.url("/js?n=1&now")),
        ]
    )
    assert [r.url for r in spider.responses] == [site.url("/js?n=1&now")]
    assert "meta['cdp_not_before'] = 'tomorrow'" in str(spider.failures[0].value)
