"""Scrapy's own download-handler tests, every request rendered on Chromium
(one server for the session, as a remote endpoint, and the embedded Chromium for
the mitmproxy class; see tests/scrapy_suite/)."""

from __future__ import annotations

from tests.scrapy_suite.suite import (  # noqa: F401 - fixtures
    FILTERWARNINGS,
    _mitm_proxies,
    chromium_embedded_settings,
    chromium_settings,
    mockserver,
    proxy_server,
    suite_classes,
)

globals().update(suite_classes("chromium", "chromium_settings"))

pytestmark = FILTERWARNINGS
