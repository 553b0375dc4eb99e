"""The browsers start whatever the length of TMPDIR (issue 27): Chromium's
singleton socket inside a long TMPDIR passed the 107 bytes a Unix socket path
holds, and the crawl ended cdp_pool_unavailable with Debian's start-up script
noise. The servers' private directories now go to /tmp when TMPDIR is long."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.browser.pool.private_dir import MAX_BASE_LENGTH, private_base
from tests.crawl import crawl
from tests.servers import SiteServer


@pytest.mark.parametrize("browser", ["lightpanda", "chromium"])
@pytest_twisted.ensureDeferred
async def test_a_long_tmpdir_does_not_stop_the_browser(
    site: SiteServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser: str
) -> None:
    long_dir = tmp_path / ("d" * 40)
    long_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(long_dir))  # what TMPDIR sets
    assert len(str(long_dir)) > 60
    assert private_base() != str(long_dir)
    spider, crawler = await crawl(
        [scrapy.Request(site.url("/js?n=2&long"), meta={"cdp": True})],
        {"CDP_POOL_BROWSER": browser},
    )
    assert not spider.failures, spider.failures
    [response] = spider.responses
    assert len(response.css("p.item")) == 2
    assert crawler.stats.get_value("finish_reason") == "finished"


def test_a_short_tmpdir_is_used_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    short = "/tmp"  # noqa: S108 - only its length matters here
    monkeypatch.setattr(tempfile, "tempdir", short)
    assert len(short) <= MAX_BASE_LENGTH
    assert private_base() == short
