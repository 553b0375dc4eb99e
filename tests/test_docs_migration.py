"""The scrapy-playwright migration guide and the warnings that point to it say the same thing."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import pytest_twisted
import scrapy

from scrapy_cdp_pool.core.playwright_keys import (
    MIGRATION_GUIDE,
    PLAYWRIGHT_META_KEYS,
    PLAYWRIGHT_SETTINGS,
    PlaywrightMetaWarner,
    warn_playwright_settings,
)
from tests.crawl import crawl
from tests.servers import SiteServer

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("key", sorted(PLAYWRIGHT_SETTINGS) + sorted(PLAYWRIGHT_META_KEYS))
def test_guide_names_every_key(key: str) -> None:
    guide = (ROOT / MIGRATION_GUIDE).read_text(encoding="utf-8")
    assert f"`{key}`" in guide


def test_settings_warned_once_each_with_replacement(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="scrapy_cdp_pool.core.playwright_keys"):
        found = warn_playwright_settings(
            ["CDP_POOL_BROWSER", "PLAYWRIGHT_BROWSER_TYPE", "PLAYWRIGHT_MADE_UP", "DOWNLOAD_DELAY"]
        )
    assert found == ["PLAYWRIGHT_BROWSER_TYPE", "PLAYWRIGHT_MADE_UP"]
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2
    assert "CDP_POOL_BROWSER" in messages[0]
    assert MIGRATION_GUIDE in messages[1]


def test_meta_keys_warned_once_per_crawl(caplog: pytest.LogCaptureFixture) -> None:
    warner = PlaywrightMetaWarner()
    with caplog.at_level(logging.WARNING, logger="scrapy_cdp_pool.core.playwright_keys"):
        warner.check({"cdp": True, "playwright": True, "playwright_page_methods": []})
        warner.check({"playwright": True})
        warner.check({"cdp": True})
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2
    assert "'playwright'" in messages[0]
    assert "cdp_actions" in messages[1]


@pytest_twisted.ensureDeferred
async def test_a_crawl_with_scrapy_playwright_habits_is_told_once_what_to_use(
    site: SiteServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A real crawl with a ``PLAYWRIGHT_*`` setting and ``playwright`` meta
    keys: each is named once in a WARNING with its replacement, and the
    requests go on (plain, as their meta asks nothing of this plugin)."""
    urls = [site.url(f"/js?n={n}") for n in (1, 2, 3)]
    with caplog.at_level(logging.WARNING, logger="scrapy_cdp_pool.core.playwright_keys"):
        spider, _ = await crawl(
            [scrapy.Request(url, meta={"playwright": True}) for url in urls],
            {"PLAYWRIGHT_BROWSER_TYPE": "chromium"},
        )
    assert not spider.failures
    assert len(spider.responses) == 3
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2, messages
    assert "PLAYWRIGHT_BROWSER_TYPE" in messages[0]
    assert "CDP_POOL_BROWSER" in messages[0]
    assert "meta['playwright']" in messages[1]
    assert 'meta["cdp"]' in messages[1]


def test_the_scrapy_redis_guide_names_every_setting_scrapy_redis_reads() -> None:
    """Every setting name in scrapy-redis's own source (the installed
    version's), and every spider attribute it reads, is in the guide."""
    import re

    import scrapy_redis

    source = "\n".join(
        path.read_text(encoding="utf-8") for path in Path(scrapy_redis.__file__).parent.glob("*.py")
    )
    read = set(re.findall(r"\"((?:REDIS|SCHEDULER|MAX_IDLE)_[A-Z_]+|STATS_KEY)\"", source))
    assert {"REDIS_URL", "SCHEDULER_PERSIST", "REDIS_START_URLS_KEY"} <= read
    guide = (ROOT / "docs" / "migrating-from-scrapy-redis.md").read_text(encoding="utf-8")
    attributes = {"redis_key", "redis_batch_size", "redis_encoding", "max_idle_time"}
    missing = sorted(name for name in read | attributes if f"`{name}`" not in guide)
    assert not missing
