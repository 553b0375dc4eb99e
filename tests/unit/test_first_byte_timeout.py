"""Which timeout decides how long a rendered page's first byte may take
(issue 35, item 6(b)): a longer download_timeout the user set, unless the
navigation timeout was set for the crawl or the request (no browser)."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request
from scrapy.settings import Settings

from scrapy_cdp_pool.core.request_meta import read_render_meta
from scrapy_cdp_pool.settings.config import PoolConfig


def first_byte(settings: dict[str, Any], meta: dict[str, Any]) -> float:
    config = PoolConfig.from_settings(Settings(settings, priority="project"))
    # as DownloadTimeoutMiddleware: the crawl's DOWNLOAD_TIMEOUT unless the request has one
    meta = {"download_timeout": config.download_timeout_s, **meta}
    request = Request("http://example.test/", meta=meta)
    return read_render_meta(request, config).first_byte_timeout_s


@pytest.mark.parametrize(
    ("settings", "meta", "expected"),
    [
        ({}, {}, 30.0),  # Scrapy's default 180 s is not the user's
        ({"DOWNLOAD_TIMEOUT": 60}, {}, 60.0),
        ({"DOWNLOAD_TIMEOUT": 20}, {}, 30.0),  # shorter: the navigation timeout
        ({"DOWNLOAD_TIMEOUT": 60, "CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 10}, {}, 10.0),
        ({"CDP_POOL_NAVIGATION_TIMEOUT_SECONDS": 2}, {"download_timeout": 8}, 8.0),
        ({}, {"download_timeout": 60, "cdp_navigation_timeout": 5}, 5.0),
    ],
)
def test_the_first_byte_waits_for_a_longer_download_timeout_the_user_set(
    settings: dict[str, Any], meta: dict[str, Any], expected: float
) -> None:
    assert first_byte(settings, meta) == expected
