"""Scrapy's own download-handler tests, every request rendered on Chromium
(the embedded server; see tests/scrapy_suite/)."""

from __future__ import annotations

from tests.scrapy_suite.suite import (  # noqa: F401 - fixtures
    FILTERWARNINGS,
    _mitm_proxies,
    chromium_settings,
    mockserver,
    proxy_server,
    suite_classes,
)

globals().update(suite_classes("chromium", "chromium_settings"))

pytestmark = FILTERWARNINGS
