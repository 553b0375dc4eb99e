"""The scrapy-playwright migration guide and the warnings that point to it say the same thing."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from scrapy_cdp_pool.playwright_keys import (
    MIGRATION_GUIDE,
    PLAYWRIGHT_META_KEYS,
    PLAYWRIGHT_SETTINGS,
    PlaywrightMetaWarner,
    warn_playwright_settings,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("key", sorted(PLAYWRIGHT_SETTINGS) + sorted(PLAYWRIGHT_META_KEYS))
def test_guide_names_every_key(key: str) -> None:
    guide = (ROOT / MIGRATION_GUIDE).read_text(encoding="utf-8")
    assert f"`{key}`" in guide


def test_settings_warned_once_each_with_replacement(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="scrapy_cdp_pool.playwright_keys"):
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
    with caplog.at_level(logging.WARNING, logger="scrapy_cdp_pool.playwright_keys"):
        warner.check({"cdp": True, "playwright": True, "playwright_page_methods": []})
        warner.check({"playwright": True})
        warner.check({"cdp": True})
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2
    assert "'playwright'" in messages[0]
    assert "cdp_actions" in messages[1]
