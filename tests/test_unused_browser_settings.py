"""A browser setting the crawl has no use for is warned about once, at start
(before: ``CDP_POOL_CHROMIUM_PATH`` on a Lightpanda crawl did nothing without
a word). The add-on's real ``update_settings`` on real settings; the binaries
it checks are the installed ones."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_cdp_pool import Addon
from scrapy_cdp_pool.settings.parse import default_chromium_path

CHROMIUM = default_chromium_path()
LOGGER = "scrapy_cdp_pool.settings.unused"


def _warnings(caplog: pytest.LogCaptureFixture, values: dict[str, Any]) -> list[str]:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        Addon().update_settings(Settings(values))
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_a_chromium_path_on_a_lightpanda_crawl_is_warned_about_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    [warning] = _warnings(caplog, {"CDP_POOL_CHROMIUM_PATH": CHROMIUM})
    assert warning.startswith(
        "CDP_POOL_CHROMIUM_PATH is set but not used: the crawl starts only an embedded lightpanda"
    )
    assert 'CDP_POOL_FALLBACK = "chromium"' in warning


@pytest.mark.parametrize(
    "values",
    [
        {"CDP_POOL_FALLBACK": "chromium"},  # the ladder's Chromium rung reads it
        {"CDP_POOL_BROWSER": "chromium"},
        {"CDP_POOL_CHROMIUM_PATH": None},  # unset
    ],
    ids=["ladder", "chromium", "none"],
)
def test_a_chromium_path_something_reads_is_not_warned_about(
    caplog: pytest.LogCaptureFixture, values: dict[str, Any]
) -> None:
    assert _warnings(caplog, {"CDP_POOL_CHROMIUM_PATH": CHROMIUM, **values}) == []


def test_lightpanda_settings_on_a_chromium_crawl_are_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    warnings = _warnings(
        caplog,
        {"CDP_POOL_BROWSER": "chromium", "CDP_POOL_LIGHTPANDA_ARGS": ["--log-level", "warn"]},
    )
    assert [w.split(":")[0] for w in warnings] == ["CDP_POOL_LIGHTPANDA_ARGS is set but not used"]


def test_with_endpoints_no_embedded_browser_setting_is_used(
    caplog: pytest.LogCaptureFixture,
) -> None:
    warnings = _warnings(
        caplog,
        {"CDP_POOL_ENDPOINTS": ["http://127.0.0.1:9222"], "CDP_POOL_CHROMIUM_PATH": CHROMIUM,
         "CDP_POOL_FALLBACK": "chromium"},
    )  # fmt: skip
    [warning] = warnings
    assert "CDP_POOL_ENDPOINTS is set, so the crawl starts no embedded browser" in warning
